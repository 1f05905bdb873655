//! The scheduler core: computing tasks to restart, and running whole jobs in the simulator.
//!
//! - `tasks_to_restart`: source subtask 0 of the 10k x 10k word count fails. Blocking: its
//!   region plus all 10,000 consumer regions, 10,001 vertices (target <= 1 ms; Flink 1.14: 170 ms,
//!   Flink 1.20 on 2 cores: 19 ms). Pipelined: one region of 20,000.
//! - `run_word_count`: the whole job (scheduling, slots, TDDs for every task, TaskManager-side
//!   loading, virtual-time run) in the simulator with an in-memory blob store, N = 1k, 10k, 100k:
//!   the series should grow linearly. `conflux run` reports the same with a real blob server.
//! - `longest_handler_call_100k`: the longest single scheduler call (`handle` or
//!   `continue_work`) over a whole run of the 100k x 100k blocking word count, driven directly
//!   (every deployed task runs and finishes, FIFO; no descriptors), with the default work budget
//!   and without a budget. Each sample is the longest call of one run. The last source's
//!   finish makes 100,000 consumer regions schedulable at once: without a budget that one call
//!   does all of them (and `Start` all 100,000 sources); with the default budget no call may
//!   take more than 10 ms. Then, from sources finished and all 100,000 consumers running, with
//!   the default budget: `task_manager_lost` (its sources' partitions are lost, so every
//!   consumer restarts: one failover of 100,010 vertices and 100,000 cancel commands, outside
//!   the budget), `full_failover` (a consumer fails under full failover), `cancel`, and the
//!   restart that falls due after each failover (`*_restart`: resetting the vertices is outside
//!   the budget, rescheduling them is within it).

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::collections::VecDeque;
use std::hint::black_box;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use conflux_deploy::{TaskManagerId, TaskManagerLocation};
use conflux_graph::{
    generate, ExecutionGraph, ExecutionVertexIndex, IntermediateResultPartitionId, JobGraph,
    PipelinedRegions, ResultPartitionType,
};
use conflux_scheduler::{
    tasks_to_restart, Command, Event, FailoverStrategy, FailureCause, JobStatus,
    PartitionAvailability, Scheduler, SchedulerConfig,
};
use conflux_sim::{simulate, MemoryBlobEnvironment, SimulationConfig};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

fn build(n: u32, t: ResultPartitionType) -> (Arc<ExecutionGraph>, Arc<PipelinedRegions>) {
    let job = JobGraph::from_json(&generate::word_count(n, t)).expect("valid");
    let graph = ExecutionGraph::build(job).expect("expands");
    let regions = PipelinedRegions::compute(&graph).expect("regions");
    (Arc::new(graph), Arc::new(regions))
}

/// Every partition is held (sources finished, as in Flink's benchmark).
struct AllAvailable;

impl PartitionAvailability for AllAvailable {
    fn is_tracked(&self, _: IntermediateResultPartitionId) -> bool {
        true
    }
}

fn bench_restart(c: &mut Criterion) {
    let mut group = c.benchmark_group("tasks_to_restart_10k");
    for (t, expected) in [
        (ResultPartitionType::Blocking, 10_001),
        (ResultPartitionType::Pipelined, 20_000),
    ] {
        let (graph, regions) = build(10_000, t);
        let restart = tasks_to_restart(
            &graph,
            &regions,
            FailoverStrategy::Region,
            ExecutionVertexIndex(0),
            None,
            &AllAvailable,
        );
        assert_eq!(restart.len(), expected, "{t}");
        group.bench_function(t.as_str(), |b| {
            b.iter(|| {
                black_box(tasks_to_restart(
                    &graph,
                    &regions,
                    FailoverStrategy::Region,
                    ExecutionVertexIndex(0),
                    None,
                    &AllAvailable,
                ))
            });
        });
    }
    group.finish();
}

