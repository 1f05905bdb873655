//! The manager's records of physical files (merged objects) and the logical files (segments)
//! in them.

use object_store::path::Path;

use crate::handle::{CheckpointId, Scope, SubtaskKey};

/// The pool a physical file belongs to: one subtask's segments of one scope.
pub(super) type PoolKey = (SubtaskKey, Scope);

/// A physical file: one object holding segments of one pool.
#[derive(Debug)]
pub(super) struct PhysicalFile {
    pub(super) pool: PoolKey,
    /// Content while the file is open (it may still take segments).
    pub(super) buffer: Option<Vec<u8>>,
    /// Bytes written to the file.
    pub(super) size: u64,
    /// Bytes known durable in the store.
    pub(super) synced: u64,
    /// A PUT was attempted (it may have happened even if it was cancelled).
    pub(super) put_attempted: bool,
    pub(super) live_segments: u32,
    pub(super) live_bytes: u64,
    pub(super) closed: bool,
    pub(super) owned: bool,
    /// Segments may be referenced by later checkpoints (space control may clear it).
    pub(super) reuse_allowed: bool,
    /// Its live segments were copied by compaction.
    pub(super) compacted: bool,
    /// The checkpoint writing it now.
    pub(super) lease: Option<CheckpointId>,
}

/// A logical file: one live segment `[offset, offset + length)` of a physical file.
#[derive(Debug)]
pub(super) struct LogicalFile {
    pub(super) path: Path,
    pub(super) offset: u64,
    pub(super) length: u64,
    pub(super) subtask: SubtaskKey,
    pub(super) scope: Scope,
    pub(super) last_used: CheckpointId,
    /// Written by compaction, not by the checkpoint it is recorded under.
    pub(super) copy: bool,
    /// The task said it will not reference it again ([`FileMergingSnapshotManager::retire`]):
    /// it keeps its file until discarded, but its bytes count as waste, not as live.
    ///
    /// [`FileMergingSnapshotManager::retire`]: super::FileMergingSnapshotManager::retire
    pub(super) retiring: bool,
}
