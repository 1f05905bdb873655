//! The state change log and the per-TaskManager slot counts a driver's views read, against the
//! scheduler's own state after every call of seeded runs with failures and lost TaskManagers.

use std::collections::{HashMap, HashSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use conflux_common::SplitMix64;
use conflux_deploy::{ExecutionState, TaskManagerId, TaskManagerLocation};
use conflux_graph::{
    generate, ExecutionGraph, ExecutionVertexIndex, JobGraph, PipelinedRegions, ResultPartitionType,
};
use conflux_scheduler::{
    Event, FailureCause, RestartStrategy, Scheduler, SchedulerConfig, StateTransition,
};

fn scheduler(partition_type: ResultPartitionType) -> Scheduler {
    let json = generate::word_count(3, partition_type);
    let graph = Arc::new(
        ExecutionGraph::build(JobGraph::from_json(&json).expect("valid")).expect("expands"),
    );
    let regions = Arc::new(PipelinedRegions::compute(&graph).expect("regions"));
    let config = SchedulerConfig {
        restart: RestartStrategy::FixedDelay {
            attempts: 1_000,
            delay_ms: 0,
        },
        ..SchedulerConfig::default()
    };
    Scheduler::new(graph, regions, config)
}

fn location(tm: u32) -> TaskManagerLocation {
    TaskManagerLocation {
        id: TaskManagerId(tm),
        data_address: SocketAddr::from((
            Ipv4Addr::LOCALHOST,
            1 + u16::try_from(tm).expect("a small TaskManager id"),
        )),
    }
}

/// One call and the work it owes, as a driver makes them.
fn call(s: &mut Scheduler, now: u64, event: Event) {
    if s.handle(now, event).is_ok() {
        while s.has_pending_work() {
            s.continue_work().expect("owed work");
        }
    }
}

/// Replays the log onto `mirror` and checks it against the scheduler's states, and each
/// TaskManager's free slots against the slots its vertices hold.
fn check(
    s: &mut Scheduler,
    mirror: &mut [ExecutionState],
    log: &mut Vec<StateTransition>,
    slots: &HashMap<u32, u32>,
) {
    s.take_transitions(log);
    for t in log.iter() {
        mirror[t.vertex.0 as usize] = t.state;
    }
    for (v, state) in mirror.iter().enumerate() {
        assert_eq!(
            *state,
            s.state(ExecutionVertexIndex(v as u32)),
            "vertex {v}"
        );
    }
    let mut held: HashMap<u32, HashSet<u32>> = HashMap::new();
    for v in 0..mirror.len() {
        if let Some(a) = s.allocation(ExecutionVertexIndex(v as u32)) {
            held.entry(a.task_manager.0).or_default().insert(a.slot);
        }
    }
    for tm in s.task_manager_slots() {
        let used = held.get(&tm.task_manager.0).map_or(0, HashSet::len) as u32;
        assert_eq!(tm.slots, slots[&tm.task_manager.0]);
        assert_eq!(tm.free, tm.slots - used, "{:?}", tm.task_manager);
    }
}

#[test]
fn the_log_replays_to_the_schedulers_states_and_free_slots_are_counted() {
    for (seed, partition_type) in (0..40u64).map(|s| {
        (
            s,
            if s % 2 == 0 {
                ResultPartitionType::Blocking
            } else {
                ResultPartitionType::PipelinedBounded
            },
        )
    }) {
        let mut s = scheduler(partition_type);
        s.record_transitions();
        let n = s.graph().num_execution_vertices() as usize;
        let mut mirror = vec![ExecutionState::Created; n];
        let mut log = Vec::new();
        let mut slots = HashMap::new();
        let mut rng = SplitMix64::new(seed);
        let mut next_tm = 0u32;
        for _ in 0..2 {
            call(
                &mut s,
                0,
                Event::TaskManagerRegistered {
                    location: location(next_tm),
                    slots: 2,
                },
            );
            slots.insert(next_tm, 2);
            next_tm += 1;
        }
        call(&mut s, 0, Event::Start);
        check(&mut s, &mut mirror, &mut log, &slots);
        for step in 1..300u64 {
            let v = ExecutionVertexIndex(rng.between(0, n as u64 - 1) as u32);
            let attempt = s.attempt(v);
            let event = match (s.state(v), rng.between(0, 9)) {
                (_, 0) if next_tm < 6 => {
                    let lost = rng.between(0, u64::from(next_tm) - 1) as u32;
                    slots.remove(&lost);
                    Event::TaskManagerLost(TaskManagerId(lost))
                }
                (_, 1) => {
                    slots.insert(next_tm, 2);
                    next_tm += 1;
                    Event::TaskManagerRegistered {
                        location: location(next_tm - 1),
                        slots: 2,
                    }
                }
                (ExecutionState::Deploying, _) => Event::TaskRunning(attempt),
                (ExecutionState::Running, 2) => Event::TaskFailed(attempt, FailureCause::Task),
                (ExecutionState::Running, _) => Event::TaskFinished(attempt),
                _ => Event::Tick,
            };
            call(&mut s, step, event);
            check(&mut s, &mut mirror, &mut log, &slots);
        }
    }
}

#[test]
fn recording_changes_no_command() {
    let run = |record: bool| {
        let mut s = scheduler(ResultPartitionType::Blocking);
        if record {
            s.record_transitions();
        }
        call(
            &mut s,
            0,
            Event::TaskManagerRegistered {
                location: location(0),
                slots: 3,
            },
        );
        call(&mut s, 0, Event::Start);
        for v in 0..3 {
            let a = s.attempt(ExecutionVertexIndex(v));
            call(&mut s, 1, Event::TaskRunning(a));
            call(&mut s, 2, Event::TaskFinished(a));
        }
        s.trace_digest()
    };
    assert_eq!(run(true), run(false));
}
