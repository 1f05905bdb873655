//! The partitions a TaskManager holds (Flink's `ResultPartitionManager`): BLOCKING ones as
//! files in its data directory, PIPELINED ones as bounded queues per subpartition between a
//! running producer and its consumers' channels.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use conflux_blob_api::JobId;
use conflux_deploy::ResultPartitionId;
use tokio::sync::mpsc;

use crate::protocol::PartitionRef;
use crate::secret::Secret;
use crate::shuffle::quota::DiskQuota;

/// What a pipelined subpartition's queue carries.
#[derive(Debug)]
pub(crate) enum PipelinedItem {
    /// A buffer of whole records.
    Buffer(Bytes),
    /// The producer finished: nothing follows.
    End,
}

/// A running producer's PIPELINED partition: per subpartition a queue of at most `credit`
/// buffers, so a slow consumer back-pressures the producer (the producer waits for room)
/// instead of growing its memory. Each subpartition is read once.
#[derive(Debug)]
pub(crate) struct PipelinedPartition {
    receivers: Vec<Mutex<Option<mpsc::Receiver<PipelinedItem>>>>,
    /// Bytes in the queues now, and the most ever.
    buffered: AtomicU64,
    peak_buffered: AtomicU64,
}

impl PipelinedPartition {
    /// A partition of `subpartitions` queues of `credit` buffers each, and the producer's ends.
    pub(crate) fn new(
        subpartitions: u32,
        credit: usize,
    ) -> (Arc<PipelinedPartition>, Vec<mpsc::Sender<PipelinedItem>>) {
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..subpartitions)
            .map(|_| {
                let (tx, rx) = mpsc::channel(credit.max(1));
                (tx, Mutex::new(Some(rx)))
            })
            .unzip();
        let partition = PipelinedPartition {
            receivers,
            buffered: AtomicU64::new(0),
            peak_buffered: AtomicU64::new(0),
        };
        (Arc::new(partition), senders)
    }

    /// Takes subpartition `s`'s queue for a consumer; `None` when it does not exist or was
    /// taken.
    pub(crate) fn take(&self, s: u32) -> Option<mpsc::Receiver<PipelinedItem>> {
        self.receivers.get(s as usize).and_then(|r| {
            r.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
        })
    }

    /// A buffer of `bytes` entered a queue.
    pub(crate) fn queued(&self, bytes: u64) {
        let now = self.buffered.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak_buffered.fetch_max(now, Ordering::Relaxed);
    }

    /// A buffer of `bytes` left a queue for the network.
    pub(crate) fn dequeued(&self, bytes: u64) {
        self.buffered.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// The most bytes its queues held at once.
    pub(crate) fn peak_buffered(&self) -> u64 {
        self.peak_buffered.load(Ordering::Relaxed)
    }
}

/// A partition as a consumer's request finds it.
#[derive(Clone, Debug)]
pub(crate) enum Partition {
    /// A finished BLOCKING partition's file.
    Blocking(PathBuf),
    /// A running producer's PIPELINED partition.
    Pipelined(Arc<PipelinedPartition>),
}

/// The partitions of one TaskManager, by job and partition (with its producing attempt).
#[derive(Debug)]
pub(crate) struct ResultPartitionManager {
    data_dir: PathBuf,
    quota: Arc<DiskQuota>,
    partitions: Mutex<Held>,
}

type PartitionMap = HashMap<(JobId, ResultPartitionId), (Partition, u64)>;

/// What the manager holds, under one lock.
#[derive(Debug, Default)]
struct Held {
    partitions: PartitionMap,
    /// The last [`ENDED_JOBS_KEPT`] jobs that ended, oldest first: a producer still running when
    /// its job ended (its cancel not yet seen) must not create or register a partition after the
    /// job's files were deleted.
    ended: std::collections::VecDeque<JobId>,
    /// The secret of every job this TaskManager runs tasks of: consumers must present it.
    secrets: HashMap<JobId, Secret>,
}

/// Ended jobs remembered (16 bytes each): far more than jobs whose tasks can still be running.
const ENDED_JOBS_KEPT: usize = 1_024;

fn job_ended(job: JobId) -> std::io::Error {
    std::io::Error::other(format!("job {job} has ended: its partitions are deleted"))
}

