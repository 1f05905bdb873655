//! Admission of a submission: loaded and validated off the runtime, its memory estimated and
//! checked against the budget, kept in the storage directory when there is one, then queued in
//! the job table under a new id (or, recovered, its old one).

use std::sync::Arc;
use std::time::Instant;

use conflux_blob_api::{Digest, JobId};
use conflux_graph::load::LoadOptions;

use super::error::JobManagerError;
use super::jobs::QueuedJob;
use super::shared::Shared;
use super::{durable, invokables, job_loop, rest_view};
use crate::protocol::{JobSubmission, MAX_CREDIT};
use crate::secret;

fn new_job_id(source: &str) -> JobId {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!("{source}/{nanos}/{}", std::process::id());
    let digest = Digest::of(seed.as_bytes());
    let mut id = [0u8; 16];
    id.copy_from_slice(&digest.0[..16]);
    JobId(id)
}

pub(crate) async fn submit(
    shared: &Arc<Shared>,
    submission: JobSubmission,
) -> Result<JobId, JobManagerError> {
    admit(shared, submission, None).await
}

/// Loads, checks and queues a submission: a new one (kept in the storage directory, when there
/// is one, before it is queued), or a recovered one with its id, secret and event log.
pub(crate) async fn admit(
    shared: &Arc<Shared>,
    submission: JobSubmission,
    recovered: Option<(JobId, secret::Secret, durable::JobRecovery)>,
) -> Result<JobId, JobManagerError> {
    let source_name = submission.source.clone();
    let invalid = |message: String| JobManagerError::InvalidJob {
        source_name: source_name.clone(),
        message,
    };
    if let Some(dir) = &submission.options.output_dir {
        if dir.to_str().is_none() {
            return Err(invalid(format!(
                "output directory {} is not valid UTF-8",
                dir.display()
            )));
        }
    }
    let submitted = Instant::now();
    let submitted_ms = conflux_rest::now_ms();
    let _loading = shared
        .loading
        .acquire()
        .await
        .map_err(|_| JobManagerError::ShuttingDown)?;
    // The CLI's --buffers-per-channel range, held for every client: credit 0 would stall every
    // channel, and a credit without bound would let queues grow without bound.
    let credit = submission.options.credit;
    if !(1..=MAX_CREDIT).contains(&credit) {
        return Err(invalid(format!(
            "credit {credit} (buffers per channel) is not within 1..={MAX_CREDIT}"
        )));
    }
    let options = submission.options.clone();
    let job_options = submission.options.clone();
    let scheduler_config = shared.config.scheduler;
    let limit = shared.config.max_job_memory_bytes;
    let name_for_refusal = source_name.clone();
    let (id, secret, recovery) = match recovered {
        Some((id, secret, recovery)) => (id, Some(secret), Some(recovery)),
        None => (new_job_id(&source_name), None, None),
    };
    // A new job kept in the storage directory gets its data secret now, kept with it.
    let (secret, stored) = match (&shared.store, secret) {
        (Some(_), None) => {
            let secret = secret::Secret::random().map_err(|e| {
                invalid(format!(
                    "no data secret: the system's random generator failed: {e}"
                ))
            })?;
            (Some(secret), Some(submission.clone()))
        }
        (_, secret) => (secret, None),
    };
    let (job, tasks, view) = tokio::task::spawn_blocking(move || {
        let load = LoadOptions {
            parallelism: options.parallelism,
            auto_parallelism: options.auto_parallelism,
            default_parallelism: options
                .default_parallelism
                .unwrap_or(LoadOptions::default().default_parallelism),
        };
        let job = conflux_graph::load::load(&submission.job, &load)
            .map_err(|e| Refusal::Invalid(e.to_string()))?;
        drop(submission);
        let tasks = invokables::resolve(&job, &options).map_err(Refusal::Invalid)?;
        job_loop::check_scheduler_options(&job, &options).map_err(Refusal::Invalid)?;
        let estimate = job_loop::memory_estimate(&job, &scheduler_config);
        if estimate > limit {
            return Err(Refusal::TooLarge(JobManagerError::TooLarge {
                source_name: name_for_refusal,
                estimate,
                limit,
                execution_vertices: job.num_execution_vertices(),
            }));
        }
        let decided_at_run_time = options.default_parallelism.is_none() && job.has_undecided();
        let view = rest_view::queued_view(id, &job, decided_at_run_time, submitted_ms);
        Ok((job, tasks, view))
    })
    .await
    .map_err(|e| invalid(format!("the loader failed: {e}")))?
    .map_err(|refusal| match refusal {
        Refusal::Invalid(message) => invalid(message),
        Refusal::TooLarge(e) => e,
    })?;
    let name = job.name().to_owned();
    if let (Some(store), Some(stored), Some(secret)) = (&shared.store, &stored, secret) {
        // Durable before the submission is acknowledged (Flink's JobGraphStore): the entry,
        // then under high availability its pointer in ZooKeeper, written only while the lease
        // holds (a deposed leader takes no job).
        let refused = |message: String| JobManagerError::JobStore {
            source_name: source_name.clone(),
            message,
        };
        if let Some(leader) = &shared.config.leader {
            if !leader.lease.is_valid() {
                return Err(refused(format!(
                    "this JobManager no longer leads (fencing token {})",
                    leader.fencing_token
                )));
            }
        }
        let store_for_write = store.clone();
        let stored = stored.clone();
        tokio::task::spawn_blocking(move || {
            durable::store_submission(&store_for_write, id, &stored, secret)
        })
        .await
        .map_err(|e| invalid(format!("the job store failed: {e}")))??;
        if let Some(leader) = &shared.config.leader {
            let entry = store.job_path(&id.to_string());
            if let Err(message) = leader.put_pointer(id, &entry).await {
                // Not acknowledged: the entry goes too, so no later leader runs it.
                if let Err(e) = store.remove_job(&id.to_string()) {
                    tracing::warn!(job = %id, "job store entry not removed: {e}");
                }
                return Err(refused(message));
            }
        }
    }
    let queued = QueuedJob {
        id,
        name: name.clone(),
        secret,
        recovery,
        graph_bytes: job.heap_bytes() as u64,
        execution_vertices: job.num_execution_vertices(),
        job,
        tasks,
        options: job_options,
        submitted,
        submitted_ms,
        view,
    };
    if let Err(e) = shared.jobs.enqueue(queued) {
        if let (Some(store), Some(_)) = (&shared.store, &stored) {
            if let Err(e) = store.remove_job(&id.to_string()) {
                tracing::warn!(job = %id, "job store entry of a refused job not removed: {e}");
            }
        }
        return Err(e);
    }
    tracing::info!(job = %id, source = %source_name, "Received JobGraph submission '{name}' ({id}).");
    Ok(id)
}

/// Why a submission is refused, from the loader's thread.
enum Refusal {
    Invalid(String),
    TooLarge(JobManagerError),
}