fn bench_run(c: &mut Criterion) {
    let mut group = c.benchmark_group("run_word_count_blocking");
    group.sample_size(10);
    for n in [1_000u32, 10_000, 100_000] {
        let (graph, regions) = build(n, ResultPartitionType::Blocking);
        let config = SimulationConfig::for_job_type(graph.job_graph().job_type());
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                let report = simulate(
                    Arc::clone(&graph),
                    Arc::clone(&regions),
                    &config,
                    &MemoryBlobEnvironment::new(),
                    &mut (),
                )
                .expect("runs");
                assert_eq!(report.status, JobStatus::Finished);
                black_box(report)
            });
        });
    }
    group.finish();
}

/// The scheduler of a word count driven directly: TaskManagers of 10 slots, every deployed task
/// reported running, and finished when `finish` says so, in FIFO order; owed work is continued
/// before each next event.
struct Drive {
    s: Scheduler,
    now: u64,
    events: VecDeque<Event>,
    /// Which deployed vertices finish (the others keep running).
    finish: fn(u32) -> bool,
    /// When kept, the longest calls so far with what they handled, longest first.
    longest: Option<Vec<(Duration, String)>>,
}

impl Drive {
    fn new(
        graph: &Arc<ExecutionGraph>,
        regions: &Arc<PipelinedRegions>,
        config: SchedulerConfig,
        finish: fn(u32) -> bool,
    ) -> Drive {
        let task_managers = graph.num_execution_vertices().div_ceil(2).div_ceil(10);
        let mut events: VecDeque<Event> = (0..task_managers)
            .map(|tm| Event::TaskManagerRegistered {
                location: TaskManagerLocation {
                    id: TaskManagerId(tm),
                    data_address: SocketAddr::from((Ipv4Addr::LOCALHOST, 6121)),
                },
                slots: 10,
            })
            .collect();
        events.push_back(Event::Start);
        Drive {
            s: Scheduler::new(Arc::clone(graph), Arc::clone(regions), config),
            now: 0,
            events,
            finish,
            longest: None,
        }
    }

    /// Keeps `took` among the five longest calls (when they are kept).
    fn note(&mut self, took: Duration, what: Option<String>) {
        if let (Some(longest), Some(what)) = (&mut self.longest, what) {
            longest.push((took, what));
            longest.sort_by_key(|c| std::cmp::Reverse(c.0));
            longest.truncate(5);
        }
    }

    /// Handles one event and continues its work; the longest of those calls.
    fn call(&mut self, event: Event) -> Duration {
        let what = self.longest.is_some().then(|| format!("{event:?}"));
        let call = Instant::now();
        let mut commands = self.s.handle(self.now, event).expect("valid event");
        let mut longest = call.elapsed();
        self.note(longest, what);
        while self.s.has_pending_work() {
            let call = Instant::now();
            let more = self.s.continue_work().expect("continues");
            let took = call.elapsed();
            longest = longest.max(took);
            self.note(took, Some("continue_work".to_owned()));
            commands.extend(more);
        }
        for c in commands {
            if let Command::Deploy { tasks, .. } = c {
                for (a, _) in tasks {
                    self.events.push_back(Event::TaskRunning(a));
                    if (self.finish)(a.vertex) {
                        self.events.push_back(Event::TaskFinished(a));
                    }
                }
            }
        }
        longest
    }

    /// Runs until no event is left; the longest call.
    fn run(&mut self) -> Duration {
        let mut longest = Duration::ZERO;
        while let Some(event) = self.events.pop_front() {
            self.now += 1;
            longest = longest.max(self.call(event));
        }
        longest
    }
}

/// The event a scenario sends to the running job.
type ScenarioEvent = fn(&Drive) -> Event;

/// The 100k x 100k word count: sources are vertices 0..100,000.
const N: u32 = 100_000;

