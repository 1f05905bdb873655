//! Speculative execution through whole simulated runs: slow TaskManagers slow a batch job down,
//! speculation wins most of that back (in simulated time, which is deterministic), consumers
//! only ever read a winning attempt's output, and with speculation off every trace is the one
//! of a simulator without the feature.

use std::collections::HashSet;

use conflux_deploy::{ExecutionAttemptId, ExecutionState, ProducerStates};
use conflux_graph::{generate, ExecutionVertexIndex, ResultPartitionType};
use conflux_scheduler::{Command, Event, JobStatus, Scheduler, SpeculativeExecutionOptions};
use conflux_sim::{
    simulate, Faults, MemoryBlobEnvironment, Observer, SimulationConfig, SimulationReport,
    SlowTaskManagers,
};
use conflux_test_support::job_graphs::build;

/// `conflux run` of a blocking word count of `parallelism` with `configure` applied to the
/// CLI's defaults.
fn run(
    parallelism: u32,
    configure: impl FnOnce(&mut SimulationConfig),
    observer: &mut dyn Observer,
) -> SimulationReport {
    let (graph, regions) = build(&generate::word_count(
        parallelism,
        ResultPartitionType::Blocking,
    ));
    let mut config = SimulationConfig::for_job_type(graph.job_graph().job_type());
    configure(&mut config);
    simulate(
        graph,
        regions,
        &config,
        &MemoryBlobEnvironment::new(),
        observer,
    )
    .expect("runs")
}

/// Speculation on, with the lower bound at 0 (Flink's 1 min is longer than these 1-2 s
/// tasks).
fn speculative() -> SpeculativeExecutionOptions {
    SpeculativeExecutionOptions {
        enabled: true,
        baseline_lower_bound_ms: 0,
        ..SpeculativeExecutionOptions::default()
    }
}

/// Digests and virtual times of `conflux run` on a 50 x 50 word count, recorded with the
/// simulator before speculative execution existed: with the feature off nothing may change.
#[test]
fn speculation_off_keeps_every_trace() {
    let plain = |config: &mut SimulationConfig| config.seed = 1;
    let report = run(50, plain, &mut ());
    assert_eq!(
        (report.trace_digest, report.virtual_ms),
        (0xf864_b0cc_92aa_9007, 3_913)
    );
    let faulty = |config: &mut SimulationConfig| {
        config.seed = 7;
        config.slots_per_task_manager = 3;
        config.faults = Faults {
            task_failure: 0.05,
            partition_not_found: 0.02,
            task_manager_losses: 2,
            blob_server_restarts: 0,
        };
    };
    let report = run(50, faulty, &mut ());
    assert_eq!(
        (report.trace_digest, report.virtual_ms, report.restarts),
        (0x5840_36f0_68d5_f9ac, 9_132, 2)
    );
    // Options set but speculation off: the same run.
    let off = run(
        50,
        |config| {
            faulty(config);
            config.scheduler.speculative = SpeculativeExecutionOptions {
                enabled: false,
                ..speculative()
            };
        },
        &mut (),
    );
    assert_eq!(off.trace_digest, report.trace_digest);
    assert_eq!(off.speculative, Default::default());
}

/// Checks after every event that each deployed consumer's producers are finished attempts that
/// were never cancelled: only a winner's output is read.
#[derive(Default)]
struct OnlyWinnersRead {
    cancelled: HashSet<ExecutionAttemptId>,
    consumers_checked: u64,
}

impl Observer for OnlyWinnersRead {
    fn on_handled(&mut self, _: u64, _: &Event, commands: &[Command], scheduler: &Scheduler) {
        for c in commands {
            if let Command::Cancel(a) = c {
                self.cancelled.insert(*a);
            }
        }
        let graph = scheduler.graph();
        let sources = graph.execution_vertices_of(conflux_graph::JobVertexIndex(0));
        for c in commands {
            let Command::Deploy { tasks, .. } = c else {
                continue;
            };
            for (a, _) in tasks {
                if sources.contains(&a.vertex) {
                    continue;
                }
                self.consumers_checked += 1;
                for p in sources.clone() {
                    let producer = scheduler.producer(ExecutionVertexIndex(p));
                    assert_eq!(producer.state, ExecutionState::Finished);
                    assert!(
                        !self.cancelled.contains(&producer.attempt),
                        "{a:?} would read the output of the cancelled {:?}",
                        producer.attempt
                    );
                }
            }
        }
    }
}

/// A 100 x 100 word count on 10 TaskManagers, one of them 10x slower: its tasks take 10-20 s
/// instead of 1-2 s, in both stages. Speculation re-runs them elsewhere once they pass 1.5 x
/// the median, so the job finishes at least twice as soon in simulated time.
#[test]
fn speculation_finishes_a_job_with_a_slow_task_manager_at_least_twice_as_soon() {
    let slow = |config: &mut SimulationConfig| {
        config.seed = 3;
        config.slow_task_managers = SlowTaskManagers {
            count: 1,
            slowdown: 10.0,
        };
    };
    let without = run(100, slow, &mut ());
    assert_eq!(without.status, JobStatus::Finished);
    assert!(without.virtual_ms >= 20_000, "{}", without.virtual_ms);
    let mut observer = OnlyWinnersRead::default();
    let with = run(
        100,
        |config| {
            slow(config);
            config.scheduler.speculative = speculative();
        },
        &mut observer,
    );
    assert_eq!(with.status, JobStatus::Finished);
    assert_eq!(with.restarts, 0);
    assert!(
        with.virtual_ms * 2 <= without.virtual_ms,
        "with speculation {} ms, without {} ms",
        with.virtual_ms,
        without.virtual_ms
    );
    let stats = with.speculative;
    assert!(stats.started >= 10, "{stats:?}");
    assert!(stats.won >= 10, "{stats:?}");
    assert_eq!(stats.started, stats.won + stats.cancelled + stats.failed);
    assert_eq!(observer.consumers_checked, 100);
    // Deterministic: the same seed gives the same run.
    let again = run(
        100,
        |config| {
            slow(config);
            config.scheduler.speculative = speculative();
        },
        &mut (),
    );
    assert_eq!(again.trace_digest, with.trace_digest);
    assert_eq!(again.speculative, with.speculative);
}