impl ResultPartitionManager {
    /// Partitions under `data_dir/partitions`, written within `quota`.
    pub(crate) fn new(data_dir: &Path, quota: Arc<DiskQuota>) -> ResultPartitionManager {
        ResultPartitionManager {
            data_dir: data_dir.join("partitions"),
            quota,
            partitions: Mutex::new(Held::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.partitions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The data directory's quota.
    pub(crate) fn quota(&self) -> &Arc<DiskQuota> {
        &self.quota
    }

    fn job_dir(&self, job: JobId) -> PathBuf {
        self.data_dir.join(format!("job_{job}"))
    }

    /// Where a BLOCKING partition's file goes (its job's directory is created).
    ///
    /// # Errors
    /// When the job has ended, or its directory cannot be created.
    pub(crate) fn blocking_path(
        &self,
        job: JobId,
        id: ResultPartitionId,
    ) -> std::io::Result<PathBuf> {
        let dir = self.job_dir(job);
        {
            // Under the lock: the job's end cannot fall between the check and the directory.
            let held = self.lock();
            if held.ended.contains(&job) {
                return Err(job_ended(job));
            }
            std::fs::create_dir_all(&dir)?;
        }
        Ok(dir.join(format!(
            "result_{}_partition_{}_attempt_{}_{}.part",
            id.result, id.partition, id.producer.vertex, id.producer.attempt
        )))
    }

    /// Registers a finished BLOCKING partition's file of `bytes` bytes; the file of a job that
    /// has ended meanwhile is deleted instead.
    ///
    /// # Errors
    /// When the job has ended.
    pub(crate) fn register_blocking(
        &self,
        job: JobId,
        id: ResultPartitionId,
        path: PathBuf,
        bytes: u64,
    ) -> std::io::Result<()> {
        let mut held = self.lock();
        if held.ended.contains(&job) {
            drop(held);
            self.delete(vec![(Partition::Blocking(path), bytes)]);
            return Err(job_ended(job));
        }
        held.partitions
            .insert((job, id), (Partition::Blocking(path), bytes));
        Ok(())
    }

    /// Registers a PIPELINED partition as its producer starts.
    pub(crate) fn register_pipelined(
        &self,
        job: JobId,
        id: ResultPartitionId,
        p: Arc<PipelinedPartition>,
    ) {
        self.lock()
            .partitions
            .insert((job, id), (Partition::Pipelined(p), 0));
    }

    /// The partition held as `id` (the data server asks through [`Self::get_checked`]).
    #[cfg(test)]
    pub(crate) fn get(&self, job: JobId, id: ResultPartitionId) -> Option<Partition> {
        self.lock()
            .partitions
            .get(&(job, id))
            .map(|(p, _)| p.clone())
    }

    /// A task of `job` is about to run here: consumers of the job's partitions must present
    /// `secret`, and the job may create partitions again (a job released when this TaskManager
    /// registered with its JobManager again runs on).
    pub(crate) fn job_started(&self, job: JobId, secret: Secret) {
        let mut held = self.lock();
        held.ended.retain(|j| *j != job);
        held.secrets.insert(job, secret);
    }

    /// The finished BLOCKING partitions held, sorted (what a registration reports, so that a
    /// JobManager recovering their job can keep their producers finished). O(partitions held).
    pub(crate) fn held_blocking(&self) -> Vec<crate::protocol::HeldPartition> {
        let held = self.lock();
        let mut out: Vec<crate::protocol::HeldPartition> = held
            .partitions
            .iter()
            .filter(|(_, (p, _))| matches!(p, Partition::Blocking(_)))
            .map(|((job, id), _)| crate::protocol::HeldPartition {
                job: *job,
                result: id.result,
                partition: id.partition,
                vertex: id.producer.vertex,
                attempt: id.producer.attempt,
            })
            .collect();
        out.sort_unstable_by_key(|h| (h.job.0, h.result, h.partition, h.vertex, h.attempt));
        out
    }

    /// The secret of a job this TaskManager runs tasks of.
    pub(crate) fn job_secret(&self, job: JobId) -> Option<Secret> {
        self.lock().secrets.get(&job).copied()
    }

    /// The partition a consumer presenting `secret` asks for: `Err` when the job is known here
    /// with another secret, `Ok(None)` when the partition is not held (the job unknown
    /// included: it has no partition here).
    pub(crate) fn get_checked(
        &self,
        job: JobId,
        secret: &Secret,
        id: ResultPartitionId,
    ) -> Result<Option<Partition>, ()> {
        let held = self.lock();
        match held.secrets.get(&job) {
            Some(known) if !known.matches(secret) => Err(()),
            _ => Ok(held.partitions.get(&(job, id)).map(|(p, _)| p.clone())),
        }
    }

    fn delete(&self, removed: Vec<(Partition, u64)>) {
        for (partition, bytes) in removed {
            if let Partition::Blocking(path) = partition {
                match std::fs::remove_file(&path) {
                    Ok(()) => self.quota.release(bytes),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.quota.release(bytes),
                    Err(e) => {
                        tracing::warn!(path = %path.display(), "deleting a released partition: {e}")
                    }
                }
            }
        }
    }

    /// Releases partitions (Flink's `releasePartitions`): every attempt's file of each is
    /// deleted. Returns how many partitions were held.
    pub(crate) fn release(&self, job: JobId, partitions: &[PartitionRef]) -> usize {
        let wanted: std::collections::HashSet<(u32, u32)> =
            partitions.iter().map(|p| (p.result, p.partition)).collect();
        let removed: Vec<(Partition, u64)> = {
            let map = &mut self.lock().partitions;
            let keys: Vec<_> = map
                .keys()
                .filter(|(j, id)| *j == job && wanted.contains(&(id.result, id.partition)))
                .copied()
                .collect();
            keys.iter().filter_map(|k| map.remove(k)).collect()
        };
        let n = removed.len();
        self.delete(removed);
        n
    }

    /// Drops everything of an ended job and deletes its directory; the job's producers still
    /// running can create and register no partition from now on.
    pub(crate) fn release_job(&self, job: JobId) {
        let removed: Vec<(Partition, u64)> = {
            let mut held = self.lock();
            if !held.ended.contains(&job) {
                if held.ended.len() == ENDED_JOBS_KEPT {
                    held.ended.pop_front();
                }
                held.ended.push_back(job);
            }
            held.secrets.remove(&job);
            let map = &mut held.partitions;
            let keys: Vec<_> = map.keys().filter(|(j, _)| *j == job).copied().collect();
            keys.iter().filter_map(|k| map.remove(k)).collect()
        };
        self.delete(removed);
        let dir = self.job_dir(job);
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(dir = %dir.display(), "deleting an ended job's partitions: {e}");
            }
        }
    }

    /// At registration with a JobManager: releases every job but those in `keep` (the jobs
    /// that JobManager recovers; without high availability none), whether held in memory (an
    /// earlier registration's, or a dead JobManager's) or left on disk by an earlier life of
    /// this TaskManager. A released job's producers still running create nothing more until a
    /// task of the job runs here again. Returns the jobs released.
    pub(crate) fn release_jobs_except(&self, keep: &[JobId]) -> usize {
        let keep: std::collections::HashSet<JobId> = keep.iter().copied().collect();
        let in_memory: std::collections::BTreeSet<JobId> = {
            let held = self.lock();
            held.partitions
                .keys()
                .map(|(j, _)| *j)
                .chain(held.secrets.keys().copied())
                .filter(|j| !keep.contains(j))
                .collect()
        };
        for &job in &in_memory {
            self.release_job(job);
        }
        let mut released = in_memory.len();
        let keep_dirs: std::collections::HashSet<String> =
            keep.iter().map(|j| format!("job_{j}")).collect();
        let Ok(entries) = std::fs::read_dir(&self.data_dir) else {
            return released;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("job_") && !keep_dirs.contains(&name) {
                match std::fs::remove_dir_all(entry.path()) {
                    Ok(()) => released += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        tracing::warn!(dir = %entry.path().display(), "deleting old partitions: {e}")
                    }
                }
            }
        }
        released
    }

