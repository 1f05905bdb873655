//! Deterministic simulation with seeded faults: random small job graphs (2-6 vertices,
//! parallelism 1-5, pointwise / all-to-all edges of every simulated partition type, shared data
//! sets and slot sharing groups sometimes) run through `conflux_sim::simulate` with
//! seeded task failures, partition-not-found failures, TaskManager losses and blob server
//! restarts, while an [`Observer`] checks after every scheduler call:
//!
//! * (a) no task is deployed before every BLOCKING / BLOCKING_PERSISTENT partition it reads from
//!   another region was produced by a FINISHED current attempt (intra-region blocking edges are
//!   exempt);
//! * (b) no region is deployed twice without a reset in between; a deploy names exactly its
//!   region's members at their current attempts; resets cover whole regions; also
//!   (`b-cancel`, `b-cancelling`) no attempt is deployed and cancelled by the same call;
//! * (c) every job ends FINISHED (all tasks FINISHED) or FAILED because the restart strategy
//!   gave up, never RUNNING, and `simulate` does not fail (`sim`);
//! * (d) every `Command::Restart` equals a naive reference over explicit edges
//!   ([`Explicit::restart_regions`]) evaluated on the scheduler's state just before the failure;
//!   a running task's failure gets a failover; a TaskManager loss fails exactly the attempts
//!   placed there (`tm`), and a cancelled attempt's failure report is ignored (`flink`);
//! * (e) equal seeds give equal trace digests, different seeds different ones.
//!
//! The observer only sees the scheduler after each call, so it keeps a shadow of the state it
//! needs (vertex states, attempts, where each attempt runs, partition availability), re-synced
//! from the scheduler after each call and advanced through the commands of the call in order:
//! the state at a `Restart` command is the state the failover decision saw (a self-check,
//! `model`, compares the shadow with the scheduler after every call). One transition is
//! invisible in the commands: a region scheduled but still waiting for slots (CREATED ->
//! SCHEDULED). Inside a call it only happens after a reset; such vertices are "uncertain" for
//! the CREATED filter of (d) and may be in or out of the restart set.
//!
//! A failure prints the seed, the simulation config and the graph as job graph JSON, and the
//! smallest failing graph shrunk greedily under the same simulation seed.
//! `CONFLUX_SEED=<seed> cargo test -p conflux-sim --test it -- --ignored --nocapture
//! one_seed` replays one seed with a trace of every scheduler call;
//! `CONFLUX_SOAK_SEEDS=100000 cargo test -p conflux-sim --test it -- --ignored soak`
//! runs the soak (`CONFLUX_SOAK_START` moves the first seed).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use conflux_deploy::{AllocationId, ExecutionAttemptId, ExecutionState};
use conflux_graph::{
    ExecutionGraph, ExecutionVertexIndex, IntermediateDataSetIndex, IntermediateResultPartitionId,
    JobType, PipelinedRegionIndex, PipelinedRegions,
};
use conflux_scheduler::{
    Command, Event, FailoverStrategy, FailureCause, JobStatus, RestartStrategy, Scheduler,
};
use conflux_sim::{
    simulate, Faults, MemoryBlobEnvironment, Observer, SimulationConfig, SimulationReport,
};

use conflux_test_support::reference::{
    members_of, rng_for_seed, type_can_be_available, Explicit, GraphSpec, SIMULATED_TYPES,
};

mod budget;
mod checker;
mod shrink;

use checker::{Checker, Outcome, Stats, Violation};
use shrink::shrink;

/// Seeds of the default run (about 0.25 ms each, in parallel on every core).
const SEEDS: u64 = 10_000;

/// Everything one run needs; a seed names one.
#[derive(Clone, Debug)]
struct Case {
    seed: u64,
    spec: GraphSpec,
    config: SimulationConfig,
}

