//! The across-boundary pool: files that outlive their checkpoint's snapshot and take segments
//! of later checkpoints, one writer at a time.
//!
//! A file whose snapshot finished is *parked* until its checkpoint completes. It joins the
//! pool (*idle*) only if no later checkpoint was seen by then: a later checkpoint planned
//! before this confirmation re-uploads rather than reuses this checkpoint's files, so their
//! segments mostly die when it completes, and appending to them would only bury that waste.
//! Files of aborted or superseded checkpoints, idle files that lost too much, and files
//! chosen by space control are *sealed* (closed), and then drain or are compacted like
//! within-boundary files.

use std::collections::BTreeSet;

use object_store::path::Path;

use super::manager::FileMergingSnapshotManager;
use crate::error::Result;
use crate::handle::{CheckpointId, SubtaskKey};

impl FileMergingSnapshotManager {
    /// `checkpoint` completed for `subtask`: its parked files join the pool if no later
    /// checkpoint was seen, else they are sealed; parked files of older checkpoints (a missed
    /// notification) are sealed. Returns the files sealed.
    pub(super) fn release_parked(
        &mut self,
        subtask: &SubtaskKey,
        checkpoint: CheckpointId,
    ) -> BTreeSet<Path> {
        let to_pool = self.max_seen <= checkpoint;
        let mine: Vec<_> = self
            .parked
            .keys()
            .filter(|(c, pool)| *c <= checkpoint && pool.0 == *subtask)
            .cloned()
            .collect();
        let mut sealed = BTreeSet::new();
        for key in mine {
            let Some(path) = self.parked.remove(&key) else {
                continue;
            };
            if to_pool && key.0 == checkpoint {
                self.idle.entry(key.1).or_default().push(path);
            } else {
                self.close_open_file(&path);
                sealed.insert(path);
            }
        }
        sealed
    }

    /// Seals the parked files of `subtask` for the checkpoints `which` selects (aborted or
    /// subsumed without a completion notice). Returns them.
    pub(super) fn seal_parked(
        &mut self,
        subtask: &SubtaskKey,
        which: impl Fn(CheckpointId) -> bool,
    ) -> BTreeSet<Path> {
        let keys: Vec<_> = self
            .parked
            .keys()
            .filter(|(c, pool)| which(*c) && pool.0 == *subtask)
            .cloned()
            .collect();
        let mut sealed = BTreeSet::new();
        for key in keys {
            if let Some(path) = self.parked.remove(&key) {
                self.close_open_file(&path);
                sealed.insert(path);
            }
        }
        sealed
    }

    /// Whether a checkpoint of `subtask` other than `checkpoint` is writing or waits for its
    /// completion. Checkpoints overlap then, and an overlapped checkpoint's uploads may all
    /// die when a later one completes (the later one planned without them): written into a
    /// file of their own, they go with it instead of leaving holes in a pooled file.
    pub(super) fn others_in_flight(&self, checkpoint: CheckpointId, subtask: &SubtaskKey) -> bool {
        let other = |(c, pool): &(CheckpointId, super::files::PoolKey)| {
            *c != checkpoint && pool.0 == *subtask
        };
        self.parked.keys().any(other) || self.leases.keys().any(other)
    }

    /// Whether `path` waits in the pool for a later checkpoint.
    pub(super) fn is_idle(&self, path: &Path) -> bool {
        self.idle.values().any(|pool| pool.contains(path))
    }

    /// Drops an open file's buffer and closes it: its content is already durable (synced when
    /// its last snapshot finished).
    fn close_open_file(&mut self, path: &Path) {
        if let Some(file) = self.files.get_mut(path) {
            file.buffer = None;
            file.closed = true;
        }
    }

    /// Closes those of `paths` that wait in the across-boundary pool, so they take no more
    /// segments (their content is already durable: an idle file was synced when its last
    /// snapshot finished). Returns the files sealed.
    pub(super) fn seal_idle_files(&mut self, paths: &[Path]) -> BTreeSet<Path> {
        let mut sealed = BTreeSet::new();
        for pool in self.idle.values_mut() {
            pool.retain(|p| {
                let seal = paths.contains(p);
                if seal {
                    sealed.insert(p.clone());
                }
                !seal
            });
        }
        self.idle.retain(|_, pool| !pool.is_empty());
        for path in &sealed {
            self.close_open_file(path);
        }
        sealed
    }

    /// Seals those of `paths` that wait in the across-boundary pool and have lost more
    /// segments than the space target allows ([`Self::space_target`]): appending to them would
    /// keep their dead bytes until they fill up, out of reach of space control. Once closed,
    /// they drain or are compacted like within-boundary files (Flink likewise stops reusing a
    /// physical file over the space-amplification limit, FLINK-32088).
    pub(super) fn seal_wasteful_idle_files(&mut self, paths: &BTreeSet<Path>) {
        let Some(target) = self.space_target() else {
            return;
        };
        let wasteful: Vec<Path> = paths
            .iter()
            .filter(|p| {
                self.files.get(*p).is_some_and(|f| {
                    !f.closed && f.lease.is_none() && f.size as f64 > f.live_bytes as f64 * target
                })
            })
            .cloned()
            .collect();
        self.seal_idle_files(&wasteful);
    }

    /// Closes the idle and parked files of the across-boundary pool (e.g. when the job stops)
    /// and deletes those without live segments.
    ///
    /// # Errors
    /// [`CheckpointError::Store`](crate::CheckpointError::Store) when a DELETE fails.
    pub async fn close_idle_files(&mut self) -> Result<()> {
        let idle = std::mem::take(&mut self.idle);
        let parked = std::mem::take(&mut self.parked);
        let touched: BTreeSet<Path> = idle
            .into_values()
            .flatten()
            .chain(parked.into_values())
            .collect();
        for path in &touched {
            self.close_open_file(path);
        }
        self.delete_unused(touched).await
    }
}
