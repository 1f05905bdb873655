//! The scheduler core: a deterministic state machine. Events in, commands out; no I/O, no
//! threads, no clock (time is an argument).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use conflux_deploy::{
    AllocationId, ExecutionAttemptId, ExecutionState, ProducerStates, ProducerView, TaskManagerId,
    TaskManagerLocation,
};
use conflux_graph::{
    ConsumedPartitionGroupId, ExecutionGraph, ExecutionVertexIndex, IntermediateResultPartitionId,
    PipelinedRegionIndex, PipelinedRegions,
};

use crate::failover::{
    tasks_to_restart, FailoverStrategy, PartitionAvailability, RestartBackoff, RestartStrategy,
    FLINK_MAX_ATTEMPTS,
};
use crate::topology::{index_u32, SchedulingTopology};

/// Flink's `slot.request.timeout` default: 5 minutes.
pub const DEFAULT_SLOT_REQUEST_TIMEOUT_MS: u64 = 300_000;

/// Settings of a [`Scheduler`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SchedulerConfig {
    /// Region (default) or full restarts.
    pub failover: FailoverStrategy,
    /// Back-off and limit of restarts.
    pub restart: RestartStrategy,
    /// How long a slot request may wait before the job fails, ms.
    pub slot_request_timeout_ms: u64,
    /// Release consumed partitions while the job runs (Flink's
    /// `jobmanager.partition.release-during-job-execution`, default true).
    pub release_partitions_during_execution: bool,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            failover: FailoverStrategy::Region,
            restart: RestartStrategy::exponential_default(FLINK_MAX_ATTEMPTS),
            slot_request_timeout_ms: DEFAULT_SLOT_REQUEST_TIMEOUT_MS,
            release_partitions_during_execution: true,
        }
    }
}

/// The job's status (Flink's `JobStatus`, the subset a scheduler core drives).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobStatus {
    /// Not started.
    Created,
    /// Scheduling and running.
    Running,
    /// Done.
    Finished,
    /// Giving up: cancelling the remaining tasks before FAILED.
    Failing,
    /// Gave up: a failure the restart strategy does not allow, or no slots in time.
    Failed,
    /// Cancelled by the user.
    Canceled,
}

impl JobStatus {
    /// `CREATED`, `RUNNING`, `FINISHED`, `FAILING`, `FAILED`, `CANCELED`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Created => "CREATED",
            JobStatus::Running => "RUNNING",
            JobStatus::Finished => "FINISHED",
            JobStatus::Failing => "FAILING",
            JobStatus::Failed => "FAILED",
            JobStatus::Canceled => "CANCELED",
        }
    }

    /// FINISHED, FAILED or CANCELED.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobStatus::Finished | JobStatus::Failed | JobStatus::Canceled
        )
    }
}

/// Why a task failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailureCause {
    /// The task itself failed.
    Task,
    /// The task could not read this partition (Flink's `PartitionNotFoundException`): the
    /// partition counts as unavailable for the failover decision.
    PartitionNotFound(IntermediateResultPartitionId),
    /// Its TaskManager was lost.
    TaskManagerLost,
}

/// What happened, as the runtime (or simulator) reports it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// Starts scheduling (once).
    Start,
    /// A TaskManager offers `slots` slots.
    TaskManagerRegistered {
        /// Where it is.
        location: TaskManagerLocation,
        /// Slots offered.
        slots: u32,
    },
    /// A TaskManager is gone: its tasks fail and the partitions stored on it are lost.
    TaskManagerLost(TaskManagerId),
    /// A deployed attempt runs.
    TaskRunning(ExecutionAttemptId),
    /// An attempt finished.
    TaskFinished(ExecutionAttemptId),
    /// An attempt failed.
    TaskFailed(ExecutionAttemptId, FailureCause),
    /// These partitions are known lost (before a failover decision).
    PartitionsLost(Vec<IntermediateResultPartitionId>),
    /// Restart exactly these vertices, which must form whole regions, as a failover would.
    Restart(Vec<ExecutionVertexIndex>),
    /// Time passed (restart delays, slot timeouts).
    Tick,
    /// The user cancels the job.
    Cancel,
}

/// What the runtime must do.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// Deploy the tasks of one scheduled region (one request per region, Flink's
    /// `allocateSlotsAndDeploy`), in topological order, each into its slot.
    Deploy {
        /// The region.
        region: PipelinedRegionIndex,
        /// Attempts and their slots.
        tasks: Vec<(ExecutionAttemptId, AllocationId)>,
    },
    /// Cancel a running or deploying attempt.
    Cancel(ExecutionAttemptId),
    /// A failover decided to restart these vertices (after the filter of CREATED vertices).
    Restart(Vec<ExecutionVertexIndex>),
    /// These vertices were reset for a new attempt: their produced partitions are gone, and the
    /// descriptor cache of every group containing them must be dropped (FLINK-23833).
    ResetVertices(Vec<ExecutionVertexIndex>),
    /// A consumed partition group was released (all its consumer regions finished): drop its
    /// descriptor cache; `partitions` lists those now released everywhere (every group
    /// containing them released).
    ReleaseGroup {
        /// The group.
        group: ConsumedPartitionGroupId,
        /// Partitions no group needs any more.
        partitions: Vec<IntermediateResultPartitionId>,
    },
    /// The job's status changed.
    JobStatus {
        /// The new status.
        status: JobStatus,
        /// Why, for FAILED.
        reason: Option<String>,
    },
}

/// An event the scheduler cannot apply (unknown attempt state for a scripted replay).
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum SchedulerError {
    /// The event does not fit the vertex's state, e.g. finishing a CREATED vertex.
    #[error("{vertex}: cannot {action} in state {state}")]
    InvalidTransition {
        /// The vertex, e.g. `A#0`.
        vertex: String,
        /// What the event asked.
        action: &'static str,
        /// Its state.
        state: &'static str,
    },
    /// An explicit restart that does not cover whole regions.
    #[error("restart of {vertex} must include its whole pipelined region ({missing} is missing)")]
    PartialRegion {
        /// A named vertex.
        vertex: String,
        /// A region member that was not named.
        missing: String,
    },
    /// An unknown TaskManager.
    #[error("unknown TaskManager {0}")]
    UnknownTaskManager(TaskManagerId),
    /// A bug: a region was scheduled while not all its vertices were CREATED.
    #[error("bug: trying to schedule region {0} which is not in CREATED state")]
    RegionNotCreated(u32),
}

