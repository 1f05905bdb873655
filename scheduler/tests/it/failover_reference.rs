//! `tasks_to_restart` against a naive reference over explicit edges, plus the shape of Flink's
//! "region to restart" benchmark as a worked example.
//!
//! The reference materialises every (producer subtask, consumer subtask) pair of every job edge
//! with Flink's pointwise formulas, written out independently of the graph crate's group
//! arithmetic, and runs the region-failover rules (Flink's
//! `RestartPipelinedRegionFailoverStrategy`) without any visited-group shortcut: the failed
//! region; every consumer region of a restarted region's produced partitions, whatever the type;
//! the producer region of every consumed partition that is not available. The simulation tests
//! (`simulation.rs`) use the same graphs and the same reference.

use std::collections::VecDeque;
use std::sync::Arc;

use conflux_deploy::{ExecutionAttemptId, ExecutionState, TaskManagerId, TaskManagerLocation};
use conflux_graph::json::{JobEdgeJson, JobGraphJson, JobVertexJson};
use conflux_graph::{
    DistributionPattern, ExecutionGraph, ExecutionVertexIndex, IntermediateResultPartitionId,
    JobGraph, PipelinedRegionIndex, PipelinedRegions, ResultPartitionType,
};
use conflux_scheduler::{
    tasks_to_restart, Command, Event, FailoverStrategy, FailureCause, PartitionAvailability,
    Scheduler, SchedulerConfig,
};
use proptest::prelude::*;
use proptest::sample::Index;

// ---- seeded randomness ----

/// SplitMix64, so that a seed names a graph and its faults on every platform.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5851_f42d_4c95_7f2d)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    pub(crate) fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

// ---- small random job graphs ----

/// One job edge of a [`GraphSpec`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EdgeSpec {
    pub(crate) source: usize,
    pub(crate) target: usize,
    pub(crate) pattern: DistributionPattern,
    pub(crate) partition_type: ResultPartitionType,
    /// Consumes the data set of this earlier edge (same source, pattern and type; a consumer of
    /// the same parallelism): one result with several consumer job vertices.
    pub(crate) shares: Option<usize>,
}

/// A small job graph: vertices `v0..vN` in topological order, edges only forward.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GraphSpec {
    pub(crate) parallelism: Vec<u32>,
    /// Slot sharing group per vertex (`None`: the default group).
    pub(crate) slot_sharing: Vec<Option<u8>>,
    pub(crate) edges: Vec<EdgeSpec>,
}

/// The types the simulation draws from, with weights.
pub(crate) const SIMULATED_TYPES: [(ResultPartitionType, u64); 6] = [
    (ResultPartitionType::Pipelined, 3),
    (ResultPartitionType::PipelinedBounded, 3),
    (ResultPartitionType::Blocking, 4),
    (ResultPartitionType::HybridFull, 3),
    (ResultPartitionType::HybridSelective, 3),
    (ResultPartitionType::BlockingPersistent, 1),
];

/// An edge before normalisation: endpoints in any order, `share` asks to reuse a data set.
pub(crate) type RawEdge = (usize, usize, DistributionPattern, ResultPartitionType, bool);

impl GraphSpec {
    /// A graph from raw parts: self-loops are dropped, edges point forward, and an edge asking
    /// to share joins the first earlier edge it can (same source, consumer of equal parallelism
    /// that does not consume that data set yet), taking its pattern and type.
    pub(crate) fn new(
        parallelism: Vec<u32>,
        slot_sharing: Vec<Option<u8>>,
        raw: &[RawEdge],
    ) -> GraphSpec {
        let mut edges: Vec<EdgeSpec> = Vec::new();
        for &(a, b, pattern, partition_type, share) in raw {
            if a == b || a >= parallelism.len() || b >= parallelism.len() {
                continue;
            }
            let (source, target) = (a.min(b), a.max(b));
            let root = share
                .then(|| {
                    (0..edges.len()).find(|&k| {
                        let e = &edges[k];
                        e.shares.is_none()
                            && e.source == source
                            && parallelism[e.target] == parallelism[target]
                            && !edges
                                .iter()
                                .enumerate()
                                .any(|(i, x)| (i == k || x.shares == Some(k)) && x.target == target)
                    })
                })
                .flatten();
            edges.push(match root {
                Some(k) => EdgeSpec {
                    source,
                    target,
                    pattern: edges[k].pattern,
                    partition_type: edges[k].partition_type,
                    shares: Some(k),
                },
                None => EdgeSpec {
                    source,
                    target,
                    pattern,
                    partition_type,
                    shares: None,
                },
            });
        }
        GraphSpec {
            parallelism,
            slot_sharing,
            edges,
        }
    }

