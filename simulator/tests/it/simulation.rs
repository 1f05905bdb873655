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
//! `CONFLUX_SEED=<seed> cargo test -p conflux-scheduler --test it -- --ignored --nocapture
//! one_seed` replays one seed with a trace of every scheduler call;
//! `CONFLUX_SOAK_SEEDS=100000 cargo test -p conflux-scheduler --test it -- --ignored soak`
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

/// A broken invariant.
#[derive(Clone, Debug)]
struct Violation {
    /// `a` .. `e` and the finer tags of the module docs.
    invariant: &'static str,
    message: String,
}

impl Violation {
    fn new(invariant: &'static str, message: String) -> Violation {
        Violation { invariant, message }
    }
}

/// What a run did, for the summary.
#[derive(Clone, Copy, Debug, Default)]
struct Stats {
    calls: u64,
    deploys: u64,
    blocking_inputs_checked: u64,
    restarts_checked: u64,
    restarts_with_uncertain_vertices: u64,
    task_manager_loss_restarts: u64,
    partition_not_found_restarts: u64,
}

#[derive(Clone, Debug)]
struct Outcome {
    report: SimulationReport,
    stats: Stats,
}

/// Coarse state classes: what the failover decision and the checks distinguish.
fn class(s: ExecutionState) -> u8 {
    match s {
        ExecutionState::Created => 0,
        ExecutionState::Scheduled => 1,
        ExecutionState::Deploying | ExecutionState::Initializing | ExecutionState::Running => 2,
        ExecutionState::Finished => 3,
        ExecutionState::Canceling | ExecutionState::Canceled | ExecutionState::Failed => 4,
    }
}

/// Whether the crate's availability check counts a producer in this state as tracking its
/// partitions (deployed or finished).
fn tracks_partitions(s: ExecutionState) -> bool {
    matches!(
        s,
        ExecutionState::Deploying
            | ExecutionState::Initializing
            | ExecutionState::Running
            | ExecutionState::Finished
    )
}

struct Checker<'a> {
    graph: &'a ExecutionGraph,
    regions: &'a PipelinedRegions,
    explicit: Explicit,
    failover: FailoverStrategy,
    partition_ids: Vec<IntermediateResultPartitionId>,

    // Shadow of the scheduler.
    state: Vec<ExecutionState>,
    attempt: Vec<u32>,
    location: Vec<Option<u32>>,
    available: Vec<bool>,
    status: JobStatus,
    /// Per region: deployed since its last reset.
    deployed: Vec<bool>,

    violation: Option<Violation>,
    stats: Stats,
    /// The last call, for messages when `simulate` itself fails.
    last_call: String,
    /// Every call with the states after it, when tracing.
    trace: Option<Vec<String>>,
}

/// Per call: what happened so far among its commands.
#[derive(Default)]
struct CallState {
    /// A reset happened earlier in this call: CREATED vertices may have been scheduled since.
    after_reset: bool,
    reset_vertices: BTreeSet<u32>,
    restarts: u32,
    job_failed: bool,
    deployed: Vec<(u32, u32)>,
    cancelled: BTreeSet<(u32, u32)>,
    /// TaskManager loss: the vertices it may fail, in the order the scheduler fails them.
    loss: Option<LossState>,
}

struct LossState {
    /// (vertex, its attempt at the loss, whether it is only perhaps placed there), ascending.
    candidates: Vec<(u32, u32, bool)>,
    /// Whether any candidate is only perhaps placed there.
    uncertain: bool,
    /// The candidate the last restart of this loss was for.
    cursor: Option<u32>,
    /// Every vertex's state and place at the loss, for messages.
    snapshot: String,
}

