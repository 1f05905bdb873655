//! Speculative execution, driven through the scheduler's event API: a slow source of a 4 x 4
//! blocking word count gets a speculative attempt on the other TaskManager; the race is won by
//! one attempt or the other, the original may fail, and the slow TaskManager is blocked.
//!
//! The set-up of every test: TaskManager 0 and 1 of 4 slots each; sources `A#0..3` (vertices
//! 0-3) fill TaskManager 0 at time 0. `A#0..2` finish at 1,000 ms; with a baseline ratio of 0.5
//! the baseline is the median of the round(4 x 0.5) = 2 shortest times (1,000) x 1.5 = 1,500 ms,
//! so `A#3` becomes slow at 1,500 ms.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use conflux_deploy::{
    AllocationId, ExecutionAttemptId, ProducerStates, TaskManagerId, TaskManagerLocation,
};
use conflux_graph::{generate, ExecutionGraph, ExecutionVertexIndex, JobGraph, PipelinedRegions};
use conflux_graph::{IntermediateDataSetIndex, IntermediateResultPartitionId, ResultPartitionType};
use conflux_scheduler::{
    Command, Event, FailureCause, JobStatus, RestartStrategy, Scheduler, SchedulerConfig,
    SpeculativeExecutionOptions, SpeculativeStats,
};

const SLOW: ExecutionVertexIndex = ExecutionVertexIndex(3);

fn options() -> SpeculativeExecutionOptions {
    SpeculativeExecutionOptions {
        enabled: true,
        baseline_ratio: 0.5,
        baseline_lower_bound_ms: 0,
        ..SpeculativeExecutionOptions::default()
    }
}

fn location(tm: u32) -> TaskManagerLocation {
    TaskManagerLocation {
        id: TaskManagerId(tm),
        data_address: SocketAddr::from((
            Ipv4Addr::LOCALHOST,
            6121 + u16::try_from(tm).unwrap_or(0),
        )),
    }
}

fn slot(tm: u32, slot: u32) -> AllocationId {
    AllocationId {
        task_manager: TaskManagerId(tm),
        slot,
    }
}

fn attempt(vertex: u32, attempt: u32) -> ExecutionAttemptId {
    ExecutionAttemptId { vertex, attempt }
}

fn handle(s: &mut Scheduler, now: u64, event: Event) -> Vec<Command> {
    s.handle(now, event).expect("a valid event")
}

/// The restart strategy of most tests: restarts after 1 s, up to 10.
const RESTARTS: RestartStrategy = RestartStrategy::FixedDelay {
    attempts: 10,
    delay_ms: 1_000,
};

/// The word count running with `A#0..2` finished at 1,000 ms and `A#3` still running on
/// TaskManager 0.
fn started(options: SpeculativeExecutionOptions) -> Scheduler {
    started_with(options, RESTARTS, 2)
}

/// As [`started`], with a restart strategy and `task_managers` TaskManagers of 4 slots.
fn started_with(
    options: SpeculativeExecutionOptions,
    restart: RestartStrategy,
    task_managers: u32,
) -> Scheduler {
    let json = generate::word_count(4, ResultPartitionType::Blocking);
    let graph = Arc::new(
        ExecutionGraph::build(JobGraph::from_json(&json).expect("valid")).expect("expands"),
    );
    let regions = Arc::new(PipelinedRegions::compute(&graph).expect("regions"));
    let config = SchedulerConfig {
        speculative: options,
        restart,
        ..SchedulerConfig::default()
    };
    let mut s = Scheduler::new(graph, regions, config);
    for tm in 0..task_managers {
        handle(
            &mut s,
            0,
            Event::TaskManagerRegistered {
                location: location(tm),
                slots: 4,
            },
        );
    }
    let out = handle(&mut s, 0, Event::Start);
    assert_eq!(
        deployed(&out),
        [0, 1, 2, 3].map(|v| (attempt(v, 0), slot(0, v)))
    );
    for v in 0..4 {
        handle(&mut s, 1, Event::TaskRunning(attempt(v, 0)));
    }
    for v in 0..3 {
        handle(&mut s, 1_000, Event::TaskFinished(attempt(v, 0)));
    }
    s
}