    /// 2-6 vertices of parallelism 1-5, forward edges of random pattern and type (weights
    /// `types`), sometimes shared data sets and slot sharing groups.
    pub(crate) fn random(rng: &mut Rng, types: &[(ResultPartitionType, u64)]) -> GraphSpec {
        let n = 2 + rng.index(5);
        let parallelism: Vec<u32> = (0..n).map(|_| 1 + rng.below(5) as u32).collect();
        let slot_sharing: Vec<Option<u8>> = if rng.chance(0.3) {
            let groups = 1 + rng.below(3);
            (0..n)
                .map(|_| rng.chance(0.8).then(|| rng.below(groups) as u8))
                .collect()
        } else {
            vec![None; n]
        };
        let total: u64 = types.iter().map(|(_, w)| w).sum();
        let pick_type = |rng: &mut Rng| {
            let mut x = rng.below(total);
            for &(t, w) in types {
                if x < w {
                    return t;
                }
                x -= w;
            }
            types[0].0
        };
        let mut raw = Vec::new();
        for target in 1..n {
            // Mostly connected: one input from an earlier vertex, plus a few more.
            if rng.chance(0.85) {
                let source = rng.index(target);
                let pattern = pick_pattern(rng);
                let t = pick_type(rng);
                raw.push((source, target, pattern, t, rng.chance(0.15)));
            }
            for source in 0..target {
                if rng.chance(0.2) {
                    let pattern = pick_pattern(rng);
                    let t = pick_type(rng);
                    raw.push((source, target, pattern, t, rng.chance(0.15)));
                }
            }
        }
        GraphSpec::new(parallelism, slot_sharing, &raw)
    }

    /// Batch if any edge is not pipelined, else streaming.
    pub(crate) fn job_type(&self) -> &'static str {
        if self
            .edges
            .iter()
            .any(|e| !e.partition_type.must_be_pipelined_consumed())
        {
            "batch"
        } else {
            "streaming"
        }
    }

    pub(crate) fn to_json(&self) -> JobGraphJson {
        JobGraphJson {
            name: "random".to_owned(),
            job_type: self.job_type().to_owned(),
            vertices: self
                .parallelism
                .iter()
                .zip(&self.slot_sharing)
                .enumerate()
                .map(|(i, (&p, s))| JobVertexJson {
                    id: format!("v{i}"),
                    parallelism: p,
                    max_parallelism: None,
                    slot_sharing_group: s.map(|g| format!("ssg{g}")),
                    co_location_group: None,
                    operators: Vec::new(),
                })
                .collect(),
            edges: self
                .edges
                .iter()
                .enumerate()
                .map(|(i, e)| JobEdgeJson {
                    source: format!("v{}", e.source),
                    target: format!("v{}", e.target),
                    distribution_pattern: e.pattern.as_str().to_owned(),
                    result_partition_type: e.partition_type.as_str().to_owned(),
                    ship_strategy: None,
                    data_set: Some(format!("ds{}", e.shares.unwrap_or(i))),
                })
                .collect(),
        }
    }

    /// The execution graph and its regions, or why the graph is invalid.
    pub(crate) fn build(&self) -> Result<(Arc<ExecutionGraph>, Arc<PipelinedRegions>), String> {
        let job = JobGraph::from_json(&self.to_json()).map_err(|e| e.to_string())?;
        let graph = ExecutionGraph::build(job).map_err(|e| e.to_string())?;
        let regions = PipelinedRegions::compute(&graph).map_err(|e| e.to_string())?;
        Ok((Arc::new(graph), Arc::new(regions)))
    }

    /// Pretty JSON, for failure messages.
    pub(crate) fn describe(&self) -> String {
        serde_json::to_string_pretty(&self.to_json()).unwrap_or_else(|e| e.to_string())
    }
}