impl<'a> Checker<'a> {
    fn new(
        graph: &'a ExecutionGraph,
        regions: &'a PipelinedRegions,
        failover: FailoverStrategy,
    ) -> Checker<'a> {
        let n = graph.num_execution_vertices() as usize;
        let mut partition_ids = Vec::with_capacity(graph.num_partitions() as usize);
        for (r, ds) in graph.job_graph().data_sets().iter().enumerate() {
            let producers = graph.execution_vertices_of(ds.producer);
            for p in 0..producers.end - producers.start {
                let id = IntermediateResultPartitionId {
                    result: IntermediateDataSetIndex(r as u32),
                    partition: p,
                };
                assert_eq!(graph.partition_index(id).idx(), partition_ids.len());
                partition_ids.push(id);
            }
        }
        Checker {
            graph,
            regions,
            explicit: Explicit::new(graph),
            failover,
            state: vec![ExecutionState::Created; n],
            attempt: vec![0; n],
            location: vec![None; n],
            available: vec![true; partition_ids.len()],
            partition_ids,
            status: JobStatus::Created,
            deployed: vec![false; regions.len()],
            violation: None,
            stats: Stats::default(),
            last_call: String::new(),
            trace: None,
        }
    }

    fn name(&self, v: u32) -> String {
        self.graph.execution_vertex_name(ExecutionVertexIndex(v))
    }

    fn names(&self, vs: &[u32]) -> String {
        let names: Vec<String> = vs.iter().map(|&v| self.name(v)).collect();
        format!("[{}]", names.join(", "))
    }

    fn region_of(&self, v: u32) -> PipelinedRegionIndex {
        self.regions.region_of(ExecutionVertexIndex(v))
    }

    /// The whole check of one scheduler call.
    fn check_call(
        &mut self,
        event: &Event,
        commands: &[Command],
        scheduler: &Scheduler,
    ) -> Result<(), Violation> {
        let mut call = CallState::default();
        let status_at_start = self.status;
        let attempts_at_start = self.attempt.clone();
        // Effects of the event that precede its commands.
        if let Event::TaskFinished(a) = event {
            let v = a.vertex as usize;
            if self.attempt[v] == a.attempt
                && class(self.state[v]) == 2
                && self.status == JobStatus::Running
            {
                self.state[v] = ExecutionState::Finished;
            }
        }
        let failed_at_start = match event {
            Event::TaskFailed(a, _) => Some((
                a.vertex,
                self.attempt[a.vertex as usize] == a.attempt,
                self.state[a.vertex as usize],
            )),
            _ => None,
        };

        for command in commands {
            match command {
                Command::Deploy { region, tasks } => self.on_deploy(*region, tasks, &mut call)?,
                Command::ResetVertices(vs) => self.on_reset(vs, &mut call)?,
                Command::Cancel(a) => {
                    let v = a.vertex as usize;
                    if self.attempt[v] != a.attempt {
                        return Err(Violation::new(
                            "model",
                            format!(
                                "cancel of {} attempt {} which is not current",
                                self.name(a.vertex),
                                a.attempt
                            ),
                        ));
                    }
                    self.state[v] = ExecutionState::Canceled;
                    call.cancelled.insert((a.vertex, a.attempt));
                }
                Command::ReleaseGroup { partitions, .. } => {
                    for &p in partitions {
                        self.available[self.graph.partition_index(p).idx()] = false;
                    }
                }
                Command::Restart(set) => {
                    call.restarts += 1;
                    let set: Vec<u32> = set.iter().map(|v| v.0).collect();
                    self.on_restart(event, &set, &mut call)?;
                    // The failover cancels what runs (or waits for slots); finished members
                    // stay finished until their reset, but their partitions are unavailable
                    // from now on (the scheduler stops counting them at the decision).
                    for &v in &set {
                        if self.state[v as usize] != ExecutionState::Finished {
                            self.state[v as usize] = ExecutionState::Canceled;
                        } else {
                            for &p in &self.explicit.produced[v as usize] {
                                self.available[p as usize] = false;
                            }
                        }
                    }
                }
                Command::JobStatus { status, .. } => {
                    self.status = *status;
                    if *status == JobStatus::Failed {
                        call.job_failed = true;
                    }
                    if status.is_terminal() {
                        for s in &mut self.state {
                            if *s != ExecutionState::Finished {
                                *s = ExecutionState::Canceled;
                            }
                        }
                    }
                }
            }
        }

        if let Event::TaskManagerLost(tm) = event {
            let loss = match call.loss.take() {
                Some(loss) => loss,
                None => self.lose_task_manager(tm.0, call.after_reset),
            };
            // Every attempt the loss fails gets its failover while the job runs.
            if self.status == JobStatus::Running {
                let missed: Vec<u32> = loss
                    .candidates
                    .iter()
                    .filter(|&&(v, attempt, maybe)| !maybe && self.still_placed(v, attempt))
                    .map(|&(v, _, _)| v)
                    .collect();
                if !missed.is_empty() {
                    return Err(Violation::new(
                        "tm",
                        format!(
                            "TaskManager {} lost, but {} placed there kept going without a \
                             failover\nstates and TaskManagers at the loss: {}",
                            tm.0,
                            self.names(&missed),
                            loss.snapshot
                        ),
                    ));
                }
            }
        }
        if let Some((v, current, state)) = failed_at_start {
            let handled = call.restarts > 0 || call.job_failed;
            if current
                && status_at_start == JobStatus::Running
                && !call.reset_vertices.contains(&v)
                && class(state) == 2
                && !handled
            {
                return Err(Violation::new(
                    "d",
                    format!("the failure of running {} caused no failover", self.name(v)),
                ));
            }
            if current && class(state) == 4 && handled {
                return Err(Violation::new(
                    "flink",
                    format!(
                        "{} failed while {} (cancelled by an earlier failover, not reset yet): \
                         Flink ignores the failure of a cancelled execution, the scheduler \
                         ran a failover for it",
                        self.name(v),
                        state.as_str()
                    ),
                ));
            }
        }

        // A failure must not deploy what its own failover cancels at once. (Restarts due at
        // this instant fire before the event: attempts they create may be deployed and then
        // cancelled by the failure, legitimately.)
        if let Some(&(v, attempt)) = call
            .deployed
            .iter()
            .find(|&&(v, a)| a == attempts_at_start[v as usize] && call.cancelled.contains(&(v, a)))
        {
            return Err(Violation::new(
                "b-cancel",
                format!(
                    "{} attempt {attempt} was deployed and cancelled in the same call: a slot \
                     freed while handling the failure went to its waiting request, then the \
                     failover (or the job's failure) cancelled it",
                    self.name(v)
                ),
            ));
        }

        // No check that a deployed task's hybrid producers in other regions are scheduled: two
        // restarts falling due together can redeploy a hybrid consumer whose producer the second
        // one then resets (Flink's ExecutionVertexVersion check skips the consumer the same way);
        // the producer is rescheduled by that restart and the consumer reads from it.
        self.compare_with(scheduler)
    }

    /// The shadow must agree with the scheduler after the call, but for regions scheduled
    /// without a deploy yet.
    fn compare_with(&self, scheduler: &Scheduler) -> Result<(), Violation> {
        for v in 0..self.state.len() {
            let vi = ExecutionVertexIndex(v as u32);
            let actual = scheduler.state(vi);
            let (mine, theirs) = (class(self.state[v]), class(actual));
            if scheduler.attempt(vi).attempt != self.attempt[v]
                || (mine != theirs && !(mine == 0 && theirs == 1))
            {
                return Err(Violation::new(
                    "model",
                    format!(
                        "{}: shadow says {} attempt {}, the scheduler {} attempt {}",
                        self.name(v as u32),
                        self.state[v].as_str(),
                        self.attempt[v],
                        actual.as_str(),
                        scheduler.attempt(vi).attempt
                    ),
                ));
            }
        }
        for (p, id) in self.partition_ids.iter().enumerate() {
            if scheduler.is_partition_available(*id) != self.available[p] {
                return Err(Violation::new(
                    "model",
                    format!(
                        "partition {} of {}: shadow says available={}, the scheduler not",
                        id.partition,
                        self.graph.job_graph().data_set(id.result).id,
                        self.available[p]
                    ),
                ));
            }
        }
        if scheduler.status() != self.status {
            return Err(Violation::new(
                "model",
                format!(
                    "job status: shadow {:?}, scheduler {:?}",
                    self.status,
                    scheduler.status()
                ),
            ));
        }
        Ok(())
    }

    fn resync(&mut self, scheduler: &Scheduler) {
        for v in 0..self.state.len() {
            let vi = ExecutionVertexIndex(v as u32);
            self.state[v] = scheduler.state(vi);
            self.attempt[v] = scheduler.attempt(vi).attempt;
            if self.state[v] == ExecutionState::Scheduled {
                // A slot assigned to a vertex whose region still waits for others.
                self.location[v] = scheduler.allocation(vi).map(|a| a.task_manager.0);
            }
        }
        for (p, id) in self.partition_ids.iter().enumerate() {
            self.available[p] = scheduler.is_partition_available(*id);
        }
        self.status = scheduler.status();
    }

    fn on_deploy(
        &mut self,
        region: PipelinedRegionIndex,
        tasks: &[(ExecutionAttemptId, AllocationId)],
        call: &mut CallState,
    ) -> Result<(), Violation> {
        self.stats.deploys += 1;
        let members = self.regions.member_indices(region);
        let listed: Vec<u32> = tasks.iter().map(|(a, _)| a.vertex).collect();
        if listed != members {
            return Err(Violation::new(
                "b",
                format!(
                    "deploy of region {} lists {}, its members are {}",
                    region.0,
                    self.names(&listed),
                    self.names(members)
                ),
            ));
        }
        if self.deployed[region.idx()] {
            return Err(Violation::new(
                "b",
                format!(
                    "region {} {} deployed twice without a reset in between",
                    region.0,
                    self.names(members)
                ),
            ));
        }
        self.deployed[region.idx()] = true;
        for (a, _) in tasks {
            let v = a.vertex as usize;
            if a.attempt == self.attempt[v] && class(self.state[v]) == 4 && call.restarts > 0 {
                return Err(Violation::new(
                    "b-cancelling",
                    format!(
                        "deploy of {} attempt {} while a failover earlier in the same call is \
                         cancelling it (state {}): a slot freed by cancelling one member of the \
                         restart set completed the pending slot request of another",
                        self.name(a.vertex),
                        a.attempt,
                        self.state[v].as_str()
                    ),
                ));
            }
            if a.attempt != self.attempt[v] || class(self.state[v]) > 1 {
                return Err(Violation::new(
                    "b",
                    format!(
                        "deploy of {} attempt {}, but its current attempt is {} in state {}",
                        self.name(a.vertex),
                        a.attempt,
                        self.attempt[v],
                        self.state[v].as_str()
                    ),
                ));
            }
            for &(producer, partition, t) in &self.explicit.inputs[v] {
                if !t.is_blocking_or_blocking_persistent() || self.region_of(producer) == region {
                    continue;
                }
                self.stats.blocking_inputs_checked += 1;
                if self.state[producer as usize] != ExecutionState::Finished {
                    let id = self.partition_ids[partition as usize];
                    return Err(Violation::new(
                        "a",
                        format!(
                            "{} deployed before its {t} input {}@{} from another region was \
                             produced: producer attempt {} is {}",
                            self.name(a.vertex),
                            self.name(producer),
                            self.graph.job_graph().data_set(id.result).id,
                            self.attempt[producer as usize],
                            self.state[producer as usize].as_str()
                        ),
                    ));
                }
            }
        }
        for (a, slot) in tasks {
            self.state[a.vertex as usize] = ExecutionState::Deploying;
            self.location[a.vertex as usize] = Some(slot.task_manager.0);
            call.deployed.push((a.vertex, a.attempt));
        }
        Ok(())
    }

    fn on_reset(
        &mut self,
        vs: &[ExecutionVertexIndex],
        call: &mut CallState,
    ) -> Result<(), Violation> {
        let set: BTreeSet<u32> = vs.iter().map(|v| v.0).collect();
        for v in vs {
            let region = self.regions.region_of(*v);
            let missing: Vec<u32> = self
                .regions
                .member_indices(region)
                .iter()
                .copied()
                .filter(|m| !set.contains(m))
                .collect();
            if !missing.is_empty() {
                return Err(Violation::new(
                    "b",
                    format!(
                        "reset of {} leaves {} of its region behind",
                        self.name(v.0),
                        self.names(&missing)
                    ),
                ));
            }
        }
        for v in vs {
            let i = v.idx();
            self.state[i] = ExecutionState::Created;
            self.attempt[i] += 1;
            self.location[i] = None;
            for &p in &self.explicit.produced[i] {
                self.available[p as usize] = true;
            }
            self.deployed[self.regions.region_of(*v).idx()] = false;
            call.reset_vertices.insert(v.0);
        }
        call.after_reset = true;
        Ok(())
    }

    /// A lost TaskManager: finished partitions stored there are gone; the vertices placed there
    /// are the ones it fails.
    fn lose_task_manager(&mut self, tm: u32, after_reset: bool) -> LossState {
        let mut candidates = Vec::new();
        for v in 0..self.state.len() {
            let here = self.location[v] == Some(tm);
            let attempt = self.attempt[v];
            match class(self.state[v]) {
                3 if here => {
                    for &p in &self.explicit.produced[v] {
                        self.available[p as usize] = false;
                    }
                }
                1 | 2 if here => candidates.push((v as u32, attempt, false)),
                // Perhaps scheduled earlier in this call and given a slot there.
                0 if after_reset => candidates.push((v as u32, attempt, true)),
                _ => {}
            }
        }
        let snapshot = (0..self.state.len())
            .map(|v| {
                format!(
                    "{}={}@{:?}",
                    self.name(v as u32),
                    self.state[v].as_str(),
                    self.location[v]
                )
            })
            .collect::<Vec<_>>()
            .join(" ");
        LossState {
            uncertain: candidates.iter().any(|c| c.2),
            candidates,
            cursor: None,
            snapshot,
        }
    }

    /// Whether the attempt a TaskManager loss found is still current and not done.
    fn still_placed(&self, v: u32, attempt: u32) -> bool {
        self.attempt[v as usize] == attempt && matches!(class(self.state[v as usize]), 1 | 2)
    }

    fn on_restart(
        &mut self,
        event: &Event,
        set: &[u32],
        call: &mut CallState,
    ) -> Result<(), Violation> {
        self.stats.restarts_checked += 1;
        match event {
            Event::TaskFailed(a, cause) => {
                if call.restarts > 1 {
                    return Err(Violation::new(
                        "d",
                        "one task failure caused several restarts".to_owned(),
                    ));
                }
                if self.attempt[a.vertex as usize] != a.attempt {
                    return Err(Violation::new(
                        "d",
                        format!(
                            "restart for {} attempt {}, which is no longer current",
                            self.name(a.vertex),
                            a.attempt
                        ),
                    ));
                }
                let failed_partition = match cause {
                    FailureCause::PartitionNotFound(p) => {
                        self.stats.partition_not_found_restarts += 1;
                        Some(self.graph.partition_index(*p).0)
                    }
                    _ => None,
                };
                self.check_restart(a.vertex, failed_partition, set, call.after_reset)
                    .map_err(|m| Violation::new("d", m))
            }
            Event::TaskManagerLost(tm) => {
                self.stats.task_manager_loss_restarts += 1;
                if call.loss.is_none() {
                    call.loss = Some(self.lose_task_manager(tm.0, call.after_reset));
                }
                let Some(loss) = call.loss.as_ref() else {
                    unreachable!("set above")
                };
                // The scheduler fails the placed attempts in vertex order, each one still
                // running (or waiting for slots) when its turn comes.
                let eligible: Vec<u32> = loss
                    .candidates
                    .iter()
                    .filter(|&&(v, attempt, maybe)| {
                        self.still_placed(v, attempt)
                            || (maybe
                                && self.attempt[v as usize] == attempt
                                && self.state[v as usize] == ExecutionState::Created)
                    })
                    .map(|&(v, _, _)| v)
                    .filter(|&v| loss.uncertain || loss.cursor.is_none_or(|c| v > c))
                    .collect();
                let snapshot = loss.snapshot.clone();
                let loss_candidates = loss.candidates.clone();
                let tried: Vec<u32> = if loss.uncertain {
                    eligible
                } else {
                    eligible.into_iter().take(1).collect()
                };
                let mut errors = Vec::new();
                for &v in &tried {
                    match self.check_restart(v, None, set, call.after_reset) {
                        Ok(()) => {
                            if let Some(loss) = call.loss.as_mut() {
                                loss.cursor = Some(v);
                            }
                            return Ok(());
                        }
                        Err(m) => errors.push(format!("if {} failed: {m}", self.name(v))),
                    }
                }
                // A candidate reset (and redeployed elsewhere) by an earlier failover of this
                // loss must not fail again: its new attempt was never on the lost TaskManager.
                let redeployed: Vec<(u32, u32)> = loss_candidates
                    .iter()
                    .filter(|&&(v, attempt, _)| {
                        self.attempt[v as usize] != attempt
                            && match class(self.state[v as usize]) {
                                1 | 2 => true,
                                // Perhaps scheduled again, waiting for slots.
                                0 => call.after_reset,
                                _ => false,
                            }
                    })
                    .map(|&(v, attempt, _)| (v, attempt))
                    .collect();
                for (v, attempt) in redeployed {
                    if self.check_restart(v, None, set, call.after_reset).is_ok() {
                        return Err(Violation::new(
                            "tm",
                            format!(
                                "TaskManager {} lost: attempt {attempt} of {} was there, an \
                                 earlier failover of the same loss reset it and deployed attempt \
                                 {} ({}, not on the lost TaskManager), and the scheduler failed \
                                 that new attempt too: restart {}\nstates and TaskManagers at the loss: {snapshot}",
                                tm.0,
                                self.name(v),
                                self.attempt[v as usize],
                                if self.state[v as usize] == ExecutionState::Created {
                                    "perhaps SCHEDULED"
                                } else {
                                    self.state[v as usize].as_str()
                                },
                                self.names(set)
                            ),
                        ));
                    }
                }
                Err(Violation::new(
                    "d",
                    format!(
                        "TaskManager {} lost: restart {} matches none of the vertices it could \
                         have failed {}:\n{}\nstates and TaskManagers at the loss: {snapshot}",
                        tm.0,
                        self.names(set),
                        self.names(&tried),
                        errors.join("\n")
                    ),
                ))
            }
            other => Err(Violation::new(
                "d",
                format!(
                    "restart {} without a failure, on {other:?}",
                    self.names(set)
                ),
            )),
        }
    }

    /// Compares a restart set with the reference on the shadow state.
    fn check_restart(
        &mut self,
        failed: u32,
        failed_partition: Option<u32>,
        actual: &[u32],
        after_reset: bool,
    ) -> Result<(), String> {
        let flags = match self.failover {
            FailoverStrategy::Full => vec![true; self.regions.len()],
            FailoverStrategy::Region => {
                let state = &self.state;
                let available = &self.available;
                let producers = &self.explicit.partition_producer;
                let is_available = |p: u32, t| {
                    type_can_be_available(t)
                        && Some(p) != failed_partition
                        && available[p as usize]
                        && tracks_partitions(state[producers[p as usize].0 as usize])
                };
                self.explicit
                    .restart_regions(self.regions, failed, &is_available)
            }
        };
        let members = members_of(self.regions, &flags);
        let actual_set: BTreeSet<u32> = actual.iter().copied().collect();
        let mut sorted = actual.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut expected = Vec::new();
        let mut uncertain = Vec::new();
        for &v in &members {
            if self.state[v as usize] != ExecutionState::Created {
                expected.push(v);
            } else if after_reset {
                uncertain.push(v);
            }
        }
        if !uncertain.is_empty() {
            self.stats.restarts_with_uncertain_vertices += 1;
        }
        let member_set: BTreeSet<u32> = members.iter().copied().collect();
        let ok = sorted == actual
            && expected.iter().all(|v| actual_set.contains(v))
            && actual.iter().all(|v| member_set.contains(v));
        if ok {
            return Ok(());
        }
        let states: Vec<String> = members
            .iter()
            .map(|&v| format!("{}={}", self.name(v), self.state[v as usize].as_str()))
            .collect();
        Err(format!(
            "failure of {} (partition not found: {:?}): scheduler restarts {}, reference {} \
             (may add {}); regions of the reference: {}; states before: {}",
            self.name(failed),
            failed_partition.map(|p| {
                let id = self.partition_ids[p as usize];
                format!(
                    "{}@{}",
                    self.name(self.explicit.partition_producer[p as usize].0),
                    self.graph.job_graph().data_set(id.result).id
                )
            }),
            self.names(actual),
            self.names(&expected),
            self.names(&uncertain),
            flags
                .iter()
                .enumerate()
                .filter(|(_, f)| **f)
                .map(|(r, _)| r.to_string())
                .collect::<Vec<_>>()
                .join(","),
            states.join(" ")
        ))
    }
}

