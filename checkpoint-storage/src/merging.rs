//! Task-side file merging (FLIP-306's `FileMergingSnapshotManager`, Alibaba's production design
//! before it): a subtask's state files of a checkpoint are written as segments (logical files)
//! into shared physical files of at most [`FileMergingConfig::max_file_size`] bytes.
//!
//! Guarantees:
//!
//! - **One writer per physical file.** A file is leased to one checkpoint of one subtask and
//!   scope until that checkpoint's snapshot finishes; in the default *within-boundary* mode it is
//!   then closed for good, so segments of two checkpoints never share a file; in the
//!   *across-boundary* mode an unfilled file goes back to the subtask's pool once its
//!   checkpoint completes with no later one in flight, and a later checkpoint appends to it, one
//!   at a time; a pooled file that loses too many segments is sealed for space control.
//! - **Durability before acknowledgement.** Object stores cannot append, so a physical file is
//!   buffered while open and PUT when its checkpoint's snapshot finishes (or when it fills up).
//!   In across-boundary mode a re-used file is PUT again with a longer content whose prefix is
//!   unchanged: earlier segment handles read the same bytes (a PUT replaces atomically).
//! - **Deletion.** A logical file dies when a checkpoint at or after its last use is subsumed
//!   (a prefix: a missed notification heals) or when the checkpoint that wrote it aborts (an
//!   exact id). A physical file is deleted only when it is closed, owned, not leased and no live
//!   segment references it. Discards are idempotent (FLINK-36125).
//! - **Reuse.** [`FileMergingSnapshotManager::try_reuse`] advances a segment's last use when a
//!   later checkpoint decides to reference it, before that checkpoint uploads anything, so a
//!   subsume racing with the upload cannot delete it. Unknown handles (non-merged, or restored
//!   without claim) are never reused: the caller re-uploads them (Flink's
//!   `couldReusePreviousStateHandle`).
//! - **Restore.** Restored physical files are closed and never written again (FLINK-35803);
//!   they are owned (deletable) only when restored in CLAIM mode from this manager's own
//!   directories.
//! - **Space.** [`FileMergingSnapshotManager::control_space`] keeps physical bytes / live logical
//!   bytes near [`FileMergingConfig::max_space_amplification`]: by background compaction whose
//!   new handles take effect at the next checkpoint (Alibaba's design) or by excluding wasteful
//!   files from reuse (Flink's FLINK-32088).
//!
//! Map: `manager` holds the state and naming; `write` appends and syncs segments;
//! `lifecycle` handles complete / abort / subsume and physical deletion; `pool` parks, pools
//! and seals across-boundary files; `reuse` and `restore` decide what later checkpoints may
//! reference; `stats` measures space and `compaction` controls it; `files` defines the
//! per-file and per-segment records and `config` the options. Each submodule adds methods to
//! the one manager type and imports only `manager`, `files` and `config`: no module cycles.

mod compaction;
mod config;
mod files;
mod lifecycle;
mod manager;
mod pool;
mod restore;
mod reuse;
mod stats;
mod write;

pub use compaction::SpaceControlReport;
pub use config::{
    FileMergingConfig, SpaceControl, DEFAULT_MAX_FILE_SIZE, DEFAULT_MAX_SPACE_AMPLIFICATION,
};
pub use manager::FileMergingSnapshotManager;
pub use stats::{amplification, PhysicalFileStats, SpaceStats};
