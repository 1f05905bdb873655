//! `tasks_to_restart` against a naive reference over explicit edges, plus the shape of Flink's
//! "region to restart" benchmark as a worked example.
//!
//! The reference is `conflux_test_support::reference`; the simulator's tests use the same graphs
//! and the same reference.

use std::sync::Arc;

use conflux_deploy::{ExecutionAttemptId, ExecutionState, TaskManagerId, TaskManagerLocation};
use conflux_graph::{
    DistributionPattern, ExecutionGraph, ExecutionVertexIndex, IntermediateResultPartitionId,
    PipelinedRegions, ResultPartitionType,
};
use conflux_scheduler::{
    tasks_to_restart, Command, Event, FailoverStrategy, FailureCause, PartitionAvailability,
    Scheduler, SchedulerConfig,
};
use proptest::prelude::*;
use proptest::sample::Index;

use conflux_test_support::reference::*;

// ---- property: tasks_to_restart == reference ----

struct Tracked<'a> {
    graph: &'a ExecutionGraph,
    tracked: &'a [bool],
}

impl PartitionAvailability for Tracked<'_> {
    fn is_tracked(&self, p: IntermediateResultPartitionId) -> bool {
        self.tracked[self.graph.partition_index(p).idx() % self.tracked.len()]
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
                        graph
                            .partition_index(IntermediateResultPartitionId {
                                result: group.result,
                                partition: p,
                            })
                            .0
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
                .find(|&p| graph.partition_index(p).0 == global)
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
        // A strategy that restarts (Flink's default without checkpointing would fail the job).
        let config = SchedulerConfig {
            restart: conflux_scheduler::RestartStrategy::FixedDelay {
                attempts: 1,
                delay_ms: 1,
            },
            ..SchedulerConfig::default()
        };
        let mut scheduler = Scheduler::new(graph, regions, config);
        let location = TaskManagerLocation {
            id: TaskManagerId(0),
            data_address: ([10, 0, 0, 1], 6121).into(),
        };
        // A call and its continuations (a driver finishes owed work before its next event).
        let handle = |scheduler: &mut Scheduler, event: Event| {
            let mut commands = scheduler.handle(0, event).expect("valid event");
            while scheduler.has_pending_work() {
                commands.extend(scheduler.continue_work().expect("continues"));
            }
            commands
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
