//! A naive reference of the execution graph's edges and of region failover, and the small
//! random job graphs the scheduler and simulator tests draw.
//!
//! The reference materialises every (producer subtask, consumer subtask) pair of every job edge
//! with Flink's pointwise formulas, written out independently of the graph crate's group
//! arithmetic, and runs the region-failover rules (Flink's
//! `RestartPipelinedRegionFailoverStrategy`) without any visited-group shortcut: the failed
//! region; every consumer region of a restarted region's produced partitions, whatever the type;
//! the producer region of every consumed partition that is not available.

// Test graphs are tiny: index casts cannot truncate.
#![allow(clippy::cast_possible_truncation)]

use std::collections::VecDeque;
use std::sync::Arc;

use conflux_common::SplitMix64;
use conflux_graph::json::{JobEdgeJson, JobGraphJson, JobVertexJson};
use conflux_graph::{
    DistributionPattern, ExecutionGraph, ExecutionVertexIndex, IntermediateResultPartitionId,
    JobGraph, PipelinedRegionIndex, PipelinedRegions, ResultPartitionType,
};

// ---- seeded randomness ----

/// The generator of the seeded graphs and faults: SplitMix64.
pub type Rng = SplitMix64;

/// The generator for `seed`: a seed names a graph and its faults on every platform.
pub fn rng_for_seed(seed: u64) -> Rng {
    SplitMix64::new(seed ^ 0x5851_f42d_4c95_7f2d)
}

// ---- small random job graphs ----

/// One job edge of a [`GraphSpec`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeSpec {
    /// The producing vertex (its position in [`GraphSpec::parallelism`]).
    pub source: usize,
    /// The consuming vertex, after `source`.
    pub target: usize,
    /// POINTWISE or ALL_TO_ALL.
    pub pattern: DistributionPattern,
    /// The result partition type.
    pub partition_type: ResultPartitionType,
    /// Consumes the data set of this earlier edge (same source, pattern and type; a consumer of
    /// the same parallelism): one result with several consumer job vertices.
    pub shares: Option<usize>,
}

/// A small job graph: vertices `v0..vN` in topological order, edges only forward.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphSpec {
    /// Parallelism per vertex `v<i>`.
    pub parallelism: Vec<u32>,
    /// Slot sharing group per vertex (`None`: the default group).
    pub slot_sharing: Vec<Option<u8>>,
    /// The job edges, pointing forward.
    pub edges: Vec<EdgeSpec>,
}

/// The types the simulation draws from, with weights.
pub const SIMULATED_TYPES: [(ResultPartitionType, u64); 6] = [
    (ResultPartitionType::Pipelined, 3),
    (ResultPartitionType::PipelinedBounded, 3),
    (ResultPartitionType::Blocking, 4),
    (ResultPartitionType::HybridFull, 3),
    (ResultPartitionType::HybridSelective, 3),
    (ResultPartitionType::BlockingPersistent, 1),
];

/// An edge before normalisation: endpoints in any order, `share` asks to reuse a data set.
pub type RawEdge = (usize, usize, DistributionPattern, ResultPartitionType, bool);

impl GraphSpec {
    /// A graph from raw parts: self-loops are dropped, edges point forward, and an edge asking
    /// to share joins the first earlier edge it can (same source, consumer of equal parallelism
    /// that does not consume that data set yet), taking its pattern and type.
    pub fn new(parallelism: Vec<u32>, slot_sharing: Vec<Option<u8>>, raw: &[RawEdge]) -> GraphSpec {
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
    pub fn random(rng: &mut Rng, types: &[(ResultPartitionType, u64)]) -> GraphSpec {
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
    pub fn job_type(&self) -> &'static str {
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

    /// The job graph JSON of the spec (vertices `v0..vN`).
    pub fn to_json(&self) -> JobGraphJson {
        JobGraphJson {
            name: "random".to_owned(),
            job_type: self.job_type().to_owned(),
            vertices: self
                .parallelism
                .iter()
                .zip(&self.slot_sharing)
                .enumerate()
                .map(|(i, (&p, s))| JobVertexJson {
                    slot_sharing_group: s.map(|g| format!("ssg{g}")),
                    ..JobVertexJson::new(
                        format!("v{i}"),
                        i32::try_from(p).expect("parallelism fits in i32"),
                    )
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
    pub fn build(&self) -> Result<(Arc<ExecutionGraph>, Arc<PipelinedRegions>), String> {
        let job = JobGraph::from_json(&self.to_json()).map_err(|e| e.to_string())?;
        let graph = ExecutionGraph::build(job).map_err(|e| e.to_string())?;
        let regions = PipelinedRegions::compute(&graph).map_err(|e| e.to_string())?;
        Ok((Arc::new(graph), Arc::new(regions)))
    }

    /// Pretty JSON, for failure messages.
    pub fn describe(&self) -> String {
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
pub type Input = (u32, u32, ResultPartitionType);
/// One consumer of a produced partition: (consumer vertex, global partition index, type).
pub type Output = (u32, u32, ResultPartitionType);

/// Every (producer subtask, consumer subtask) pair of every job edge, per vertex.
#[derive(Debug)]
pub struct Explicit {
    /// Per vertex, every partition it reads.
    pub inputs: Vec<Vec<Input>>,
    /// Per vertex, every consumer of its partitions.
    pub outputs: Vec<Vec<Output>>,
    /// Per global partition: its producer and type.
    pub partition_producer: Vec<(u32, ResultPartitionType)>,
    /// Per vertex: the global indices of the partitions it produces.
    pub produced: Vec<Vec<u32>>,
}

/// The (producer, consumer) subtask pairs of a `U -> D` edge, by Flink's formulas: ALL_TO_ALL
/// every pair; POINTWISE `U >= D` consumer `i` reads `[floor(i*U/D), floor((i+1)*U/D))`,
/// `U < D` partition `p` feeds `[ceil(p*D/U), ceil((p+1)*D/U))`.
pub fn subtask_pairs(pattern: DistributionPattern, u: u32, d: u32) -> Vec<(u32, u32)> {
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
    /// Materialises every pair of `graph`: O(U x D) per edge, for small test graphs only.
    pub fn new(graph: &ExecutionGraph) -> Explicit {
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
                let global = graph
                    .partition_index(IntermediateResultPartitionId {
                        result: conflux_graph::IntermediateDataSetIndex(r as u32),
                        partition: p,
                    })
                    .0;
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
                let global = graph
                    .partition_index(IntermediateResultPartitionId {
                        result: edge.data_set,
                        partition: p,
                    })
                    .0;
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
    pub fn restart_regions(
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
pub fn members_of(regions: &PipelinedRegions, flags: &[bool]) -> Vec<u32> {
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
pub fn type_can_be_available(t: ResultPartitionType) -> bool {
    matches!(
        t,
        ResultPartitionType::Blocking
            | ResultPartitionType::BlockingPersistent
            | ResultPartitionType::HybridFull
            | ResultPartitionType::PipelinedApproximate
    )
}
