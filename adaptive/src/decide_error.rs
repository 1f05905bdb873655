//! `DecideError`: why the decider could not decide, below both the options that validate
//! themselves into it and the decider that returns it.

use std::fmt;

/// Why a decision could not be made. Each is a caller's mistake in the options or in the shape
/// of the inputs, reported instead of Flink's failed preconditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecideError {
    /// An option is out of range (see
    /// [`BatchExecutionOptions::validate`](crate::BatchExecutionOptions::validate)).
    InvalidOptions(&'static str),
    /// The vertex's own bounds are impossible: max parallelism 0, min parallelism 0, a fixed
    /// parallelism of 0 or above the vertex's max, or a vertex min above what the max allows.
    InvalidVertex(&'static str),
    /// An input has no producer partitions or no subpartitions.
    EmptyInput {
        /// The input's index.
        input: usize,
    },
    /// The non-broadcast ALL_TO_ALL inputs of an undecided vertex must share one subpartition
    /// count (their subpartition indices are one key space), as Flink checks.
    SubpartitionCountsDiffer {
        /// The first count seen.
        expected: u32,
        /// The input that differs.
        input: usize,
        /// Its count.
        found: u32,
    },
    /// More consumers would share one producer partition than it has subpartitions.
    TooFewSubpartitions {
        /// The input's index.
        input: usize,
        /// Subpartitions per partition.
        subpartitions: u32,
        /// Consumers that would share them.
        consumers: u32,
    },
}

impl fmt::Display for DecideError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecideError::InvalidOptions(rule) => write!(f, "invalid batch options: {rule}"),
            DecideError::InvalidVertex(rule) => write!(f, "invalid vertex: {rule}"),
            DecideError::EmptyInput { input } => {
                write!(
                    f,
                    "input {input} has no producer partitions or no subpartitions"
                )
            }
            DecideError::SubpartitionCountsDiffer {
                expected,
                input,
                found,
            } => write!(
                f,
                "all-to-all input {input} has {found} subpartitions per partition, \
                 the others {expected}"
            ),
            DecideError::TooFewSubpartitions {
                input,
                subpartitions,
                consumers,
            } => write!(
                f,
                "input {input}: {consumers} consumers cannot share {subpartitions} subpartitions"
            ),
        }
    }
}

impl std::error::Error for DecideError {}
