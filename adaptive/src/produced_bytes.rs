//! The bytes a result's producers wrote, per subpartition, summed as producers finish: what the
//! decider reads ([`ConsumedInput`]) without a producer x subpartition matrix, and what each
//! decided subtask reads ([`ResultBytes::bytes_read`]).

use std::fmt;

use conflux_graph::DistributionPattern;

use crate::decider::ConsumedInput;
use crate::input_info::{ExecutionVertexInputInfo, IndexRange};

/// Bytes per subpartition of one intermediate result, summed over the producer partitions that
/// have finished (the aggregate of Flink's `BlockingResultInfo`, kept as producers finish
/// instead of per producer), with each producer partition's total.
///
/// Memory: one `u64` per subpartition and two words per producer partition, O(U + S), never
/// O(U x S); a result read POINTWISE ([`pointwise`](Self::pointwise)) also keeps every
/// partition's row, U x S entries, which is O(U + W) there because its subpartition count is
/// `ceil(W / U)` for a consumer of width W (as Flink's `PointwiseBlockingResultInfo` keeps
/// bytes per partition). A producer counts once: a second report from a partition already
/// counted (a restarted producer, whose synthetic output is the same) is ignored, since its
/// first bytes cannot be taken out of the sums.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultBytes {
    sums: Vec<u64>,
    /// Per producer partition, the bytes it wrote over all its subpartitions.
    partition_totals: Vec<u64>,
    counted: Vec<bool>,
    /// Per producer partition, its bytes per subpartition (row-major), for a result read
    /// POINTWISE only.
    rows: Option<Vec<u64>>,
    finished: u32,
}

/// The bytes one consumer subtask reads from one result ([`ResultBytes::bytes_read`]): exact
/// when `low == high`, else an estimate within the bounds the sums allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BytesRead {
    /// The bytes read: exact, or apportioned by the producers' totals (see
    /// [`ResultBytes::bytes_read`]).
    pub bytes: u64,
    /// The fewest bytes the subtask can read given what is kept.
    pub low: u64,
    /// The most.
    pub high: u64,
}

impl BytesRead {
    fn exact(bytes: u128) -> BytesRead {
        let bytes = saturate(bytes);
        BytesRead {
            bytes,
            low: bytes,
            high: bytes,
        }
    }

    /// Whether the bytes are exact (`low == high`).
    pub fn is_exact(&self) -> bool {
        self.low == self.high
    }
}

/// A producer's report does not fit the result it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BytesError {
    /// The partition number is not below the result's number of partitions.
    UnknownPartition {
        /// The partition reported.
        partition: u32,
        /// The result's number of partitions.
        partitions: u32,
    },
    /// The report has another number of subpartitions than the result.
    SubpartitionCount {
        /// The partition reported.
        partition: u32,
        /// Subpartitions in the report.
        found: usize,
        /// Subpartitions of the result.
        expected: usize,
    },
}

impl fmt::Display for BytesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BytesError::UnknownPartition {
                partition,
                partitions,
            } => write!(
                f,
                "partition {partition} reported bytes, but the result has {partitions} partitions"
            ),
            BytesError::SubpartitionCount {
                partition,
                found,
                expected,
            } => write!(
                f,
                "partition {partition} reported {found} subpartitions, the result has {expected}"
            ),
        }
    }
}

impl std::error::Error for BytesError {}

impl ResultBytes {
    /// A result of `num_partitions` producer partitions with `num_subpartitions` subpartitions
    /// each, nothing reported yet, keeping the sums per subpartition and per partition (a result
    /// read ALL_TO_ALL or broadcast). O(partitions + subpartitions).
    pub fn new(num_partitions: u32, num_subpartitions: u32) -> ResultBytes {
        ResultBytes {
            sums: vec![0; num_subpartitions as usize],
            partition_totals: vec![0; num_partitions as usize],
            counted: vec![false; num_partitions as usize],
            rows: None,
            finished: 0,
        }
    }

    /// As [`new`](Self::new), and also keeping every partition's bytes per subpartition, so
    /// that what a POINTWISE consumer reads from part of a partition is exact. Memory
    /// O(partitions x subpartitions): meant for a result read POINTWISE, whose subpartition
    /// count is `ceil(consumer width / partitions)`, so O(partitions + consumer width).
    pub fn pointwise(num_partitions: u32, num_subpartitions: u32) -> ResultBytes {
        let cells = num_partitions as usize * num_subpartitions as usize;
        ResultBytes {
            rows: Some(vec![0; cells]),
            ..ResultBytes::new(num_partitions, num_subpartitions)
        }
    }