impl Case {
    fn for_seed(seed: u64) -> Case {
        let mut rng = rng_for_seed(seed);
        let spec = GraphSpec::random(&mut rng, &SIMULATED_TYPES);
        let job_type = if spec.job_type() == "batch" {
            JobType::Batch
        } else {
            JobType::Streaming
        };
        let mut config = SimulationConfig::for_job_type(job_type);
        config.seed = rng.next_u64();
        // Faults strike first attempts only (see `Faults`), so every rate up to 0.2 ends.
        config.faults = Faults {
            task_failure: if rng.chance(0.2) {
                0.0
            } else {
                rng.unit() * 0.2
            },
            partition_not_found: if rng.chance(0.3) {
                0.0
            } else {
                rng.unit() * 0.2
            },
            task_manager_losses: rng.below(3) as u32,
            blob_server_restarts: rng.below(2) as u32,
        };
        config.scheduler.restart = match rng.below(10) {
            0..=6 => RestartStrategy::FixedDelay {
                attempts: 1_000,
                delay_ms: [0, 10, 10, 50][rng.index(4)],
            },
            7 => RestartStrategy::FixedDelay {
                attempts: 2,
                delay_ms: 10,
            },
            8 => RestartStrategy::FixedDelay {
                attempts: 2,
                delay_ms: 0,
            },
            _ => RestartStrategy::None,
        };
        if rng.chance(0.1) {
            config.scheduler.failover = FailoverStrategy::Full;
        }
        config.scheduler.release_partitions_during_execution = rng.chance(0.8);
        config.slots_per_task_manager = 1 + rng.below(4) as u32;
        let lo = 1 + rng.below(10);
        config.task_duration_ms = (lo, lo + 10 + rng.below(100));
        config.max_virtual_ms = 3_600_000;
        Case { seed, spec, config }
    }

    fn describe(&self) -> String {
        format!(
            "seed {}\nsimulation config: {:?}\ngraph: {}",
            self.seed,
            self.config,
            self.spec.describe()
        )
    }
}

/// Runs one case and checks every invariant but (e).
fn run_case(case: &Case) -> Result<Outcome, Violation> {
    run_case_traced(case, None)
}

/// [`run_case`], recording every scheduler call into `trace`.
fn run_case_traced(case: &Case, trace: Option<&mut Vec<String>>) -> Result<Outcome, Violation> {
    let (graph, regions) = case
        .spec
        .build()
        .map_err(|e| Violation::new("sim", format!("graph does not build: {e}")))?;
    let mut checker = Checker::new(&graph, &regions, case.config.scheduler.failover);
    if trace.is_some() {
        checker.trace = Some(Vec::new());
    }
    let report = simulate(
        graph.clone(),
        regions.clone(),
        &case.config,
        &MemoryBlobEnvironment::new(),
        &mut checker,
    );
    if let (Some(out), Some(lines)) = (trace, checker.trace.take()) {
        *out = lines;
    }
    if let Some(v) = checker.violation {
        return Err(v);
    }
    let report = report.map_err(|e| {
        Violation::new(
            "sim",
            format!(
                "simulate failed: {e}\n  after the call {}",
                checker.last_call
            ),
        )
    })?;
    // (c) how the job ended.
    match report.status {
        JobStatus::Finished => {
            if let Some(v) = checker
                .state
                .iter()
                .position(|&s| s != ExecutionState::Finished)
            {
                return Err(Violation::new(
                    "c",
                    format!(
                        "job FINISHED with {} in state {}",
                        checker.name(v as u32),
                        checker.state[v].as_str()
                    ),
                ));
            }
        }
        JobStatus::Failed => {
            let reason = report.failure_reason.clone().unwrap_or_default();
            if !reason.contains("restart strategy") {
                return Err(Violation::new(
                    "c",
                    format!("job FAILED, not because of the restart strategy: {reason}"),
                ));
            }
        }
        other => {
            let running: Vec<String> = checker
                .state
                .iter()
                .enumerate()
                .filter(|(_, s)| **s != ExecutionState::Finished)
                .map(|(v, s)| format!("{}={}", checker.name(v as u32), s.as_str()))
                .collect();
            return Err(Violation::new(
                "c",
                format!(
                    "job ended {} at {} virtual ms with an empty event queue (or out of time); \
                     unfinished: {}",
                    other.as_str(),
                    report.virtual_ms,
                    running.join(" ")
                ),
            ));
        }
    }
    if let RestartStrategy::FixedDelay { attempts, .. } = case.config.scheduler.restart {
        if report.restarts > attempts {
            return Err(Violation::new(
                "c",
                format!("{} restarts granted, {attempts} allowed", report.restarts),
            ));
        }
    }
    Ok(Outcome {
        report,
        stats: checker.stats,
    })
}

// ---- running many seeds ----

struct SeedResult {
    seed: u64,
    result: Result<Outcome, Violation>,
    /// (e): the digest of a second run, for some seeds.
    rerun_digest: Option<Result<u64, Violation>>,
}