fn bench_longest_call(c: &mut Criterion) {
    let mut group = c.benchmark_group("longest_handler_call_100k");
    group
        .sample_size(10)
        .sampling_mode(criterion::SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    let (graph, regions) = build(N, ResultPartitionType::Blocking);
    // What the longest calls of one run handle, with the default budget (the first run is
    // cold) and with 2^19, the default before the measurements in `DEFAULT_WORK_BUDGET`'s docs.
    for (run, budget) in [
        (
            "cold, default budget",
            SchedulerConfig::default().work_budget,
        ),
        (
            "warm, default budget",
            SchedulerConfig::default().work_budget,
        ),
        ("warm, budget 2^19", 1 << 19),
    ] {
        let config = SchedulerConfig {
            work_budget: budget,
            ..SchedulerConfig::default()
        };
        let mut drive = Drive::new(&graph, &regions, config, |_| true);
        drive.longest = Some(Vec::new());
        drive.run();
        println!("longest calls of a 100k x 100k run ({run}):");
        for (took, what) in drive.longest.unwrap_or_default() {
            let what: String = what.chars().take(100).collect();
            println!("  {:>8.3} ms  {what}", took.as_secs_f64() * 1e3);
        }
    }
    for (name, budget) in [
        ("default_budget", SchedulerConfig::default().work_budget),
        ("unbounded", u32::MAX),
    ] {
        let config = SchedulerConfig {
            work_budget: budget,
            ..SchedulerConfig::default()
        };
        group.bench_function(format!("run/{name}"), |b| {
            // The measured time is the longest call of each run, not the run.
            b.iter_custom(|runs| {
                (0..runs)
                    .map(|_| {
                        let mut drive = Drive::new(&graph, &regions, config, |_| true);
                        let longest = drive.run();
                        assert_eq!(drive.s.status(), JobStatus::Finished);
                        longest
                    })
                    .sum()
            });
        });
    }
    // Failover and cancel with the default budget, from sources finished and all consumers
    // running: the call of the event (and its continuations), then the restart that falls due.
    let running = |failover: FailoverStrategy| {
        let config = SchedulerConfig {
            failover,
            ..SchedulerConfig::default()
        };
        let mut drive = Drive::new(&graph, &regions, config, |v| v < N);
        drive.run();
        drive
    };
    let scenarios: [(&str, FailoverStrategy, ScenarioEvent); 3] = [
        // Its finished sources' partitions are lost: every consumer restarts.
        ("task_manager_lost", FailoverStrategy::Region, |_| {
            Event::TaskManagerLost(TaskManagerId(0))
        }),
        ("full_failover", FailoverStrategy::Full, |d| {
            Event::TaskFailed(d.s.attempt(ExecutionVertexIndex(N)), FailureCause::Task)
        }),
        ("cancel", FailoverStrategy::Region, |_| Event::Cancel),
    ];
    for (name, failover, event) in scenarios {
        group.bench_function(name, |b| {
            b.iter_custom(|runs| {
                (0..runs)
                    .map(|_| {
                        let mut drive = running(failover);
                        let e = event(&drive);
                        drive.now += 1;
                        drive.call(e)
                    })
                    .sum()
            });
        });
    }
    for (name, failover) in [
        ("task_manager_lost_restart", FailoverStrategy::Region),
        ("full_failover_restart", FailoverStrategy::Full),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|runs| {
                (0..runs)
                    .map(|_| {
                        let mut drive = running(failover);
                        drive.now += 1;
                        let e = if failover == FailoverStrategy::Full {
                            let a = drive.s.attempt(ExecutionVertexIndex(N));
                            Event::TaskFailed(a, FailureCause::Task)
                        } else {
                            Event::TaskManagerLost(TaskManagerId(0))
                        };
                        drive.call(e);
                        drive.events.clear();
                        drive.now = drive.s.next_timer().expect("a restart is due");
                        drive.call(Event::Tick)
                    })
                    .sum()
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_restart, bench_run, bench_longest_call);
criterion_main!(benches);
