//! The scheduler's API: its settings, the [`Event`]s a runtime feeds it, the [`Command`]s it
//! answers with, and its errors.

use conflux_deploy::{AllocationId, ExecutionAttemptId, TaskManagerId, TaskManagerLocation};
use conflux_graph::{
    ConsumedPartitionGroupId, ExecutionVertexIndex, IntermediateResultPartitionId, JobVertexIndex,
    PipelinedRegionIndex,
};

use crate::failover_strategy::FailoverStrategy;
use crate::restart_backoff::RestartStrategy;
use crate::speculative::SpeculativeExecutionOptions;

/// Flink's `slot.request.timeout` default: 5 minutes.
pub const DEFAULT_SLOT_REQUEST_TIMEOUT_MS: u64 = 300_000;

/// Default of [`SchedulerConfig::work_budget`]: 2^17 work units per handler call, about 4,000
/// regions of one vertex scheduled, or as many shared slots served, or 8,000 deployed, or
/// 130,000 candidates looked at: about 1 ms on one core of a release build (measured on the
/// 100k x 100k blocking word count, whose unbounded calls took 50-70 ms on the same machine).
/// At 2^19 (3-5 ms of work) `conflux run`'s longest call at 100k was 11-17 ms of wall time on
/// this 2-core machine; at 2^17, 6-8 ms, for the same total time. Also large enough that a
/// 1,000-region step or one 2,000-vertex region still fits one call. Not a Flink setting:
/// Flink's scheduler does a whole scheduling round in one go in the JobMaster's main thread.
pub const DEFAULT_WORK_BUDGET: u32 = 1 << 17;

