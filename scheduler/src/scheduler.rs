//! The scheduler core: a deterministic state machine. Events in, commands out; no I/O, no
//! threads, no clock (time is an argument).
//!
//! This file holds the state and the event dispatch. The components Flink names live beside it,
//! each an `impl Scheduler` block over the same state: `scheduling_strategy.rs`
//! (`PipelinedRegionSchedulingStrategy`), `slot_pool.rs` (slot sharing and the pending slot
//! requests), `partition_release.rs` (`RegionPartitionGroupReleaseStrategy`),
//! `failure_handling.rs` (failover: restart sets, back-off, cancel, reset, reschedule),
//! `speculative.rs` (speculative execution: slow task detection, speculative attempts, blocked
//! nodes; hooked into finish, failure, reset and release, inert when off) and `trace.rs` (the
//! digest of events and commands).

use std::sync::Arc;

use conflux_deploy::{
    AllocationId, ExecutionAttemptId, ExecutionState, ProducerStates, ProducerView,
    TaskManagerLocation,
};
use conflux_graph::{
    ConsumedPartitionGroupId, ExecutionGraph, ExecutionVertexIndex, IndexVec,
    IntermediateResultPartitionId, PartitionIndex, PipelinedRegionIndex, PipelinedRegions,
};

use crate::adaptive::AdaptiveState;
use crate::api::{Command, Event, FailureCause, JobStatus, SchedulerConfig, SchedulerError};
use crate::continuation::{Budget, FinishRun, ResetRun, ScheduleRun};
use crate::failure_handling::TaskFailure;
use crate::restart_backoff::{PendingRestart, RestartBackoff};
use crate::scheduling_strategy::topology::SchedulingTopology;
use crate::slot_pool::{SlotPool, NO_REQUEST};
use crate::speculative::SpeculativeState;
use crate::trace::TraceDigest;
use crate::transitions::StateTransition;

/// `Scheduler::location` of a vertex never given a slot.
pub(crate) const NO_LOCATION: u32 = u32::MAX;

/// The scheduler of one job: Flink's `DefaultScheduler` with `PipelinedRegionSchedulingStrategy`,
/// `RestartPipelinedRegionFailoverStrategy` and `RegionPartitionGroupReleaseStrategy`, as a
/// deterministic state machine; with [`SchedulerConfig::speculative`] on, also Flink's
/// `SpeculativeScheduler` for batch jobs (`speculative.rs`).
///
/// Feed it [`Event`]s with [`handle`](Self::handle); it answers with [`Command`]s. It implements
/// [`ProducerStates`] so that deployment descriptors can be built from it after each call.
///
/// Memory: O(N + partitions + groups + regions) flat arrays, indexed by the graph's typed
/// indices; nothing is O(U x D).
pub struct Scheduler {
    pub(crate) graph: Arc<ExecutionGraph>,
    pub(crate) regions: Arc<PipelinedRegions>,
    pub(crate) topology: SchedulingTopology,
    /// The regions scheduled at `Start` (found by [`SchedulingTopology::source_regions`] when
    /// the scheduler is built; taken, so empty after `Start`).
    pub(crate) source_regions: Vec<PipelinedRegionIndex>,
    pub(crate) config: SchedulerConfig,
    pub(crate) status: JobStatus,
    pub(crate) failure_reason: Option<String>,
    pub(crate) backoff: RestartBackoff,

    // Per execution vertex.
    pub(crate) state: IndexVec<ExecutionVertexIndex, ExecutionState>,
    pub(crate) attempt: IndexVec<ExecutionVertexIndex, u32>,
    pub(crate) allocation: IndexVec<ExecutionVertexIndex, Option<AllocationId>>,
    /// Where the current attempt's partitions are (kept after it finishes): an index of the
    /// slot pool's locations ([`NO_LOCATION`]: none). Four bytes a vertex where the location
    /// itself took forty.
    pub(crate) location: IndexVec<ExecutionVertexIndex, u32>,
    pub(crate) unfinished_vertices: u32,

    // Per partition.
    pub(crate) data_produced: IndexVec<PartitionIndex, bool>,
    pub(crate) lost: IndexVec<PartitionIndex, bool>,
    pub(crate) released: IndexVec<PartitionIndex, bool>,

