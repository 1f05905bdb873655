//! Flink 1.20's network buffer model: the buffers of the input gates and result partitions of
//! one job edge, from its distribution pattern, result partition type and parallelisms.

use conflux_graph::{DistributionPattern, ResultPartitionType};
use serde::{Deserialize, Serialize};

/// Flink's `taskmanager.memory.segment-size` default: 32 KiB per network buffer.
pub const DEFAULT_SEGMENT_SIZE: u64 = 32 * 1024;

/// Flink 1.20's network buffer model, with its defaults (see the README, "Network buffers").
///
/// From Flink's documentation ("Network memory tuning guide", `network_mem_tuning.md`): every
/// local buffer pool (one per result partition, one per input gate) has the target size
/// `#channels * taskmanager.network.memory.buffers-per-channel +
/// taskmanager.network.memory.floating-buffers-per-gate`; of an input gate's target, the part
/// below `taskmanager.network.memory.read-buffer.required-per-gate.max` (unbounded for
/// streaming, 1000 for batch) is required, the rest optional. Blocking results use sort-shuffle
/// by default since Flink 1.15 (`taskmanager.network.sort-shuffle.min-parallelism` = 1), whose
/// result partition needs `taskmanager.network.sort-shuffle.min-buffers` (512) and uses at most
/// `max(512, 4 x subpartitions)` (FLINK-25774).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BufferModel {
    /// `taskmanager.memory.segment-size`: bytes per buffer (32 KiB).
    pub segment_size: u64,
    /// `taskmanager.network.memory.buffers-per-channel`: exclusive buffers per channel (2).
    pub buffers_per_channel: u64,
    /// `taskmanager.network.memory.floating-buffers-per-gate`: floating buffers per gate (8).
    pub floating_buffers_per_gate: u64,
    /// `taskmanager.network.sort-shuffle.min-buffers`: buffers of a sort-shuffle result
    /// partition (512).
    pub sort_shuffle_min_buffers: u64,
    /// `taskmanager.network.memory.read-buffer.required-per-gate.max` for batch (blocking and
    /// hybrid) inputs: 1000. Streaming (pipelined) inputs require their whole target.
    pub batch_required_buffers_per_gate: u64,
}

impl Default for BufferModel {
    fn default() -> Self {
        BufferModel {
            segment_size: DEFAULT_SEGMENT_SIZE,
            buffers_per_channel: 2,
            floating_buffers_per_gate: 8,
            sort_shuffle_min_buffers: 512,
            batch_required_buffers_per_gate: 1000,
        }
    }
}

/// Buffers of a set of pools: the target (upper limit) and the required part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Buffers {
    /// Sum of the pools' targets (what they may use).
    pub target: u64,
    /// Sum of the pools' required sizes (what a task fails without).
    pub required: u64,
}

impl Buffers {
    /// Adds another set of pools.
    pub(crate) fn add(&mut self, other: Buffers) {
        self.target += other.target;
        self.required += other.required;
    }
}

/// `count` pools that each serve `channels` channels (gates) or subpartitions (partitions).
#[derive(Clone, Copy, Debug)]
struct Shape {
    count: u64,
    channels: u64,
}

/// Consumer-side shapes of an edge: per consumer subtask, how many channels its gate has.
fn gate_shapes(pattern: DistributionPattern, u: u64, d: u64) -> [Shape; 2] {
    match pattern {
        DistributionPattern::AllToAll => [
            Shape {
                count: d,
                channels: u,
            },
            Shape {
                count: 0,
                channels: 0,
            },
        ],
        // Flink's pointwise mapping gives consumer j the partitions [floor(jU/D), floor((j+1)U/D)):
        // U mod D consumers read one partition more than the others.
        DistributionPattern::Pointwise if u >= d => split(u, d),
        DistributionPattern::Pointwise => [
            Shape {
                count: d,
                channels: 1,
            },
            Shape {
                count: 0,
                channels: 0,
            },
        ],
    }
}

/// Producer-side shapes of an edge: per producer subtask, how many subpartitions it writes.
fn partition_shapes(pattern: DistributionPattern, u: u64, d: u64) -> [Shape; 2] {
    match pattern {
        DistributionPattern::AllToAll => [
            Shape {
                count: u,
                channels: d,
            },
            Shape {
                count: 0,
                channels: 0,
            },
        ],
        DistributionPattern::Pointwise if u >= d => [
            Shape {
                count: u,
                channels: 1,
            },
            Shape {
                count: 0,
                channels: 0,
            },
        ],
        DistributionPattern::Pointwise => split(d, u),
    }
}