/// Every task of the deploy commands (regular ones).
fn deployed(out: &[Command]) -> Vec<(ExecutionAttemptId, AllocationId)> {
    out.iter()
        .filter_map(|c| match c {
            Command::Deploy { tasks, .. } => Some(tasks.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

fn cancelled(out: &[Command]) -> Vec<ExecutionAttemptId> {
    out.iter()
        .filter_map(|c| match c {
            Command::Cancel(a) => Some(*a),
            _ => None,
        })
        .collect()
}

/// `A#3`'s speculative attempt 1 starts at 1,500 ms in slot 0 of TaskManager 1.
fn speculate(s: &mut Scheduler) {
    let out = handle(s, 1_499, Event::CheckSlowTasks);
    assert!(out.is_empty(), "1,499 ms is below the baseline: {out:?}");
    assert!(!s.is_blocked(TaskManagerId(0)));
    let out = handle(s, 1_500, Event::CheckSlowTasks);
    assert_eq!(
        out,
        [Command::DeploySpeculative {
            tasks: vec![(attempt(3, 1), slot(1, 0))]
        }]
    );
    assert!(s.is_speculative_attempt(attempt(3, 1)));
    assert!(s.is_blocked(TaskManagerId(0)), "the slow node is blocked");
    assert!(!s.is_blocked(TaskManagerId(1)));
    // At most two concurrent attempts: the next check adds none.
    assert!(handle(s, 2_500, Event::CheckSlowTasks).is_empty());
}

/// Runs the counts (vertices 4-7) to the end and returns the job's status.
fn finish_counts(s: &mut Scheduler, now: u64) -> JobStatus {
    for v in 4..8 {
        let a = s.attempt(ExecutionVertexIndex(v));
        handle(s, now, Event::TaskRunning(a));
        handle(s, now + 1, Event::TaskFinished(a));
    }
    s.status()
}

#[test]
fn a_speculative_attempt_that_loses_its_race_is_cancelled_and_its_output_never_read() {
    let mut s = started(options());
    speculate(&mut s);
    let out = handle(&mut s, 1_600, Event::TaskFinished(attempt(3, 0)));
    assert_eq!(cancelled(&out), [attempt(3, 1)], "the loser is cancelled");
    // The counts read the original's partition on TaskManager 0; they are placed on
    // TaskManager 1 only, TaskManager 0 being blocked (its three free slots stay unused).
    let producer = s.producer(SLOW);
    assert_eq!(producer.attempt, attempt(3, 0));
    assert_eq!(producer.location, Some(location(0)));
    assert_eq!(
        deployed(&out),
        [4, 5, 6, 7]
            .into_iter()
            .zip(0..)
            .map(|(v, i)| (attempt(v, 0), slot(1, i)))
            .collect::<Vec<_>>()
    );
    // The loser's late report changes nothing.
    assert!(handle(&mut s, 1_700, Event::TaskFinished(attempt(3, 1))).is_empty());
    assert_eq!(s.producer(SLOW).attempt, attempt(3, 0));
    assert_eq!(finish_counts(&mut s, 2_000), JobStatus::Finished);
    assert_eq!(
        s.speculative_stats(),
        SpeculativeStats {
            started: 1,
            won: 0,
            cancelled: 1,
            failed: 0
        }
    );
}

#[test]
fn a_speculative_attempt_that_wins_is_the_one_consumers_read() {
    let mut s = started(options());
    speculate(&mut s);
    handle(&mut s, 1_501, Event::TaskRunning(attempt(3, 1)));
    let out = handle(&mut s, 2_000, Event::TaskFinished(attempt(3, 1)));
    assert_eq!(
        cancelled(&out),
        [attempt(3, 0)],
        "the slow original is cancelled"
    );
    let producer = s.producer(SLOW);
    assert_eq!(producer.attempt, attempt(3, 1));
    assert_eq!(producer.location, Some(location(1)));
    let p = IntermediateResultPartitionId {
        result: IntermediateDataSetIndex(0),
        partition: 3,
    };
    assert!(s.all_data_produced(p));
    // The counts take TaskManager 1's four slots (the winner's slot came back).
    assert_eq!(deployed(&out).len(), 4);
    assert!(deployed(&out)
        .iter()
        .all(|(_, a)| a.task_manager == TaskManagerId(1)));
    // The cancelled original's late report is stale.
    assert!(handle(&mut s, 2_100, Event::TaskFinished(attempt(3, 0))).is_empty());
    assert_eq!(s.producer(SLOW).attempt, attempt(3, 1));
    assert_eq!(finish_counts(&mut s, 3_000), JobStatus::Finished);
    assert_eq!(s.restarts(), 0);
    assert_eq!(
        s.speculative_stats(),
        SpeculativeStats {
            started: 1,
            won: 1,
            cancelled: 0,
            failed: 0
        }
    );
}

/// Flink's `handleLocalExecutionAttemptFailure`: the failure restarts nothing, but it is
/// recorded with the restart strategy (Flink's `numRestarts` counts it).
#[test]
fn when_the_original_fails_the_speculative_attempt_carries_on_without_failover() {
    let mut s = started(options());
    speculate(&mut s);
    let out = handle(
        &mut s,
        1_700,
        Event::TaskFailed(attempt(3, 0), FailureCause::Task),
    );
    assert!(
        out.is_empty(),
        "no restart, no cancel, no status change: {out:?}"
    );
    assert_eq!(
        s.restarts(),
        1,
        "the failure counts with the restart strategy"
    );
    assert_eq!(
        s.attempt(SLOW),
        attempt(3, 1),
        "the speculative attempt took over"
    );
    assert_eq!(s.status(), JobStatus::Running);
    let out = handle(&mut s, 2_000, Event::TaskFinished(attempt(3, 1)));
    assert!(cancelled(&out).is_empty());
    assert_eq!(deployed(&out).len(), 4);
    assert_eq!(s.producer(SLOW).location, Some(location(1)));
    assert_eq!(finish_counts(&mut s, 3_000), JobStatus::Finished);
    assert_eq!(s.restarts(), 1);
    assert_eq!(s.speculative_stats().won, 1);
}

#[test]
fn when_the_speculative_attempt_fails_the_original_carries_on() {
    let mut s = started(options());
    speculate(&mut s);
    let out = handle(
        &mut s,
        1_700,
        Event::TaskFailed(attempt(3, 1), FailureCause::Task),
    );
    assert!(out.is_empty(), "{out:?}");
    assert!(!s.is_speculative_attempt(attempt(3, 1)));
    let out = handle(&mut s, 2_000, Event::TaskFinished(attempt(3, 0)));
    assert!(cancelled(&out).is_empty());
    assert_eq!(finish_counts(&mut s, 3_000), JobStatus::Finished);
    assert_eq!(s.restarts(), 1, "the local failure is recorded");
    assert_eq!(s.speculative_stats().failed, 1);
}

#[test]
fn when_both_attempts_fail_the_vertex_fails_over() {
    let mut s = started(options());
    speculate(&mut s);
    handle(
        &mut s,
        1_700,
        Event::TaskFailed(attempt(3, 0), FailureCause::Task),
    );
    let out = handle(
        &mut s,
        1_800,
        Event::TaskFailed(attempt(3, 1), FailureCause::Task),
    );
    assert!(out.contains(&Command::Restart(vec![SLOW])), "{out:?}");
    assert_eq!(s.restarts(), 2, "a local failure, then the failover");
}

/// Flink's `SpeculativeSchedulerTest#testLocalExecutionAttemptFailureAndForbiddenRestartWillFailJob`:
/// the original attempt of a slow task fails while its speculative attempt runs, and the
/// restart strategy allows no restart: the job fails (the speculative attempt is cancelled).
#[test]
fn a_local_failure_the_restart_strategy_forbids_fails_the_job() {
    let mut s = started_with(options(), RestartStrategy::None, 2);
    speculate(&mut s);
    let out = handle(
        &mut s,
        1_700,
        Event::TaskFailed(attempt(3, 0), FailureCause::Task),
    );
    assert_eq!(s.status(), JobStatus::Failed);
    assert!(
        out.contains(&Command::Cancel(attempt(3, 1))),
        "the speculative attempt that took over is cancelled: {out:?}"
    );
    let reason = s.failure_reason().expect("a reason");
    assert!(
        reason.starts_with(
            "Recovery is suppressed by the restart strategy NoRestartBackoffTimeStrategy"
        ),
        "{reason}"
    );
    assert!(
        reason.ends_with("source#3 failed: task failure"),
        "{reason}"
    );
}

/// With fixed delay of one attempt, the local failure uses that attempt: the job runs on (the
/// speculative attempt), and the next failure, the failover of the vertex, fails the job.
#[test]
fn a_local_failure_uses_an_attempt_of_a_fixed_delay_strategy() {
    let once = RestartStrategy::FixedDelay {
        attempts: 1,
        delay_ms: 1_000,
    };
    let mut s = started_with(options(), once, 2);
    speculate(&mut s);
    handle(
        &mut s,
        1_700,
        Event::TaskFailed(attempt(3, 0), FailureCause::Task),
    );
    assert_eq!(s.status(), JobStatus::Running);
    assert_eq!(s.restarts(), 1, "the attempt is used");
    handle(
        &mut s,
        1_800,
        Event::TaskFailed(attempt(3, 1), FailureCause::Task),
    );
    assert_eq!(s.status(), JobStatus::Failed);
    assert!(s.failure_reason().expect("a reason").contains(
        "FixedDelayRestartBackoffTimeStrategy(attempts=1, delay=1000 ms) (1 restart(s) so far)"
    ));
    // A failed speculative attempt counts as well: the original's later failure is the second.
    let mut s = started_with(options(), once, 2);
    speculate(&mut s);
    handle(
        &mut s,
        1_700,
        Event::TaskFailed(attempt(3, 1), FailureCause::Task),
    );
    assert_eq!((s.status(), s.restarts()), (JobStatus::Running, 1));
    handle(
        &mut s,
        1_800,
        Event::TaskFailed(attempt(3, 0), FailureCause::Task),
    );
    assert_eq!(s.status(), JobStatus::Failed);
}

/// With `block-slow-node-duration` 0 nothing is blocked, and the speculative attempt takes a
/// free slot as any request does, on the slow task's own TaskManager too (Flink's allocation has
/// no rule against it): the only TaskManager of the job, or the lowest free slot of two.
#[test]
fn without_blocking_a_speculative_attempt_may_use_the_slow_tasks_task_manager() {
    let unblocked = SpeculativeExecutionOptions {
        block_slow_node_duration_ms: 0,
        ..options()
    };
    for task_managers in [1, 2] {
        let mut s = started_with(unblocked, RESTARTS, task_managers);
        let out = handle(&mut s, 1_500, Event::CheckSlowTasks);
        assert!(!s.is_blocked(TaskManagerId(0)));
        assert_eq!(
            out,
            [Command::DeploySpeculative {
                tasks: vec![(attempt(3, 1), slot(0, 0))]
            }],
            "{task_managers} TaskManager(s)"
        );
        handle(&mut s, 1_501, Event::TaskRunning(attempt(3, 1)));
        let out = handle(&mut s, 1_600, Event::TaskFinished(attempt(3, 1)));
        assert_eq!(cancelled(&out), [attempt(3, 0)]);
        assert_eq!(s.producer(SLOW).location, Some(location(0)));
    }
    // With a block, the only TaskManager is the slow node: no slot for a speculative attempt.
    let mut s = started_with(options(), RESTARTS, 1);
    assert!(handle(&mut s, 1_500, Event::CheckSlowTasks).is_empty());
    assert!(s.is_blocked(TaskManagerId(0)));
}

#[test]
fn a_restart_numbers_the_new_attempt_above_the_speculative_ones() {
    let mut s = started(options());
    speculate(&mut s);
    // A missing input partition of the speculative attempt goes to failover (Flink's rule for
    // partition exceptions): both attempts are cancelled.
    let lost = IntermediateResultPartitionId {
        result: IntermediateDataSetIndex(0),
        partition: 0,
    };
    let out = handle(
        &mut s,
        1_700,
        Event::TaskFailed(attempt(3, 1), FailureCause::PartitionNotFound(lost)),
    );
    assert_eq!(cancelled(&out), [attempt(3, 0)]);
    assert!(
        out.iter().any(|c| matches!(c, Command::Restart(_))),
        "{out:?}"
    );
    // After the restart delay the vertex comes back as attempt 2, never reusing attempt 1.
    let due = s.next_timer().expect("a restart is pending");
    let out = handle(&mut s, due, Event::Tick);
    assert!(
        deployed(&out).iter().any(|(a, _)| *a == attempt(3, 2)),
        "{out:?}"
    );
    assert!(handle(&mut s, due + 1, Event::TaskFinished(attempt(3, 1))).is_empty());
}

#[test]
fn a_blocked_node_gets_no_new_attempt_until_its_block_ends() {
    let mut s = started(SpeculativeExecutionOptions {
        block_slow_node_duration_ms: 10_000,
        ..options()
    });
    speculate(&mut s);
    // The speculative attempt wins; TaskManager 0 is blocked.
    handle(&mut s, 2_000, Event::TaskFinished(attempt(3, 1)));
    for v in 4..8 {
        let a = attempt(v, 0);
        handle(&mut s, 2_001, Event::TaskRunning(a));
    }
    // A count fails and restarts: its new attempt must not go to TaskManager 0 while blocked,
    // though TaskManager 0 has free slots and TaskManager 1 has none.
    let out = handle(
        &mut s,
        3_000,
        Event::TaskFailed(attempt(4, 0), FailureCause::Task),
    );
    assert!(deployed(&out).is_empty());
    let mut now = s.next_timer().expect("restart pending");
    let out = handle(&mut s, now, Event::Tick);
    let redeployed = deployed(&out);
    assert_eq!(redeployed.len(), 1, "{out:?}");
    assert_eq!(
        redeployed[0].1.task_manager,
        TaskManagerId(1),
        "the freed slot of TaskManager 1"
    );
    // Another count fails after the first restart: it waits while TaskManager 0 is blocked...
    handle(&mut s, now + 1, Event::TaskRunning(redeployed[0].0));
    let out = handle(
        &mut s,
        now + 2,
        Event::TaskFailed(attempt(5, 0), FailureCause::Task),
    );
    assert!(deployed(&out).is_empty());
    now = s.next_timer().expect("restart pending");
    let out = handle(&mut s, now, Event::Tick);
    assert_eq!(deployed(&out).len(), 1);
    assert_eq!(deployed(&out)[0].1.task_manager, TaskManagerId(1));
    // (`A#3` was still slow at the check of 2,500 ms, which blocked TaskManager 0 again,
    // until 12,500 ms.)
    assert!(now < 12_500);
    handle(&mut s, 12_499, Event::Tick);
    assert!(s.is_blocked(TaskManagerId(0)));
    // ...and once the block ends, TaskManager 0 gives slots again: the next restarted count
    // takes its lowest free slot.
    handle(&mut s, 12_500, Event::Tick);
    assert!(!s.is_blocked(TaskManagerId(0)));
    handle(
        &mut s,
        12_501,
        Event::TaskFailed(attempt(6, 0), FailureCause::Task),
    );
    now = s.next_timer().expect("restart pending");
    let out = handle(&mut s, now, Event::Tick);
    assert_eq!(deployed(&out), [(attempt(6, 1), slot(0, 0))]);
}

#[test]
fn speculation_off_ignores_the_check_and_a_streaming_job_never_speculates() {
    let off = SpeculativeExecutionOptions {
        enabled: false,
        ..options()
    };
    let mut s = started(off);
    assert!(handle(&mut s, 1_500, Event::CheckSlowTasks).is_empty());
    assert!(!s.is_blocked(TaskManagerId(0)));
    assert_eq!(s.speculative_stats(), SpeculativeStats::default());

    // The same job streaming (pipelined edges: one region of all tasks).
    let json = generate::word_count(2, ResultPartitionType::Pipelined);
    let graph = Arc::new(
        ExecutionGraph::build(JobGraph::from_json(&json).expect("valid")).expect("expands"),
    );
    let regions = Arc::new(PipelinedRegions::compute(&graph).expect("regions"));
    let config = SchedulerConfig {
        speculative: options(),
        ..SchedulerConfig::default()
    };
    let mut s = Scheduler::new(graph, regions, config);
    handle(
        &mut s,
        0,
        Event::TaskManagerRegistered {
            location: location(0),
            slots: 4,
        },
    );
    handle(&mut s, 0, Event::Start);
    assert!(handle(&mut s, 100_000, Event::CheckSlowTasks).is_empty());
}