    // Per group.
    /// Partitions of the group whose producers have not finished (blocking groups).
    pub(crate) unfinished_partitions: IndexVec<ConsumedPartitionGroupId, u32>,
    /// Consumer regions of the group that have not finished (the release strategy).
    pub(crate) unfinished_consumer_regions: IndexVec<ConsumedPartitionGroupId, u32>,
    pub(crate) group_released: IndexVec<ConsumedPartitionGroupId, bool>,

    // Per region.
    pub(crate) scheduled: IndexVec<PipelinedRegionIndex, bool>,
    pub(crate) region_unfinished: IndexVec<PipelinedRegionIndex, u32>,

    // Per-call scratch of the scheduling strategy, stamped by round so that clearing is O(1).
    pub(crate) round: u32,
    pub(crate) group_round: IndexVec<ConsumedPartitionGroupId, u32>,
    pub(crate) group_consumable: IndexVec<ConsumedPartitionGroupId, bool>,
    pub(crate) group_visited_round: IndexVec<ConsumedPartitionGroupId, u32>,
    pub(crate) chosen: IndexVec<PipelinedRegionIndex, bool>,

    pub(crate) slots: SlotPool,
    /// Per region, the slots its open deploy request still misses (`NO_REQUEST`: none open). A
    /// region has at most one request: it is scheduled only when not scheduled.
    pub(crate) missing_slots: IndexVec<PipelinedRegionIndex, u32>,
    /// Per region, the number of its latest slot request (stale bulk checks are skipped).
    pub(crate) request_epoch: IndexVec<PipelinedRegionIndex, u32>,
    /// Regions whose request has every slot, deployed at the end of the current call.
    pub(crate) ready_requests: Vec<PipelinedRegionIndex>,
    /// The vertices given the slot last served (a buffer kept between serves).
    pub(crate) served: Vec<ExecutionVertexIndex>,

    pub(crate) pending_restarts: Vec<PendingRestart>,
    pub(crate) out: Vec<Command>,
    /// Commands at the front of `out` already mixed into the trace (finished owed work that
    /// precedes the event being handled).
    pub(crate) mixed: usize,
    pub(crate) trace: TraceDigest,
    pub(crate) events: u64,

    // Owed work (`continuation.rs`): what the last call left beyond its budget.
    /// The current call may record its scheduling run instead of doing it (it is the last
    /// thing the call does); taken by the first run.
    pub(crate) defer_schedule: bool,
    /// The virtual time of the last `handle` call, the time of any work it left owed.
    pub(crate) owed_at_ms: u64,
    /// A restart's reset not yet complete (its scheduling run follows).
    pub(crate) pending_reset: Option<ResetRun>,
    /// A scheduling run not yet complete.
    pub(crate) pending_schedule: Option<ScheduleRun>,
    /// The end of a call not yet complete (serving the slot queue, deploying).
    pub(crate) pending_finish: Option<FinishRun>,

    /// Adaptive batch (`adaptive.rs`): what decides and grows a dynamic graph; `None` for a
    /// graph built whole.
    pub(crate) adaptive: Option<Box<AdaptiveState>>,
    /// Speculative execution (`speculative.rs`); `None` when it is off.
    pub(crate) speculative: Option<Box<SpeculativeState>>,
    /// Every execution state change since the driver last took them, when it asked for them
    /// (`transitions.rs`).
    pub(crate) transitions: Option<Vec<StateTransition>>,
    /// Regions restored finished before `Start` (`recovery.rs`).
    pub(crate) restored_regions: u32,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("status", &self.status)
            .field("vertices", &self.state.len())
            .field("regions", &self.regions.len())
            .field("events", &self.events)
            .finish_non_exhaustive()
    }
}

/// Heap bytes of an [`IndexVec`]'s buffer.
fn heap_of<I, T>(v: &IndexVec<I, T>) -> usize
where
    I: conflux_graph::Idx,
{
    v.capacity() * std::mem::size_of::<T>()
}

