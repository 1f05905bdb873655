//! The work budget: a call does at most its budget of region work, continuation calls finish
//! the rest, and the concatenated commands and the trace digest do not depend on the budget.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};

use conflux_deploy::{TaskManagerId, TaskManagerLocation};
use conflux_scheduler::{Command, Event, FailureCause, JobStatus, Scheduler, SchedulerConfig};
use conflux_test_support::job_graphs::{build, edge, job, vertex};

/// A run: its events; per event the commands of its calls, concatenated; the largest number of
/// deploy commands one call returned; the continuation calls; the digest.
struct Run {
    events: Vec<(u64, Event)>,
    per_event: Vec<Vec<Command>>,
    max_deploys_per_call: usize,
    continuations: usize,
    digest: u64,
}

/// Runs the job of [`scheduler`] on four TaskManagers of `slots` slots; every deployed task runs and
/// finishes in FIFO order, and the first attempt of `b#1` fails once.
fn run(n: u32, first: &str, second: &str, slots: u32, budget: u32) -> Run {
    let mut s = scheduler(n, first, second, budget);
    let mut events: VecDeque<Event> = (0..4)
        .map(|tm| Event::TaskManagerRegistered {
            location: TaskManagerLocation {
                id: TaskManagerId(tm),
                data_address: SocketAddr::from((Ipv4Addr::LOCALHOST, 6121)),
            },
            slots,
        })
        .collect();
    events.push_back(Event::Start);
    let mut out = Run {
        events: Vec::new(),
        per_event: Vec::new(),
        max_deploys_per_call: 0,
        continuations: 0,
        digest: 0,
    };
    let deploys = |c: &[Command]| {
        c.iter()
            .filter(|c| matches!(c, Command::Deploy { .. }))
            .count()
    };
    let mut failed_once = false;
    let mut now = 0;
    while let Some(event) = events.pop_front() {
        now += 1;
        out.events.push((now, event.clone()));
        let mut commands = s.handle(now, event).expect("valid event");
        out.max_deploys_per_call = out.max_deploys_per_call.max(deploys(&commands));
        if s.has_pending_work() {
            // Owed work is due at once.
            assert_eq!(s.next_timer(), Some(now));
        }
        while s.has_pending_work() {
            let more = s.continue_work().expect("continues");
            out.max_deploys_per_call = out.max_deploys_per_call.max(deploys(&more));
            out.continuations += 1;
            commands.extend(more);
        }
        assert!(s.continue_work().expect("nothing owed").is_empty());
        for c in &commands {
            if let Command::Deploy { tasks, .. } = c {
                for &(a, _) in tasks {
                    events.push_back(Event::TaskRunning(a));
                    if a.vertex == n + 1 && !failed_once {
                        failed_once = true;
                        events.push_back(Event::TaskFailed(a, FailureCause::Task));
                    } else {
                        events.push_back(Event::TaskFinished(a));
                    }
                }
            }
        }
        out.per_event.push(commands);
    }
    assert_eq!(s.status(), JobStatus::Finished);
    out.digest = s.trace_digest();
    out
}

/// A batch job `a -> b -> c` of parallelism `n`: `a -> b` all-to-all `first`, `b -> c`
/// pointwise `second`; restarts at once.
fn scheduler(n: u32, first: &str, second: &str, budget: u32) -> Scheduler {
    let (graph, regions) = build(&job(
        "batch",
        vec![vertex("a", n), vertex("b", n), vertex("c", n)],
        vec![
            edge("a", "b", "all_to_all", first),
            edge("b", "c", "pointwise", second),
        ],
    ));
    let config = SchedulerConfig {
        work_budget: budget,
        restart: conflux_scheduler::RestartStrategy::FixedDelay {
            attempts: 10,
            delay_ms: 0,
        },
        ..SchedulerConfig::default()
    };
    Scheduler::new(graph, regions, config)
}

#[test]
fn every_budget_gives_the_same_commands_and_digest() {
    for (first, second) in [
        ("blocking", "blocking"),
        ("blocking", "pipelined"),
        ("hybrid_full", "blocking"),
        ("hybrid_selective", "hybrid_full"),
    ] {
        for slots in [3, 40] {
            let whole = run(30, first, second, slots, u32::MAX);
            assert_eq!(whole.continuations, 0);
            for budget in [0, 1, 2, 7, 64] {
                let cut = run(30, first, second, slots, budget);
                let what = format!("{first}/{second}, {slots} slots, budget {budget}");
                assert_eq!(cut.digest, whole.digest, "{what}");
                assert_eq!(cut.per_event, whole.per_event, "{what}");
                assert!(cut.continuations > 0, "{what}");
                if budget <= 1 {
                    // Every region is a call of its own.
                    assert_eq!(cut.max_deploys_per_call, 1, "{what}");
                }
            }
        }
    }
}

/// A driver that never continues gets the same commands (owed work comes first in the next
/// call) and the same digest for the same events; only its calls are no longer bounded.
#[test]
fn a_driver_that_does_not_continue_gets_the_same_commands() {
    let whole = run(30, "blocking", "pipelined", 40, u32::MAX);
    let mut lazy = scheduler(30, "blocking", "pipelined", 1);
    let mut commands = Vec::new();
    let mut owed = 0;
    for (now, event) in whole.events.iter().cloned() {
        commands.extend(lazy.handle(now, event).expect("valid event"));
        owed += usize::from(lazy.has_pending_work());
    }
    assert!(owed >= 2, "calls left work owed {owed} times");
    while lazy.has_pending_work() {
        commands.extend(lazy.continue_work().expect("continues"));
    }
    assert_eq!(lazy.trace_digest(), whole.digest);
    assert_eq!(commands, whole.per_event.concat());
}

/// A driver that knows nothing of continuations, only `handle` and `next_timer` (it sends a
/// tick when the timer says), still runs the job to its end: owed work shows as a timer due at
/// once. With a budget of 1 the first call deploys nothing, so without that signal such a driver
/// would wait forever.
#[test]
fn owed_work_is_a_timer_due_now_for_a_driver_that_only_ticks() {
    let mut s = scheduler(30, "blocking", "blocking", 1);
    let mut events: VecDeque<Event> = VecDeque::from([
        Event::TaskManagerRegistered {
            location: TaskManagerLocation {
                id: TaskManagerId(0),
                data_address: SocketAddr::from((Ipv4Addr::LOCALHOST, 6121)),
            },
            slots: 100,
        },
        Event::Start,
    ]);
    let mut now = 0;
    while !s.status().is_terminal() {
        let Some(event) = events.pop_front().or_else(|| {
            let t = s.next_timer()?;
            now = now.max(t);
            Some(Event::Tick)
        }) else {
            break;
        };
        let start = event == Event::Start;
        let commands = s.handle(now, event).expect("valid event");
        if start {
            assert!(
                !commands.iter().any(|c| matches!(c, Command::Deploy { .. })),
                "the start's first call deploys nothing"
            );
            assert!(s.has_pending_work());
        }
        for c in commands {
            if let Command::Deploy { tasks, .. } = c {
                for (a, _) in tasks {
                    events.push_back(Event::TaskRunning(a));
                    events.push_back(Event::TaskFinished(a));
                }
            }
        }
    }
    assert_eq!(s.status(), JobStatus::Finished);
}

/// Small jobs fit the default budget: no call leaves work owed.
#[test]
fn the_default_budget_does_small_jobs_in_one_call() {
    let r = run(
        30,
        "blocking",
        "blocking",
        40,
        SchedulerConfig::default().work_budget,
    );
    assert_eq!(r.continuations, 0);
}