/// One execution slot sharing group instance: subtask `i` of every vertex of a slot sharing
/// group shares one slot (Flink's `ExecutionSlotSharingGroup`).
#[derive(Debug, Default)]
struct SharedSlot {
    allocation: Option<AllocationId>,
    users: u32,
    waiting: Vec<u32>,
    queued: bool,
}

#[derive(Debug)]
struct PendingRestart {
    due_ms: u64,
    vertices: Vec<(u32, u32)>,
}

/// The scheduler of one job: Flink's `DefaultScheduler` with `PipelinedRegionSchedulingStrategy`,
/// `RestartPipelinedRegionFailoverStrategy` and `RegionPartitionGroupReleaseStrategy`, as a
/// deterministic state machine.
///
/// Feed it [`Event`]s with [`handle`](Self::handle); it answers with [`Command`]s. It implements
/// [`ProducerStates`] so that deployment descriptors can be built from it after each call.
pub struct Scheduler {
    graph: Arc<ExecutionGraph>,
    regions: Arc<PipelinedRegions>,
    topology: SchedulingTopology,
    config: SchedulerConfig,
    status: JobStatus,
    failure_reason: Option<String>,
    backoff: RestartBackoff,

    // Per execution vertex.
    state: Vec<ExecutionState>,
    attempt: Vec<u32>,
    allocation: Vec<Option<AllocationId>>,
    /// Where the current attempt's partitions are (kept after it finishes).
    location: Vec<Option<TaskManagerLocation>>,
    unfinished_vertices: u32,

    // Per partition (global index).
    data_produced: Vec<bool>,
    lost: Vec<bool>,
    released: Vec<bool>,

    // Per group.
    unfinished_partitions: Vec<u32>,
    unfinished_consumer_regions: Vec<u32>,
    group_released: Vec<bool>,

    // Per region.
    scheduled: Vec<bool>,
    region_unfinished: Vec<u32>,

    // Per-call scratch, stamped by round so that clearing is O(1).
    round: u32,
    group_round: Vec<u32>,
    group_consumable: Vec<bool>,
    group_visited_round: Vec<u32>,
    chosen: Vec<bool>,

    // Slots.
    task_managers: HashMap<TaskManagerId, (TaskManagerLocation, u32)>,
    free_slots: BTreeSet<(u32, u32)>,
    slot_sharing_group_of: Vec<u32>,
    shared_slots: HashMap<(u32, u32), SharedSlot>,
    slot_queue: VecDeque<((u32, u32), u64)>,
    /// Per region, the slots its open deploy request still misses (`NO_REQUEST`: none open). A
    /// region has at most one request: it is scheduled only when not scheduled.
    missing_slots: Vec<u32>,
    /// Regions whose request has every slot, deployed at the end of the current call.
    ready_requests: Vec<u32>,
    /// Slots were freed or requested during the current call; the queue is served at its end,
    /// after cancellations and failovers, so that no slot goes to a task about to be cancelled.
    slots_dirty: bool,

    pending_restarts: Vec<PendingRestart>,
    out: Vec<Command>,
    digest: u64,
    events: u64,
}