fn pick_pattern(rng: &mut Rng) -> DistributionPattern {
    if rng.chance(0.5) {
        DistributionPattern::Pointwise
    } else {
        DistributionPattern::AllToAll
    }
}

// ---- explicit edges and the naive reference ----

/// One consumed partition of a vertex: (producer vertex, global partition index, type).
pub(crate) type Input = (u32, u32, ResultPartitionType);
/// One consumer of a produced partition: (consumer vertex, global partition index, type).
pub(crate) type Output = (u32, u32, ResultPartitionType);

/// Every (producer subtask, consumer subtask) pair of every job edge, per vertex.
#[derive(Debug)]
pub(crate) struct Explicit {
    pub(crate) inputs: Vec<Vec<Input>>,
    pub(crate) outputs: Vec<Vec<Output>>,
    /// Per global partition: its producer and type.
    pub(crate) partition_producer: Vec<(u32, ResultPartitionType)>,
    /// Per vertex: the global indices of the partitions it produces.
    pub(crate) produced: Vec<Vec<u32>>,
}

/// The (producer, consumer) subtask pairs of a `U -> D` edge, by Flink's formulas: ALL_TO_ALL
/// every pair; POINTWISE `U >= D` consumer `i` reads `[floor(i*U/D), floor((i+1)*U/D))`,
/// `U < D` partition `p` feeds `[ceil(p*D/U), ceil((p+1)*D/U))`.
pub(crate) fn subtask_pairs(pattern: DistributionPattern, u: u32, d: u32) -> Vec<(u32, u32)> {
    let (u64_, d64) = (u64::from(u), u64::from(d));
    let mut out = Vec::new();
    match pattern {
        DistributionPattern::AllToAll => {
            for p in 0..u {
                for c in 0..d {
                    out.push((p, c));
                }
            }
        }
        DistributionPattern::Pointwise if u >= d => {
            for c in 0..d64 {
                for p in (c * u64_ / d64)..((c + 1) * u64_ / d64) {
                    out.push((p as u32, c as u32));
                }
            }
        }
        DistributionPattern::Pointwise => {
            for p in 0..u64_ {
                let start = (p * d64).div_ceil(u64_);
                let end = ((p + 1) * d64).div_ceil(u64_);
                for c in start..end {
                    out.push((p as u32, c as u32));
                }
            }
        }
    }
    out
}

impl Explicit {
    pub(crate) fn new(graph: &ExecutionGraph) -> Explicit {
        let job = graph.job_graph();
        let n = graph.num_execution_vertices() as usize;
        let mut inputs = vec![Vec::new(); n];
        let mut outputs = vec![Vec::new(); n];
        let mut partition_producer =
            vec![(u32::MAX, ResultPartitionType::Blocking); graph.num_partitions() as usize];
        let mut produced = vec![Vec::new(); n];
        for (r, ds) in job.data_sets().iter().enumerate() {
            let producers = graph.execution_vertices_of(ds.producer);
            for p in 0..producers.end - producers.start {
                let global = graph.partition_index(IntermediateResultPartitionId {
                    result: conflux_graph::IntermediateDataSetIndex(r as u32),
                    partition: p,
                });
                partition_producer[global as usize] =
                    (producers.start + p, ds.result_partition_type);
                produced[(producers.start + p) as usize].push(global);
            }
        }
        for edge in job.edges() {
            let producers = graph.execution_vertices_of(edge.source);
            let consumers = graph.execution_vertices_of(edge.target);
            let (u, d) = (
                producers.end - producers.start,
                consumers.end - consumers.start,
            );
            for (p, c) in subtask_pairs(edge.distribution_pattern, u, d) {
                let global = graph.partition_index(IntermediateResultPartitionId {
                    result: edge.data_set,
                    partition: p,
                });
                let (pv, cv) = (producers.start + p, consumers.start + c);
                inputs[cv as usize].push((pv, global, edge.result_partition_type));
                outputs[pv as usize].push((cv, global, edge.result_partition_type));
            }
        }
        Explicit {
            inputs,
            outputs,
            partition_producer,
            produced,
        }
    }

