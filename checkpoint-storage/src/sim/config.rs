//! The options of a simulation.

use crate::merging::FileMergingConfig;
use crate::storage::StorageConfig;
use crate::upload_plan::ManifestPolicy;

/// Options of a simulation. [`SimConfig::default`] is the small-file case: 1,000 small state files
/// per checkpoint x 100 checkpoints.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Subtasks (each with its own database and file-merging manager).
    pub subtasks: u32,
    /// Checkpoints triggered.
    pub checkpoints: u64,
    /// New SST files per checkpoint over all subtasks.
    pub files_per_checkpoint: u32,
    /// Smallest SST file, bytes.
    pub min_file_bytes: u64,
    /// Largest SST file, bytes.
    pub max_file_bytes: u64,
    /// Live SST files per subtask above which compaction churn deletes files (default 10 x
    /// the new files per checkpoint: live state well above the per-checkpoint delta).
    pub live_files_per_subtask: Option<u32>,
    /// At most this many checkpoints pending at once.
    pub max_concurrent: u32,
    /// Chance that a checkpoint is still pending when the next one is triggered.
    pub overlap_rate: f64,
    /// Chance that a checkpoint aborts instead of completing.
    pub abort_rate: f64,
    /// Job-manager failovers, evenly spaced; each strikes in the middle of a checkpoint.
    pub failovers: u32,
    /// Completed checkpoints retained.
    pub retained: usize,
    /// File merging options of the merged run (the unmerged run has `enabled = false`).
    pub merging: FileMergingConfig,
    /// MANIFEST upload policy.
    pub manifest: ManifestPolicy,
    /// MANIFEST roll threshold of the synthetic database, bytes.
    pub manifest_roll_bytes: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// Where objects go (`merged/` and `unmerged/` under it).
    pub storage: StorageConfig,
}

impl Default for SimConfig {
    fn default() -> SimConfig {
        SimConfig {
            subtasks: 4,
            checkpoints: 100,
            files_per_checkpoint: 1000,
            min_file_bytes: 256,
            max_file_bytes: 2048,
            live_files_per_subtask: None,
            max_concurrent: 2,
            overlap_rate: 0.2,
            abort_rate: 0.05,
            failovers: 2,
            retained: 1,
            merging: FileMergingConfig::default(),
            manifest: ManifestPolicy::AppendedRanges,
            manifest_roll_bytes: crate::upload_plan::DEFAULT_MANIFEST_ROLL_BYTES,
            seed: 42,
            storage: StorageConfig::Memory,
        }
    }
}