const NO_REQUEST: u32 = u32::MAX;

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
        let job = graph.job_graph();

        let mut slot_sharing_names: Vec<&str> = Vec::new();
        let mut slot_sharing_group_of = Vec::with_capacity(n);
        for v in job.vertices() {
            let index = match slot_sharing_names
                .iter()
                .position(|s| *s == v.slot_sharing_group)
            {
                Some(i) => i,
                None => {
                    slot_sharing_names.push(&v.slot_sharing_group);
                    slot_sharing_names.len() - 1
                }
            };
            slot_sharing_group_of.extend(std::iter::repeat_n(
                index_u32(index),
                v.parallelism as usize,
            ));
        }

        let mut unfinished_partitions = vec![0u32; groups];
        for c in graph.connections() {
            for k in 0..c.num_groups {
                let partitions = c.partitions_of_local_group(k);
                unfinished_partitions[(c.first_group + k) as usize] =
                    partitions.end - partitions.start;
            }
        }
        let mut unfinished_consumer_regions = vec![0u32; groups];
        for r in 0..regions.len() {
            for g in topology.non_pipelined_consumed_groups(PipelinedRegionIndex(index_u32(r))) {
                unfinished_consumer_regions[g.0 as usize] += 1;
            }
        }
        let region_unfinished = regions.sizes().collect();
        let partitions = graph.num_partitions() as usize;
        Scheduler {
            topology,
            config,
            status: JobStatus::Created,
            failure_reason: None,
            backoff: RestartBackoff::new(config.restart),
            state: vec![ExecutionState::Created; n],
            attempt: vec![0; n],
            allocation: vec![None; n],
            location: vec![None; n],
            unfinished_vertices: index_u32(n),
            data_produced: vec![false; partitions],
            lost: vec![false; partitions],
            released: vec![false; partitions],
            unfinished_partitions,
            unfinished_consumer_regions,
            group_released: vec![false; groups],
            scheduled: vec![false; regions.len()],
            region_unfinished,
            round: 0,
            group_round: vec![u32::MAX; groups],
            group_consumable: vec![false; groups],
            group_visited_round: vec![u32::MAX; groups],
            chosen: vec![false; regions.len()],
            task_managers: HashMap::new(),
            free_slots: BTreeSet::new(),
            slot_sharing_group_of,
            shared_slots: HashMap::new(),
            slot_queue: VecDeque::new(),
            missing_slots: vec![NO_REQUEST; regions.len()],
            ready_requests: Vec::new(),
            slots_dirty: false,
            pending_restarts: Vec::new(),
            out: Vec::new(),
            digest: 0xcbf2_9ce4_8422_2325,
            events: 0,
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
    pub fn state(&self, v: ExecutionVertexIndex) -> ExecutionState {
        self.state[v.idx()]
    }

    /// A vertex's current attempt.
    pub fn attempt(&self, v: ExecutionVertexIndex) -> ExecutionAttemptId {
        ExecutionAttemptId {
            vertex: v.0,
            attempt: self.attempt[v.idx()],
        }
    }

    /// The slot of a vertex's current attempt, if it has one.
    pub fn allocation(&self, v: ExecutionVertexIndex) -> Option<AllocationId> {
        self.allocation[v.idx()]
    }

    /// Restarts granted so far.
    pub fn restarts(&self) -> u32 {
        self.backoff.restarts()
    }

    /// Whether a partition is held (its producer's current attempt produced it and it was
    /// neither lost nor released).
    pub fn is_partition_available(&self, p: IntermediateResultPartitionId) -> bool {
        let i = self.graph.partition_index(p) as usize;
        !self.lost[i] && !self.released[i]
    }

    /// Events handled so far.
    pub fn events_handled(&self) -> u64 {
        self.events
    }

    /// FNV-1a digest over every event handled and command emitted: equal for equal runs.
    pub fn trace_digest(&self) -> u64 {
        self.digest
    }

    /// When the scheduler next needs a [`Event::Tick`] (a restart delay or a slot timeout),
    /// virtual ms.
    pub fn next_timer(&self) -> Option<u64> {
        let restart = self.pending_restarts.iter().map(|p| p.due_ms).min();
        let slot = self.slot_queue.front().map(|(_, deadline)| *deadline);
        match (restart, slot) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Heap bytes of the scheduler's own state (graph and regions excluded).
    pub fn heap_bytes(&self) -> usize {
        let n = self.state.len();
        let p = self.data_produced.len();
        let g = self.unfinished_partitions.len();
        let r = self.scheduled.len();
        self.topology.heap_bytes()
            + n * (std::mem::size_of::<ExecutionState>()
                + 4
                + std::mem::size_of::<Option<AllocationId>>()
                + std::mem::size_of::<Option<TaskManagerLocation>>()
                + 4
                + 4)
            + p * 3
            + g * (4 + 4 + 1 + 4 + 1 + 4)
            + r * (1 + 4 + 4 + 1)
    }

    /// Applies one event at virtual time `now_ms` and returns the commands it causes. Due
    /// restarts and slot timeouts are processed first.
    ///
    /// # Errors
    /// [`SchedulerError`] for an event that does not fit (a scripted replay's mistake); the state
    /// is unchanged then. Events of stale attempts are ignored, not errors.
    pub fn handle(&mut self, now_ms: u64, event: Event) -> Result<Vec<Command>, SchedulerError> {
        self.validate(&event)?;
        self.events += 1;
        self.mix_event(now_ms, &event);
        self.fire_timers(now_ms)?;
        match event {
            Event::Start => {
                if self.status == JobStatus::Created {
                    self.set_status(JobStatus::Running, None);
                    let sources: Vec<u32> = (0..self.regions.len())
                        .map(index_u32)
                        .filter(|&r| {
                            let region = PipelinedRegionIndex(r);
                            self.topology
                                .non_pipelined_consumed_groups(region)
                                .all(|g| {
                                    !self.topology.is_cross_region(g)
                                        && !self.topology.is_external(g, region)
                                })
                        })
                        .collect();
                    self.maybe_schedule_regions(sources, now_ms)?;
                }
            }
            Event::TaskManagerRegistered { location, slots } => {
                self.task_managers.insert(location.id, (location, slots));
                for s in 0..slots {
                    self.free_slots.insert((location.id.0, s));
                }
                self.slots_dirty = true;
            }
            Event::TaskManagerLost(tm) => self.task_manager_lost(tm, now_ms)?,
            Event::TaskRunning(a) => {
                if self.is_current(a) && self.state[a.vertex as usize] == ExecutionState::Deploying
                {
                    self.state[a.vertex as usize] = ExecutionState::Running;
                }
            }
            Event::TaskFinished(a) => {
                if self.is_current(a)
                    && self.status == JobStatus::Running
                    && matches!(
                        self.state[a.vertex as usize],
                        ExecutionState::Deploying
                            | ExecutionState::Initializing
                            | ExecutionState::Running
                    )
                {
                    self.vertex_finished(a.vertex, now_ms)?;
                }
            }
            Event::TaskFailed(a, cause) => {
                // An attempt already failed or cancelled is being restarted: a second report of
                // it is stale.
                let state = self.state.get(a.vertex as usize).copied();
                if self.is_current(a)
                    && self.status == JobStatus::Running
                    && !matches!(
                        state,
                        Some(ExecutionState::Failed | ExecutionState::Canceled)
                    )
                {
                    let failed_partition = match cause {
                        FailureCause::PartitionNotFound(p) => Some(p),
                        _ => None,
                    };
                    self.vertex_failed(a.vertex, failed_partition, now_ms)?;
                }
            }
            Event::PartitionsLost(partitions) => {
                for p in partitions {
                    let i = self.graph.partition_index(p) as usize;
                    self.lost[i] = true;
                }
            }
            Event::Restart(vertices) => {
                if self.status == JobStatus::Running {
                    let set: Vec<u32> = vertices
                        .iter()
                        .map(|v| v.0)
                        .filter(|&v| self.state[v as usize] != ExecutionState::Created)
                        .collect();
                    self.restart_now(set)?;
                }
            }
            Event::Tick => {}
            Event::Cancel => {
                if !self.status.is_terminal() {
                    self.terminate(JobStatus::Canceled, None);
                }
            }
        }
        self.finish_call();
        let out = std::mem::take(&mut self.out);
        for c in &out {
            self.mix_command(c);
        }
        Ok(out)
    }

    /// Checks a scripted event before anything changes.
    fn validate(&self, event: &Event) -> Result<(), SchedulerError> {
        let name = |v: u32| self.graph.execution_vertex_name(ExecutionVertexIndex(v));
        match event {
            // A never-deployed attempt cannot finish: a script's mistake. Reports for attempts
            // already failed, cancelled or finished are stale races and are ignored in `handle`.
            Event::TaskFinished(a) if self.is_current(*a) => {
                let s = self.state[a.vertex as usize];
                if matches!(s, ExecutionState::Created | ExecutionState::Scheduled) {
                    return Err(SchedulerError::InvalidTransition {
                        vertex: name(a.vertex),
                        action: "finish",
                        state: s.as_str(),
                    });
                }
            }
            Event::TaskFailed(a, _) if self.is_current(*a) => {
                let s = self.state[a.vertex as usize];
                if s == ExecutionState::Created {
                    return Err(SchedulerError::InvalidTransition {
                        vertex: name(a.vertex),
                        action: "fail",
                        state: s.as_str(),
                    });
                }
            }
            Event::TaskManagerLost(tm) if !self.task_managers.contains_key(tm) => {
                return Err(SchedulerError::UnknownTaskManager(*tm));
            }
            Event::Restart(vertices) => {
                let named: std::collections::HashSet<u32> = vertices.iter().map(|v| v.0).collect();
                for v in vertices {
                    for m in self.regions.members(self.regions.region_of(*v)) {
                        if !named.contains(&m.0) {
                            return Err(SchedulerError::PartialRegion {
                                vertex: name(v.0),
                                missing: name(m.0),
                            });
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn is_current(&self, a: ExecutionAttemptId) -> bool {
        (a.vertex as usize) < self.attempt.len() && self.attempt[a.vertex as usize] == a.attempt
    }

    fn set_status(&mut self, status: JobStatus, reason: Option<String>) {
        self.status = status;
        if reason.is_some() {
            self.failure_reason.clone_from(&reason);
        }
        self.out.push(Command::JobStatus { status, reason });
    }

    // ---- scheduling strategy (PipelinedRegionSchedulingStrategy, Flink 1.20) ----

    /// Flink 1.17+'s breadth-first `maybeScheduleRegions`: rounds of schedulable candidates,
    /// each round adding the consumer regions of the can-be-pipelined (hybrid) groups its chosen
    /// regions produce; then every chosen region is scheduled in topological order, one request
    /// each.
    fn maybe_schedule_regions(
        &mut self,
        mut candidates: Vec<u32>,
        now_ms: u64,
    ) -> Result<(), SchedulerError> {
        let mut chosen_list: Vec<u32> = Vec::new();
        while !candidates.is_empty() {
            self.round = self.round.wrapping_add(1);
            candidates.sort_unstable();
            candidates.dedup();
            let mut next = Vec::new();
            for &r in &candidates {
                if !self.is_schedulable(r) {
                    continue;
                }
                self.chosen[r as usize] = true;
                chosen_list.push(r);
                // Consumers of hybrid (can-be-pipelined, non-pipelined) groups this region
                // produces are candidates of the next round.
                let region = PipelinedRegionIndex(r);
                for v in self.regions.members(region) {
                    for p in self.graph.produced_partitions(v) {
                        let t = self
                            .graph
                            .job_graph()
                            .data_set(p.result)
                            .result_partition_type;
                        if !t.can_be_pipelined_consumed() || t.must_be_pipelined_consumed() {
                            continue;
                        }
                        for cvg in self.graph.consumer_vertex_groups(p) {
                            let g = cvg.0 as usize;
                            if self.group_visited_round[g] == self.round {
                                continue;
                            }
                            self.group_visited_round[g] = self.round;
                            self.push_consumer_regions(cvg.consumed_partition_group(), &mut next);
                        }
                    }
                }
            }
            candidates = next;
        }
        chosen_list.sort_unstable();
        for &r in &chosen_list {
            self.chosen[r as usize] = false;
        }
        for r in chosen_list {
            self.schedule_region(r, now_ms)?;
        }
        Ok(())
    }

    /// The consumer regions for which group `g` is external or cross-region (Flink's
    /// `partitionGroupConsumerRegions`), computed from the group's consumer range.
    fn push_consumer_regions(&self, g: ConsumedPartitionGroupId, out: &mut Vec<u32>) {
        let cvg = self.graph.consumer_vertex_group(g.consumer_vertex_group());
        let first = self.graph.execution_vertices_of(cvg.job_vertex).start;
        let mut last = u32::MAX;
        for s in cvg.subtasks {
            let r = self.regions.region_of(ExecutionVertexIndex(first + s));
            if r.0 != last && (self.topology.is_cross_region(g) || self.topology.is_external(g, r))
            {
                out.push(r.0);
                last = r.0;
            }
        }
    }

    fn is_schedulable(&mut self, r: u32) -> bool {
        if self.scheduled[r as usize] || self.chosen[r as usize] {
            return false;
        }
        let region = PipelinedRegionIndex(r);
        let groups: Vec<ConsumedPartitionGroupId> = self
            .topology
            .non_pipelined_consumed_groups(region)
            .collect();
        for g in groups {
            let ok = if self.topology.is_cross_region(g) {
                self.cross_region_consumable(g, region)
            } else if self.topology.is_external(g, region) {
                if self.group_round[g.0 as usize] != self.round {
                    self.group_round[g.0 as usize] = self.round;
                    self.group_consumable[g.0 as usize] = self.group_consumable_now(g, None);
                }
                self.group_consumable[g.0 as usize]
            } else {
                true
            };
            if !ok {
                return false;
            }
        }
        true
    }

    /// A blocking group needs all its (external) partitions finished; a hybrid group needs
    /// their producer regions scheduled or chosen.
    fn group_consumable_now(
        &self,
        g: ConsumedPartitionGroupId,
        except_region: Option<PipelinedRegionIndex>,
    ) -> bool {
        let group = self.graph.consumed_partition_group(g);
        let pipelinable = group.result_partition_type.can_be_pipelined_consumed();
        if !pipelinable && except_region.is_none() {
            return self.unfinished_partitions[g.0 as usize] == 0;
        }
        let producers = self
            .graph
            .execution_vertices_of(self.graph.job_graph().data_set(group.result).producer)
            .start;
        let base = self.graph.partition_index(IntermediateResultPartitionId {
            result: group.result,
            partition: 0,
        });
        group.partitions.clone().all(|p| {
            let producer_region = self.regions.region_of(ExecutionVertexIndex(producers + p));
            if Some(producer_region) == except_region {
                return true;
            }
            if pipelinable {
                self.scheduled[producer_region.idx()] || self.chosen[producer_region.idx()]
            } else {
                self.data_produced[(base + p) as usize]
            }
        })
    }

    fn cross_region_consumable(
        &self,
        g: ConsumedPartitionGroupId,
        region: PipelinedRegionIndex,
    ) -> bool {
        self.group_consumable_now(g, Some(region))
    }

    fn schedule_region(&mut self, r: u32, now_ms: u64) -> Result<(), SchedulerError> {
        let region = PipelinedRegionIndex(r);
        if self
            .regions
            .members(region)
            .any(|v| self.state[v.idx()] != ExecutionState::Created)
        {
            return Err(SchedulerError::RegionNotCreated(r));
        }
        self.scheduled[r as usize] = true;
        let regions = Arc::clone(&self.regions);
        let members = regions.member_indices(region);
        self.missing_slots[r as usize] = index_u32(members.len());
        for &v in members {
            self.state[v as usize] = ExecutionState::Scheduled;
        }
        for &v in members {
            self.request_slot(v, now_ms);
        }
        Ok(())
    }

    // ---- slots ----

    fn sharing_key(&self, v: u32) -> (u32, u32) {
        let subtask = self
            .graph
            .execution_vertex_id(ExecutionVertexIndex(v))
            .subtask;
        (self.slot_sharing_group_of[v as usize], subtask)
    }

    fn request_slot(&mut self, v: u32, now_ms: u64) {
        let key = self.sharing_key(v);
        let shared = self.shared_slots.entry(key).or_default();
        if let Some(allocation) = shared.allocation {
            shared.users += 1;
            self.assign(v, allocation);
            return;
        }
        shared.waiting.push(v);
        if !shared.queued {
            shared.queued = true;
            self.slot_queue.push_back((
                key,
                now_ms.saturating_add(self.config.slot_request_timeout_ms),
            ));
            self.slots_dirty = true;
        }
    }

    fn assign(&mut self, v: u32, allocation: AllocationId) {
        self.allocation[v as usize] = Some(allocation);
        self.location[v as usize] = self
            .task_managers
            .get(&allocation.task_manager)
            .map(|(l, _)| *l);
        let r = self.regions.region_of(ExecutionVertexIndex(v)).idx();
        if self.missing_slots[r] != NO_REQUEST
            && self.state[v as usize] == ExecutionState::Scheduled
        {
            self.missing_slots[r] -= 1;
            if self.missing_slots[r] == 0 {
                self.ready_requests.push(index_u32(r));
            }
        }
    }

    /// Gives free slots to waiting shared slots, first come first served.
    fn serve_slot_queue(&mut self) {
        while let Some(&(key, _)) = self.slot_queue.front() {
            let Some(&(tm, slot)) = self.free_slots.iter().next() else {
                break;
            };
            self.slot_queue.pop_front();
            let Some(shared) = self.shared_slots.get_mut(&key) else {
                continue;
            };
            shared.queued = false;
            if shared.waiting.is_empty() {
                continue;
            }
            self.free_slots.remove(&(tm, slot));
            let allocation = AllocationId {
                task_manager: TaskManagerId(tm),
                slot,
            };
            shared.allocation = Some(allocation);
            let waiting = std::mem::take(&mut shared.waiting);
            shared.users += index_u32(waiting.len());
            for v in waiting {
                self.assign(v, allocation);
            }
        }
    }

    /// End of a call: serves the slot queue once (after every cancellation of the call), then
    /// emits one deploy command per request whose slots are all assigned, in region
    /// (topological) order. Flink deploys a request only when every slot of it is there.
    fn finish_call(&mut self) {
        if self.slots_dirty {
            self.slots_dirty = false;
            if self.status == JobStatus::Running {
                self.serve_slot_queue();
            }
        }
        if self.ready_requests.is_empty() {
            return;
        }
        let mut ready = std::mem::take(&mut self.ready_requests);
        ready.sort_unstable();
        let regions = Arc::clone(&self.regions);
        for r in ready {
            // Cancelled since it became ready.
            if self.missing_slots[r as usize] != 0 {
                continue;
            }
            self.missing_slots[r as usize] = NO_REQUEST;
            let members = regions.member_indices(PipelinedRegionIndex(r));
            let mut tasks = Vec::with_capacity(members.len());
            for &v in members {
                self.state[v as usize] = ExecutionState::Deploying;
                if let Some(allocation) = self.allocation[v as usize] {
                    tasks.push((
                        ExecutionAttemptId {
                            vertex: v,
                            attempt: self.attempt[v as usize],
                        },
                        allocation,
                    ));
                }
            }
            self.out.push(Command::Deploy {
                region: PipelinedRegionIndex(r),
                tasks,
            });
        }
    }

    /// Returns a vertex's logical slot; the physical slot goes back to the pool when no subtask
    /// of its sharing group uses or waits for it.
    fn release_slot(&mut self, v: u32, _now_ms: u64) {
        let key = self.sharing_key(v);
        let had = self.allocation[v as usize].take();
        let Some(shared) = self.shared_slots.get_mut(&key) else {
            return;
        };
        if had.is_some() && shared.allocation == had {
            shared.users = shared.users.saturating_sub(1);
        } else {
            shared.waiting.retain(|&w| w != v);
        }
        if shared.users == 0 && shared.waiting.is_empty() {
            if let Some(allocation) = shared.allocation.take() {
                if self.task_managers.contains_key(&allocation.task_manager) {
                    self.free_slots
                        .insert((allocation.task_manager.0, allocation.slot));
                }
            }
            if !shared.queued {
                self.shared_slots.remove(&key);
            }
            self.slots_dirty = true;
        }
    }

    fn fire_timers(&mut self, now_ms: u64) -> Result<(), SchedulerError> {
        if self.status == JobStatus::Running {
            if let Some(&(key, deadline)) = self.slot_queue.front() {
                if deadline <= now_ms {
                    let waiting = self.shared_slots.get(&key).map_or(0, |s| s.waiting.len());
                    let slots: u32 = self.task_managers.values().map(|(_, s)| *s).sum();
                    let reason = format!(
                        "could not acquire a slot within {} ms ({} task(s) waiting for slot sharing group {} subtask {}; {} TaskManager(s) with {} slot(s) in all)",
                        self.config.slot_request_timeout_ms,
                        waiting,
                        key.0,
                        key.1,
                        self.task_managers.len(),
                        slots
                    );
                    self.terminate(JobStatus::Failed, Some(reason));
                    return Ok(());
                }
            }
        }
        while let Some(i) = self
            .pending_restarts
            .iter()
            .enumerate()
            .filter(|(_, p)| p.due_ms <= now_ms)
            .min_by_key(|(_, p)| p.due_ms)
            .map(|(i, _)| i)
        {
            let pending = self.pending_restarts.remove(i);
            if self.status == JobStatus::Running {
                self.reset_and_reschedule(pending.vertices, now_ms)?;
            }
        }
        Ok(())
    }

    // ---- task events ----

    fn vertex_finished(&mut self, v: u32, now_ms: u64) -> Result<(), SchedulerError> {
        self.state[v as usize] = ExecutionState::Finished;
        self.release_slot(v, now_ms);
        self.unfinished_vertices -= 1;
        let vertex = ExecutionVertexIndex(v);

        // Partitions: all data produced; blocking ones count down their groups.
        let produced: Vec<IntermediateResultPartitionId> =
            self.graph.produced_partitions(vertex).collect();
        let mut ready_groups = Vec::new();
        for &p in &produced {
            let i = self.graph.partition_index(p) as usize;
            self.data_produced[i] = true;
            let t = self
                .graph
                .job_graph()
                .data_set(p.result)
                .result_partition_type;
            if !t.is_blocking_or_blocking_persistent() {
                continue;
            }
            for cvg in self.graph.consumer_vertex_groups(p) {
                let g = cvg.consumed_partition_group();
                let counter = &mut self.unfinished_partitions[g.0 as usize];
                *counter = counter.saturating_sub(1);
                if *counter == 0 || self.topology.is_cross_region(g) {
                    ready_groups.push(g);
                }
            }
        }

        // Release strategy: a finished region releases the groups it consumed.
        let region = self.regions.region_of(vertex);
        self.region_unfinished[region.idx()] -= 1;
        if self.region_unfinished[region.idx()] == 0
            && self.config.release_partitions_during_execution
        {
            let groups: Vec<ConsumedPartitionGroupId> = self
                .topology
                .non_pipelined_consumed_groups(region)
                .collect();
            for g in groups {
                let count = &mut self.unfinished_consumer_regions[g.0 as usize];
                *count = count.saturating_sub(1);
                let t = self.graph.connection_of_group(g).result_partition_type;
                if *count == 0
                    && t.is_release_by_scheduler()
                    && !t.is_persistent()
                    && !self.group_released[g.0 as usize]
                {
                    self.release_group(g);
                }
            }
        }

        if self.unfinished_vertices == 0 {
            self.set_status(JobStatus::Finished, None);
            return Ok(());
        }

        // Scheduling strategy: consumers of groups that became consumable.
        let mut candidates = Vec::new();
        self.round = self.round.wrapping_add(1);
        for g in ready_groups {
            if self.group_visited_round[g.0 as usize] == self.round {
                continue;
            }
            self.group_visited_round[g.0 as usize] = self.round;
            self.push_consumer_regions(g, &mut candidates);
        }
        if !candidates.is_empty() {
            self.maybe_schedule_regions(candidates, now_ms)?;
        }
        Ok(())
    }

    fn release_group(&mut self, g: ConsumedPartitionGroupId) {
        self.group_released[g.0 as usize] = true;
        let group = self.graph.consumed_partition_group(g);
        let mut partitions = Vec::new();
        for p in group.partitions {
            let id = IntermediateResultPartitionId {
                result: group.result,
                partition: p,
            };
            let all_released = self
                .graph
                .consumer_vertex_groups(id)
                .all(|cvg| self.group_released[cvg.0 as usize]);
            let i = self.graph.partition_index(id) as usize;
            if all_released && !self.released[i] {
                self.released[i] = true;
                partitions.push(id);
            }
        }
        self.out.push(Command::ReleaseGroup {
            group: g,
            partitions,
        });
    }

    fn vertex_failed(
        &mut self,
        v: u32,
        failed_partition: Option<IntermediateResultPartitionId>,
        now_ms: u64,
    ) -> Result<(), SchedulerError> {
        let was = self.state[v as usize];
        if was == ExecutionState::Finished {
            // A finished task "fails" when its results are lost (e.g. its TaskManager is gone).
            for p in self
                .graph
                .produced_partitions(ExecutionVertexIndex(v))
                .collect::<Vec<_>>()
            {
                let i = self.graph.partition_index(p) as usize;
                self.lost[i] = true;
            }
        } else {
            self.state[v as usize] = ExecutionState::Failed;
            self.release_slot(v, now_ms);
            self.cancel_request(v);
        }
        let restart: Vec<u32> = {
            let availability = Availability { scheduler: self };
            tasks_to_restart(
                &self.graph,
                &self.regions,
                self.config.failover,
                ExecutionVertexIndex(v),
                failed_partition,
                &availability,
            )
            .into_iter()
            .map(|x| x.0)
            .filter(|&x| self.state[x as usize] != ExecutionState::Created)
            .collect()
        };
        match self.backoff.on_failure(now_ms) {
            None => {
                let reason = format!(
                    "{} failed and the restart strategy allows no more restarts ({} so far)",
                    self.graph.execution_vertex_name(ExecutionVertexIndex(v)),
                    self.backoff.restarts()
                );
                self.terminate(JobStatus::Failed, Some(reason));
            }
            Some(delay) => {
                self.out.push(Command::Restart(
                    restart.iter().map(|&x| ExecutionVertexIndex(x)).collect(),
                ));
                self.cancel_for_restart(&restart, now_ms);
                let vertices = restart
                    .iter()
                    .map(|&x| (x, self.attempt[x as usize]))
                    .collect();
                if delay == 0 {
                    self.reset_and_reschedule(vertices, now_ms)?;
                } else {
                    self.pending_restarts.push(PendingRestart {
                        due_ms: now_ms.saturating_add(delay),
                        vertices,
                    });
                }
            }
        }
        Ok(())
    }

    /// An explicit restart of whole regions: cancel, reset and reschedule at once.
    fn restart_now(&mut self, set: Vec<u32>) -> Result<(), SchedulerError> {
        self.out.push(Command::Restart(
            set.iter().map(|&x| ExecutionVertexIndex(x)).collect(),
        ));
        self.cancel_for_restart(&set, 0);
        let vertices = set.iter().map(|&x| (x, self.attempt[x as usize])).collect();
        self.reset_and_reschedule(vertices, 0)
    }

    fn cancel_request(&mut self, v: u32) {
        let r = self.regions.region_of(ExecutionVertexIndex(v)).idx();
        self.missing_slots[r] = NO_REQUEST;
    }

    /// Cancels the running members of a restart set. Finished ones stay FINISHED until they are
    /// reset, but their partitions stop counting as produced now: no consumer may be scheduled
    /// against a partition that is about to be replaced (Flink keeps counting them until the
    /// reset, after the restart delay).
    fn cancel_for_restart(&mut self, set: &[u32], now_ms: u64) {
        for &x in set {
            match self.state[x as usize] {
                ExecutionState::Finished => self.unproduce_partitions(x),
                ExecutionState::Deploying
                | ExecutionState::Initializing
                | ExecutionState::Running => {
                    self.out.push(Command::Cancel(ExecutionAttemptId {
                        vertex: x,
                        attempt: self.attempt[x as usize],
                    }));
                    self.state[x as usize] = ExecutionState::Canceled;
                    self.release_slot(x, now_ms);
                }
                ExecutionState::Scheduled => {
                    self.state[x as usize] = ExecutionState::Canceled;
                    self.cancel_request(x);
                    self.release_slot(x, now_ms);
                }
                _ => {}
            }
        }
    }

    /// A vertex's partitions no longer hold all data: blocking ones count as unfinished in every
    /// group containing them again (Flink's `partitionUnfinished`), and none is available.
    fn unproduce_partitions(&mut self, v: u32) {
        for p in self
            .graph
            .produced_partitions(ExecutionVertexIndex(v))
            .collect::<Vec<_>>()
        {
            let i = self.graph.partition_index(p) as usize;
            let t = self
                .graph
                .job_graph()
                .data_set(p.result)
                .result_partition_type;
            if self.data_produced[i] && t.is_blocking_or_blocking_persistent() {
                for cvg in self.graph.consumer_vertex_groups(p) {
                    self.unfinished_partitions[cvg.0 as usize] += 1;
                }
            }
            self.data_produced[i] = false;
            self.lost[i] = true;
        }
    }

    /// Flink's `resetForNewExecution` for each vertex still at the attempt the failover saw,
    /// then `restartTasks` on their regions.
    fn reset_and_reschedule(
        &mut self,
        vertices: Vec<(u32, u32)>,
        now_ms: u64,
    ) -> Result<(), SchedulerError> {
        let mut reset = Vec::new();
        for (v, attempt) in vertices {
            if self.attempt[v as usize] != attempt
                || self.state[v as usize] == ExecutionState::Created
            {
                continue;
            }
            let vertex = ExecutionVertexIndex(v);
            let was_finished = self.state[v as usize] == ExecutionState::Finished;
            if was_finished {
                self.unfinished_vertices += 1;
                let region = self.regions.region_of(vertex);
                if self.region_unfinished[region.idx()] == 0 {
                    let groups: Vec<ConsumedPartitionGroupId> = self
                        .topology
                        .non_pipelined_consumed_groups(region)
                        .collect();
                    for g in groups {
                        self.unfinished_consumer_regions[g.0 as usize] += 1;
                    }
                }
                self.region_unfinished[region.idx()] += 1;
            }
            self.unproduce_partitions(v);
            for p in self.graph.produced_partitions(vertex).collect::<Vec<_>>() {
                // The new attempt's partitions exist afresh.
                let i = self.graph.partition_index(p) as usize;
                for cvg in self.graph.consumer_vertex_groups(p) {
                    self.group_released[cvg.0 as usize] = false;
                }
                self.lost[i] = false;
                self.released[i] = false;
            }
            self.state[v as usize] = ExecutionState::Created;
            self.attempt[v as usize] += 1;
            self.allocation[v as usize] = None;
            self.location[v as usize] = None;
            reset.push(v);
        }
        if reset.is_empty() {
            return Ok(());
        }
        self.out.push(Command::ResetVertices(
            reset.iter().map(|&v| ExecutionVertexIndex(v)).collect(),
        ));
        let mut regions: Vec<u32> = reset
            .iter()
            .map(|&v| self.regions.region_of(ExecutionVertexIndex(v)).0)
            .collect();
        regions.sort_unstable();
        regions.dedup();
        for &r in &regions {
            self.scheduled[r as usize] = false;
        }
        self.maybe_schedule_regions(regions, now_ms)
    }

    fn task_manager_lost(&mut self, tm: TaskManagerId, now_ms: u64) -> Result<(), SchedulerError> {
        self.task_managers.remove(&tm);
        self.free_slots.retain(|&(t, _)| t != tm.0);
        for shared in self.shared_slots.values_mut() {
            if shared.allocation.is_some_and(|a| a.task_manager == tm) {
                shared.allocation = None;
                shared.users = 0;
            }
        }
        // Blocking partitions stored there are gone.
        let n = self.state.len();
        let mut failed = Vec::new();
        for v in 0..n {
            let on_tm = self.location[v].is_some_and(|l| l.id == tm);
            if !on_tm {
                continue;
            }
            if self.state[v] == ExecutionState::Finished {
                for p in self
                    .graph
                    .produced_partitions(ExecutionVertexIndex(index_u32(v)))
                    .collect::<Vec<_>>()
                {
                    let i = self.graph.partition_index(p) as usize;
                    self.lost[i] = true;
                }
            } else if !self.state[v].is_terminal() && self.state[v] != ExecutionState::Created {
                failed.push((index_u32(v), self.attempt[v]));
            }
        }
        for (v, attempt) in failed {
            // Each failure is handled on its own; a vertex an earlier failover of this loss
            // already cancelled or restarted (its attempt moved on) is skipped.
            if self.status == JobStatus::Running
                && self.attempt[v as usize] == attempt
                && !self.state[v as usize].is_terminal()
                && self.state[v as usize] != ExecutionState::Created
            {
                self.allocation[v as usize] = None;
                self.vertex_failed(v, None, now_ms)?;
            }
        }
        self.slots_dirty = true;
        Ok(())
    }

    /// Ends the job: cancels every running attempt, returns every slot. A failing job passes
    /// through FAILING while its tasks are cancelled (at once here: cancellation is a command).
    fn terminate(&mut self, status: JobStatus, reason: Option<String>) {
        if status == JobStatus::Failed {
            self.set_status(JobStatus::Failing, reason.clone());
        }
        for v in 0..self.state.len() {
            match self.state[v] {
                ExecutionState::Deploying
                | ExecutionState::Initializing
                | ExecutionState::Running => {
                    self.out.push(Command::Cancel(ExecutionAttemptId {
                        vertex: index_u32(v),
                        attempt: self.attempt[v],
                    }));
                    self.state[v] = ExecutionState::Canceled;
                }
                ExecutionState::Scheduled | ExecutionState::Created => {
                    self.state[v] = ExecutionState::Canceled;
                }
                _ => {}
            }
            self.allocation[v] = None;
        }
        self.missing_slots.fill(NO_REQUEST);
        self.ready_requests.clear();
        self.shared_slots.clear();
        self.slot_queue.clear();
        self.pending_restarts.clear();
        self.set_status(status, reason);
    }

    // ---- trace digest ----

    fn mix(&mut self, x: u64) {
        for b in x.to_le_bytes() {
            self.digest ^= u64::from(b);
            self.digest = self.digest.wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn mix_event(&mut self, now_ms: u64, e: &Event) {
        self.mix(now_ms);
        let attempt = |a: &ExecutionAttemptId| (u64::from(a.vertex) << 32) | u64::from(a.attempt);
        let (tag, a, b) = match e {
            Event::Start => (1, 0, 0),
            Event::TaskManagerRegistered { location, slots } => {
                (2, u64::from(location.id.0), u64::from(*slots))
            }
            Event::TaskManagerLost(tm) => (3, u64::from(tm.0), 0),
            Event::TaskRunning(x) => (4, attempt(x), 0),
            Event::TaskFinished(x) => (5, attempt(x), 0),
            Event::TaskFailed(x, c) => (
                6,
                attempt(x),
                match c {
                    FailureCause::Task => 0,
                    FailureCause::TaskManagerLost => 1,
                    FailureCause::PartitionNotFound(p) => {
                        2 + u64::from(self.graph.partition_index(*p))
                    }
                },
            ),
            Event::PartitionsLost(ps) => (7, ps.len() as u64, 0),
            Event::Restart(vs) => (8, vs.len() as u64, vs.first().map_or(0, |v| u64::from(v.0))),
            Event::Tick => (9, 0, 0),
            Event::Cancel => (10, 0, 0),
        };
        self.mix(tag);
        self.mix(a);
        self.mix(b);
    }

    fn mix_command(&mut self, c: &Command) {
        match c {
            Command::Deploy { region, tasks } => {
                self.mix(11);
                self.mix(u64::from(region.0));
                for (a, s) in tasks {
                    self.mix((u64::from(a.vertex) << 32) | u64::from(a.attempt));
                    self.mix((u64::from(s.task_manager.0) << 32) | u64::from(s.slot));
                }
            }
            Command::Cancel(a) => {
                self.mix(12);
                self.mix((u64::from(a.vertex) << 32) | u64::from(a.attempt));
            }
            Command::Restart(vs) | Command::ResetVertices(vs) => {
                self.mix(13);
                for v in vs {
                    self.mix(u64::from(v.0));
                }
            }
            Command::ReleaseGroup { group, partitions } => {
                self.mix(14);
                self.mix(u64::from(group.0));
                self.mix(partitions.len() as u64);
            }
            Command::JobStatus { status, .. } => {
                self.mix(15);
                self.mix(*status as u64);
            }
        }
    }
}

/// The scheduler's view of partition availability for the failover strategy.
struct Availability<'a> {
    scheduler: &'a Scheduler,
}

impl PartitionAvailability for Availability<'_> {
    fn is_tracked(&self, p: IntermediateResultPartitionId) -> bool {
        let s = self.scheduler;
        let i = s.graph.partition_index(p) as usize;
        let producer = s.graph.producer_of(p);
        // Flink tracks a partition from its producer's deployment until it is released or its
        // TaskManager is lost (`JobMasterPartitionTracker`).
        !s.lost[i]
            && !s.released[i]
            && matches!(
                s.state[producer.idx()],
                ExecutionState::Deploying
                    | ExecutionState::Initializing
                    | ExecutionState::Running
                    | ExecutionState::Finished
            )
    }
}

impl ProducerStates for Scheduler {
    fn producer(&self, vertex: ExecutionVertexIndex) -> ProducerView {
        ProducerView {
            attempt: self.attempt(vertex),
            state: self.state[vertex.idx()],
            location: self.location[vertex.idx()],
        }
    }

    fn all_data_produced(&self, partition: IntermediateResultPartitionId) -> bool {
        self.data_produced[self.graph.partition_index(partition) as usize]
    }
}
