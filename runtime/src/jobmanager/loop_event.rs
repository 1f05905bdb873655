//! [`LoopEvent`], what a job's event loop hears from the rest of the JobManager: the
//! TaskManager registry (registered, lost), the connections (acknowledgements, task states) and
//! the job table (cancel). Below both the loop and its senders, so neither reaches into the
//! other's module.

use conflux_blob_api::JobId;
use conflux_deploy::{ExecutionAttemptId, TaskManagerId, TaskManagerLocation};

use crate::protocol::{TaskMetrics, TaskState};

/// What the loop hears from the rest of the JobManager.
#[derive(Debug)]
pub(crate) enum LoopEvent {
    TaskManagerRegistered {
        location: TaskManagerLocation,
        slots: u32,
    },
    TaskManagerLost(TaskManagerId),
    /// Messages about tasks name the TaskManager they came from and the job: only the
    /// TaskManager the current attempt (or a live speculative attempt) of the running job was
    /// deployed to is heard.
    Acknowledged {
        from: TaskManagerId,
        job: JobId,
        attempt: ExecutionAttemptId,
        refused: Option<String>,
    },
    TaskState {
        from: TaskManagerId,
        job: JobId,
        attempt: ExecutionAttemptId,
        state: TaskState,
        metrics: TaskMetrics,
    },
    Cancel,
}
