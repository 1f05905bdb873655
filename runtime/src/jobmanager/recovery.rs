//! Batch job recovery on the JobManager's side (Flink 1.20's FLIP-383 with a
//! `high-availability.storageDir`): at start every job of the storage directory that has no
//! result is queued again with the state its event log replays into. The submissions kept in
//! the directory before they are acknowledged and each ended job's result are `durable`'s.
//!
//! The entry point is [`JobManager::start`](crate::JobManager::start) with
//! [`JobManagerConfig::storage_dir`](crate::JobManagerConfig::storage_dir): it calls
//! [`recover_jobs`] before it accepts any connection, so that every registering TaskManager is
//! told to keep the recovered jobs' partitions.

use std::sync::Arc;
use std::time::Instant;

use conflux_blob_api::JobId;
use conflux_job_store::{JobResultEntry, RecoveredJob, StorageDir};

use crate::jobmanager::admission::admit;
use crate::jobmanager::durable::{JobRecovery, StoredSubmission};
use crate::jobmanager::shared::Shared;

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
        match admit(
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