    /// A result of `num_partitions` x `num_subpartitions` for a consumer that reads it with
    /// `pattern`: [`pointwise`](Self::pointwise) for POINTWISE, else [`new`](Self::new).
    pub fn for_pattern(
        pattern: DistributionPattern,
        num_partitions: u32,
        num_subpartitions: u32,
    ) -> ResultBytes {
        match pattern {
            DistributionPattern::Pointwise => {
                ResultBytes::pointwise(num_partitions, num_subpartitions)
            }
            DistributionPattern::AllToAll => ResultBytes::new(num_partitions, num_subpartitions),
        }
    }

    /// Adds the bytes producer partition `partition` wrote, per subpartition (a finished
    /// task's report). Returns whether they were counted: `false` for a partition counted
    /// before. O(subpartitions); sums saturate at `u64::MAX`.
    ///
    /// # Errors
    /// [`BytesError`] for a partition out of range or a report of another length; nothing is
    /// counted then.
    pub fn add(&mut self, partition: u32, bytes: &[u64]) -> Result<bool, BytesError> {
        let partitions = u32::try_from(self.counted.len()).unwrap_or(u32::MAX);
        let Some(counted) = self.counted.get_mut(partition as usize) else {
            return Err(BytesError::UnknownPartition {
                partition,
                partitions,
            });
        };
        if bytes.len() != self.sums.len() {
            return Err(BytesError::SubpartitionCount {
                partition,
                found: bytes.len(),
                expected: self.sums.len(),
            });
        }
        if std::mem::replace(counted, true) {
            return Ok(false);
        }
        let mut total = 0u64;
        for (sum, &b) in self.sums.iter_mut().zip(bytes) {
            *sum = sum.saturating_add(b);
            total = total.saturating_add(b);
        }
        self.partition_totals[partition as usize] = total;
        if let Some(rows) = self.rows.as_mut() {
            let start = partition as usize * bytes.len();
            rows[start..start + bytes.len()].copy_from_slice(bytes);
        }
        self.finished += 1;
        Ok(true)
    }

    /// Whether every producer partition has reported: the consumer can be decided.
    pub fn is_complete(&self) -> bool {
        self.finished as usize == self.counted.len()
    }

    /// Producer partitions counted so far.
    pub fn finished_partitions(&self) -> u32 {
        self.finished
    }

    /// The sums, per subpartition, in bytes.
    pub fn bytes_per_subpartition(&self) -> &[u64] {
        &self.sums
    }

    /// Per producer partition, the bytes it wrote over all its subpartitions (0 before it
    /// reports).
    pub fn bytes_per_partition(&self) -> &[u64] {
        &self.partition_totals
    }

