//! Batch job recovery on the JobManager's side (Flink 1.20's FLIP-383 with a
//! `high-availability.storageDir`): submissions kept in the storage directory before they are
//! acknowledged, each ended job's result recorded, and at start every job of the directory that
//! has no result queued again with the state its event log replays into.
//!
//! The entry point is [`JobManager::start`](crate::JobManager::start) with
//! [`JobManagerConfig::storage_dir`](crate::JobManagerConfig::storage_dir): it calls
//! [`recover_jobs`] before it accepts any connection, so that every registering TaskManager is
//! told to keep the recovered jobs' partitions.

use std::sync::Arc;
use std::time::Instant;

use conflux_blob_api::JobId;
use conflux_job_store::{JobResultEntry, JobStoreEntry, RecoveredJob, StorageDir};
use serde::{Deserialize, Serialize};

use crate::high_availability::LeaderContext;
use crate::jobmanager::{JobManagerError, Shared};
use crate::protocol::JobSubmission;
use crate::report::JobReport;
use crate::secret::Secret;

/// What a job store entry's payload holds: the submission as the client sent it and the job's
/// data secret (TaskManagers keep the recovered job's partitions under it).
#[derive(Serialize, Deserialize)]
struct StoredSubmission {
    submission: JobSubmission,
    secret: Secret,
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

/// Queues again every job of the storage directory that has no result, each with its id, data
/// secret and replayed event log; a job whose entry cannot be read is recorded FAILED with a
/// message naming the file (logged at ERROR), and one whose event log cannot be read fails when
/// its turn comes, with that message. Returns the ids of the jobs queued, whose partitions
/// registering TaskManagers keep.
pub(crate) async fn recover_jobs(shared: &Arc<Shared>, store: &StorageDir) -> Vec<JobId> {
    let jobs = match store.jobs() {
        Ok(jobs) => jobs,
        Err(e) => {
            tracing::error!("no job recovered: {e}");
            return Vec::new();
        }
    };
    let mut recovered = Vec::new();
    // Jobs that ended here or before (their result recorded): under high availability their
    // ZooKeeper pointers go too.
    let mut ended = Vec::new();
    for job in jobs {
        let Ok(id) = job.parse::<JobId>() else {
            tracing::warn!(%job, "not a job id: skipped");
            continue;
        };
        match store.read_result(&job) {
            Ok(Some(result)) => {
                // Ended before the entry was cleaned up: never run again.
                tracing::info!(%job, status = %result.status, "job already ended: not recovered");
                if let Err(e) = store.remove_job(&job) {
                    tracing::warn!(%job, "job store entry not removed: {e}");
                }
                ended.push(id);
                continue;
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(%job, "job result unreadable ({e}): recovering the job"),
        }
        let fail = |reason: String| {
            tracing::error!(%job, "job not recovered: {reason}");
            let result = JobResultEntry {
                job: job.clone(),
                status: "FAILED".into(),
                reason: Some(reason),
            };
            if let Err(e) = store.put_result(&result) {
                tracing::error!(%job, "job result not recorded: {e}");
            }
        };
        let mut fail = |reason: String| {
            fail(reason);
            ended.push(id);
        };
        let entry = match store.read_job(&job) {
            Ok(entry) => entry,
            Err(e) => {
                fail(format!("its job store entry cannot be read: {e}"));
                continue;
            }
        };
        let stored: StoredSubmission = match rmp_serde::from_slice(&entry.payload) {
            Ok(stored) => stored,
            Err(e) => {
                fail(format!(
                    "{}: the submission does not decode: {e}",
                    store.job_path(&job).display()
                ));
                continue;
            }
        };
        let started = Instant::now();
        let state = store
            .read_events(&job)
            .map(|events| RecoveredJob::replay(&events))
            .map_err(|e| format!("its event log cannot be read: {e}"));
        let recovery = JobRecovery {
            state,
            replay_ms: conflux_report::round::ms(started.elapsed()),
        };
        let source = stored.submission.source.clone();
        match crate::jobmanager::admit(
            shared,
            stored.submission,
            Some((id, stored.secret, recovery)),
        )
        .await
        {
            Ok(_) => {
                tracing::info!(%job, %source, "job recovered from the storage directory");
                recovered.push(id);
            }
            Err(e) => fail(format!("its submission is refused now: {e}")),
        }
    }
    if let Some(leader) = &shared.config.leader {
        for id in ended {
            leader.remove_pointer(id).await;
        }
    }
    recovered
}
