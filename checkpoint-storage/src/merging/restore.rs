//! Restore: rebuilding the manager's view of a subtask's segments from a restored checkpoint.

use super::files::{LogicalFile, PhysicalFile};
use super::manager::FileMergingSnapshotManager;
use crate::error::{CheckpointError, Result};
use crate::handle::{CheckpointId, StateHandle, SubtaskKey};
use crate::registry::RestoreMode;

impl FileMergingSnapshotManager {
    /// Rebuilds the manager's view of `subtask`'s segments from a restored checkpoint
    /// (FLIP-306's restore operation). Each distinct physical file becomes a closed file whose
    /// size is read from the store; it is owned only in CLAIM mode and under this manager's
    /// directories. Segments keep their logical ids, last used by `checkpoint`. Whole-file
    /// handles are owned by the job manager's registry; restored in NO_CLAIM mode they are
    /// never handed out for reuse.
    ///
    /// # Errors
    /// [`CheckpointError::Missing`] when a physical file is gone, [`CheckpointError::Corrupt`]
    /// when a segment lies outside its file.
    pub async fn restore(
        &mut self,
        subtask: &SubtaskKey,
        checkpoint: CheckpointId,
        handles: &[StateHandle],
        mode: RestoreMode,
    ) -> Result<()> {
        self.max_seen = self.max_seen.max(checkpoint);
        // CLAIM and LEGACY: the restored checkpoint is the base later checkpoints reuse from.
        if mode != RestoreMode::NoClaim {
            let c = self
                .last_confirmed
                .entry(subtask.clone())
                .or_insert(checkpoint);
            *c = (*c).max(checkpoint);
        }
        for handle in handles {
            let s = match handle {
                StateHandle::Segment(s) => s,
                StateHandle::File(f) => {
                    if mode == RestoreMode::NoClaim {
                        self.not_reusable.insert(f.path.clone());
                    }
                    continue;
                }
                StateHandle::Placeholder(p) => {
                    return Err(CheckpointError::UnresolvedPlaceholder(p.key.clone()))
                }
            };
            if !self.files.contains_key(&s.path) {
                let meta =
                    self.storage
                        .head(&s.path)
                        .await?
                        .ok_or_else(|| CheckpointError::Missing {
                            path: s.path.to_string(),
                        })?;
                let managed = s.path.prefix_matches(&self.shared_dir(subtask))
                    || s.path.prefix_matches(&self.exclusive_dir());
                self.files.insert(
                    s.path.clone(),
                    PhysicalFile {
                        pool: (subtask.clone(), s.scope),
                        buffer: None,
                        size: meta.size,
                        synced: meta.size,
                        put_attempted: true,
                        live_segments: 0,
                        live_bytes: 0,
                        // Restored files are never written again (FLINK-35803).
                        closed: true,
                        owned: mode == RestoreMode::Claim && managed,
                        // NO_CLAIM: the first checkpoint must not reference the snapshot.
                        reuse_allowed: mode != RestoreMode::NoClaim,
                        compacted: false,
                        lease: None,
                    },
                );
            }
            let size = self.files.get(&s.path).map_or(0, |f| f.size);
            if s.offset.saturating_add(s.length) > size {
                return Err(CheckpointError::Corrupt {
                    handle: handle.to_string(),
                    reason: format!("segment ends after the file's {size} bytes"),
                });
            }
            if let Some(l) = self.logical.get_mut(&s.logical_id) {
                l.last_used = l.last_used.max(checkpoint);
                continue;
            }
            self.logical.insert(
                s.logical_id.clone(),
                LogicalFile {
                    path: s.path.clone(),
                    offset: s.offset,
                    length: s.length,
                    subtask: subtask.clone(),
                    scope: s.scope,
                    last_used: checkpoint,
                    copy: false,
                    retiring: false,
                },
            );
            if let Some(file) = self.files.get_mut(&s.path) {
                file.live_segments += 1;
                file.live_bytes += s.length;
            }
            self.uploaded
                .entry(subtask.clone())
                .or_default()
                .entry(checkpoint)
                .or_default()
                .push(s.logical_id.clone());
        }
        Ok(())
    }

    /// The task will not reference these restored segments in later checkpoints (e.g. the
    /// MANIFEST chain of a database reopened after the restore, which writes a new MANIFEST):
    /// they stay, and keep their files, until their checkpoint is subsumed, but space control
    /// counts their bytes as waste from now on, so it can compact their files before the
    /// segments die all at once. Unknown handles are ignored; a later
    /// [`Self::try_reuse`] of a retired segment makes it live again.
    pub fn retire(&mut self, handles: &[StateHandle]) {
        for handle in handles {
            let StateHandle::Segment(s) = handle else {
                continue;
            };
            let Some(l) = self.logical.get_mut(&s.logical_id) else {
                continue;
            };
            if l.retiring {
                continue;
            }
            l.retiring = true;
            if let Some(file) = self.files.get_mut(&l.path) {
                file.live_bytes = file.live_bytes.saturating_sub(l.length);
            }
        }
    }
}