    /// The regions the region-failover rules restart when `failed` fails, as a flag per region.
    /// `available(partition, type)` decides the upstream rule. Naive: every pair is looked at
    /// from every restarted region, no group is skipped.
    pub(crate) fn restart_regions(
        &self,
        regions: &PipelinedRegions,
        failed: u32,
        available: &dyn Fn(u32, ResultPartitionType) -> bool,
    ) -> Vec<bool> {
        let mut restart = vec![false; regions.len()];
        let start = regions.region_of(ExecutionVertexIndex(failed));
        restart[start.idx()] = true;
        let mut queue = VecDeque::from([start]);
        while let Some(region) = queue.pop_front() {
            for v in regions.members(region) {
                let upstream = self.inputs[v.idx()]
                    .iter()
                    .filter(|&&(_, partition, t)| !available(partition, t))
                    .map(|&(producer, _, _)| producer);
                let downstream = self.outputs[v.idx()]
                    .iter()
                    .map(|&(consumer, _, _)| consumer);
                for other in upstream.chain(downstream).collect::<Vec<_>>() {
                    let r = regions.region_of(ExecutionVertexIndex(other));
                    if !restart[r.idx()] {
                        restart[r.idx()] = true;
                        queue.push_back(r);
                    }
                }
            }
        }
        restart
    }
}

/// The vertices of the flagged regions, ascending.
pub(crate) fn members_of(regions: &PipelinedRegions, flags: &[bool]) -> Vec<u32> {
    let mut out: Vec<u32> = flags
        .iter()
        .enumerate()
        .filter(|(_, &f)| f)
        .flat_map(|(r, _)| {
            regions
                .member_indices(PipelinedRegionIndex(r as u32))
                .iter()
                .copied()
        })
        .collect();
    out.sort_unstable();
    out
}

/// Flink's availability rule minus the tracker: only re-consumable types (and
/// PIPELINED_APPROXIMATE) can be available.
pub(crate) fn type_can_be_available(t: ResultPartitionType) -> bool {
    matches!(
        t,
        ResultPartitionType::Blocking
            | ResultPartitionType::BlockingPersistent
            | ResultPartitionType::HybridFull
            | ResultPartitionType::PipelinedApproximate
    )
}

// ---- property: tasks_to_restart == reference ----

struct Tracked<'a> {
    graph: &'a ExecutionGraph,
    tracked: &'a [bool],
}

impl PartitionAvailability for Tracked<'_> {
    fn is_tracked(&self, p: IntermediateResultPartitionId) -> bool {
        self.tracked[self.graph.partition_index(p) as usize % self.tracked.len()]
    }
}

const ALL_PATTERNS: [DistributionPattern; 2] = [
    DistributionPattern::Pointwise,
    DistributionPattern::AllToAll,
];

fn raw_edge() -> impl Strategy<Value = RawEdge> {
    (
        0usize..6,
        0usize..6,
        prop::sample::select(ALL_PATTERNS.to_vec()),
        prop::sample::select(ResultPartitionType::ALL.to_vec()),
        prop::bool::weighted(0.2),
    )
}

fn graph_spec() -> impl Strategy<Value = GraphSpec> {
    (2usize..=6)
        .prop_flat_map(|n| {
            (
                prop::collection::vec(1u32..=5, n),
                prop::collection::vec(raw_edge(), 0..=2 * n),
            )
        })
        .prop_map(|(parallelism, raw)| {
            let n = parallelism.len();
            GraphSpec::new(parallelism, vec![None; n], &raw)
        })
}