impl Scheduler {
    /// A scheduler for a built graph and its regions. O(N + groups + partitions of non-pipelined
    /// groups).
    pub fn new(
        graph: Arc<ExecutionGraph>,
        regions: Arc<PipelinedRegions>,
        config: SchedulerConfig,
    ) -> Scheduler {
        let n = graph.num_execution_vertices() as usize;
        let groups = graph.num_groups() as usize;
        let topology = SchedulingTopology::new(&graph, &regions);

        let mut unfinished_partitions = IndexVec::from_elem(0u32, groups);
        for c in graph.connections() {
            for k in 0..c.num_groups {
                let partitions = c.partitions_of_local_group(k);
                unfinished_partitions[ConsumedPartitionGroupId(c.first_group + k)] =
                    partitions.end - partitions.start;
            }
        }
        let mut unfinished_consumer_regions = IndexVec::from_elem(0u32, groups);
        for r in regions.indices() {
            for g in topology.non_pipelined_consumed_groups(r) {
                unfinished_consumer_regions[g] += 1;
            }
        }
        // Found here, while the regions are walked anyway, so that `Start` is O(sources).
        let mut source_regions = topology.source_regions(&regions);
        source_regions.shrink_to_fit();
        let region_unfinished = regions.sizes().collect();
        let partitions = graph.num_partitions() as usize;
        let num_regions = regions.len();
        let speculative =
            SpeculativeState::new(config.speculative, graph.job_graph().job_type(), n);
        Scheduler {
            topology,
            source_regions,
            config,
            status: JobStatus::Created,
            failure_reason: None,
            backoff: RestartBackoff::new(config.restart, config.seed),
            state: IndexVec::from_elem(ExecutionState::Created, n),
            attempt: IndexVec::from_elem(0, n),
            allocation: IndexVec::from_elem(None, n),
            location: IndexVec::from_elem(NO_LOCATION, n),
            unfinished_vertices: conflux_graph::index_u32(n),
            data_produced: IndexVec::from_elem(false, partitions),
            lost: IndexVec::from_elem(false, partitions),
            released: IndexVec::from_elem(false, partitions),
            unfinished_partitions,
            unfinished_consumer_regions,
            group_released: IndexVec::from_elem(false, groups),
            scheduled: IndexVec::from_elem(false, num_regions),
            region_unfinished,
            round: 0,
            group_round: IndexVec::from_elem(u32::MAX, groups),
            group_consumable: IndexVec::from_elem(false, groups),
            group_visited_round: IndexVec::from_elem(u32::MAX, groups),
            chosen: IndexVec::from_elem(false, num_regions),
            slots: SlotPool::new(&graph, config.evenly_spread_out_slots),
            missing_slots: IndexVec::from_elem(NO_REQUEST, num_regions),
            request_epoch: IndexVec::from_elem(0, num_regions),
            ready_requests: Vec::new(),
            served: Vec::new(),
            pending_restarts: Vec::new(),
            out: Vec::new(),
            mixed: 0,
            trace: TraceDigest::new(),
            events: 0,
            defer_schedule: false,
            owed_at_ms: 0,
            pending_reset: None,
            pending_schedule: None,
            pending_finish: None,
            adaptive: None,
            speculative,
            transitions: None,
            restored_regions: 0,
            graph,
            regions,
        }
    }

    /// The graph.
    pub fn graph(&self) -> &Arc<ExecutionGraph> {
        &self.graph
    }

    /// The regions.
    pub fn regions(&self) -> &Arc<PipelinedRegions> {
        &self.regions
    }

    /// The job's status.
    pub fn status(&self) -> JobStatus {
        self.status
    }

    /// Why the job failed, if it did.
    pub fn failure_reason(&self) -> Option<&str> {
        self.failure_reason.as_deref()
    }

    /// A vertex's state.
    ///
    /// # Panics
    /// If `v` is not a vertex of the graph.
    pub fn state(&self, v: ExecutionVertexIndex) -> ExecutionState {
        self.state[v]
    }

    /// A vertex's current attempt.
    ///
    /// # Panics
    /// If `v` is not a vertex of the graph.
    pub fn attempt(&self, v: ExecutionVertexIndex) -> ExecutionAttemptId {
        ExecutionAttemptId {
            vertex: v.0,
            attempt: self.attempt[v],
        }
    }

    /// The slot of a vertex's current attempt, if it has one.
    ///
    /// # Panics
    /// If `v` is not a vertex of the graph.
    pub fn allocation(&self, v: ExecutionVertexIndex) -> Option<AllocationId> {
        self.allocation[v]
    }

    /// Restarts granted so far.
    pub fn restarts(&self) -> u32 {
        self.backoff.restarts()
    }

    /// Whether a partition is held (its producer's current attempt produced it and it was
    /// neither lost nor released).
    ///
    /// # Panics
    /// If `p` is not a partition of the graph.
    pub fn is_partition_available(&self, p: IntermediateResultPartitionId) -> bool {
        let i = self.graph.partition_index(p);
        !self.lost[i] && !self.released[i]
    }

