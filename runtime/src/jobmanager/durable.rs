//! What the JobManager keeps in the storage directory (`high-availability.storageDir`): each
//! submission before it is acknowledged, each ended job's result; and what a recovered job
//! carries into its run. Below admission, the job table and recovery.

use conflux_blob_api::JobId;
use conflux_job_store::{JobResultEntry, JobStoreEntry, RecoveredJob, StorageDir};
use serde::{Deserialize, Serialize};

use super::error::JobManagerError;
use crate::high_availability::LeaderContext;
use crate::protocol::JobSubmission;
use crate::report::JobReport;
use crate::secret::Secret;

/// What a job store entry's payload holds: the submission as the client sent it and the job's
/// data secret (TaskManagers keep the recovered job's partitions under it).
#[derive(Serialize, Deserialize)]
pub(super) struct StoredSubmission {
    pub(super) submission: JobSubmission,
    pub(super) secret: Secret,
}

/// What a recovered job carries into its run: the state its event log replays into (or why
/// the log could not be read) and how long reading and replaying it took.
#[derive(Debug)]
pub(crate) struct JobRecovery {
    /// The replayed state, or the message (naming the file) the job fails with.
    pub(crate) state: Result<RecoveredJob, String>,
    /// Reading and replaying the log, ms.
    pub(crate) replay_ms: f64,
}

/// Writes `submission`'s job store entry durably.
///
/// # Errors
/// [`JobManagerError::JobStore`] naming the file.
pub(crate) fn store_submission(
    store: &StorageDir,
    id: JobId,
    submission: &JobSubmission,
    secret: Secret,
) -> Result<(), JobManagerError> {
    let refused = |message: String| JobManagerError::JobStore {
        source_name: submission.source.clone(),
        message,
    };
    let stored = StoredSubmission {
        submission: submission.clone(),
        secret,
    };
    let payload = rmp_serde::to_vec(&stored).map_err(|e| refused(e.to_string()))?;
    store
        .put_job(&JobStoreEntry {
            job: id.to_string(),
            name: submission.source.clone(),
            payload,
        })
        .map_err(|e| refused(e.to_string()))
}

/// Records how a job ended and removes its job store entry and event log (Flink's
/// JobResultStore entry, then the cleanup of a globally terminated job), then under high
/// availability its ZooKeeper pointer (through `handle`, from the job runner's thread). A
/// JobManager past its leadership lease writes nothing: the job is the next leader's. Failures
/// are logged: the job has ended either way.
pub(crate) fn job_ended(
    store: &StorageDir,
    id: JobId,
    report: &JobReport,
    leader: Option<&LeaderContext>,
    handle: &tokio::runtime::Handle,
) {
    let job = id.to_string();
    if leader.is_some_and(|l| !l.lease.is_valid()) {
        tracing::warn!(%job, "job result not recorded: this JobManager no longer leads");
        return;
    }
    let result = JobResultEntry {
        job: job.clone(),
        status: report.status.clone(),
        reason: report.failure_reason.clone(),
    };
    if let Err(e) = store.put_result(&result) {
        tracing::error!(%job, "job result not recorded: {e}");
        return;
    }
    if let Err(e) = store.remove_job(&job) {
        tracing::warn!(%job, "job store entry not removed: {e}");
    }
    if let Some(leader) = leader {
        handle.block_on(leader.remove_pointer(id));
    }
}
