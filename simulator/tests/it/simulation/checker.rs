//! The invariant checker of the seeded simulation: an [`Observer`] that keeps a shadow of the
//! scheduler's state and checks (a) to (d) of the parent module after every scheduler call.

use super::*;

/// A broken invariant.
#[derive(Clone, Debug)]
pub(super) struct Violation {
    /// `a` .. `e` and the finer tags of the module docs.
    pub(super) invariant: &'static str,
    pub(super) message: String,
}

impl Violation {
    pub(super) fn new(invariant: &'static str, message: String) -> Violation {
        Violation { invariant, message }
    }
}

/// What a run did, for the summary.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Stats {
    pub(super) calls: u64,
    pub(super) deploys: u64,
    pub(super) blocking_inputs_checked: u64,
    pub(super) restarts_checked: u64,
    pub(super) restarts_with_uncertain_vertices: u64,
    pub(super) task_manager_loss_restarts: u64,
    pub(super) partition_not_found_restarts: u64,
}

#[derive(Clone, Debug)]
pub(super) struct Outcome {
    pub(super) report: SimulationReport,
    pub(super) stats: Stats,
}

/// Coarse state classes: what the failover decision and the checks distinguish.
pub(super) fn class(s: ExecutionState) -> u8 {
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
pub(super) fn tracks_partitions(s: ExecutionState) -> bool {
    matches!(
        s,
        ExecutionState::Deploying
            | ExecutionState::Initializing
            | ExecutionState::Running
            | ExecutionState::Finished
    )
}

pub(super) struct Checker<'a> {
    pub(super) graph: &'a ExecutionGraph,
    pub(super) regions: &'a PipelinedRegions,
    pub(super) explicit: Explicit,
    pub(super) failover: FailoverStrategy,
    pub(super) partition_ids: Vec<IntermediateResultPartitionId>,

    // Shadow of the scheduler.
    pub(super) state: Vec<ExecutionState>,
    pub(super) attempt: Vec<u32>,
    pub(super) location: Vec<Option<u32>>,
    pub(super) available: Vec<bool>,
    pub(super) status: JobStatus,
    /// Per region: deployed since its last reset.
    pub(super) deployed: Vec<bool>,

    pub(super) violation: Option<Violation>,
    pub(super) stats: Stats,
    /// The last call, for messages when `simulate` itself fails.
    pub(super) last_call: String,
    /// Every call with the states after it, when tracing.
    pub(super) trace: Option<Vec<String>>,
}

/// Per call: what happened so far among its commands.
#[derive(Default)]
pub(super) struct CallState {
    /// A reset happened earlier in this call: CREATED vertices may have been scheduled since.
    pub(super) after_reset: bool,
    pub(super) reset_vertices: BTreeSet<u32>,
    pub(super) restarts: u32,
    pub(super) job_failed: bool,
    pub(super) deployed: Vec<(u32, u32)>,
    pub(super) cancelled: BTreeSet<(u32, u32)>,
    /// TaskManager loss: the vertices it may fail, in the order the scheduler fails them.
    pub(super) loss: Option<LossState>,
}

pub(super) struct LossState {
    /// (vertex, its attempt at the loss, whether it is only perhaps placed there), ascending.
    pub(super) candidates: Vec<(u32, u32, bool)>,
    /// Whether any candidate is only perhaps placed there.
    pub(super) uncertain: bool,
    /// The candidate the last restart of this loss was for.
    pub(super) cursor: Option<u32>,
    /// Every vertex's state and place at the loss, for messages.
    pub(super) snapshot: String,
}

impl<'a> Checker<'a> {
    pub(super) fn new(
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

    pub(super) fn name(&self, v: u32) -> String {
        self.graph.execution_vertex_name(ExecutionVertexIndex(v))
    }

    pub(super) fn names(&self, vs: &[u32]) -> String {
        let names: Vec<String> = vs.iter().map(|&v| self.name(v)).collect();
        format!("[{}]", names.join(", "))
    }

    pub(super) fn region_of(&self, v: u32) -> PipelinedRegionIndex {
        self.regions.region_of(ExecutionVertexIndex(v))
    }

    /// The whole check of one scheduler call.
    pub(super) fn check_call(
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
                // The seeded runs checked here have speculative execution off (its own tests
                // are `speculative.rs`): a speculative attempt is a bug.
                Command::DeploySpeculative { tasks } => {
                    return Err(Violation::new(
                        "model",
                        format!(
                            "{} speculative attempt(s) with speculation off",
                            tasks.len()
                        ),
                    ));
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
                // The seeded jobs are built whole (no undecided vertex): nothing may grow.
                Command::JobVertexInitialized { .. } => {
                    return Err(Violation::new(
                        "model",
                        "a graph built whole grew".to_owned(),
                    ));
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
    pub(super) fn compare_with(&self, scheduler: &Scheduler) -> Result<(), Violation> {
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

    pub(super) fn resync(&mut self, scheduler: &Scheduler) {
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

    pub(super) fn on_deploy(
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

    pub(super) fn on_reset(
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
    pub(super) fn lose_task_manager(&mut self, tm: u32, after_reset: bool) -> LossState {
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
    pub(super) fn still_placed(&self, v: u32, attempt: u32) -> bool {
        self.attempt[v as usize] == attempt && matches!(class(self.state[v as usize]), 1 | 2)
    }

    pub(super) fn on_restart(
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
    pub(super) fn check_restart(
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
