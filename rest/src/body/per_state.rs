//! Objects keyed by Flink's state names, one field per state.

use serde::Serialize;
use utoipa::ToSchema;

use crate::states::{ExecutionState, JobStatus};

/// Tasks per `ExecutionState` (job vertices' `tasks`, the job's `status-counts`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
#[allow(missing_docs)]
pub struct TaskCounts {
    #[serde(rename = "CREATED")]
    pub created: u32,
    #[serde(rename = "SCHEDULED")]
    pub scheduled: u32,
    #[serde(rename = "DEPLOYING")]
    pub deploying: u32,
    #[serde(rename = "RUNNING")]
    pub running: u32,
    #[serde(rename = "FINISHED")]
    pub finished: u32,
    #[serde(rename = "CANCELING")]
    pub canceling: u32,
    #[serde(rename = "CANCELED")]
    pub canceled: u32,
    #[serde(rename = "FAILED")]
    pub failed: u32,
    #[serde(rename = "RECONCILING")]
    pub reconciling: u32,
    #[serde(rename = "INITIALIZING")]
    pub initializing: u32,
}

impl TaskCounts {
    /// From counts indexed by [`ExecutionState::ordinal`].
    pub fn from_array(c: &[u32; 10]) -> TaskCounts {
        TaskCounts {
            created: c[ExecutionState::Created.ordinal()],
            scheduled: c[ExecutionState::Scheduled.ordinal()],
            deploying: c[ExecutionState::Deploying.ordinal()],
            running: c[ExecutionState::Running.ordinal()],
            finished: c[ExecutionState::Finished.ordinal()],
            canceling: c[ExecutionState::Canceling.ordinal()],
            canceled: c[ExecutionState::Canceled.ordinal()],
            failed: c[ExecutionState::Failed.ordinal()],
            reconciling: c[ExecutionState::Reconciling.ordinal()],
            initializing: c[ExecutionState::Initializing.ordinal()],
        }
    }
}

/// Tasks per state in lower case, with their `total` (`/jobs/overview`'s `tasks`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
#[allow(missing_docs)]
pub struct LowerCaseTaskCounts {
    pub running: u32,
    pub canceling: u32,
    pub canceled: u32,
    pub total: u32,
    pub created: u32,
    pub scheduled: u32,
    pub deploying: u32,
    pub reconciling: u32,
    pub finished: u32,
    pub initializing: u32,
    pub failed: u32,
}

impl LowerCaseTaskCounts {
    /// From counts indexed by [`ExecutionState::ordinal`].
    pub fn from_array(c: &[u32; 10]) -> LowerCaseTaskCounts {
        let t = TaskCounts::from_array(c);
        LowerCaseTaskCounts {
            running: t.running,
            canceling: t.canceling,
            canceled: t.canceled,
            total: c.iter().sum(),
            created: t.created,
            scheduled: t.scheduled,
            deploying: t.deploying,
            reconciling: t.reconciling,
            finished: t.finished,
            initializing: t.initializing,
            failed: t.failed,
        }
    }
}

/// When the job entered each `JobStatus`, epoch ms (0: never), as Flink's `timestamps`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
#[allow(missing_docs)]
pub struct JobTimestamps {
    #[serde(rename = "INITIALIZING")]
    pub initializing: i64,
    #[serde(rename = "CREATED")]
    pub created: i64,
    #[serde(rename = "RUNNING")]
    pub running: i64,
    #[serde(rename = "FAILING")]
    pub failing: i64,
    #[serde(rename = "FAILED")]
    pub failed: i64,
    #[serde(rename = "CANCELLING")]
    pub cancelling: i64,
    #[serde(rename = "CANCELED")]
    pub canceled: i64,
    #[serde(rename = "FINISHED")]
    pub finished: i64,
    #[serde(rename = "RESTARTING")]
    pub restarting: i64,
    #[serde(rename = "SUSPENDED")]
    pub suspended: i64,
    #[serde(rename = "RECONCILING")]
    pub reconciling: i64,
}

impl JobTimestamps {
    /// From timestamps indexed by [`JobStatus::ordinal`].
    pub fn from_array(t: &[i64; 11]) -> JobTimestamps {
        let at = |s: JobStatus| t[s.ordinal()];
        JobTimestamps {
            initializing: at(JobStatus::Initializing),
            created: at(JobStatus::Created),
            running: at(JobStatus::Running),
            failing: at(JobStatus::Failing),
            failed: at(JobStatus::Failed),
            cancelling: at(JobStatus::Cancelling),
            canceled: at(JobStatus::Canceled),
            finished: at(JobStatus::Finished),
            restarting: at(JobStatus::Restarting),
            suspended: at(JobStatus::Suspended),
            reconciling: at(JobStatus::Reconciling),
        }
    }
}

/// When a task's current attempt entered each `ExecutionState`, epoch ms (0: never).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
#[allow(missing_docs)]
pub struct TaskTimestamps {
    #[serde(rename = "CREATED")]
    pub created: i64,
    #[serde(rename = "SCHEDULED")]
    pub scheduled: i64,
    #[serde(rename = "DEPLOYING")]
    pub deploying: i64,
    #[serde(rename = "RUNNING")]
    pub running: i64,
    #[serde(rename = "FINISHED")]
    pub finished: i64,
    #[serde(rename = "CANCELING")]
    pub canceling: i64,
    #[serde(rename = "CANCELED")]
    pub canceled: i64,
    #[serde(rename = "FAILED")]
    pub failed: i64,
    #[serde(rename = "RECONCILING")]
    pub reconciling: i64,
    #[serde(rename = "INITIALIZING")]
    pub initializing: i64,
}

impl TaskTimestamps {
    /// From timestamps indexed by [`ExecutionState::ordinal`].
    pub fn from_array(t: &[i64; 10]) -> TaskTimestamps {
        let at = |s: ExecutionState| t[s.ordinal()];
        TaskTimestamps {
            created: at(ExecutionState::Created),
            scheduled: at(ExecutionState::Scheduled),
            deploying: at(ExecutionState::Deploying),
            running: at(ExecutionState::Running),
            finished: at(ExecutionState::Finished),
            canceling: at(ExecutionState::Canceling),
            canceled: at(ExecutionState::Canceled),
            failed: at(ExecutionState::Failed),
            reconciling: at(ExecutionState::Reconciling),
            initializing: at(ExecutionState::Initializing),
        }
    }
}

/// How long a task's current attempt stayed in each state up to RUNNING, ms (-1: not reached),
/// as Flink's `StatusDurationUtils`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
#[allow(missing_docs)]
pub struct StatusDuration {
    #[serde(rename = "CREATED")]
    pub created: i64,
    #[serde(rename = "SCHEDULED")]
    pub scheduled: i64,
    #[serde(rename = "DEPLOYING")]
    pub deploying: i64,
    #[serde(rename = "INITIALIZING")]
    pub initializing: i64,
    #[serde(rename = "RUNNING")]
    pub running: i64,
}