    /// Events handled so far.
    pub fn events_handled(&self) -> u64 {
        self.events
    }

    /// FNV-1a digest over every event handled and command emitted: equal for equal runs.
    pub fn trace_digest(&self) -> u64 {
        self.trace.digest()
    }

    /// When the scheduler next needs a call, virtual ms: a restart delay or a slot request check
    /// falls due (send [`Event::Tick`] then), or, while work is owed
    /// ([`has_pending_work`](Self::has_pending_work)), the time of the call that left it: call
    /// [`continue_work`](Self::continue_work) at once. A driver that only sends a tick then still
    /// gets every command, in order: [`handle`](Self::handle) finishes owed work first (whole,
    /// so that call is not bounded), and the tick joins the trace digest.
    pub fn next_timer(&self) -> Option<u64> {
        let restart = self.pending_restarts.iter().map(|p| p.due_ms).min();
        let slot = self.slots.next_check_due();
        let owed = self.has_pending_work().then_some(self.owed_at_ms);
        [restart, slot, owed].into_iter().flatten().min()
    }

    /// When the earliest restart waiting for its back-off delay falls due, virtual ms (`None`:
    /// none waits). A replay that wants restarts done before its next event sends
    /// [`Event::Tick`] then; [`next_timer`](Self::next_timer) covers every timer.
    pub fn next_restart_due(&self) -> Option<u64> {
        self.pending_restarts.iter().map(|p| p.due_ms).min()
    }

    /// Heap bytes of the scheduler's own flat arrays, O(N + partitions + groups + regions),
    /// the slot pool's shared slots included (graph and regions excluded; so are the slot pool's
    /// free slots and locations, which grow with the TaskManagers, not with the graph).
    pub fn heap_bytes(&self) -> usize {
        self.topology.heap_bytes()
            + heap_of(&self.state)
            + heap_of(&self.attempt)
            + heap_of(&self.allocation)
            + heap_of(&self.location)
            + heap_of(&self.data_produced)
            + heap_of(&self.lost)
            + heap_of(&self.released)
            + heap_of(&self.unfinished_partitions)
            + heap_of(&self.unfinished_consumer_regions)
            + heap_of(&self.group_released)
            + heap_of(&self.scheduled)
            + heap_of(&self.region_unfinished)
            + heap_of(&self.group_round)
            + heap_of(&self.group_consumable)
            + heap_of(&self.group_visited_round)
            + heap_of(&self.chosen)
            + heap_of(&self.missing_slots)
            + heap_of(&self.request_epoch)
            + self.source_regions.capacity() * std::mem::size_of::<PipelinedRegionIndex>()
            + self.slots.heap_bytes()
            + self.speculative.as_ref().map_or(0, |s| s.heap_bytes())
    }

