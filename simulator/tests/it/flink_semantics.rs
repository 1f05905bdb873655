//! Flink 1.20's slot and restart semantics through whole simulated runs: batch jobs on fewer
//! slots than tasks finish (a slot request fails only when it could never be served), and
//! simultaneous failures are one restart attempt whose regions come back together.

use conflux_graph::{generate, JobGraphJson, ResultPartitionType};
use conflux_scheduler::{Command, Event, FailoverStrategy, JobStatus, RestartStrategy, Scheduler};
use conflux_sim::{simulate, MemoryBlobEnvironment, Observer, SimulationConfig, SimulationReport};
use conflux_test_support::job_graphs::build;

/// The `conflux run` flags these tests set; the rest are the CLI's defaults.
#[derive(Clone, Copy)]
struct Flags {
    task_managers: u32,
    slots: u32,
    task_manager_losses: u32,
    restart_attempts: u32,
    seed: u64,
    failover: FailoverStrategy,
}

impl Flags {
    /// `--task-managers N --slots S`, no faults, unlimited restarts, seed 42, region failover.
    fn cluster(task_managers: u32, slots: u32) -> Flags {
        Flags {
            task_managers,
            slots,
            task_manager_losses: 0,
            restart_attempts: u32::MAX,
            seed: 42,
            failover: FailoverStrategy::Region,
        }
    }
}

/// `conflux run FILE` with `flags`.
fn run(json: &JobGraphJson, flags: Flags, observer: &mut dyn Observer) -> SimulationReport {
    let (graph, regions) = build(json);
    let mut config = SimulationConfig::for_job_type(graph.job_graph().job_type());
    config.task_managers = Some(flags.task_managers);
    config.slots_per_task_manager = flags.slots;
    config.seed = flags.seed;
    config.faults.task_manager_losses = flags.task_manager_losses;
    config.scheduler.restart = RestartStrategy::exponential_default(flags.restart_attempts);
    config.scheduler.seed = flags.seed;
    config.scheduler.failover = flags.failover;
    simulate(
        graph,
        regions,
        &config,
        &MemoryBlobEnvironment::new(),
        observer,
    )
    .expect("runs")
}

/// The job ended FINISHED (else the failure reason is shown).
fn assert_finished(report: &SimulationReport) {
    assert_eq!(
        report.status,
        JobStatus::Finished,
        "{:?}",
        report.failure_reason
    );
}

struct Quiet;
impl Observer for Quiet {}

fn json(text: &str) -> JobGraphJson {
    serde_json::from_str(text).expect("job graph JSON")
}

/// `{"job_type": "batch", "vertices": [{"id": "A", "parallelism": 300}], "edges": []}` with
/// `--task-managers 1 --slots 1` failed after 201 deploys ("could not acquire a slot within
/// 300000 ms"); Flink 1.20 runs the 300 tasks one after another.
#[test]
fn batch_job_of_300_tasks_finishes_on_one_slot() {
    let job = json(
        r#"{"job_type": "batch", "vertices": [{"id": "A", "parallelism": 300}], "edges": []}"#,
    );
    let report = run(&job, Flags::cluster(1, 1), &mut Quiet);
    assert_finished(&report);
    assert_eq!(report.tasks_deployed, 300);
    assert!(
        report.virtual_ms > 300_000,
        "tasks of 1-2 s ran one at a time: {}",
        report.virtual_ms
    );
}

/// The 10k x 10k blocking word count on 5 TaskManagers (50 slots for 20,000 tasks) finishes.
#[test]
fn word_count_10k_finishes_on_five_task_managers() {
    let job = generate::word_count(10_000, ResultPartitionType::Blocking);
    let report = run(&job, Flags::cluster(5, 10), &mut Quiet);
    assert_finished(&report);
    assert_eq!(report.tasks_deployed, 20_000);
}

/// Records, per virtual time, the regions deployed after the first restart.
#[derive(Default)]
struct Rounds {
    restart_sets: Vec<(u64, usize)>,
    redeploy_times: Vec<u64>,
    deploys_after_restart: usize,
}

