//! Splitting skewed subpartitions across several consumer subtasks (beyond Flink 1.20, after
//! the producer-range splitting of Flink 2.0's skewed-join optimisation).
//!
//! Flink 1.20 keeps every subpartition whole: one hot key makes one subtask read far more than
//! the others, whatever the parallelism. For a consumer that allows it (the job graph's
//! `skew_splittable`) and reads one non-broadcast ALL_TO_ALL input, a subpartition holding more
//! than one subtask's average share of the input (the input's bytes / the decided parallelism,
//! [`split_threshold`]) is read by `ceil(bytes / average)` subtasks instead, each reading it from
//! a contiguous range of producer partitions (the sums over producers do not say which producer
//! wrote what, so the pieces are even by producer count: even in bytes when producers write the
//! same, as a hot key in every producer does; what each piece reads is apportioned by the
//! producers' totals, [`ResultBytes::bytes_read`](crate::ResultBytes::bytes_read)). The other
//! subpartitions are cut greedily into contiguous ranges of at most the average. Every
//! subpartition of every producer partition is still read exactly once.

use crate::decider::ConsumedInput;
use crate::input_info::{ExecutionVertexInputInfo, IndexRange};

/// The bytes above which a subpartition is split: the input's bytes divided by the decided
/// `parallelism` (rounded up), at least 1.
pub fn split_threshold(input: &ConsumedInput<'_>, parallelism: u32) -> u64 {
    let total = input.num_bytes_produced();
    u64::try_from(total.div_ceil(u128::from(parallelism.max(1))))
        .unwrap_or(u64::MAX)
        .max(1)
}

/// One subpartition split across several subtasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitSubpartition {
    /// The subpartition index.
    pub subpartition: u32,
    /// Its bytes, summed over the producer partitions.
    pub bytes: u64,
    /// The subtasks that read it (each a range of producer partitions).
    pub pieces: u32,
}

/// The input infos of a consumer whose skewed subpartitions are split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkewSplit {
    /// The new parallelism: the split pieces plus the ranges of the other subpartitions.
    pub parallelism: u32,
    /// Per subtask, what it reads from the input, in subtask order.
    pub input_infos: Vec<ExecutionVertexInputInfo>,
    /// The subpartitions split, ascending.
    pub split: Vec<SplitSubpartition>,
}

/// Splits the subpartitions of `input` (one non-broadcast ALL_TO_ALL input) above
/// [`split_threshold`] for a consumer decided at `parallelism`. `None` when nothing is above the
/// threshold, the input is POINTWISE or broadcast, or the split would need more than
/// `max_parallelism` subtasks (the decision then stands). O(subpartitions + the new
/// parallelism).
pub fn split_skewed_subpartitions(
    input: &ConsumedInput<'_>,
    parallelism: u32,
    max_parallelism: u32,
) -> Option<SkewSplit> {
    if input.broadcast
        || input.pattern != conflux_graph::DistributionPattern::AllToAll
        || input.num_partitions == 0
    {
        return None;
    }
    let limit = split_threshold(input, parallelism);
    if input.bytes_per_subpartition.iter().all(|&b| b <= limit) {
        return None;
    }
    let partitions = input.num_partitions;
    let all_partitions = IndexRange::new(0, partitions - 1);
    let mut infos: Vec<ExecutionVertexInputInfo> = Vec::new();
    let mut split = Vec::new();
    let push = |infos: &mut Vec<ExecutionVertexInputInfo>, p: IndexRange, s: IndexRange| {
        let subtask_index = u32::try_from(infos.len()).unwrap_or(u32::MAX);
        infos.push(ExecutionVertexInputInfo {
            subtask_index,
            partition_range: p,
            subpartition_range: s,
        });
    };
    // The open range of whole subpartitions: its first index and bytes.
    let mut open: Option<(u32, u64)> = None;
    for (i, &bytes) in (0u32..).zip(input.bytes_per_subpartition) {
        if bytes > limit {
            if let Some((start, _)) = open.take() {
                push(&mut infos, all_partitions, IndexRange::new(start, i - 1));
            }
            let pieces = u32::try_from(bytes.div_ceil(limit))
                .unwrap_or(u32::MAX)
                .min(partitions);
            for k in 0..pieces {
                // Producer partitions [k*U/n, (k+1)*U/n), as even as counts allow.
                let lo = u64::from(k) * u64::from(partitions) / u64::from(pieces);
                let hi = (u64::from(k) + 1) * u64::from(partitions) / u64::from(pieces);
                let (lo, hi) = (narrow(lo), narrow(hi));
                push(
                    &mut infos,
                    IndexRange::new(lo, hi - 1),
                    IndexRange::new(i, i),
                );
            }
            split.push(SplitSubpartition {
                subpartition: i,
                bytes,
                pieces,
            });
            continue;
        }
        open = match open {
            Some((start, sum)) if sum.saturating_add(bytes) <= limit => Some((start, sum + bytes)),
            Some((start, _)) => {
                push(&mut infos, all_partitions, IndexRange::new(start, i - 1));
                Some((i, bytes))
            }
            None => Some((i, bytes)),
        };
    }
    if let Some((start, _)) = open {
        let last = input.num_subpartitions() - 1;
        push(&mut infos, all_partitions, IndexRange::new(start, last));
    }
    let parallelism = u32::try_from(infos.len()).ok()?;
    (parallelism <= max_parallelism).then_some(SkewSplit {
        parallelism,
        input_infos: infos,
        split,
    })
}

fn narrow(x: u64) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use conflux_graph::DistributionPattern;

    /// 4 producers, 4 subpartitions of 10, 10, 60, 20 bytes, decided at 4: the average is 25,
    /// so subpartition 2 (60) is split in 3 (producers [0], [1], [2, 3]); 0 and 1 share a range
    /// (20 <= 25), 3 stands alone.
    #[test]
    fn a_hot_subpartition_is_split_by_producer_ranges() {
        let sums = [10, 10, 60, 20];
        let input = ConsumedInput::new(DistributionPattern::AllToAll, false, 4, &sums);
        let s = split_skewed_subpartitions(&input, 4, 128).expect("split");
        let ranges: Vec<_> = s
            .input_infos
            .iter()
            .map(|i| {
                (
                    i.partition_range.to_string(),
                    i.subpartition_range.to_string(),
                )
            })
            .collect();
        let r = |p: &str, s: &str| (p.to_owned(), s.to_owned());
        assert_eq!(
            ranges,
            vec![
                r("[0, 3]", "[0, 1]"),
                r("[0, 0]", "[2, 2]"),
                r("[1, 1]", "[2, 2]"),
                r("[2, 3]", "[2, 2]"),
                r("[0, 3]", "[3, 3]"),
            ]
        );
        assert_eq!(s.parallelism, 5);
        assert_eq!(
            s.split,
            vec![SplitSubpartition {
                subpartition: 2,
                bytes: 60,
                pieces: 3
            }]
        );
        assert_eq!(split_skewed_subpartitions(&input, 4, 4), None, "above max");
        let even = [25; 4];
        let input = ConsumedInput::new(DistributionPattern::AllToAll, false, 4, &even);
        assert_eq!(split_skewed_subpartitions(&input, 4, 128), None);
    }
}