    /// Releases every job and deletes the partitions directory: what a TaskManager that stops
    /// leaves of its partitions (nothing).
    pub(crate) fn release_all(&self) {
        self.release_jobs_except(&[]);
        if let Err(e) = std::fs::remove_dir_all(&self.data_dir) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(dir = %self.data_dir.display(), "deleting the partitions: {e}");
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use conflux_deploy::ExecutionAttemptId;

    use super::*;

    const JOB: JobId = JobId([4; 16]);

    /// Partition `p` of result 0, produced by attempt 0 of vertex `p`.
    pub(crate) fn partition(p: u32) -> ResultPartitionId {
        ResultPartitionId {
            result: 0,
            partition: p,
            producer: ExecutionAttemptId {
                vertex: p,
                attempt: 0,
            },
        }
    }

    /// A producer still running when its job ends (its cancel not seen yet) gets no new path,
    /// and the file it finishes afterwards is deleted instead of registered: nothing of the job
    /// is left on disk.
    #[test]
    fn a_producer_finishing_after_its_job_ended_leaves_no_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let quota = Arc::new(DiskQuota::new(None));
        let manager = ResultPartitionManager::new(dir.path(), Arc::clone(&quota));
        let path = manager.blocking_path(JOB, partition(0)).expect("path");
        std::fs::write(&path, b"written before the job's end").expect("file");
        quota.reserve(28).expect("within quota");

        manager.release_job(JOB);
        let err = manager
            .blocking_path(JOB, partition(1))
            .expect_err("the job ended");
        assert!(err.to_string().contains("has ended"), "{err}");
        assert!(!manager.job_dir(JOB).exists());

        // The producer's file, renamed into place after the end (its directory made again by
        // a writer that got its path earlier).
        std::fs::create_dir_all(manager.job_dir(JOB)).expect("dir");
        std::fs::write(&path, b"written before the job's end").expect("file");
        assert!(manager
            .register_blocking(JOB, partition(0), path.clone(), 28)
            .is_err());
        assert!(!path.exists());
        assert!(manager.get(JOB, partition(0)).is_none());
        assert_eq!(quota.used(), 0);
    }
}