impl Observer for Rounds {
    fn on_handled(&mut self, now_ms: u64, _: &Event, commands: &[Command], _: &Scheduler) {
        for c in commands {
            match c {
                Command::Restart(set) => self.restart_sets.push((now_ms, set.len())),
                Command::Deploy { .. } if !self.restart_sets.is_empty() => {
                    self.deploys_after_restart += 1;
                    self.redeploy_times.push(now_ms);
                }
                _ => {}
            }
        }
    }
}

const STREAMING_POINTWISE: &str = r#"{"job_type": "streaming", "vertices": [{"id": "A", "parallelism": 10}, {"id": "B", "parallelism": 10}], "edges": [{"source": "A", "target": "B", "distribution_pattern": "pointwise", "result_partition_type": "pipelined"}]}"#;

/// `conflux generate wordcount --parallelism 10 --result-partition-type pipelined` on
/// `--task-managers 1 --slots 2 --restart-attempts 5`: the streaming job's one region needs 10
/// slots of 2. An earlier Conflux failed it at the first slot request timeout (300 s, no
/// restart); as Flink's bulk checker, the timeout fails the tasks with
/// `NoResourceAvailableException` through the restart strategy: 5 restarts after 1, 1.5, 2.25,
/// 3.375 and 5.06 s (each +-10 % jitter), 6 timeouts, FAILED at about 1,813 s.
#[test]
fn a_job_that_can_never_get_its_slots_restarts_then_fails() {
    let job = generate::word_count(10, ResultPartitionType::Pipelined);
    let flags = Flags {
        restart_attempts: 5,
        ..Flags::cluster(1, 2)
    };
    let report = run(&job, flags, &mut Quiet);
    assert_eq!(report.status, JobStatus::Failed);
    assert_eq!(report.restarts, 5);
    assert!(
        (1_811_000..=1_815_000).contains(&report.virtual_ms),
        "{}",
        report.virtual_ms
    );
    let reason = report.failure_reason.expect("a reason");
    assert!(
        reason.starts_with("Recovery is suppressed by the restart strategy ExponentialDelayRestartBackoffTimeStrategy"),
        "{reason}"
    );
    assert!(
        reason.contains("NoResourceAvailableException: could not acquire a slot within 300000 ms"),
        "{reason}"
    );
}

/// `--task-managers 2 --slots 5 --task-manager-losses 1 --restart-attempts 1 --seed 2`.
fn loss_flags(failover: FailoverStrategy) -> Flags {
    Flags {
        task_manager_losses: 1,
        restart_attempts: 1,
        seed: 2,
        failover,
        ..Flags::cluster(2, 5)
    }
}

/// One TaskManager loss fails the 5 regions on it: with `--restart-attempts 1` that ended
/// FAILED (the restart strategy allowed no more restarts), and with more attempts the regions came
/// back staggered. As Flink 1.20 (FLIP-364) the failures are one attempt, and all five regions
/// are redeployed together after one back-off.
#[test]
fn task_manager_loss_is_one_restart_with_regions_back_in_one_round() {
    let job = json(STREAMING_POINTWISE);
    let mut rounds = Rounds::default();
    let report = run(&job, loss_flags(FailoverStrategy::Region), &mut rounds);
    assert_finished(&report);
    assert_eq!(report.restarts, 1);
    assert_eq!(
        rounds.restart_sets.len(),
        5,
        "five regions failed: {:?}",
        rounds.restart_sets
    );
    assert!(rounds
        .restart_sets
        .iter()
        .all(|&(t, n)| t == rounds.restart_sets[0].0 && n == 2));
    assert_eq!(
        rounds.deploys_after_restart, 5,
        "each region redeployed once"
    );
    let first = rounds.redeploy_times[0];
    assert!(
        rounds.redeploy_times.iter().all(|&t| t == first),
        "one round: {:?}",
        rounds.redeploy_times
    );
    assert!(
        first >= rounds.restart_sets[0].0 + 900,
        "after the 1 s back-off (less its jitter of up to 10 %)"
    );
    assert_eq!(report.tasks_deployed, 30);
}

/// The same with `--failover full`: one restart of all 20 tasks.
#[test]
fn task_manager_loss_with_full_failover_is_one_restart() {
    let job = json(STREAMING_POINTWISE);
    let mut rounds = Rounds::default();
    let report = run(&job, loss_flags(FailoverStrategy::Full), &mut rounds);
    assert_finished(&report);
    assert_eq!(report.restarts, 1);
    assert_eq!(report.tasks_deployed, 40);
}