/// The explicit pairs agree with the graph's consumed partition groups.
fn check_explicit_matches_groups(graph: &ExecutionGraph, explicit: &Explicit) {
    for v in 0..graph.num_execution_vertices() {
        let mut from_groups: Vec<u32> = graph
            .consumed_partition_groups(ExecutionVertexIndex(v))
            .flat_map(|g| {
                let group = graph.consumed_partition_group(g);
                group
                    .partitions
                    .map(move |p| {
                        graph.partition_index(IntermediateResultPartitionId {
                            result: group.result,
                            partition: p,
                        })
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut explicit_inputs: Vec<u32> = explicit.inputs[v as usize]
            .iter()
            .map(|&(_, p, _)| p)
            .collect();
        from_groups.sort_unstable();
        explicit_inputs.sort_unstable();
        assert_eq!(
            from_groups,
            explicit_inputs,
            "inputs of {}",
            graph.execution_vertex_name(ExecutionVertexIndex(v))
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn tasks_to_restart_matches_the_naive_reference(
        spec in graph_spec(),
        tracked in prop::collection::vec(prop::bool::weighted(0.7), 64),
        failed in any::<Index>(),
        failed_partition in prop::option::weighted(0.3, any::<Index>()),
        full in prop::bool::weighted(0.1),
    ) {
        let (graph, regions) = spec.build().map_err(TestCaseError::fail)?;
        let explicit = Explicit::new(&graph);
        check_explicit_matches_groups(&graph, &explicit);
        let n = graph.num_execution_vertices();
        let failed = failed.index(n as usize) as u32;
        let failed_partition = failed_partition
            .filter(|_| graph.num_partitions() > 0)
            .map(|i| i.index(graph.num_partitions() as usize) as u32);
        let failed_partition_id = failed_partition.map(|global| {
            let (producer, _) = explicit.partition_producer[global as usize];
            graph
                .produced_partitions(ExecutionVertexIndex(producer))
                .find(|&p| graph.partition_index(p) == global)
                .expect("the producer produces it")
        });
        let strategy = if full { FailoverStrategy::Full } else { FailoverStrategy::Region };
        let actual: Vec<u32> = tasks_to_restart(
            &graph,
            &regions,
            strategy,
            ExecutionVertexIndex(failed),
            failed_partition_id,
            &Tracked { graph: &graph, tracked: &tracked },
        )
        .into_iter()
        .map(|v| v.0)
        .collect();
        let expected = if full {
            (0..n).collect()
        } else {
            let available = |p: u32, t: ResultPartitionType| {
                type_can_be_available(t)
                    && Some(p) != failed_partition
                    && tracked[p as usize % tracked.len()]
            };
            members_of(&regions, &explicit.restart_regions(&regions, failed, &available))
        };
        prop_assert_eq!(
            &actual,
            &expected,
            "failed {} (partition {:?}) in\n{}",
            graph.execution_vertex_name(ExecutionVertexIndex(failed)),
            failed_partition,
            spec.describe()
        );
    }

    /// Pipelined pairs never cross regions, and regions are unions of whole pipelined
    /// components.
    #[test]
    fn pipelined_pairs_stay_inside_regions(spec in graph_spec()) {
        let (graph, regions) = spec.build().map_err(TestCaseError::fail)?;
        let explicit = Explicit::new(&graph);
        for (v, outputs) in explicit.outputs.iter().enumerate() {
            for &(c, _, t) in outputs {
                if t.must_be_pipelined_consumed() {
                    prop_assert_eq!(
                        regions.region_of(ExecutionVertexIndex(v as u32)),
                        regions.region_of(ExecutionVertexIndex(c))
                    );
                }
            }
        }
    }
}

/// The pointwise formulas of the reference reproduce the worked examples of the Flink
/// reference (§1.5).
#[test]
fn pointwise_pairs_match_flinks_worked_examples() {
    let consumers = |u: u32, d: u32| {
        let mut per_consumer = vec![Vec::new(); d as usize];
        for (p, c) in subtask_pairs(DistributionPattern::Pointwise, u, d) {
            per_consumer[c as usize].push(p);
        }
        per_consumer
    };
    assert_eq!(
        consumers(3, 7),
        [
            vec![0],
            vec![0],
            vec![0],
            vec![1],
            vec![1],
            vec![2],
            vec![2]
        ]
    );
    assert_eq!(consumers(7, 3), [vec![0, 1], vec![2, 3], vec![4, 5, 6]]);
    assert_eq!(consumers(4, 3), [vec![0], vec![1], vec![2, 3]]);
    assert_eq!(consumers(10, 6).concat(), (0..10).collect::<Vec<_>>());
    assert_eq!(
        consumers(6, 10),
        [0, 0, 1, 1, 2, 3, 3, 4, 4, 5].map(|p| vec![p])
    );
    assert_eq!(subtask_pairs(DistributionPattern::AllToAll, 3, 2).len(), 6);
}

// ---- Flink's RegionToRestartIn{Batch,Streaming}JobBenchmark shape ----

fn benchmark_graph(
    partition_type: ResultPartitionType,
) -> (Arc<ExecutionGraph>, Arc<PipelinedRegions>) {
    let spec = GraphSpec {
        parallelism: vec![4000, 4000],
        slot_sharing: vec![None, None],
        edges: vec![EdgeSpec {
            source: 0,
            target: 1,
            pattern: DistributionPattern::AllToAll,
            partition_type,
            shares: None,
        }],
    };
    spec.build().expect("benchmark graph")
}

struct AlwaysTracked;

impl PartitionAvailability for AlwaysTracked {
    fn is_tracked(&self, _: IntermediateResultPartitionId) -> bool {
        true
    }
}

/// Batch: 8000 singleton regions; failing source 0 restarts source 0 and every sink (4001
/// vertices), since the sinks' other inputs are available; a sink alone restarts only itself.
#[test]
fn region_to_restart_in_batch_job_benchmark_shape() {
    let (graph, regions) = benchmark_graph(ResultPartitionType::Blocking);
    assert_eq!(regions.len(), 8000);
    let restart = tasks_to_restart(
        &graph,
        &regions,
        FailoverStrategy::Region,
        ExecutionVertexIndex(0),
        None,
        &AlwaysTracked,
    );
    assert_eq!(restart.len(), 4001);
    assert_eq!(restart[0], ExecutionVertexIndex(0));
    assert!(restart[1..]
        .iter()
        .zip(4000..)
        .all(|(v, expected)| v.0 == expected));
    let sink = tasks_to_restart(
        &graph,
        &regions,
        FailoverStrategy::Region,
        ExecutionVertexIndex(4321),
        None,
        &AlwaysTracked,
    );
    assert_eq!(sink, [ExecutionVertexIndex(4321)]);
}

/// Streaming: one region of 8000 vertices, all of it restarts.
#[test]
fn region_to_restart_in_streaming_job_benchmark_shape() {
    let (graph, regions) = benchmark_graph(ResultPartitionType::Pipelined);
    assert_eq!(regions.len(), 1);
    let restart = tasks_to_restart(
        &graph,
        &regions,
        FailoverStrategy::Region,
        ExecutionVertexIndex(0),
        None,
        &AlwaysTracked,
    );
    assert_eq!(restart.len(), 8000);
}

/// The same through the scheduler, as the benchmark sets it up: sources deployed and finished,
/// sinks deployed (batch), or everything deployed and running (streaming); then source 0 fails.
#[test]
fn region_to_restart_benchmark_shape_through_the_scheduler() {
    for (partition_type, expected) in [
        (ResultPartitionType::Blocking, 4001),
        (ResultPartitionType::Pipelined, 8000),
    ] {
        let (graph, regions) = benchmark_graph(partition_type);
        let mut scheduler = Scheduler::new(graph, regions, SchedulerConfig::default());
        let location = TaskManagerLocation {
            id: TaskManagerId(0),
            data_address: ([10, 0, 0, 1], 6121).into(),
        };
        let handle = |scheduler: &mut Scheduler, event: Event| {
            scheduler.handle(0, event).expect("valid event")
        };
        handle(
            &mut scheduler,
            Event::TaskManagerRegistered {
                location,
                slots: 4000,
            },
        );
        let deployed: usize = handle(&mut scheduler, Event::Start)
            .iter()
            .map(|c| match c {
                Command::Deploy { tasks, .. } => tasks.len(),
                _ => 0,
            })
            .sum();
        let attempt = |v: u32| ExecutionAttemptId {
            vertex: v,
            attempt: 0,
        };
        if partition_type == ResultPartitionType::Blocking {
            assert_eq!(deployed, 4000, "the sources");
            for v in 0..4000 {
                handle(&mut scheduler, Event::TaskRunning(attempt(v)));
                handle(&mut scheduler, Event::TaskFinished(attempt(v)));
            }
            assert!((4000..8000)
                .all(|v| scheduler.state(ExecutionVertexIndex(v)) == ExecutionState::Deploying));
        } else {
            assert_eq!(deployed, 8000);
            for v in 0..8000 {
                handle(&mut scheduler, Event::TaskRunning(attempt(v)));
            }
        }
        let commands = handle(
            &mut scheduler,
            Event::TaskFailed(attempt(0), FailureCause::Task),
        );
        let restart = commands
            .iter()
            .find_map(|c| match c {
                Command::Restart(set) => Some(set.len()),
                _ => None,
            })
            .expect("a restart");
        assert_eq!(restart, expected, "{partition_type}");
    }
}