    /// This result as the decider's input for an edge of `pattern` (`broadcast` for a
    /// broadcast edge).
    pub fn input(&self, pattern: DistributionPattern, broadcast: bool) -> ConsumedInput<'_> {
        ConsumedInput::new(
            pattern,
            broadcast,
            u32::try_from(self.counted.len()).unwrap_or(u32::MAX),
            &self.sums,
        )
    }

    /// The bytes each of `infos` reads from this result (the partitions and subpartitions
    /// one consumer subtask reads, as the decider gave them), in the order of `infos`; meant
    /// once the result [`is_complete`](Self::is_complete). As Flink's
    /// `BlockingResultInfo.getNumBytesProduced(partitionRange, subpartitionRange)`, which its
    /// adaptive batch scheduler gives each execution vertex as its input bytes.
    ///
    /// Exact ([`BytesRead::is_exact`]) when the subtask reads
    /// - its subpartitions from every partition (ALL_TO_ALL and broadcast consumers): the sums;
    /// - whole partitions (a POINTWISE consumer with at least as many producers as subtasks):
    ///   the partitions' totals;
    /// - part of a partition of a [`pointwise`](Self::pointwise) result (a POINTWISE consumer
    ///   with fewer producers than subtasks): the partitions' rows.
    ///
    /// Otherwise (a piece of a split skewed subpartition, which reads it from some of the
    /// producers only) the sums do not say which producer wrote what: the subpartitions' bytes
    /// are apportioned by the share of all bytes the partitions read wrote, `bytes(subpartitions)
    /// x total(partitions) / total(all)`. That is exact when each producer writes those
    /// subpartitions in proportion to its total (data hashed alike everywhere, a hot key hot in
    /// every producer), and it always lies within `low = bytes(subpartitions) - total(other
    /// partitions)` and `high = min(bytes(subpartitions), total(partitions))`, the bounds the
    /// sums allow. Ranges beyond the result read nothing there.
    ///
    /// Cost: O(subpartitions + partitions + the cells of the rows read), no allocation per
    /// info beyond the output.
    pub fn bytes_read(&self, infos: &[ExecutionVertexInputInfo]) -> Vec<BytesRead> {
        let sub_prefix = prefix_sums(&self.sums);
        let mut part_prefix: Option<Vec<u128>> = None;
        let (partitions, subpartitions) = (self.counted.len(), self.sums.len());
        infos
            .iter()
            .map(|info| {
                let (p0, p1) = clamp(info.partition_range, partitions);
                let (s0, s1) = clamp(info.subpartition_range, subpartitions);
                let in_subpartitions = sub_prefix[s1] - sub_prefix[s0];
                if p0 == 0 && p1 == partitions {
                    return BytesRead::exact(in_subpartitions);
                }
                if let Some(rows) = &self.rows {
                    let read = (p0..p1)
                        .flat_map(|p| &rows[p * subpartitions + s0..p * subpartitions + s1])
                        .map(|&b| u128::from(b))
                        .sum();
                    return BytesRead::exact(read);
                }
                let part_prefix =
                    part_prefix.get_or_insert_with(|| prefix_sums(&self.partition_totals));
                let in_partitions = part_prefix[p1] - part_prefix[p0];
                if s0 == 0 && s1 == subpartitions {
                    return BytesRead::exact(in_partitions);
                }
                let all = part_prefix[partitions];
                let low = in_subpartitions.saturating_sub(all - in_partitions);
                let high = in_subpartitions.min(in_partitions);
                let bytes = (in_subpartitions * in_partitions)
                    .checked_div(all)
                    .unwrap_or(0)
                    .clamp(low, high);
                BytesRead {
                    bytes: saturate(bytes),
                    low: saturate(low),
                    high: saturate(high),
                }
            })
            .collect()
    }
}

/// `prefix[i]`: the sum of `values[..i]`; `values.len() + 1` entries.
fn prefix_sums(values: &[u64]) -> Vec<u128> {
    let mut prefix = Vec::with_capacity(values.len() + 1);
    let mut sum = 0u128;
    prefix.push(sum);
    for &v in values {
        sum += u128::from(v);
        prefix.push(sum);
    }
    prefix
}

/// An inclusive range as a half-open one within `0..len`.
fn clamp(range: IndexRange, len: usize) -> (usize, usize) {
    let start = (range.start as usize).min(len);
    let end = (range.end as usize).saturating_add(1).min(len).max(start);
    (start, end)
}

fn saturate(bytes: u128) -> u64 {
    u64::try_from(bytes).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{decide_parallelism_and_input_infos, BatchExecutionOptions, VertexToDecide, MIB};

    /// The word count of the known answer, reported producer by producer: 4 sources of 256 MiB
    /// each over 128 subpartitions decide 64 once the last one is in, and a repeated report
    /// changes nothing.
    #[test]
    fn sums_as_producers_finish_decide_the_known_answer() {
        let mut bytes = ResultBytes::new(4, 128);
        let per_source = vec![256 * MIB / 128; 128];
        for p in 0..4 {
            assert!(!bytes.is_complete());
            assert_eq!(bytes.add(p, &per_source), Ok(true));
        }
        assert_eq!(bytes.add(2, &per_source), Ok(false), "counted once");
        assert!(bytes.is_complete());
        assert_eq!(bytes.bytes_per_subpartition()[0], 8 * MIB);
        let decision = decide_parallelism_and_input_infos(
            &BatchExecutionOptions::default(),
            &VertexToDecide::undecided(128),
            &[bytes.input(DistributionPattern::AllToAll, false)],
        )
        .unwrap();
        assert_eq!(decision.parallelism, 64);
    }

    #[test]
    fn bad_reports_are_errors_and_count_nothing() {
        let mut bytes = ResultBytes::new(2, 3);
        assert_eq!(
            bytes.add(2, &[1, 2, 3]),
            Err(BytesError::UnknownPartition {
                partition: 2,
                partitions: 2
            })
        );
        let e = bytes.add(1, &[1, 2]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "partition 1 reported 2 subpartitions, the result has 3"
        );
        assert_eq!(bytes.finished_partitions(), 0);
        assert_eq!(bytes.add(1, &[u64::MAX, 2, 3]), Ok(true));
        assert_eq!(bytes.add(0, &[5, 2, 3]), Ok(true));
        assert_eq!(bytes.bytes_per_subpartition(), &[u64::MAX, 4, 6]);
    }
}
