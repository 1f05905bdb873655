//! `conflux-operators`: what the word count's tasks compute, pure and synchronous, so that
//! the runtime only moves bytes and the answer can be checked without it.
//!
//! A word count job has a source vertex ([`INVOKABLE_SOURCE`]) and a count vertex
//! ([`INVOKABLE_COUNT`]) joined by a keyed all-to-all exchange:
//!
//! ```text
//!  WordSource ──word ids──▶ KeyedWriter ──records in buffers──▶ WordCounter ──▶ write_counts
//!  (seeded Zipf,            (route by key group,               (decode,         (part-NNNNN.tsv,
//!   per subtask)             encode, one record per word)        count)           sorted)
//! ```
//!
//! - [`Vocabulary`]: the seeded words, and each word's consumer subtask for a (parallelism,
//!   max parallelism), routed as Flink's `KeyGroupRangeAssignment`
//!   ([`conflux_common::key_groups`]).
//! - [`RoutedVocabulary`]: every word's record encoded once beside its consumer subtask, what
//!   a source copies per word.
//! - [`Zipf`], [`WordSource`]: each source subtask's stream of word ids, O(1) per word, the
//!   same on every platform.
//! - [`record`](mod@record): the shuffle record format (length-prefixed UTF-8) over caller
//!   buffers; [`KeyedWriter`] packs a source's records into one buffer per subpartition.
//! - [`WordCounter`]: counts per word; [`write_counts`] / [`read_counts`]: the sink files.
//! - [`WordCountJob::expected`], [`verify_output`]: the expected counts from the seeds alone,
//!   compared with an output directory.
//! - [`WordCountConfig`]: the parameters, from a job vertex's task config.

mod config;
mod counter;
mod error;
mod exchange;
pub mod record;
mod routed;
mod sink;
mod source;
mod verify;
mod vocabulary;
mod vocabulary_limit;

pub use config::{
    WordCountConfig, DEFAULT_SEED, INVOKABLE_COUNT, INVOKABLE_SOURCE, KEY_SEED, KEY_VOCABULARY,
    KEY_WORDS_PER_SOURCE,
};
pub use counter::WordCounter;
pub use error::OperatorError;
pub use exchange::KeyedWriter;
pub use record::{DecodeError, EncodeError, MAX_WORD_BYTES};
pub use routed::RoutedVocabulary;
pub use sink::{
    clear_success, mark_success, read_counts, sink_file_name, write_counts, SinkError,
    SUCCESS_FILE_NAME,
};
pub use source::{stream_seed, WordSource, Zipf};
pub use verify::{
    verify_output, Difference, ExpectedCounts, Verification, VerifyError, WordCountJob,
};
pub use vocabulary::{Vocabulary, DEFAULT_VOCABULARY_SIZE};
pub use vocabulary_limit::MAX_VOCABULARY_SIZE;
