//! Slot sharing and slot request timeouts, driven through the scheduler's event API.

use std::net::{Ipv4Addr, SocketAddr};

use conflux_deploy::{AllocationId, TaskManagerId, TaskManagerLocation};
use conflux_graph::json::JobVertexJson;
use conflux_scheduler::{Command, Event, JobStatus, RestartStrategy, Scheduler, SchedulerConfig};
use conflux_test_support::job_graphs::{build, edge, job, vertex};

fn scheduler(groups: [&str; 2], partition_type: &str, pattern: &str) -> Scheduler {
    scheduler_of(
        "batch",
        SchedulerConfig::default(),
        groups,
        partition_type,
        pattern,
    )
}

fn scheduler_of(
    job_type: &str,
    config: SchedulerConfig,
    groups: [&str; 2],
    partition_type: &str,
    pattern: &str,
) -> Scheduler {
    let in_group = |id: &str, group: &str| JobVertexJson {
        slot_sharing_group: Some(group.to_owned()),
        ..vertex(id, 2)
    };
    let (graph, regions) = build(&job(
        job_type,
        vec![in_group("A", groups[0]), in_group("B", groups[1])],
        vec![edge("A", "B", pattern, partition_type)],
    ));
    Scheduler::new(graph, regions, config)
}

fn register(s: &mut Scheduler, slots: u32) -> Vec<Command> {
    let location = TaskManagerLocation {
        id: TaskManagerId(0),
        data_address: SocketAddr::from((Ipv4Addr::LOCALHOST, 1)),
    };
    s.handle(0, Event::TaskManagerRegistered { location, slots })
        .expect("register")
}

fn deploys(commands: &[Command]) -> Vec<Vec<(u32, AllocationId)>> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::Deploy { tasks, .. } => {
                Some(tasks.iter().map(|(a, s)| (a.vertex, *s)).collect())
            }
            _ => None,
        })
        .collect()
}

fn slot(n: u32) -> AllocationId {
    AllocationId {
        task_manager: TaskManagerId(0),
        slot: n,
    }
}

#[test]
fn subtasks_of_one_slot_sharing_group_share_a_slot() {
    // A#i and B#i (vertices i and 2 + i) form region i and share slot i.
    let mut s = scheduler(["default", "default"], "pipelined", "pointwise");
    register(&mut s, 2);
    let out = s.handle(0, Event::Start).expect("start");
    assert_eq!(
        deploys(&out),
        vec![
            vec![(0, slot(0)), (2, slot(0))],
            vec![(1, slot(1)), (3, slot(1))]
        ]
    );
}

#[test]
fn a_request_waits_for_a_freed_slot() {
    // Batch, one slot: A#0 runs; A#1 waits until A#0 finishes and frees the slot.
    let mut s = scheduler(["default", "default"], "blocking", "all_to_all");
    register(&mut s, 1);
    let out = s.handle(0, Event::Start).expect("start");
    assert_eq!(deploys(&out), vec![vec![(0, slot(0))]]);
    let a0 = s.attempt(conflux_graph::ExecutionVertexIndex(0));
    s.handle(1, Event::TaskRunning(a0)).expect("running");
    let out = s.handle(2, Event::TaskFinished(a0)).expect("finish");
    assert_eq!(deploys(&out), vec![vec![(1, slot(0))]]);
}

/// Statuses announced by the commands.
fn statuses(out: &[Command]) -> Vec<JobStatus> {
    out.iter()
        .filter_map(|c| match c {
            Command::JobStatus { status, .. } => Some(*status),
            _ => None,
        })
        .collect()
}

/// As Flink's `PhysicalSlotRequestBulkCheckerImplTest`: a bulk that can never be served (a
/// region of two pipelined tasks in separate slot sharing groups, one slot in the cluster) is
/// unfulfillable from its creation and fails the job at the first check, one
/// `slot.request.timeout` later.
#[test]
fn requests_that_cannot_be_served_fail_the_job_at_the_timeout() {
    let mut s = scheduler(["a", "b"], "pipelined", "pointwise");
    register(&mut s, 1);
    let out = s.handle(0, Event::Start).expect("start");
    assert!(deploys(&out).is_empty(), "no region has both its slots");
    assert_eq!(s.next_timer(), Some(300_000));
    let out = s.handle(299_999, Event::Tick).expect("tick");
    assert!(out.is_empty());
    let out = s.handle(300_000, Event::Tick).expect("tick");
    assert_eq!(s.status(), JobStatus::Failed);
    assert_eq!(statuses(&out), [JobStatus::Failing, JobStatus::Failed]);
    let reason = s.failure_reason().expect("reason");
    assert!(
        reason.contains("could not acquire a slot within 300000 ms: region 0 needs 1 more slot(s) and at most 0 can ever be free for it (1 TaskManager(s) with 1 slot(s) in all)"),
        "{reason}"
    );
}