impl Observer for Checker<'_> {
    fn on_handled(
        &mut self,
        now_ms: u64,
        event: &Event,
        commands: &[Command],
        scheduler: &Scheduler,
    ) {
        if self.violation.is_some() {
            return;
        }
        self.last_call = format!("at {now_ms} ms, event {event:?}\n  commands {commands:?}");
        self.stats.calls += 1;
        if let Err(mut v) = self.check_call(event, commands, scheduler) {
            v.message = format!(
                "{}\n  at {now_ms} ms, event {event:?}\n  commands {commands:?}",
                v.message
            );
            self.violation = Some(v);
        }
        self.resync(scheduler);
        if let Some(trace) = &mut self.trace {
            let states: Vec<String> = (0..self.state.len())
                .map(|v| {
                    format!(
                        "{}={}.{}",
                        self.graph
                            .execution_vertex_name(ExecutionVertexIndex(v as u32)),
                        self.state[v].as_str(),
                        self.attempt[v]
                    )
                })
                .collect();
            trace.push(format!(
                "{now_ms} ms {event:?}\n    -> {commands:?}\n    states {}",
                states.join(" ")
            ));
        }
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

// ---- shrinking ----

fn without_edge(spec: &GraphSpec, k: usize) -> GraphSpec {
    let mut out = spec.clone();
    out.edges.remove(k);
    for e in &mut out.edges {
        e.shares = match e.shares {
            Some(s) if s == k => None,
            Some(s) if s > k => Some(s - 1),
            s => s,
        };
    }
    // An edge that shared the removed one becomes a root; later sharers of the removed edge
    // now share nothing (they keep its pattern and type).
    out
}

fn without_vertex(spec: &GraphSpec, v: usize) -> GraphSpec {
    let mut out = spec.clone();
    while let Some(k) = out
        .edges
        .iter()
        .position(|e| e.source == v || e.target == v)
    {
        out = without_edge(&out, k);
    }
    out.parallelism.remove(v);
    out.slot_sharing.remove(v);
    let renumber = |x: usize| if x > v { x - 1 } else { x };
    for e in &mut out.edges {
        e.source = renumber(e.source);
        e.target = renumber(e.target);
    }
    out
}

/// Smaller variants of a case, most aggressive first.
fn smaller(case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    let with_spec = |spec: GraphSpec| Case {
        spec,
        ..case.clone()
    };
    let spec = &case.spec;
    if spec.parallelism.len() > 1 {
        for v in 0..spec.parallelism.len() {
            out.push(with_spec(without_vertex(spec, v)));
        }
    }
    for k in 0..spec.edges.len() {
        out.push(with_spec(without_edge(spec, k)));
    }
    for v in 0..spec.parallelism.len() {
        if spec.parallelism[v] > 1 {
            let mut s = spec.clone();
            s.parallelism[v] -= 1;
            out.push(with_spec(s));
        }
    }
    if spec.slot_sharing.iter().any(Option::is_some) {
        let mut s = spec.clone();
        s.slot_sharing = vec![None; s.parallelism.len()];
        out.push(with_spec(s));
    }
    let faults = case.config.faults;
    let mut with_faults = |f: Faults| {
        let mut c = case.clone();
        c.config.faults = f;
        out.push(c);
    };
    if faults.task_manager_losses > 0 {
        with_faults(Faults {
            task_manager_losses: faults.task_manager_losses - 1,
            ..faults
        });
    }
    if faults.blob_server_restarts > 0 {
        with_faults(Faults {
            blob_server_restarts: 0,
            ..faults
        });
    }
    if faults.task_failure > 0.0 {
        with_faults(Faults {
            task_failure: 0.0,
            ..faults
        });
    }
    if faults.partition_not_found > 0.0 {
        with_faults(Faults {
            partition_not_found: 0.0,
            ..faults
        });
    }
    out.retain(|c| c.spec.build().is_ok());
    out
}

/// Greedy shrinking: keep any smaller variant that still breaks the same invariant.
fn shrink(case: &Case, violation: &Violation) -> (Case, Violation) {
    let mut best = (case.clone(), violation.clone());
    let mut budget = 3_000;
    'outer: while budget > 0 {
        for candidate in smaller(&best.0) {
            budget -= 1;
            if let Err(v) = run_case(&candidate) {
                if v.invariant == violation.invariant {
                    best = (candidate, v);
                    continue 'outer;
                }
            }
            if budget == 0 {
                break;
            }
        }
        break;
    }
    best
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
#[ignore = "soak run: CONFLUX_SOAK_SEEDS=100000 cargo test -p conflux-scheduler --test it -- --ignored soak"]
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
