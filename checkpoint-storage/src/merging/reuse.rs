//! Reuse of a segment by a later checkpoint (Flink's `couldReusePreviousStateHandle`).

use super::manager::FileMergingSnapshotManager;
use crate::handle::{CheckpointId, SegmentHandle, StateHandle};

impl FileMergingSnapshotManager {
    /// Decides whether a later checkpoint may reference `handle` instead of re-uploading, and if
    /// so returns the handle to record (a compaction copy replaces a rewritten segment) after
    /// advancing its last use to `checkpoint`. `None`: upload the file again (unknown or
    /// discarded segment, a file excluded by space control, a snapshot restored without claim,
    /// or a whole-file handle while merging is on).
    pub fn try_reuse(
        &mut self,
        checkpoint: CheckpointId,
        handle: &StateHandle,
    ) -> Option<StateHandle> {
        if self.canceller.is_aborted(checkpoint) {
            return None;
        }
        match handle {
            StateHandle::File(f) => (!self.config.enabled && !self.not_reusable.contains(&f.path))
                .then(|| handle.clone()),
            StateHandle::Placeholder(_) => None,
            StateHandle::Segment(s) => {
                if !self.config.enabled {
                    return None;
                }
                // Follow compaction copies (a copy may itself have been compacted again).
                let mut id = s.logical_id.clone();
                while let Some(next) = self.remap.get(&id) {
                    id = next.clone();
                }
                let l = self.logical.get_mut(&id)?;
                let file = self.files.get_mut(&l.path)?;
                if !file.reuse_allowed || file.compacted {
                    return None;
                }
                if l.retiring {
                    // Referenced after all: live again.
                    l.retiring = false;
                    file.live_bytes += l.length;
                }
                l.last_used = l.last_used.max(checkpoint);
                self.max_seen = self.max_seen.max(checkpoint);
                let newest = self
                    .newest_reuse
                    .entry(l.subtask.clone())
                    .or_insert(checkpoint);
                *newest = (*newest).max(checkpoint);
                Some(StateHandle::Segment(SegmentHandle {
                    path: l.path.clone(),
                    offset: l.offset,
                    length: l.length,
                    logical_id: id,
                    scope: l.scope,
                }))
            }
        }
    }
}
