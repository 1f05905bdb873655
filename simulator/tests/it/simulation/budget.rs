//! The scheduler's work budget changes nothing but how the work is cut into calls: the same
//! seeded runs with a budget of one vertex per call (every region in a call of its own) and
//! with no budget give the same commands for every event, the same trace digest and the same
//! report, on the small random graphs of the simulation and on medium ones (the same graphs
//! with every parallelism multiplied).

use conflux_scheduler::{Command, Event, Scheduler};
use conflux_sim::{simulate, MemoryBlobEnvironment, Observer, SimulationReport};

use super::{run_case, Case};

/// Every event with its virtual time and the commands it caused, in order.
#[derive(Default)]
struct Recorder {
    calls: Vec<(u64, Event, Vec<Command>)>,
}

impl Observer for Recorder {
    fn on_handled(&mut self, now_ms: u64, event: &Event, commands: &[Command], _: &Scheduler) {
        self.calls.push((now_ms, event.clone(), commands.to_vec()));
    }
}

/// Runs `case` with `budget`: its record of events and commands and its report.
fn record(case: &Case, budget: u32) -> (Vec<(u64, Event, Vec<Command>)>, SimulationReport) {
    let (graph, regions) = case.spec.build().expect("the case builds");
    let mut config = case.config;
    config.scheduler.work_budget = budget;
    let mut recorder = Recorder::default();
    let report = simulate(
        graph,
        regions,
        &config,
        &MemoryBlobEnvironment::new(),
        &mut recorder,
    )
    .expect("simulates");
    (recorder.calls, report)
}

/// The report without its wall times and its count of continuation calls, for comparison.
fn comparable(r: &SimulationReport) -> String {
    format!(
        "{:?} {:?} deployed {} restarts {} events {} virtual {} digest {:016x} {:?} {:?} {:?}",
        r.status,
        r.failure_reason,
        r.tasks_deployed,
        r.restarts,
        r.events,
        r.virtual_ms,
        r.trace_digest,
        r.deployment,
        r.task_managers,
        r.faults_injected
    )
}

/// Runs `case` with a budget of 1 and without one and compares everything; returns the
/// continuation calls of the budgeted run.
fn compare(case: &Case) -> u64 {
    let (unbounded_calls, unbounded) = record(case, u32::MAX);
    let (tiny_calls, tiny) = record(case, 1);
    assert_eq!(unbounded.continuations, 0, "{}", case.describe());
    assert_eq!(
        comparable(&tiny),
        comparable(&unbounded),
        "{}",
        case.describe()
    );
    assert_eq!(
        tiny_calls.len(),
        unbounded_calls.len(),
        "{}",
        case.describe()
    );
    for (i, (a, b)) in tiny_calls.iter().zip(&unbounded_calls).enumerate() {
        assert_eq!(a, b, "event {i} differs\n{}", case.describe());
    }
    tiny.continuations
}

/// Many small seeded runs (faults, restarts, both failover strategies): identical with a budget
/// of one and without a budget, and the invariants of the simulation hold with a budget of one.
#[test]
fn a_budget_of_one_gives_the_same_runs_on_small_graphs() {
    let mut continuations = 0;
    for seed in 0..600 {
        let case = Case::for_seed(seed);
        if case.spec.build().is_err() {
            continue;
        }
        continuations += compare(&case);
        let mut tiny = case.clone();
        tiny.config.scheduler.work_budget = 1;
        if let Err(v) = run_case(&tiny) {
            panic!("({}) {}\n{}", v.invariant, v.message, tiny.describe());
        }
    }
    assert!(continuations > 1_000, "only {continuations} continuations");
}

/// Medium graphs (the small ones with every parallelism multiplied by 8 to 40, up to 200
/// subtasks per vertex): identical with a budget of one and without a budget.
#[test]
fn a_budget_of_one_gives_the_same_runs_on_medium_graphs() {
    let mut continuations = 0;
    let mut compared = 0;
    for seed in 0..40 {
        let mut case = Case::for_seed(seed);
        let factor = 8 + u32::try_from(seed % 33).expect("small");
        for p in &mut case.spec.parallelism {
            *p *= factor;
        }
        if case.spec.build().is_err() {
            continue;
        }
        compared += 1;
        continuations += compare(&case);
    }
    assert!(compared >= 30, "only {compared} medium graphs");
    assert!(continuations > 10_000, "only {continuations} continuations");
}
