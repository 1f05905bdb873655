//! The data plane's figures of a job whose tasks move data.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::round;

/// The data plane's numbers of a job whose tasks move data (word count).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DataReport {
    /// Words the count tasks counted (their last attempts).
    pub words: u64,
    /// Serialised bytes written to result partitions, by every attempt (re-runs included).
    pub shuffle_bytes: u64,
    /// `shuffle_bytes` over `shuffle_ms`, MB (10^6 bytes) per second, rounded to 0.001.
    #[serde(serialize_with = "round::serialize")]
    pub shuffle_mb_per_s: f64,
    /// From the first source RUNNING to the last count FINISHED (JobManager clock), ms.
    #[serde(serialize_with = "round::serialize")]
    pub shuffle_ms: f64,
    /// The most bytes one producer's pipelined partition held waiting for consumers.
    pub peak_buffered_bytes: u64,
    /// The bound of that: subpartitions x credit x 32 KiB of the widest producer.
    pub buffered_bytes_bound: u64,
    /// Per job vertex id, attempts started beyond one per subtask (tasks re-run).
    pub reruns: BTreeMap<String, u64>,
    /// Whether the sinks' files hold exactly the expected counts (`conflux cluster --verify`);
    /// `null` when not checked.
    pub output_verified: Option<bool>,
    /// The first difference found when the output is wrong (subtask, word, expected, found);
    /// `null` otherwise.
    pub first_difference: Option<String>,
}