fn run_seeds(seeds: std::ops::Range<u64>, rerun_every: u64) -> Vec<SeedResult> {
    let next = AtomicU64::new(seeds.start);
    let results = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= seeds.end {
                    break;
                }
                let case = Case::for_seed(seed);
                let result = run_case(&case);
                let rerun_digest = (rerun_every > 0 && seed.is_multiple_of(rerun_every))
                    .then(|| run_case(&case).map(|o| o.report.trace_digest));
                results
                    .lock()
                    .expect("no panics while holding the lock")
                    .push(SeedResult {
                        seed,
                        result,
                        rerun_digest,
                    });
            });
        }
    });
    let mut results = results.into_inner().expect("threads joined");
    results.sort_by_key(|r| r.seed);
    results
}

/// Checks (e) and summarises; panics with the shrunk failures.
fn evaluate(label: &str, results: &[SeedResult], started: Instant) {
    let mut failures: Vec<(u64, Violation)> = Vec::new();
    let mut totals = Stats::default();
    let (mut finished, mut failed, mut restarts, mut tasks, mut events) = (0, 0, 0u64, 0u64, 0u64);
    let mut faults = (0u64, 0u64, 0u64, 0u64);
    let mut digests = BTreeSet::new();
    let mut reruns = 0;
    for r in results {
        match &r.result {
            Ok(o) => {
                match o.report.status {
                    JobStatus::Finished => finished += 1,
                    _ => failed += 1,
                }
                restarts += u64::from(o.report.restarts);
                tasks += o.report.tasks_deployed;
                events += o.report.events;
                let f = o.report.faults_injected;
                faults = (
                    faults.0 + f.0,
                    faults.1 + f.1,
                    faults.2 + f.2,
                    faults.3 + f.3,
                );
                digests.insert(o.report.trace_digest);
                let s = o.stats;
                totals.calls += s.calls;
                totals.deploys += s.deploys;
                totals.blocking_inputs_checked += s.blocking_inputs_checked;
                totals.restarts_checked += s.restarts_checked;
                totals.restarts_with_uncertain_vertices += s.restarts_with_uncertain_vertices;
                totals.task_manager_loss_restarts += s.task_manager_loss_restarts;
                totals.partition_not_found_restarts += s.partition_not_found_restarts;
                match &r.rerun_digest {
                    Some(Ok(d)) if *d != o.report.trace_digest => failures.push((
                        r.seed,
                        Violation::new(
                            "e",
                            format!(
                                "same seed, different trace digests: {:#x} then {d:#x}",
                                o.report.trace_digest
                            ),
                        ),
                    )),
                    Some(Err(v)) => failures.push((
                        r.seed,
                        Violation::new(
                            "e",
                            format!(
                                "second run of the seed broke {}: {}",
                                v.invariant, v.message
                            ),
                        ),
                    )),
                    Some(Ok(_)) => reruns += 1,
                    None => {}
                }
            }
            Err(v) => failures.push((r.seed, v.clone())),
        }
    }
    let ok = results.len() - failures.len();
    println!(
        "{label}: {} seeds in {:.1?}: {ok} kept every invariant ({finished} FINISHED, {failed} \
         FAILED by the restart strategy), {reruns} re-runs with equal digests, {} distinct \
         digests; {restarts} restarts, {tasks} tasks deployed, {events} events; faults injected \
         (task, partition not found, TaskManager loss, blob server restart) {faults:?}; checks: \
         {totals:?}",
        results.len(),
        started.elapsed(),
        digests.len(),
    );
    if !failures.is_empty() {
        let mut by_invariant: std::collections::BTreeMap<&str, Vec<u64>> = Default::default();
        for (seed, v) in &failures {
            by_invariant.entry(v.invariant).or_default().push(*seed);
        }
        let mut report = format!(
            "{} of {} seeds broke invariants: ",
            failures.len(),
            results.len()
        );
        for (invariant, seeds) in &by_invariant {
            report.push_str(&format!(
                "[{invariant}] {} seeds, first {:?}; ",
                seeds.len(),
                &seeds[..seeds.len().min(20)]
            ));
        }
        // Kinds of messages, digits blurred.
        let mut kinds: std::collections::BTreeMap<String, (usize, u64)> = Default::default();
        for (seed, v) in &failures {
            let first = v.message.lines().next().unwrap_or_default();
            let blurred: String = first
                .chars()
                .map(|c| if c.is_ascii_digit() { '#' } else { c })
                .take(160)
                .collect();
            let entry = kinds
                .entry(format!("[{}] {blurred}", v.invariant))
                .or_insert((0, *seed));
            entry.0 += 1;
        }
        for (kind, (count, seed)) in &kinds {
            report.push_str(&format!("\n  {count} x (e.g. seed {seed}) {kind}"));
        }
        // Shrink the smallest failing graph of each invariant.
        let size = |seed: u64| {
            let spec = Case::for_seed(seed).spec;
            (spec.parallelism.iter().sum::<u32>(), spec.edges.len())
        };
        let mut smallest_first = failures.clone();
        smallest_first.sort_by_key(|(seed, _)| (size(*seed), *seed));
        let mut shown = BTreeSet::new();
        for (seed, v) in &smallest_first {
            if !shown.insert(v.invariant) || shown.len() > 6 {
                continue;
            }
            let case = Case::for_seed(*seed);
            report.push_str(&format!(
                "\n\n=== seed {seed}: invariant ({}) ===\n{}\n{}",
                v.invariant,
                v.message,
                case.describe()
            ));
            if v.invariant != "e" {
                let (small, sv) = shrink(&case, v);
                report.push_str(&format!(
                    "\n--- shrunk (same simulation seed) ---\n{}\n{}",
                    sv.message,
                    small.describe()
                ));
            }
        }
        panic!("{report}");
    }
    // (e) different seeds: nearly every run has its own digest.
    assert!(
        digests.len() * 100 >= ok * 95,
        "only {} distinct digests over {ok} seeds",
        digests.len()
    );
}