/// A batch bulk waiting for slots that other regions hold is fulfillable (those slots free up
/// when the regions finish): it never times out, however long it waits.
#[test]
fn batch_requests_wait_for_slots_in_use_without_a_deadline() {
    let mut s = scheduler(["a", "b"], "pipelined", "pointwise");
    register(&mut s, 2);
    let out = s.handle(0, Event::Start).expect("start");
    assert_eq!(
        deploys(&out).len(),
        1,
        "region 0 gets both slots, region 1 waits"
    );
    for t in [300_000, 600_000, 900_000] {
        assert_eq!(
            s.next_timer(),
            Some(t),
            "checked every slot.request.timeout"
        );
        assert!(s.handle(t, Event::Tick).expect("tick").is_empty());
        assert_eq!(s.status(), JobStatus::Running);
    }
    for v in 0..4 {
        let a = s.attempt(conflux_graph::ExecutionVertexIndex(v));
        if s.state(conflux_graph::ExecutionVertexIndex(v))
            == conflux_deploy::ExecutionState::Deploying
        {
            s.handle(900_001, Event::TaskRunning(a)).expect("running");
        }
    }
    let a0 = s.attempt(conflux_graph::ExecutionVertexIndex(0));
    let b0 = s.attempt(conflux_graph::ExecutionVertexIndex(2));
    s.handle(900_002, Event::TaskFinished(a0))
        .expect("finish A#0");
    let out = s
        .handle(900_003, Event::TaskFinished(b0))
        .expect("finish B#0");
    assert_eq!(
        deploys(&out),
        vec![vec![(1, slot(0)), (3, slot(1))]],
        "region 1 gets the freed slots"
    );
}

/// In a streaming job running tasks hold their slots indefinitely: a bulk that needs slots in
/// use can never be served and fails at the timeout.
#[test]
fn streaming_requests_do_not_count_slots_in_use() {
    let mut s = scheduler_of(
        "streaming",
        SchedulerConfig::default(),
        ["a", "b"],
        "pipelined",
        "pointwise",
    );
    register(&mut s, 2);
    let out = s.handle(0, Event::Start).expect("start");
    assert_eq!(deploys(&out).len(), 1);
    let out = s.handle(300_000, Event::Tick).expect("tick");
    assert_eq!(statuses(&out), [JobStatus::Failing, JobStatus::Failed]);
    let reason = s.failure_reason().expect("reason");
    assert!(
        reason.contains("region 1 needs 2 more slot(s) and at most 0 can ever be free"),
        "{reason}"
    );
}

/// A bulk fulfillable at a check and unfulfillable later fails one timeout after the first
/// check that saw it unfulfillable, not earlier.
#[test]
fn the_timeout_counts_from_the_check_that_saw_the_bulk_unfulfillable() {
    // Region 0 restarts only after a very long delay, so region 1 is the only open request.
    let config = SchedulerConfig {
        restart: RestartStrategy::FixedDelay {
            attempts: 1,
            delay_ms: 100_000_000,
        },
        ..SchedulerConfig::default()
    };
    let mut s = scheduler_of("batch", config, ["a", "b"], "pipelined", "pointwise");
    register(&mut s, 2);
    s.handle(0, Event::Start).expect("start");
    assert!(
        s.handle(300_000, Event::Tick).expect("tick").is_empty(),
        "fulfillable: region 0 holds the two slots and will free them"
    );
    // The only TaskManager is lost: region 1 can never be served from 400,000 on.
    s.handle(400_000, Event::TaskManagerLost(TaskManagerId(0)))
        .expect("lost");
    assert_eq!(s.next_timer(), Some(600_000));
    s.handle(600_000, Event::Tick)
        .expect("check: unfulfillable since now");
    assert_eq!(s.status(), JobStatus::Running);
    assert_eq!(s.next_timer(), Some(900_000));
    s.handle(899_999, Event::Tick).expect("tick");
    assert_eq!(s.status(), JobStatus::Running);
    s.handle(900_000, Event::Tick).expect("check: timed out");
    assert_eq!(s.status(), JobStatus::Failed);
    let reason = s.failure_reason().expect("reason");
    assert!(
        reason.contains("region 1 needs 2 more slot(s) and at most 0 can ever be free"),
        "{reason}"
    );
}

/// Two TaskManagers of two slots; A(2) -> B(2) in different sharing groups, pipelined all to
/// all (one region of four tasks): filled one after the other, or spread out.
fn placements(spread: bool) -> Vec<(u32, AllocationId)> {
    let config = SchedulerConfig {
        evenly_spread_out_slots: spread,
        ..SchedulerConfig::default()
    };
    let mut s = scheduler_of("streaming", config, ["a", "b"], "pipelined", "all_to_all");
    for tm in 0..2 {
        let location = TaskManagerLocation {
            id: TaskManagerId(tm),
            data_address: SocketAddr::from((Ipv4Addr::LOCALHOST, 1)),
        };
        s.handle(0, Event::TaskManagerRegistered { location, slots: 2 })
            .expect("register");
    }
    let commands = s.handle(0, Event::Start).expect("start");
    deploys(&commands).concat()
}

