//! Options of file merging: [`FileMergingConfig`] and the space-control policy.

/// Default cap of a physical file: 32 MiB (`execution.checkpointing.file-merging.max-file-size`).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 32 << 20;

/// Default space-amplification limit of Conflux: 1.2 (Alibaba's target; Flink's default
/// `max-space-amplification` is 2.0).
pub const DEFAULT_MAX_SPACE_AMPLIFICATION: f64 = 1.2;

/// What to do with physical files that waste too much space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum SpaceControl {
    /// Rewrite their live segments into new files in the background; the next checkpoint
    /// references the copies and the old files drain (Alibaba's design).
    Compaction,
    /// Stop reusing their segments, so incremental uploads rewrite the live data (Flink 1.20,
    /// FLINK-32088).
    ExcludeFromReuse,
}

/// Options of file merging (FLIP-306's `execution.checkpointing.file-merging.*`).
#[derive(Clone, Debug, PartialEq)]
pub struct FileMergingConfig {
    /// Merge small files (`enabled`; Flink's default is off, Conflux's on). Off, every state
    /// file is its own object, as in Flink without FLIP-306.
    pub enabled: bool,
    /// Target cap of a physical file, bytes. A segment is never split, so a file exceeds it only
    /// when a single segment is larger.
    pub max_file_size: u64,
    /// Let a physical file take segments of later checkpoints (`across-checkpoint-boundary`,
    /// default off).
    pub across_checkpoint_boundary: bool,
    /// Space-amplification limit (physical / live logical bytes); below 1 disables control.
    pub max_space_amplification: f64,
    /// How the limit is enforced.
    pub space_control: SpaceControl,
    /// Name prefix of objects and logical ids; `None` picks a random one. Set it only for
    /// reproducible tests: two managers with one nonce would collide.
    pub nonce: Option<String>,
}

impl Default for FileMergingConfig {
    fn default() -> FileMergingConfig {
        FileMergingConfig {
            enabled: true,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            across_checkpoint_boundary: false,
            max_space_amplification: DEFAULT_MAX_SPACE_AMPLIFICATION,
            space_control: SpaceControl::Compaction,
            nonce: None,
        }
    }
}
