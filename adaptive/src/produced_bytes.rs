//! The bytes a result's producers wrote, per subpartition, summed as producers finish: what the
//! decider reads ([`ConsumedInput`]) without a producer x subpartition matrix.

use std::fmt;

use conflux_graph::DistributionPattern;

use crate::decider::ConsumedInput;

/// Bytes per subpartition of one intermediate result, summed over the producer partitions that
/// have finished (the aggregate of Flink's `BlockingResultInfo`, kept as producers finish
/// instead of per producer).
///
/// Memory: one `u64` per subpartition plus one bit's worth (a `bool`) per producer partition,
/// O(U + S), never O(U x S). A producer counts once: a second report from a partition already
/// counted (a restarted producer, whose synthetic output is the same) is ignored, since its
/// first bytes cannot be taken out of the sums.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultBytes {
    sums: Vec<u64>,
    counted: Vec<bool>,
    finished: u32,
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
    /// each, nothing reported yet. O(partitions + subpartitions).
    pub fn new(num_partitions: u32, num_subpartitions: u32) -> ResultBytes {
        ResultBytes {
            sums: vec![0; num_subpartitions as usize],
            counted: vec![false; num_partitions as usize],
            finished: 0,
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
        for (sum, &b) in self.sums.iter_mut().zip(bytes) {
            *sum = sum.saturating_add(b);
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
