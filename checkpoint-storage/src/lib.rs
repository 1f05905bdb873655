//! `conflux-checkpoint`: checkpoint storage for Conflux, a supporting module the runtime embeds.
//!
//! Large jobs checkpoint tens of thousands of small state files (RocksDB SST files of
//! incremental checkpoints). This crate writes them as segments of merged physical files
//! (Alibaba's production fix, Flink 1.20's FLIP-306), deletes shared state only when nothing
//! retained or pending can reach it, bounds the space merging wastes, keeps per-checkpoint
//! "misc" uploads flat, and places RocksDB instance directories evenly over a host's disks.
//!
//! Map (task side / job-manager side):
//!
//! - [`storage`]: [`CheckpointStorage`] on `object_store` (local filesystem by default,
//!   S3-compatible, memory) with request counters.
//! - [`merging`]: task-side [`FileMergingSnapshotManager`]: segments in physical files, one
//!   writer per file, physical deletion, restore, space statistics and compaction.
//! - [`registry`]: job-manager-side [`SharedStateRegistry`] and [`JobCheckpoints`]: register on
//!   acknowledgement, delete by watermark after completions, claim / no-claim restore, rebuild
//!   after failover.
//! - [`sweep`]: orphan sweep; [`cancel`]: cancellation of an aborted checkpoint's uploads.
//! - [`upload_plan`]: incremental upload plans (reuse only from the last confirmed checkpoint,
//!   MANIFEST as appended ranges, logs never uploaded).
//! - [`local_dirs`]: [`LocalDirAllocator`] with random, round-robin, host-wide round-robin,
//!   least-loaded and weighted placement.
//! - [`sim`]: the synthetic job behind `conflux checkpoint-sim`.
//! - [`script`]: the scenario replay behind `conflux checkpoint-sim --script`: scripted events
//!   against [`JobCheckpoints`] and the upload tracker, the objects alive after each one.
//!
//! **Invariant: an object reachable from a retained checkpoint, or from an acknowledged upload
//! of a pending checkpoint, is never deleted.** Every upstream bug cited in the modules
//! (FLINK-29913, FLINK-24611, FLINK-25395, FLINK-35803, FLINK-36125) broke it.

pub mod cancel;
pub mod error;
pub mod handle;
pub mod local_dirs;
pub mod merging;
pub mod registry;
pub mod script;
pub mod sim;
pub mod storage;
pub mod sweep;
pub mod upload_plan;

pub use cancel::Canceller;
pub use error::{CheckpointError, Result};
pub use handle::{
    CheckpointId, FileHandle, LogicalFileId, PlaceholderHandle, Scope, SegmentHandle,
    SharedStateKey, StateHandle, SubtaskKey,
};
pub use local_dirs::{
    InstanceDir, InstanceName, LocalDirAllocator, LocalDirConfig, PlacementStrategy,
};
pub use merging::{
    FileMergingConfig, FileMergingSnapshotManager, PhysicalFileStats, SpaceControl,
    SpaceControlReport, SpaceStats,
};
pub use registry::{
    CompletedCheckpoint, Completion, JobCheckpoints, RestoreMode, SharedStateRegistry, SubtaskState,
};
pub use storage::{CheckpointStorage, RequestCounts, S3Config, StorageConfig};
pub use sweep::{sweep_orphans, Protection, SweepReport};
pub use upload_plan::{
    IncrementalSnapshotTracker, LocalSnapshot, ManifestPolicy, UploadPlan, UploadPlanConfig,
};

/// Object paths, as handles record them (`object_store`'s).
pub use object_store::path::Path as ObjectPath;

/// Runs `future` to completion on a new single-threaded runtime: for synchronous callers
/// (benchmarks, tools) that do not run one. Do not call it from inside an async runtime.
///
/// # Errors
/// [`CheckpointError::Io`] when the runtime cannot be created.
pub fn block_on<F: std::future::Future>(future: F) -> Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CheckpointError::io("tokio runtime", e))?;
    Ok(runtime.block_on(future))
}