/// At least 1,000 seeded runs with the invariants checked after every scheduler call.
#[test]
fn simulated_jobs_keep_the_scheduler_invariants() {
    let started = Instant::now();
    let results = run_seeds(0..SEEDS, 8);
    evaluate("simulation", &results, started);
}

/// (e) on one graph: a different simulation seed (durations, faults) gives a different trace.
#[test]
fn different_simulation_seeds_give_different_traces() {
    let mut differ = 0;
    let mut compared = 0;
    for seed in 0..40 {
        let case = Case::for_seed(seed);
        let mut other = case.clone();
        other.config.seed = case.config.seed.wrapping_add(1);
        let (Ok(a), Ok(b)) = (run_case(&case), run_case(&other)) else {
            continue;
        };
        compared += 1;
        if a.report.trace_digest != b.report.trace_digest {
            differ += 1;
        }
    }
    assert!(compared >= 30, "only {compared} pairs ran");
    assert!(differ * 10 >= compared * 9, "{differ} of {compared} differ");
}

/// Soak: `CONFLUX_SOAK_SEEDS` seeds (default 100,000) from `CONFLUX_SOAK_START` (default
/// 1,000,000, past the default run).
#[test]
#[ignore = "soak run: CONFLUX_SOAK_SEEDS=100000 cargo test --release -p conflux-sim --test it -- --ignored soak"]
fn soak_simulated_jobs() {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let count = env("CONFLUX_SOAK_SEEDS", 100_000);
    let start = env("CONFLUX_SOAK_START", 1_000_000);
    let started = Instant::now();
    let results = run_seeds(start..start + count, 16);
    evaluate("soak", &results, started);
}

/// A replayable single seed: `CONFLUX_SEED=123 cargo test -p conflux-scheduler --test it --
/// --ignored --nocapture one_seed`.
#[test]
#[ignore = "debugging aid: CONFLUX_SEED=<seed>"]
fn one_seed() {
    let seed = std::env::var("CONFLUX_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let case = Case::for_seed(seed);
    println!("{}", case.describe());
    match run_case(&case) {
        Ok(o) => println!("{:?}\n{:?}", o.report, o.stats),
        Err(v) => {
            let (small, sv) = shrink(&case, &v);
            let mut trace = Vec::new();
            let _ = run_case_traced(&small, Some(&mut trace));
            println!("--- trace of the shrunk case ---\n{}", trace.join("\n"));
            panic!(
                "({}) {}\n--- shrunk ---\n{}\n{}",
                v.invariant,
                v.message,
                sv.message,
                small.describe()
            );
        }
    }
}