    /// Applies one event at virtual time `now_ms` and returns the commands it causes. Due
    /// restarts and slot timeouts are processed first.
    ///
    /// The call does at most [`SchedulerConfig::work_budget`] of region work (choosing,
    /// scheduling, serving slots, deploying); when it leaves work owed,
    /// [`has_pending_work`](Self::has_pending_work) is true and the driver calls
    /// [`continue_work`](Self::continue_work) until it is false, before the next event. Work a
    /// previous call left owed is finished first, whole, and its commands come first.
    ///
    /// # Errors
    /// [`SchedulerError`] for an event that does not fit (a scripted replay's mistake); the state
    /// is unchanged then (except that work owed by the previous call is done; its commands are
    /// returned by the next call). Events of stale attempts are ignored, not errors.
    pub fn handle(&mut self, now_ms: u64, event: Event) -> Result<Vec<Command>, SchedulerError> {
        if self.has_pending_work() {
            // The driver did not continue: the owed work comes before this event, whole.
            self.run_owed(&mut Budget::unlimited())?;
            self.mix_out();
        }
        self.validate(&event)?;
        self.validate_produced_bytes(&event)?;
        self.owed_at_ms = now_ms;
        self.events += 1;
        self.trace.mix_event(&self.graph, now_ms, &event);
        // A finish with bytes is handled as a finish; its bytes go to the adaptive state.
        let event = self.take_produced_bytes(event);
        // A scheduling run that is the last thing this call does is done within the budget: the
        // restarts a tick fires, or what the event itself schedules (a TaskManager loss fails
        // several tasks in turn, and is done whole).
        self.defer_schedule = matches!(event, Event::Tick);
        self.expire_blocked_nodes(now_ms);
        self.fire_timers(now_ms)?;
        self.defer_schedule = matches!(
            event,
            Event::Start | Event::TaskFinished(_) | Event::TaskFailed(..) | Event::Restart(_)
        );
        match event {
            Event::Start => {
                if self.status == JobStatus::Created {
                    self.set_status(JobStatus::Running, None);
                    if self.unfinished_vertices == 0 {
                        // Every vertex was restored finished (`recovery.rs`).
                        self.set_status(JobStatus::Finished, None);
                    } else {
                        let candidates = self.start_candidates();
                        self.maybe_schedule_regions(ScheduleRun::of_regions(candidates, now_ms))?;
                    }
                }
            }
            Event::TaskManagerRegistered { location, slots } => {
                self.slots.register(location, slots);
            }
            Event::TaskManagerLost(tm) => self.task_manager_lost(tm, now_ms)?,
            Event::TaskRunning(a) => {
                let v = ExecutionVertexIndex(a.vertex);
                if self.is_current(a) && self.state[v] == ExecutionState::Deploying {
                    self.set_state(v, ExecutionState::Running);
                } else {
                    self.speculative_attempt_running(a);
                }
            }
            Event::TaskFinished(a) => {
                let v = ExecutionVertexIndex(a.vertex);
                if self.is_current(a)
                    && self.status == JobStatus::Running
                    && matches!(
                        self.state[v],
                        ExecutionState::Deploying
                            | ExecutionState::Initializing
                            | ExecutionState::Running
                    )
                {
                    self.vertex_finished(v, now_ms)?;
                } else if self.status == JobStatus::Running && self.is_speculative_attempt(a) {
                    self.speculative_attempt_finished(a, now_ms)?;
                }
            }
            Event::TaskFailed(a, FailureCause::NonRecoverable)
                if self.status == JobStatus::Running
                    && ((self.is_current(a)
                        && !self.state[ExecutionVertexIndex(a.vertex)].is_terminal())
                        || self.is_speculative_attempt(a)) =>
            {
                self.non_recoverable_failure(a);
            }
            Event::TaskFailed(a, cause) => {
                // An attempt already failed or cancelled is being restarted: a second report of
                // it is stale.
                let v = ExecutionVertexIndex(a.vertex);
                if self.is_current(a)
                    && self.status == JobStatus::Running
                    && !matches!(
                        self.state[v],
                        ExecutionState::Failed | ExecutionState::Canceled
                    )
                {
                    self.vertex_failed(v, &TaskFailure::Reported(cause), now_ms)?;
                } else if self.status == JobStatus::Running && self.is_speculative_attempt(a) {
                    self.speculative_attempt_failed(a, cause, now_ms)?;
                }
            }
            Event::PartitionsLost(partitions) => {
                for p in partitions {
                    let i = self.graph.partition_index(p);
                    self.lost[i] = true;
                }
            }
            Event::Restart(vertices) => {
                if self.status == JobStatus::Running {
                    let set: Vec<ExecutionVertexIndex> = vertices
                        .into_iter()
                        .filter(|&v| self.state[v] != ExecutionState::Created)
                        .collect();
                    self.restart_now(set)?;
                }
            }
            Event::Tick => {}
            // Made a plain finish by `take_produced_bytes` above.
            Event::TaskFinishedWithBytes(..) => {}
            Event::CheckSlowTasks => self.check_slow_tasks(now_ms),
            Event::Cancel => {
                if !self.status.is_terminal() {
                    self.terminate(JobStatus::Canceled, None);
                }
            }
        }
        self.defer_schedule = false;
        self.pending_finish = Some(FinishRun::Start);
        let mut budget = Budget::new(self.config.work_budget);
        self.run_owed(&mut budget)?;
        Ok(self.take_commands())
    }

