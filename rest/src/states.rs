//! Flink's state names: `ExecutionState` of a task and `JobStatus` of a job, in Flink's
//! declaration order (their ordinals index the per-state arrays of the snapshots).

use serde::Serialize;
use utoipa::ToSchema;

/// A task's state, as Flink's `ExecutionState` (Conflux's tasks never pass `RECONCILING`; the
/// instant a task reports RUNNING counts as its `INITIALIZING` too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExecutionState {
    /// Not scheduled yet.
    Created,
    /// Waiting for or holding a slot.
    Scheduled,
    /// Being deployed to its TaskManager.
    Deploying,
    /// Running.
    Running,
    /// Done.
    Finished,
    /// Being cancelled.
    Canceling,
    /// Cancelled.
    Canceled,
    /// Failed.
    Failed,
    /// Being recovered by a new JobManager (never in Conflux).
    Reconciling,
    /// Restoring state before running.
    Initializing,
}

impl ExecutionState {
    /// Every state, in Flink's order.
    pub const ALL: [ExecutionState; 10] = [
        ExecutionState::Created,
        ExecutionState::Scheduled,
        ExecutionState::Deploying,
        ExecutionState::Running,
        ExecutionState::Finished,
        ExecutionState::Canceling,
        ExecutionState::Canceled,
        ExecutionState::Failed,
        ExecutionState::Reconciling,
        ExecutionState::Initializing,
    ];

    /// Its position in [`ALL`](Self::ALL) (Flink's ordinal).
    pub fn ordinal(self) -> usize {
        self as usize
    }

    /// Flink's upper-case name (`RUNNING`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionState::Created => "CREATED",
            ExecutionState::Scheduled => "SCHEDULED",
            ExecutionState::Deploying => "DEPLOYING",
            ExecutionState::Running => "RUNNING",
            ExecutionState::Finished => "FINISHED",
            ExecutionState::Canceling => "CANCELING",
            ExecutionState::Canceled => "CANCELED",
            ExecutionState::Failed => "FAILED",
            ExecutionState::Reconciling => "RECONCILING",
            ExecutionState::Initializing => "INITIALIZING",
        }
    }

    /// FINISHED, CANCELED or FAILED (Flink's `isTerminal`).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ExecutionState::Finished | ExecutionState::Canceled | ExecutionState::Failed
        )
    }

    /// The state a job vertex shows for its tasks' states, as Flink's
    /// `ExecutionJobVertex.getAggregateJobVertexState`: FAILED if any failed, else CANCELING,
    /// CANCELED, RUNNING if any is, FINISHED when all finished (RUNNING when only some), else
    /// CREATED.
    pub fn aggregate(counts: &[u32; 10], parallelism: i64) -> ExecutionState {
        let n = |s: ExecutionState| counts[s.ordinal()];
        if n(ExecutionState::Failed) > 0 {
            ExecutionState::Failed
        } else if n(ExecutionState::Canceling) > 0 {
            ExecutionState::Canceling
        } else if n(ExecutionState::Canceled) > 0 {
            ExecutionState::Canceled
        } else if n(ExecutionState::Running) > 0 {
            ExecutionState::Running
        } else if n(ExecutionState::Finished) > 0 {
            if i64::from(n(ExecutionState::Finished)) == parallelism {
                ExecutionState::Finished
            } else {
                ExecutionState::Running
            }
        } else {
            ExecutionState::Created
        }
    }
}

/// A job's status, as Flink's `JobStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobStatus {
    /// Submitted, being set up.
    Initializing,
    /// Set up, not scheduled yet (in Conflux: queued behind the running job).
    Created,
    /// Scheduling and running.
    Running,
    /// Giving up: cancelling the remaining tasks before FAILED.
    Failing,
    /// Gave up.
    Failed,
    /// Being cancelled.
    Cancelling,
    /// Cancelled.
    Canceled,
    /// Done.
    Finished,
    /// Tasks wait for their restart (as Flink's `DefaultScheduler`, whose job is RESTARTING while
    /// any vertex waits out the restart delay, and RUNNING again once none does).
    Restarting,
    /// Suspended by a JobManager that lost its leadership (never in Conflux yet).
    Suspended,
    /// Being recovered (never in Conflux yet).
    Reconciling,
}

impl JobStatus {
    /// Every status, in Flink's order.
    pub const ALL: [JobStatus; 11] = [
        JobStatus::Initializing,
        JobStatus::Created,
        JobStatus::Running,
        JobStatus::Failing,
        JobStatus::Failed,
        JobStatus::Cancelling,
        JobStatus::Canceled,
        JobStatus::Finished,
        JobStatus::Restarting,
        JobStatus::Suspended,
        JobStatus::Reconciling,
    ];

    /// Its position in [`ALL`](Self::ALL) (Flink's ordinal).
    pub fn ordinal(self) -> usize {
        self as usize
    }

    /// FINISHED, FAILED or CANCELED (Flink's `isGloballyTerminalState`).
    pub fn is_globally_terminal(self) -> bool {
        matches!(
            self,
            JobStatus::Finished | JobStatus::Failed | JobStatus::Canceled
        )
    }

    /// The upper-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Initializing => "INITIALIZING",
            JobStatus::Created => "CREATED",
            JobStatus::Running => "RUNNING",
            JobStatus::Failing => "FAILING",
            JobStatus::Failed => "FAILED",
            JobStatus::Cancelling => "CANCELLING",
            JobStatus::Canceled => "CANCELED",
            JobStatus::Finished => "FINISHED",
            JobStatus::Restarting => "RESTARTING",
            JobStatus::Suspended => "SUSPENDED",
            JobStatus::Reconciling => "RECONCILING",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pairs: &[(ExecutionState, u32)]) -> [u32; 10] {
        let mut c = [0; 10];
        for &(s, n) in pairs {
            c[s.ordinal()] = n;
        }
        c
    }

    #[test]
    fn ordinals_are_flinks() {
        assert_eq!(ExecutionState::Reconciling.ordinal(), 8);
        assert_eq!(ExecutionState::Initializing.ordinal(), 9);
        assert_eq!(JobStatus::Restarting.ordinal(), 8);
        for (i, s) in ExecutionState::ALL.iter().enumerate() {
            assert_eq!(s.ordinal(), i);
        }
        for (i, s) in JobStatus::ALL.iter().enumerate() {
            assert_eq!(s.ordinal(), i);
        }
    }

    #[test]
    fn vertex_states_aggregate_as_flinks() {
        use ExecutionState::*;
        assert_eq!(
            ExecutionState::aggregate(&counts(&[(Created, 4)]), 4),
            Created
        );
        assert_eq!(
            ExecutionState::aggregate(&counts(&[(Scheduled, 2), (Deploying, 2)]), 4),
            Created
        );
        assert_eq!(
            ExecutionState::aggregate(&counts(&[(Running, 1), (Created, 3)]), 4),
            Running
        );
        assert_eq!(
            ExecutionState::aggregate(&counts(&[(Finished, 3), (Created, 1)]), 4),
            Running
        );
        assert_eq!(
            ExecutionState::aggregate(&counts(&[(Finished, 4)]), 4),
            Finished
        );
        assert_eq!(
            ExecutionState::aggregate(&counts(&[(Failed, 1), (Canceled, 1)]), 2),
            Failed
        );
        assert_eq!(
            ExecutionState::aggregate(&counts(&[(Canceled, 1), (Running, 1)]), 2),
            Canceled
        );
    }
}