/// Settings of a [`Scheduler`](crate::Scheduler).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SchedulerConfig {
    /// Region (default) or full restarts.
    pub failover: FailoverStrategy,
    /// Back-off and limit of restarts. Default: none, Flink 1.20's default for a job without
    /// checkpointing (every job here); [`RestartStrategyOptions::load`] builds one from Flink's
    /// options.
    ///
    /// [`RestartStrategyOptions::load`]: crate::RestartStrategyOptions::load
    pub restart: RestartStrategy,
    /// Seed of the scheduler's random draws: the exponential-delay strategy's jitter (the same
    /// seed, the same delays).
    pub seed: u64,
    /// How long a slot request may wait before the job fails, ms.
    pub slot_request_timeout_ms: u64,
    /// Release consumed partitions while the job runs (Flink's
    /// `jobmanager.partition.release-during-job-execution`, default true).
    pub release_partitions_during_execution: bool,
    /// At most how much region work one handler call ([`Scheduler::handle`] or
    /// [`Scheduler::continue_work`]) does, in work units weighted by what each step costs: a
    /// consumer subtask listed when a group becomes consumable, a candidate region looked at
    /// and a member of a chosen region count 1, a member scheduled (its slot request) 32, a
    /// shared slot served 32 (and 1 per vertex given it), a member deployed 16, a vertex of a
    /// restart reset 32. Work beyond it is owed:
    /// [`Scheduler::has_pending_work`] says so, and the driver calls
    /// [`Scheduler::continue_work`] until it is done. The concatenated commands and the trace
    /// digest do not depend on the budget. A step once begun is finished: a region larger than
    /// the budget is done whole, alone in its call. 0 behaves as 1; `u32::MAX` lets every call
    /// finish its work (no continuation is ever owed). Failover decisions, cancelling the job
    /// and releasing partitions are not budgeted (see `ARCHITECTURE.md`). Default
    /// [`DEFAULT_WORK_BUDGET`].
    ///
    /// [`Scheduler::handle`]: crate::Scheduler::handle
    /// [`Scheduler::continue_work`]: crate::Scheduler::continue_work
    /// [`Scheduler::has_pending_work`]: crate::Scheduler::has_pending_work
    pub work_budget: u32,
    /// Take free slots round the TaskManagers (each gives its first free slot before any gives
    /// its second) instead of filling them one after the other, as Flink's
    /// `cluster.evenly-spread-out-slots` (default false, as Flink's) does for TaskManagers of
    /// equal size.
    pub evenly_spread_out_slots: bool,
    /// Speculative execution of slow tasks in batch jobs (Flink's
    /// `execution.batch.speculative.*` and `slow-task-detector.*`; off by default).
    pub speculative: SpeculativeExecutionOptions,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            failover: FailoverStrategy::Region,
            restart: RestartStrategy::None,
            seed: 0,
            slot_request_timeout_ms: DEFAULT_SLOT_REQUEST_TIMEOUT_MS,
            release_partitions_during_execution: true,
            work_budget: DEFAULT_WORK_BUDGET,
            evenly_spread_out_slots: false,
            speculative: SpeculativeExecutionOptions::default(),
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
    /// The failure will recur on every attempt (an output directory that is not writable, a
    /// disk quota the task's own output exceeds): the job fails at once, whatever the restart
    /// strategy allows, as Flink fails a job on a `SuppressRestartsException` (its
    /// `ThrowableType.NonRecoverableError`).
    NonRecoverable,
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
    /// An attempt finished and reports the bytes it wrote (adaptive batch): one entry per data
    /// set the vertex produces, in [`produced_data_sets`] order, each the bytes per subpartition
    /// (as many as [`Scheduler::subpartitions_of`] says) or empty (not reported: counted as no
    /// bytes). Entries of results no run-time decision reads are ignored. Otherwise as
    /// [`TaskFinished`](Self::TaskFinished).
    ///
    /// [`produced_data_sets`]: conflux_graph::JobGraph::produced_data_sets
    /// [`Scheduler::subpartitions_of`]: crate::Scheduler::subpartitions_of
    TaskFinishedWithBytes(ExecutionAttemptId, Vec<Vec<u64>>),
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
    /// Speculative execution's periodic check (Flink's slow task detector): the driver sends it
    /// every `slow-task-detector.check-interval` while the job runs; the time of the call is
    /// the detector's "now". Slow tasks get speculative attempts
    /// ([`Command::DeploySpeculative`]) and their TaskManagers are blocked. Ignored when
    /// speculative execution is off.
    CheckSlowTasks,
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
    /// A job vertex of undecided (or late) parallelism was initialised at run time (adaptive
    /// batch): the graph grew by `parallelism` subtasks of it, with their partitions, groups and
    /// regions (append-only: every earlier index stays). Descriptor factories refresh the
    /// vertex's task information ([`Scheduler::graph`](crate::Scheduler::graph) is the grown
    /// graph).
    JobVertexInitialized {
        /// The job vertex.
        job_vertex: JobVertexIndex,
        /// Its subtasks.
        parallelism: u32,
    },
    /// Deploy speculative attempts of slow tasks (a further attempt of a vertex whose current
    /// attempt still runs), each into a slot of its own on another TaskManager. The first
    /// attempt of a vertex to finish wins; the others are cancelled with [`Command::Cancel`].
    DeploySpeculative {
        /// Attempts and their slots.
        tasks: Vec<(ExecutionAttemptId, AllocationId)>,
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
    /// A vertex index beyond the graph's vertices.
    #[error("unknown execution vertex index {0}")]
    UnknownVertex(u32),
    /// A partition that is not in the graph (unknown result or partition number).
    #[error("unknown partition {partition} of intermediate result {result}")]
    UnknownPartition {
        /// The intermediate result (data set) index.
        result: u32,
        /// The partition number.
        partition: u32,
    },
    /// An unknown TaskManager.
    #[error("unknown TaskManager {0}")]
    UnknownTaskManager(TaskManagerId),
    /// A finished attempt's byte report does not fit what its vertex produces.
    #[error("{vertex}: bad produced bytes: {reason}")]
    ProducedBytes {
        /// The vertex, e.g. `A#0`.
        vertex: String,
        /// What does not fit.
        reason: String,
    },
    /// Finished executions can be restored only before the job starts.
    #[error("cannot restore finished executions: the job is already {0}")]
    RestoreAfterStart(&'static str),
    /// A bug: a region was scheduled while not all its vertices were CREATED.
    #[error("bug: trying to schedule region {} which is not in CREATED state", .0 .0)]
    RegionNotCreated(PipelinedRegionIndex),
}
