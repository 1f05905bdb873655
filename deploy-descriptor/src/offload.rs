//! When serialised descriptor data goes to the blob server instead of inside the TDD.

use bytes::Bytes;
use conflux_blob_api::BlobKey;

/// Flink's `blob.offload.minsize` default: 1 MiB.
pub const DEFAULT_OFFLOAD_MIN_SIZE: usize = 1 << 20;
/// Flink 1.18+'s default of
/// `jobmanager.task-deployment.offload-shuffle-descriptors-to-blob-server.threshold-num`:
/// 2048 x 2048 = 4,194,304 (FLINK-32201).
pub const DEFAULT_OFFLOAD_THRESHOLD_NUM: u64 = 2048 * 2048;

/// The rule deciding whether a serialised shuffle descriptor group is offloaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffloadRule {
    /// Flink 1.18+ (FLINK-32201, the default): offload when the descriptors in the serialised
    /// group times the consumers of its ConsumedPartitionGroup reach `threshold` (default
    /// 2048 x 2048), i.e. when the bytes would be sent to many consumers many times.
    DescriptorCount {
        /// Descriptors x consumers at or above which a group is offloaded.
        threshold: u64,
    },
    /// Flink 1.14-1.17 (FLINK-23218): offload when the compressed bytes reach `min_size`
    /// (`blob.offload.minsize`, default 1 MiB).
    CompressedBytes {
        /// Bytes at or above which a group is offloaded.
        min_size: usize,
    },
    /// Never offload (everything inline).
    Never,
}

impl Default for OffloadRule {
    fn default() -> Self {
        OffloadRule::DescriptorCount {
            threshold: DEFAULT_OFFLOAD_THRESHOLD_NUM,
        }
    }
}

/// The rule as reports state it: `descriptors x consumers >= 4194304`, `compressed bytes >=
/// 1048576` or `never`.
impl std::fmt::Display for OffloadRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OffloadRule::DescriptorCount { threshold } => {
                write!(f, "descriptors x consumers >= {threshold}")
            }
            OffloadRule::CompressedBytes { min_size } => {
                write!(f, "compressed bytes >= {min_size}")
            }
            OffloadRule::Never => f.write_str("never"),
        }
    }
}

impl OffloadRule {
    /// Whether a group of `descriptors` descriptors, read by `consumers` consumers, of
    /// `compressed_bytes` bytes, goes to the blob server.
    pub fn should_offload(
        &self,
        descriptors: usize,
        consumers: u32,
        compressed_bytes: usize,
    ) -> bool {
        match *self {
            OffloadRule::DescriptorCount { threshold } => {
                descriptors as u64 * u64::from(consumers) >= threshold
            }
            OffloadRule::CompressedBytes { min_size } => compressed_bytes >= min_size,
            OffloadRule::Never => false,
        }
    }
}

/// Serialised data either inside the descriptor or in the blob server (Flink's
/// `MaybeOffloaded`). Cloning shares the bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MaybeOffloaded {
    /// The framed bytes ([`wire`](crate::wire) format), shared by every holder.
    Inline(Bytes),
    /// A permanent blob of the job holding the framed bytes.
    Offloaded {
        /// Where the bytes are.
        key: BlobKey,
        /// Their length, for accounting.
        len: usize,
    },
}

impl MaybeOffloaded {
    /// Length of the framed bytes, wherever they are.
    pub fn len(&self) -> usize {
        match self {
            MaybeOffloaded::Inline(b) => b.len(),
            MaybeOffloaded::Offloaded { len, .. } => *len,
        }
    }

    /// Whether there are no bytes (never, for framed data).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the bytes are in the blob server.
    pub fn is_offloaded(&self) -> bool {
        matches!(self, MaybeOffloaded::Offloaded { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flink_1_18_count_rule_examples() {
        // From FLINK-32201: 4000 x 4000 offloaded, 2000 x 2000 inline, 2048 x 2048 offloaded.
        let rule = OffloadRule::default();
        assert!(rule.should_offload(4000, 4000, 0));
        assert!(!rule.should_offload(2000, 2000, usize::MAX));
        assert!(rule.should_offload(2048, 2048, 0));
        assert!(rule.should_offload(10_000, 10_000, 0));
        let bytes = OffloadRule::CompressedBytes {
            min_size: DEFAULT_OFFLOAD_MIN_SIZE,
        };
        assert!(!bytes.should_offload(1_000_000, 1_000_000, DEFAULT_OFFLOAD_MIN_SIZE - 1));
        assert!(bytes.should_offload(1, 1, DEFAULT_OFFLOAD_MIN_SIZE));
        assert!(!OffloadRule::Never.should_offload(usize::MAX, u32::MAX, usize::MAX));
    }
}
