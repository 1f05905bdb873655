//! What an adaptive batch job decided at run time.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::round;

/// The adaptive batch keys of a report (top-level keys: the struct is flattened). All `null`
/// for a job that decided nothing at run time; `undecided_at_estimate` is set instead when its
/// undecided vertices ran at their estimate because the job cannot grow at run time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveReport {
    /// Job vertex id -> decided parallelism, for every vertex the job graph left undecided.
    pub decided_parallelism: Option<BTreeMap<String, u32>>,
    /// Job vertex id -> bytes its subtasks read (`run`: every initialised vertex, from the
    /// seeded byte model; the cluster: every vertex decided from its inputs' bytes, from the
    /// producers' reports).
    pub bytes_per_task: Option<BTreeMap<String, BytesPerTask>>,
    /// Subpartitions far above their input's average bytes per subtask.
    pub skewed_subpartitions: Option<SkewedSubpartitions>,
    /// Job vertex id -> per subtask, the subpartitions `[first, last]` it reads of its one
    /// input (vertices decided from a single input), as its deployment descriptors carry them.
    pub consumed_subpartitions: Option<BTreeMap<String, Vec<[u32; 2]>>>,
    /// Subpartitions split across several subtasks of a `skew_splittable` consumer.
    pub skew_splits: Option<Vec<SkewSplit>>,
    /// Why undecided vertices ran at their estimate although nothing fixed them (the job cannot
    /// grow at run time); `null` otherwise.
    pub undecided_at_estimate: Option<String>,
}

impl AdaptiveReport {
    /// The keys of a job that ran its undecided vertices at the estimate, for `reason`.
    pub fn at_estimate(reason: String) -> AdaptiveReport {
        AdaptiveReport {
            undecided_at_estimate: Some(reason),
            ..AdaptiveReport::default()
        }
    }
}

/// Bytes read per subtask of one job vertex.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BytesPerTask {
    /// The fewest bytes a subtask read.
    pub min: u64,
    /// The median (the lower middle for an even count).
    pub median: u64,
    /// The most.
    pub max: u64,
    /// `max / median` (median 0 counted as 1), rounded to 0.001: how far the busiest subtask
    /// is above the typical one.
    #[serde(serialize_with = "round::serialize")]
    pub max_over_median: f64,
}

impl BytesPerTask {
    /// The figures of `read`, bytes per subtask (sorted here). `None` for no subtasks. O(n log n).
    pub fn of(mut read: Vec<u64>) -> Option<BytesPerTask> {
        read.sort_unstable();
        let (&min, &max) = (read.first()?, read.last()?);
        let median = read[(read.len() - 1) / 2];
        Some(BytesPerTask {
            min,
            median,
            max,
            max_over_median: max as f64 / median.max(1) as f64,
        })
    }
}

/// Skewed subpartitions listed in a report: the largest; all are counted.
pub const SKEWED_LISTED: usize = 5;

/// The skewed subpartitions the decisions found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkewedSubpartitions {
    /// How many.
    pub count: u64,
    /// The largest (at most [`SKEWED_LISTED`]), largest first.
    pub largest: Vec<SkewedSubpartition>,
}

impl SkewedSubpartitions {
    /// Counts `all` and keeps the largest [`SKEWED_LISTED`], largest first (ties in the given
    /// order).
    pub fn of(mut all: Vec<SkewedSubpartition>) -> SkewedSubpartitions {
        all.sort_by_key(|s| std::cmp::Reverse(s.bytes));
        let count = all.len() as u64;
        all.truncate(SKEWED_LISTED);
        SkewedSubpartitions {
            count,
            largest: all,
        }
    }
}

/// One skewed subpartition: above `conflux_adaptive::SKEW_FACTOR` times its input's bytes per
/// subtask.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkewedSubpartition {
    /// The consuming job vertex.
    pub vertex: String,
    /// The producing job vertex.
    pub producer: String,
    /// The subpartition index.
    pub subpartition: u32,
    /// Its bytes, summed over producers.
    pub bytes: u64,
    /// The input's bytes per consumer subtask.
    pub average_bytes_per_task: u64,
}

/// A subpartition read by several subtasks (a `skew_splittable` consumer).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkewSplit {
    /// The consuming job vertex.
    pub vertex: String,
    /// The subpartition index.
    pub subpartition: u32,
    /// Its bytes, summed over producers.
    pub bytes: u64,
    /// The subtasks reading it, each a range of producer partitions.
    pub pieces: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_per_task_of_subtasks() {
        assert_eq!(BytesPerTask::of(Vec::new()), None);
        let b = BytesPerTask::of(vec![30, 10, 20, 100]).unwrap();
        assert_eq!((b.min, b.median, b.max), (10, 20, 100));
        assert_eq!(b.max_over_median, 5.0);
        assert_eq!(
            BytesPerTask::of(vec![0, 0, 7]).unwrap().max_over_median,
            7.0
        );
    }

    #[test]
    fn skewed_subpartitions_keep_the_largest() {
        let s = |bytes| SkewedSubpartition {
            bytes,
            ..SkewedSubpartition::default()
        };
        let kept = SkewedSubpartitions::of((1..=8).map(s).collect());
        assert_eq!(kept.count, 8);
        let bytes: Vec<u64> = kept.largest.iter().map(|k| k.bytes).collect();
        assert_eq!(bytes, [8, 7, 6, 5, 4]);
    }
}
