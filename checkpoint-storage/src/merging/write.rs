//! Writing: segments appended to leased physical files, made durable when the snapshot
//! finishes (one writer per file; across-boundary files return to the subtask's pool).

use std::collections::BTreeSet;

use bytes::Bytes;
use object_store::path::Path;

use super::files::{LogicalFile, PhysicalFile, PoolKey};
use super::manager::FileMergingSnapshotManager;
use crate::error::{CheckpointError, Result};
use crate::handle::{CheckpointId, FileHandle, Scope, SegmentHandle, StateHandle, SubtaskKey};

impl FileMergingSnapshotManager {
    /// Writes one state file of `subtask` for `checkpoint` and returns its handle: a segment of
    /// a merged file, or (merging disabled) a whole object. The bytes are durable once
    /// [`Self::finish_snapshot`] returns.
    ///
    /// # Errors
    /// [`CheckpointError::Aborted`] when the checkpoint was aborted (also mid-upload),
    /// [`CheckpointError::Store`] when a PUT fails.
    pub async fn write_state(
        &mut self,
        subtask: &SubtaskKey,
        checkpoint: CheckpointId,
        scope: Scope,
        data: &[u8],
    ) -> Result<StateHandle> {
        self.check_live(checkpoint)?;
        self.max_seen = self.max_seen.max(checkpoint);
        let len = data.len() as u64;
        if !self.config.enabled {
            let path = self.new_path(subtask, scope, checkpoint);
            self.unfinished
                .entry((subtask.clone(), checkpoint))
                .or_default()
                .push(path.clone());
            self.put(Some(checkpoint), &path, Bytes::copy_from_slice(data), true)
                .await?;
            return Ok(StateHandle::File(FileHandle {
                path,
                size: len,
                scope,
            }));
        }
        let pool = (subtask.clone(), scope);
        let mut path = match self.leases.get(&(checkpoint, pool.clone())) {
            Some(p) => p.clone(),
            None => self.take_file(checkpoint, &pool),
        };
        let full = self
            .files
            .get(&path)
            .is_some_and(|f| f.size > 0 && f.size.saturating_add(len) > self.config.max_file_size);
        if full {
            // Seal the full file now: it frees its buffer and never takes another segment.
            self.sync_file(checkpoint, &path, true).await?;
            self.leases.remove(&(checkpoint, pool.clone()));
            // Across-boundary: all its segments may have died while it waited in the pool.
            self.delete_unused(BTreeSet::from([path.clone()])).await?;
            path = self.take_file(checkpoint, &pool);
        }
        let id = self.new_logical_id();
        let file = self
            .files
            .get_mut(&path)
            .ok_or_else(|| CheckpointError::Internal(format!("leased file {path} unknown")))?;
        let buffer = file
            .buffer
            .as_mut()
            .ok_or_else(|| CheckpointError::Internal(format!("leased file {path} is closed")))?;
        let offset = file.size;
        buffer.extend_from_slice(data);
        file.size += len;
        file.live_segments += 1;
        file.live_bytes += len;
        self.logical.insert(
            id.clone(),
            LogicalFile {
                path: path.clone(),
                offset,
                length: len,
                subtask: subtask.clone(),
                scope,
                last_used: checkpoint,
                copy: false,
                retiring: false,
            },
        );
        self.uploaded
            .entry(subtask.clone())
            .or_default()
            .entry(checkpoint)
            .or_default()
            .push(id.clone());
        Ok(StateHandle::Segment(SegmentHandle {
            path,
            offset,
            length: len,
            logical_id: id,
            scope,
        }))
    }

    /// Leases a file of `pool` to `checkpoint`: an idle open file (across-boundary mode, when
    /// no other checkpoint of the subtask is in flight) or a new one.
    fn take_file(&mut self, checkpoint: CheckpointId, pool: &PoolKey) -> Path {
        let reused = if self.config.across_checkpoint_boundary
            && !self.others_in_flight(checkpoint, &pool.0)
        {
            self.idle.get_mut(pool).and_then(Vec::pop)
        } else {
            None
        };
        let path = match reused {
            Some(path) => path,
            None => {
                let path = self.new_path(&pool.0, pool.1, checkpoint);
                self.files.insert(
                    path.clone(),
                    PhysicalFile {
                        pool: pool.clone(),
                        buffer: Some(Vec::new()),
                        size: 0,
                        synced: 0,
                        put_attempted: false,
                        live_segments: 0,
                        live_bytes: 0,
                        closed: false,
                        owned: true,
                        reuse_allowed: true,
                        compacted: false,
                        lease: None,
                    },
                );
                path
            }
        };
        if let Some(file) = self.files.get_mut(&path) {
            file.lease = Some(checkpoint);
        }
        self.leases.insert((checkpoint, pool.clone()), path.clone());
        path
    }

    /// Makes a file's content durable; with `close`, closes it too.
    async fn sync_file(
        &mut self,
        checkpoint: CheckpointId,
        path: &Path,
        close: bool,
    ) -> Result<()> {
        let (bytes, create) = {
            let file = self
                .files
                .get_mut(path)
                .ok_or_else(|| CheckpointError::Internal(format!("file {path} unknown")))?;
            let Some(buffer) = file.buffer.as_ref() else {
                return Ok(());
            };
            if file.synced == file.size && file.put_attempted {
                (None, false)
            } else {
                let create = !file.put_attempted;
                file.put_attempted = true;
                (Some(Bytes::copy_from_slice(buffer)), create)
            }
        };
        if let Some(bytes) = bytes {
            if bytes.is_empty() {
                // Nothing was ever written: no object to create.
                if let Some(file) = self.files.get_mut(path) {
                    file.put_attempted = false;
                }
            } else {
                self.put(Some(checkpoint), path, bytes, create).await?;
            }
        }
        if let Some(file) = self.files.get_mut(path) {
            file.synced = file.size;
            if close {
                file.buffer = None;
                file.closed = true;
                file.lease = None;
            }
        }
        Ok(())
    }

    /// Finishes `subtask`'s snapshot of `checkpoint`: every file it wrote is made durable, then
    /// closed (within-boundary, or full) or parked until the checkpoint completes
    /// (across-boundary; see [`Self::notify_checkpoint_complete`]). After this
    /// the handles may be acknowledged. Returns the files closed.
    ///
    /// # Errors
    /// [`CheckpointError::Aborted`] when the checkpoint was aborted,
    /// [`CheckpointError::Store`] when a PUT fails.
    pub async fn finish_snapshot(
        &mut self,
        subtask: &SubtaskKey,
        checkpoint: CheckpointId,
    ) -> Result<Vec<Path>> {
        self.check_live(checkpoint)?;
        let mut closed = Vec::new();
        for scope in [Scope::Shared, Scope::Exclusive] {
            let pool = (subtask.clone(), scope);
            let Some(path) = self.leases.get(&(checkpoint, pool.clone())).cloned() else {
                continue;
            };
            let close = !self.config.across_checkpoint_boundary
                || self
                    .files
                    .get(&path)
                    .is_some_and(|f| f.size >= self.config.max_file_size);
            self.sync_file(checkpoint, &path, close).await?;
            self.leases.remove(&(checkpoint, pool.clone()));
            if close {
                closed.push(path.clone());
            } else if let Some(file) = self.files.get_mut(&path) {
                file.lease = None;
                self.parked.insert((checkpoint, pool), path.clone());
            }
        }
        self.unfinished.remove(&(subtask.clone(), checkpoint));
        self.delete_unused(closed.iter().cloned().collect()).await?;
        Ok(closed)
    }
}
