//! The crate's error for bad parameters. Record, sink and verification errors have their own
//! types beside their code ([`DecodeError`](crate::DecodeError),
//! [`SinkError`](crate::SinkError), [`VerifyError`](crate::VerifyError)).

use thiserror::Error;

/// A word count parameter out of range.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum OperatorError {
    /// The vocabulary size is 0 or above [`MAX_VOCABULARY_SIZE`](crate::MAX_VOCABULARY_SIZE).
    #[error(
        "vocabulary of {size} words: must be 1 to {}",
        crate::MAX_VOCABULARY_SIZE
    )]
    Vocabulary {
        /// The size asked for.
        size: u32,
    },
    /// A keyed exchange's parallelism is 0 or above its max parallelism.
    #[error("parallelism {parallelism} with max parallelism {max_parallelism}: must be 1 to the max parallelism")]
    Parallelism {
        /// The consumer's parallelism.
        parallelism: u32,
        /// The consumer's max parallelism (its number of key groups).
        max_parallelism: u32,
    },
    /// Run-time key group ranges that do not cover the key groups once, in order.
    #[error("key group ranges: {reason}")]
    KeyGroupRanges {
        /// What is wrong.
        reason: String,
    },
    /// A source parallelism of 0.
    #[error("a word count needs at least one source subtask")]
    NoSources,
    /// A task config entry is missing or malformed.
    #[error("task config key '{key}': {reason}")]
    Config {
        /// The key.
        key: String,
        /// What is wrong.
        reason: String,
    },
}