/// `total` items over `slots` slots as evenly as Flink's range mapping does: `total mod slots`
/// slots get one more.
fn split(total: u64, slots: u64) -> [Shape; 2] {
    let (q, r) = (total / slots.max(1), total % slots.max(1));
    [
        Shape {
            count: slots - r,
            channels: q,
        },
        Shape {
            count: r,
            channels: q + 1,
        },
    ]
}

/// Whether a result type is consumed as a stream (pipelined): its gates require their whole
/// target, and its partitions are pipelined partitions.
pub(super) fn is_pipelined(t: ResultPartitionType) -> bool {
    matches!(
        t,
        ResultPartitionType::Pipelined
            | ResultPartitionType::PipelinedBounded
            | ResultPartitionType::PipelinedApproximate
    )
}

impl BufferModel {
    /// The target size of a local buffer pool serving `channels` channels (a gate) or
    /// subpartitions (a pipelined partition): `channels x buffers-per-channel +
    /// floating-buffers-per-gate`, in buffers.
    pub fn pool_target(&self, channels: u64) -> u64 {
        channels * self.buffers_per_channel + self.floating_buffers_per_gate
    }

    /// Buffers of the input gates of one edge. O(1).
    pub fn input_buffers(
        &self,
        pattern: DistributionPattern,
        result_type: ResultPartitionType,
        producers: u32,
        consumers: u32,
    ) -> Buffers {
        let mut total = Buffers::default();
        for s in gate_shapes(pattern, u64::from(producers), u64::from(consumers)) {
            let target = self.pool_target(s.channels);
            let required = if is_pipelined(result_type) {
                target
            } else {
                target.min(self.batch_required_buffers_per_gate)
            };
            total.add(Buffers {
                target: s.count * target,
                required: s.count * required,
            });
        }
        total
    }

    /// Buffers of the result partitions of one data set, as consumed by one edge. O(1).
    /// Pipelined partitions: target as for gates, `subpartitions + 1` required. Blocking
    /// partitions (sort-shuffle) and hybrid partitions (assumed alike): `max(min-buffers,
    /// 4 x subpartitions)` target, min-buffers required.
    pub fn output_buffers(
        &self,
        pattern: DistributionPattern,
        result_type: ResultPartitionType,
        producers: u32,
        consumers: u32,
    ) -> Buffers {
        let mut total = Buffers::default();
        for s in partition_shapes(pattern, u64::from(producers), u64::from(consumers)) {
            let (target, required) = if is_pipelined(result_type) {
                (self.pool_target(s.channels), s.channels + 1)
            } else {
                (
                    self.sort_shuffle_min_buffers.max(4 * s.channels),
                    self.sort_shuffle_min_buffers,
                )
            };
            total.add(Buffers {
                target: s.count * target,
                required: s.count * required,
            });
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::super::channels::channels;
    use super::*;

    #[test]
    fn pointwise_shapes_cover_every_channel() {
        for (u, d) in [
            (10u64, 6u64),
            (6, 10),
            (2000, 1000),
            (1000, 2000),
            (7, 7),
            (1, 5),
        ] {
            let gates = gate_shapes(DistributionPattern::Pointwise, u, d);
            let parts = partition_shapes(DistributionPattern::Pointwise, u, d);
            let g: u64 = gates.iter().map(|s| s.count * s.channels).sum();
            let p: u64 = parts.iter().map(|s| s.count * s.channels).sum();
            assert_eq!(g, u.max(d), "gates {u} {d}");
            assert_eq!(p, u.max(d), "partitions {u} {d}");
            assert_eq!(gates.iter().map(|s| s.count).sum::<u64>(), d);
            assert_eq!(parts.iter().map(|s| s.count).sum::<u64>(), u);
        }
    }

    #[test]
    fn shapes_cover_the_channels_of_the_one_formula() {
        for pattern in [
            DistributionPattern::AllToAll,
            DistributionPattern::Pointwise,
        ] {
            for (u, d) in [(10u32, 6u32), (6, 10), (2000, 1000), (7, 7), (1, 5)] {
                let (u64_, d64) = (u64::from(u), u64::from(d));
                let gates = gate_shapes(pattern, u64_, d64);
                let parts = partition_shapes(pattern, u64_, d64);
                let g: u64 = gates.iter().map(|s| s.count * s.channels).sum();
                let p: u64 = parts.iter().map(|s| s.count * s.channels).sum();
                assert_eq!(g, channels(pattern, u, d), "{pattern} gates {u} {d}");
                assert_eq!(p, channels(pattern, u, d), "{pattern} partitions {u} {d}");
            }
        }
    }
}