#[test]
fn slots_fill_task_managers_in_turn_or_spread_out_as_flink_evenly_spread_out_slots() {
    let at = |tm: u32, slot: u32| AllocationId {
        task_manager: TaskManagerId(tm),
        slot,
    };
    // A0, A1, B0, B1 (vertices 0..4) request in order.
    assert_eq!(
        placements(false),
        [(0, at(0, 0)), (1, at(0, 1)), (2, at(1, 0)), (3, at(1, 1))]
    );
    assert_eq!(
        placements(true),
        [(0, at(0, 0)), (1, at(1, 0)), (2, at(0, 1)), (3, at(1, 1))]
    );
}

/// Flink's bulk checker timeout path: a bulk unfulfillable for `slot.request.timeout` fails its
/// tasks with `NoResourceAvailableException`, which goes through failover and the restart
/// strategy (`ExecutionFailureHandler`): two restarts, each asking for the slots anew (and
/// timing out one timeout after it), then "Recovery is suppressed by ...".
#[test]
fn a_timed_out_request_fails_its_tasks_through_the_restart_strategy() {
    let config = SchedulerConfig {
        restart: RestartStrategy::FixedDelay {
            attempts: 2,
            delay_ms: 1_000,
        },
        ..SchedulerConfig::default()
    };
    // One region of four tasks in two slot sharing groups: 2 slots, the cluster has 1.
    let mut s = scheduler_of("batch", config, ["a", "b"], "pipelined", "all_to_all");
    register(&mut s, 1);
    s.handle(0, Event::Start).expect("start");
    for (k, timeout) in [300_000, 601_000].into_iter().enumerate() {
        let out = s.handle(timeout, Event::Tick).expect("tick");
        assert!(
            out.iter().any(|c| matches!(c, Command::Restart(_))),
            "timeout {k} restarts: {out:?}"
        );
        assert_eq!(s.status(), JobStatus::Running);
        assert_eq!(s.restarts(), k as u32 + 1);
        // The restart runs after the delay and asks for the slots again.
        assert_eq!(s.next_timer(), Some(timeout + 1_000));
        s.handle(timeout + 1_000, Event::Tick).expect("restart");
    }
    assert_eq!(s.next_timer(), Some(902_000));
    let out = s.handle(902_000, Event::Tick).expect("tick");
    assert_eq!(statuses(&out), [JobStatus::Failing, JobStatus::Failed]);
    let reason = s.failure_reason().expect("reason");
    assert!(
        reason.starts_with(
            "Recovery is suppressed by the restart strategy FixedDelayRestartBackoffTimeStrategy(attempts=2, delay=1000 ms) (2 restart(s) so far): A#0 failed: NoResourceAvailableException: could not acquire a slot within 300000 ms"
        ),
        "{reason}"
    );
}

/// The streaming word count of 10 x 10 (one region of 10 shared slots) on one TaskManager of 2
/// slots with exponential delay of 5 attempts, jitter off: 6 timeouts of 300 s, 5 restarts after
/// 1, 1.5, 2.25, 3.375 and 5.062 s; FAILED at 1,813,187 ms (Flink restarts it 5 times and fails
/// it at about 1,813 s; an earlier Conflux failed it at 300 s without a restart).
#[test]
fn an_unservable_streaming_job_restarts_as_its_strategy_allows_then_fails() {
    let json =
        conflux_graph::generate::word_count(10, conflux_graph::ResultPartitionType::Pipelined);
    let (graph, regions) = build(&json);
    let restart = match RestartStrategy::exponential_default(5) {
        RestartStrategy::ExponentialDelay {
            initial_ms,
            max_ms,
            multiplier,
            reset_after_ms,
            attempts,
            ..
        } => RestartStrategy::ExponentialDelay {
            initial_ms,
            max_ms,
            multiplier,
            reset_after_ms,
            jitter_factor: 0.0,
            attempts,
        },
        other => other,
    };
    let config = SchedulerConfig {
        restart,
        ..SchedulerConfig::default()
    };
    let mut s = Scheduler::new(graph, regions, config);
    register(&mut s, 2);
    s.handle(0, Event::Start).expect("start");
    let mut failed_at = None;
    while let Some(t) = s.next_timer() {
        s.handle(t, Event::Tick).expect("tick");
        if s.status() == JobStatus::Failed {
            failed_at = Some(t);
            break;
        }
    }
    assert_eq!(failed_at, Some(1_813_187));
    assert_eq!(s.restarts(), 5);
}