    /// Checks an event before anything changes: named partitions, restarted vertices and lost
    /// TaskManagers must exist and the transition must fit (a scripted replay's mistakes).
    fn validate(&self, event: &Event) -> Result<(), SchedulerError> {
        let name = |v: ExecutionVertexIndex| self.graph.execution_vertex_name(v);
        let known_partition = |p: &IntermediateResultPartitionId| {
            self.graph.checked_partition_index(*p).map(|_| ()).ok_or(
                SchedulerError::UnknownPartition {
                    result: p.result.0,
                    partition: p.partition,
                },
            )
        };
        match event {
            // Reports of unknown attempts are stale and ignored in `handle`; a partition must
            // exist, or its index would name another result's partition.
            Event::TaskFailed(_, FailureCause::PartitionNotFound(p)) => known_partition(p)?,
            Event::PartitionsLost(partitions) => {
                for p in partitions {
                    known_partition(p)?;
                }
            }
            Event::Restart(vertices) => {
                for v in vertices {
                    if v.idx() >= self.state.len() {
                        return Err(SchedulerError::UnknownVertex(v.0));
                    }
                }
            }
            _ => {}
        }
        match event {
            // A never-deployed attempt cannot finish: a script's mistake. Reports for attempts
            // already failed, cancelled or finished are stale races and are ignored in `handle`.
            Event::TaskFinished(a) if self.is_current(*a) => {
                let s = self.state[ExecutionVertexIndex(a.vertex)];
                if matches!(s, ExecutionState::Created | ExecutionState::Scheduled) {
                    return Err(SchedulerError::InvalidTransition {
                        vertex: name(ExecutionVertexIndex(a.vertex)),
                        action: "finish",
                        state: s.as_str(),
                    });
                }
            }
            Event::TaskFailed(a, _) if self.is_current(*a) => {
                let s = self.state[ExecutionVertexIndex(a.vertex)];
                if s == ExecutionState::Created {
                    return Err(SchedulerError::InvalidTransition {
                        vertex: name(ExecutionVertexIndex(a.vertex)),
                        action: "fail",
                        state: s.as_str(),
                    });
                }
            }
            Event::TaskManagerLost(tm) if !self.slots.is_registered(*tm) => {
                return Err(SchedulerError::UnknownTaskManager(*tm));
            }
            Event::Restart(vertices) => {
                let named: std::collections::HashSet<ExecutionVertexIndex> =
                    vertices.iter().copied().collect();
                for &v in vertices {
                    for m in self.regions.members(self.regions.region_of(v)) {
                        if !named.contains(&m) {
                            return Err(SchedulerError::PartialRegion {
                                vertex: name(v),
                                missing: name(m),
                            });
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Where `v`'s current attempt runs or ran, if it was given a slot.
    pub(crate) fn location_of(&self, v: ExecutionVertexIndex) -> Option<TaskManagerLocation> {
        let i = self.location[v];
        (i != NO_LOCATION).then(|| self.slots.location_at(i))
    }

    /// Whether `a` is the current attempt of its vertex (false for unknown vertices).
    pub(crate) fn is_current(&self, a: ExecutionAttemptId) -> bool {
        self.attempt.get(ExecutionVertexIndex(a.vertex)) == Some(&a.attempt)
    }

    pub(crate) fn set_status(&mut self, status: JobStatus, reason: Option<String>) {
        self.status = status;
        if reason.is_some() {
            self.failure_reason.clone_from(&reason);
        }
        self.out.push(Command::JobStatus { status, reason });
    }

    /// Due slot request checks fail the tasks of requests that timed out, through failover and
    /// the restart strategy (Flink's `NoResourceAvailableException`); due restarts reset and
    /// reschedule their vertices.
    fn fire_timers(&mut self, now_ms: u64) -> Result<(), SchedulerError> {
        if self.status == JobStatus::Running {
            for (region, why) in self.check_slot_requests(now_ms) {
                // An earlier timeout's failover may have restarted this region already.
                if self.status != JobStatus::Running {
                    break;
                }
                if let Some(v) = self.timed_out_member(region) {
                    self.vertex_failed(v, &TaskFailure::NoResourceAvailable(why), now_ms)?;
                }
            }
        }
        self.fire_due_restarts(now_ms)
    }

    /// A task finished: its partitions hold all their data, its slot goes back, the release
    /// strategy and the scheduling strategy react.
    pub(crate) fn vertex_finished(
        &mut self,
        v: ExecutionVertexIndex,
        now_ms: u64,
    ) -> Result<(), SchedulerError> {
        self.speculative_vertex_finishing(v, now_ms);
        self.set_state(v, ExecutionState::Finished);
        self.release_slot(v);
        self.unfinished_vertices -= 1;
        let ready_groups = self.partitions_finished(v);
        self.region_member_finished(self.regions.region_of(v));
        // Adaptive batch: the vertices this finish made decidable are initialised first, so a
        // job is finished only when every vertex is.
        let grown = match self.adaptive_vertex_finished(v) {
            Ok(grown) => grown,
            Err(reason) => {
                self.terminate(JobStatus::Failed, Some(reason));
                return Ok(());
            }
        };
        if self.unfinished_vertices == 0 {
            self.set_status(JobStatus::Finished, None);
            return Ok(());
        }
        if !grown.is_empty() {
            return self.schedule_grown(ready_groups, grown, now_ms);
        }
        self.schedule_consumers_of(ready_groups, now_ms)
    }

    /// Ends the job: cancels every running attempt, returns every slot. A failing job passes
    /// through FAILING while its tasks are cancelled (at once here: cancellation is a command).
    pub(crate) fn terminate(&mut self, status: JobStatus, reason: Option<String>) {
        if status == JobStatus::Failed {
            self.set_status(JobStatus::Failing, reason.clone());
        }
        self.cancel_all_speculative_attempts();
        for v in self.state.indices() {
            match self.state[v] {
                ExecutionState::Deploying
                | ExecutionState::Initializing
                | ExecutionState::Running => {
                    self.out.push(Command::Cancel(ExecutionAttemptId {
                        vertex: v.0,
                        attempt: self.attempt[v],
                    }));
                    self.set_state(v, ExecutionState::Canceled);
                }
                ExecutionState::Scheduled | ExecutionState::Created => {
                    self.set_state(v, ExecutionState::Canceled);
                }
                _ => {}
            }
            self.allocation[v] = None;
        }
        self.missing_slots.fill(NO_REQUEST);
        self.ready_requests.clear();
        self.slots.clear_requests();
        self.pending_restarts.clear();
        self.set_status(status, reason);
    }
}

impl ProducerStates for Scheduler {
    fn producer(&self, vertex: ExecutionVertexIndex) -> ProducerView {
        ProducerView {
            attempt: self.attempt(vertex),
            state: self.state[vertex],
            location: self.location_of(vertex),
        }
    }

    fn all_data_produced(&self, partition: IntermediateResultPartitionId) -> bool {
        self.data_produced[self.graph.partition_index(partition)]
    }
}

#[cfg(test)]
mod tests {
    use std::mem::size_of;

    use conflux_graph::{generate, JobGraph, ResultPartitionType};

    use super::*;

    /// The accounting names exactly the arrays the scheduler has: per vertex its state, attempt,
    /// allocation, location, slot sharing group and waiting link; three flags per partition;
    /// six words or flags per group; five per region; one shared slot per subtask of a slot
    /// sharing group (the old formula still counted a removed per-vertex array).
    #[test]
    fn heap_bytes_counts_each_array_once() {
        let json = generate::word_count(100, ResultPartitionType::Blocking);
        let graph = Arc::new(
            ExecutionGraph::build(JobGraph::from_json(&json).expect("valid")).expect("builds"),
        );
        let regions = Arc::new(PipelinedRegions::compute(&graph).expect("regions"));
        let scheduler = Scheduler::new(
            Arc::clone(&graph),
            Arc::clone(&regions),
            SchedulerConfig::default(),
        );
        let n = graph.num_execution_vertices() as usize;
        let p = graph.num_partitions() as usize;
        let g = graph.num_groups() as usize;
        let r = regions.len();
        assert_eq!((n, p, g, r), (200, 100, 1, 200));
        // State, attempt, allocation, location index, slot sharing group and the next
        // vertex waiting for the same shared slot.
        let per_vertex = size_of::<ExecutionState>()
            + size_of::<u32>()
            + size_of::<Option<AllocationId>>()
            + size_of::<u32>()
            + size_of::<u32>()
            + size_of::<u32>();
        // One shared slot per subtask of the one slot sharing group.
        let shared_slots = 100 * crate::slot_pool::SHARED_SLOT_BYTES;
        let per_group = 4 + 4 + 1 + 4 + 1 + 4;
        let per_region = 1 + 4 + 1 + 4 + 4;
        // The 100 source regions, kept until `Start`.
        let sources = 100;
        assert_eq!(
            scheduler.heap_bytes(),
            scheduler.topology.heap_bytes()
                + n * per_vertex
                + p * 3
                + g * per_group
                + r * per_region
                + sources * 4
                + shared_slots
        );
    }
}
