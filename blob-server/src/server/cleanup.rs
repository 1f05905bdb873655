//! Deletes: dropping references, cleaning up a job's blobs, expiring transient blobs.

use std::collections::BTreeSet;
use std::sync::Arc;

use conflux_blob_api::{BlobError, BlobKey, BlobKind, JobId};

use crate::layout::{self, blocking};

use super::state::ServerCore;
use super::stats::bump;

impl ServerCore {
    /// Drops one reference; the last one removes the local file and the durable copy.
    pub(super) async fn delete(self: &Arc<Self>, key: &BlobKey) -> Result<(), BlobError> {
        bump(&self.counters.deletes, 1);
        let _guard = self.key_lock(key).lock().await;
        let remaining = {
            let mut index = self.lock_index();
            match index.get_mut(key) {
                None => None,
                Some(entry) => {
                    entry.refs = entry.refs.saturating_sub(1);
                    let refs = entry.refs;
                    if refs == 0 {
                        index.remove(key);
                    }
                    Some(refs)
                }
            }
        };
        match remaining {
            None => {
                tracing::debug!(key = %key, "delete of an unknown blob ignored");
                Ok(())
            }
            Some(0) => {
                self.remove_files(key).await?;
                if let (BlobKind::Permanent, Some(store)) = (key.kind, &self.durable) {
                    store.delete(key).await?;
                }
                tracing::debug!(key = %key, "last reference dropped: blob deleted");
                Ok(())
            }
            Some(refs) => {
                tracing::debug!(key = %key, refs, "reference dropped");
                self.persist_refs(key, refs).await
            }
        }
    }

    /// Removes the local file of `key` and its reference-count sidecar.
    pub(super) async fn remove_files(&self, key: &BlobKey) -> Result<(), BlobError> {
        let blob = layout::blob_path(&self.root, key);
        let refs = layout::refs_path(&self.root, key);
        blocking(move || {
            layout::remove_file_if_exists(&blob)?;
            layout::remove_file_if_exists(&refs)
        })
        .await
    }

    /// Deletes every blob of `job`, whatever its references: the local folder, the index
    /// entries and the durable copies. Returns how many blobs the index held for the job.
    pub(super) async fn cleanup_job(self: &Arc<Self>, job: JobId) -> Result<usize, BlobError> {
        let keys: Vec<BlobKey> = self
            .lock_index()
            .keys()
            .filter(|key| key.job == Some(job))
            .copied()
            .collect();
        for key in &keys {
            let _guard = self.key_lock(key).lock().await;
            self.lock_index().remove(key);
        }
        let dir = self.root.join(layout::job_dir_name(Some(job)));
        blocking(move || layout::remove_dir_if_exists(&dir)).await?;
        let durable = match &self.durable {
            Some(store) => store.delete_job(job).await?,
            None => 0,
        };
        tracing::info!(job = %job, blobs = keys.len(), durable, "job blobs cleaned up");
        Ok(keys.len())
    }

    /// The jobs with blobs held now, sorted.
    pub(super) fn jobs(&self) -> Vec<JobId> {
        let jobs: BTreeSet<JobId> = self.lock_index().keys().filter_map(|key| key.job).collect();
        jobs.into_iter().collect()
    }

    /// Deletes the blobs of every job not in `retain` (Flink's `BlobServer.retainJobs`),
    /// locally and durably: those the index holds and job folders left in the storage
    /// directory. Job-unrelated blobs stay. Returns the jobs deleted, sorted.
    pub(super) async fn retain_jobs(
        self: &Arc<Self>,
        retain: &[JobId],
    ) -> Result<Vec<JobId>, BlobError> {
        let retain: BTreeSet<JobId> = retain.iter().copied().collect();
        let mut held: BTreeSet<JobId> = self.jobs().into_iter().collect();
        let root = self.root.clone();
        held.extend(blocking(move || layout::local_job_dirs(&root)).await?);
        let dropped: Vec<JobId> = held.difference(&retain).copied().collect();
        for job in &dropped {
            self.cleanup_job(*job).await?;
        }
        tracing::info!(
            retained = retain.len(),
            deleted = dropped.len(),
            "blobs of jobs not being recovered deleted"
        );
        Ok(dropped)
    }

    /// Drops transient blobs unused for longer than the TTL; returns how many.
    pub(super) async fn expire_transient(self: &Arc<Self>) -> usize {
        let now = self.clock.now_ms();
        let candidates: Vec<BlobKey> = self
            .lock_index()
            .iter()
            .filter(|(key, entry)| self.expired(key, entry, now))
            .map(|(key, _)| *key)
            .collect();
        let mut expired = 0;
        for key in candidates {
            let _guard = self.key_lock(&key).lock().await;
            let still_expired = {
                let mut index = self.lock_index();
                let gone = index
                    .get(&key)
                    .is_some_and(|entry| self.expired(&key, entry, now));
                if gone {
                    index.remove(&key);
                }
                gone
            };
            if still_expired {
                expired += 1;
                if let Err(e) = self.remove_files(&key).await {
                    tracing::warn!(key = %key, error = %e, "cannot remove expired blob");
                }
                tracing::debug!(key = %key, "transient blob expired");
            }
        }
        bump(&self.counters.expired, expired as u64);
        expired
    }
}
