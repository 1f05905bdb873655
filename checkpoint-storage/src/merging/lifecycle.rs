//! Checkpoint notifications (complete, abort, subsume) and what they discard: logical files
//! die by prefix on subsume and by exact id on abort; physical files go when nothing lives in
//! them.

use std::collections::BTreeSet;

use object_store::path::Path;

use super::manager::FileMergingSnapshotManager;
use crate::error::Result;
use crate::handle::{CheckpointId, Scope, SubtaskKey};

impl FileMergingSnapshotManager {
    /// `subtask` learned that `checkpoint` completed: its handles are the base of the next
    /// incremental snapshot (and of compaction's choice of segments to copy).
    pub fn notify_checkpoint_complete(&mut self, subtask: &SubtaskKey, checkpoint: CheckpointId) {
        let c = self
            .last_confirmed
            .entry(subtask.clone())
            .or_insert(checkpoint);
        *c = (*c).max(checkpoint);
        self.max_seen = self.max_seen.max(checkpoint);
        self.release_parked(subtask, checkpoint);
    }

    /// `checkpoint` was aborted: its in-flight uploads are cancelled, files it was writing are
    /// closed, and the logical files it created (and no later checkpoint reused) are discarded.
    /// Without merging, its not-yet-finished objects are deleted here: the job manager never
    /// learned of them.
    ///
    /// # Errors
    /// [`CheckpointError::Store`](crate::CheckpointError::Store) when a DELETE fails.
    pub async fn notify_checkpoint_aborted(
        &mut self,
        subtask: &SubtaskKey,
        checkpoint: CheckpointId,
    ) -> Result<()> {
        self.canceller.abort(checkpoint);
        let mut touched = BTreeSet::new();
        for scope in [Scope::Shared, Scope::Exclusive] {
            if let Some(path) = self.leases.remove(&(checkpoint, (subtask.clone(), scope))) {
                if let Some(file) = self.files.get_mut(&path) {
                    // Bytes never synced were never durable: the object holds the synced prefix.
                    file.buffer = None;
                    file.size = file.synced;
                    file.closed = true;
                    file.lease = None;
                }
                touched.insert(path);
            }
        }
        if let Some(paths) = self.unfinished.remove(&(subtask.clone(), checkpoint)) {
            for path in paths {
                self.storage.delete(&path).await?;
            }
        }
        touched.extend(self.seal_parked(subtask, |c| c == checkpoint));
        touched.extend(self.discard(subtask, checkpoint, false, |c| c == checkpoint));
        self.seal_wasteful_idle_files(&touched);
        self.delete_unused(touched).await
    }

    /// Checkpoints up to `checkpoint` are subsumed: every logical file of `subtask` created up
    /// to it and last used at or before it is discarded (a prefix, so a missed notification
    /// heals), and files left without live segments are deleted.
    ///
    /// # Errors
    /// [`CheckpointError::Store`](crate::CheckpointError::Store) when a DELETE fails.
    pub async fn notify_checkpoint_subsumed(
        &mut self,
        subtask: &SubtaskKey,
        checkpoint: CheckpointId,
    ) -> Result<()> {
        self.canceller.finish_up_to(checkpoint);
        let mut touched = self.seal_parked(subtask, |c| c <= checkpoint);
        touched.extend(self.discard(subtask, checkpoint, true, |c| c <= checkpoint));
        self.seal_wasteful_idle_files(&touched);
        self.delete_unused(touched).await
    }

    /// Discards `subtask`'s logical files of the checkpoints `which` selects whose last use is
    /// at or before `up_to` (compaction copies only with `copies`). Idempotent. Returns the
    /// physical files touched.
    fn discard(
        &mut self,
        subtask: &SubtaskKey,
        up_to: CheckpointId,
        copies: bool,
        which: impl Fn(CheckpointId) -> bool,
    ) -> BTreeSet<Path> {
        let mut touched = BTreeSet::new();
        let Some(per_checkpoint) = self.uploaded.get_mut(subtask) else {
            return touched;
        };
        for (c, ids) in per_checkpoint.iter_mut() {
            if !which(*c) {
                continue;
            }
            ids.retain(|id| {
                let Some(l) = self.logical.get(id) else {
                    return false;
                };
                if l.last_used > up_to || (l.copy && !copies) {
                    return true;
                }
                if let Some(file) = self.files.get_mut(&l.path) {
                    file.live_segments = file.live_segments.saturating_sub(1);
                    if !l.retiring {
                        file.live_bytes = file.live_bytes.saturating_sub(l.length);
                    }
                    touched.insert(l.path.clone());
                }
                self.logical.remove(id);
                false
            });
        }
        per_checkpoint.retain(|_, ids| !ids.is_empty());
        let logical = &self.logical;
        self.remap.retain(|_, new| logical.contains_key(new));
        touched
    }

    /// Deletes those of `paths` that are closed, owned, not leased and without live segments;
    /// forgets the unowned ones without deleting them.
    pub(super) async fn delete_unused(&mut self, paths: BTreeSet<Path>) -> Result<()> {
        for path in paths {
            let Some(file) = self.files.get(&path) else {
                continue;
            };
            if !file.closed || file.lease.is_some() || file.live_segments > 0 {
                continue;
            }
            if file.owned && file.put_attempted {
                self.storage.delete(&path).await?;
            }
            self.files.remove(&path);
        }
        Ok(())
    }
}
