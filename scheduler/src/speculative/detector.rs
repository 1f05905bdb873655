//! The slow task detector, as Flink 1.20's `ExecutionTimeBasedSlowTaskDetector`, as pure
//! functions over one job vertex's execution times and input bytes.
//!
//! A job vertex is looked at once `baseline-ratio` of its tasks finished (and not all did).
//! Each attempt is weighed by its task's input bytes, as Flink 1.17+ does: attempts compare by
//! execution time per input byte ([`TimeWithBytes`]). The baseline is the median of the first
//! `round(parallelism x ratio)` finished attempts in that order (the fastest per byte), its
//! time times `baseline-multiplier` and its bytes kept; an attempt that is not CREATED and has
//! run at least `baseline-lower-bound` is slow when its time per byte is at least the
//! baseline's. Execution time runs from DEPLOYING to FINISHED, or to now for an unfinished
//! attempt (0 before it deploys).
//!
//! A task's input bytes are known when its vertex was decided at run time (the decision's
//! bytes per subtask); otherwise they are unknown (Flink's `NUM_BYTES_UNKNOWN`) and times are
//! compared alone. Within one job vertex the bytes of all tasks are known or none are.

use std::cmp::Ordering;

use super::options::SpeculativeExecutionOptions;

/// One attempt's execution time and its task's input bytes, ordered by time per byte, as
/// Flink's `ExecutionTimeWithInputBytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimeWithBytes {
    /// Execution time, ms.
    pub(crate) ms: u64,
    /// The task's input bytes; `None` when unknown.
    pub(crate) bytes: Option<u64>,
}

impl TimeWithBytes {
    /// Compares time per byte; times alone when either side's bytes are unknown (Flink
    /// compares times then, and only ever meets that with both unknown or with its baseline of
    /// 0 ms when the ratio is 0, which it allows). Input bytes of 0 count as a vanishing
    /// positive amount, as Flink's `Double.MIN_VALUE`: any time above 0 on no bytes is slower
    /// than every time on some bytes, and two such are equal. Exact (u128 cross products, no
    /// floating point).
    pub(crate) fn compare(&self, other: &TimeWithBytes) -> Ordering {
        let (Some(b1), Some(b2)) = (self.bytes, other.bytes) else {
            return self.ms.cmp(&other.ms);
        };
        // Time per byte as a fraction `n / d`; `1 / 0` stands for "infinite".
        let fraction = |ms: u64, bytes: u64| -> (u128, u128) {
            match (ms, bytes) {
                (0, 0) => (0, 1),
                (_, 0) => (1, 0),
                (ms, bytes) => (u128::from(ms), u128::from(bytes)),
            }
        };
        let (n1, d1) = fraction(self.ms, b1);
        let (n2, d2) = fraction(other.ms, b2);
        (n1 * d2).cmp(&(n2 * d1))
    }
}

/// The baseline of a job vertex of `parallelism` tasks whose finished tasks are `finished`
/// (one per finished task, in any order; reordered): its time, ms, and its input bytes;
/// `None` while fewer than the baseline ratio of its tasks finished, or once all did (Flink
/// then skips the vertex). O(finished) (a selection, not a sort).
pub(crate) fn baseline(
    parallelism: usize,
    finished: &mut [TimeWithBytes],
    options: &SpeculativeExecutionOptions,
) -> Option<TimeWithBytes> {
    let count = finished.len();
    if parallelism == 0 || count >= parallelism {
        return None;
    }
    if (count as f64) / (parallelism as f64) < options.baseline_ratio {
        return None;
    }
    // Java's `Math.round` of a non-negative value: half up.
    let first = java_round(parallelism as f64 * options.baseline_ratio);
    if first == 0 {
        return Some(TimeWithBytes { ms: 0, bytes: None });
    }
    // The median of the `first` fastest is the (first / 2)-th fastest of all.
    let first = first.min(count);
    let (_, median, _) = finished.select_nth_unstable_by(first / 2, TimeWithBytes::compare);
    Some(TimeWithBytes {
        ms: java_long(median.ms as f64 * options.baseline_multiplier),
        bytes: median.bytes,
    })
}

/// Whether an attempt is slow against `baseline`: it ran at least the lower bound and its time
/// per byte is at least the baseline's (Flink compares with `>=`).
pub(crate) fn is_slow(
    attempt: TimeWithBytes,
    baseline: TimeWithBytes,
    options: &SpeculativeExecutionOptions,
) -> bool {
    attempt.ms >= options.baseline_lower_bound_ms && attempt.compare(&baseline) != Ordering::Less
}

/// Java's `Math.round` for the non-negative products here (half up), as a count.
fn java_round(x: f64) -> usize {
    usize::try_from(java_long((x + 0.5).floor())).unwrap_or(usize::MAX)
}

/// Java's `(long)` of a non-negative double: truncation, saturating at the top.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn java_long(x: f64) -> u64 {
    // `as` truncates towards zero and saturates (NaN gives 0), which is what Java's cast does
    // for the non-negative values it is given here.
    x as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(ratio: f64, multiplier: f64, lower_bound_ms: u64) -> SpeculativeExecutionOptions {
        SpeculativeExecutionOptions {
            enabled: true,
            baseline_ratio: ratio,
            baseline_multiplier: multiplier,
            baseline_lower_bound_ms: lower_bound_ms,
            ..SpeculativeExecutionOptions::default()
        }
    }

    /// Times of tasks whose input bytes are unknown.
    fn unknown(ms: &[u64]) -> Vec<TimeWithBytes> {
        ms.iter()
            .map(|&ms| TimeWithBytes { ms, bytes: None })
            .collect()
    }

    /// (ms, input bytes) pairs.
    fn weighed(pairs: &[(u64, u64)]) -> Vec<TimeWithBytes> {
        pairs
            .iter()
            .map(|&(ms, bytes)| TimeWithBytes {
                ms,
                bytes: Some(bytes),
            })
            .collect()
    }

    /// Which of the running attempts are slow in a vertex of `parallelism` whose finished
    /// tasks are `finished`.
    fn slow(
        parallelism: usize,
        finished: &[TimeWithBytes],
        running: &[TimeWithBytes],
        o: &SpeculativeExecutionOptions,
    ) -> Vec<usize> {
        let mut finished = finished.to_vec();
        let Some(baseline) = baseline(parallelism, &mut finished, o) else {
            return Vec::new();
        };
        (0..running.len())
            .filter(|&i| is_slow(running[i], baseline, o))
            .collect()
    }

    /// The baseline's time of unknown-bytes tasks, ms.
    fn baseline_ms(
        parallelism: usize,
        finished: &[u64],
        o: &SpeculativeExecutionOptions,
    ) -> Option<u64> {
        let b = baseline(parallelism, &mut unknown(finished), o)?;
        assert_eq!(b.bytes, None);
        Some(b.ms)
    }

    /// The worked examples of Flink's `ExecutionTimeBasedSlowTaskDetectorTest` without input
    /// bytes (parallelism 3; its tasks deploy together, so the finished one ran shortest).
    #[test]
    fn flinks_detector_cases() {
        let slow_unknown = |p, f: &[u64], r: &[u64], o| slow(p, &unknown(f), &unknown(r), &o);
        // testNoFinishedTaskButRatioIsZero: a baseline of 0, every deployed task is slow.
        assert_eq!(
            slow_unknown(3, &[], &[0, 0, 0], options(0.0, 1.0, 0)),
            [0, 1, 2]
        );
        // ... and so with known bytes too (Flink's baseline of 0 ms has unknown bytes, and
        // compares by time against it).
        assert_eq!(
            slow(3, &[], &weighed(&[(0, 5), (7, 0)]), &options(0.0, 1.0, 0)),
            [0, 1]
        );
        // testFinishedTaskNotExceedRatio: 1 of 3 finished is below 0.5.
        assert!(slow_unknown(3, &[10], &[12, 12], options(0.5, 1.0, 0)).is_empty());
        // testFinishedTaskExceedRatio: round(0.9) = 1 task makes the baseline; both others ran
        // longer.
        assert_eq!(
            slow_unknown(3, &[10], &[12, 12], options(0.3, 1.0, 0)),
            [0, 1]
        );
        // testLargeLowerBound.
        assert!(
            slow_unknown(3, &[10], &[12, 12], options(0.3, 1.0, u64::from(u32::MAX))).is_empty()
        );
        // testLargeMultiplier.
        assert!(slow_unknown(3, &[10], &[12, 12], options(0.3, 1_000_000.0, 0)).is_empty());
        // testMultipleJobVertexFinishedTaskExceedRatio: each of two vertices has one finished
        // task and two slow ones, 4 in all (the scheduler asks per job vertex).
        let o = options(0.3, 1.0, 0);
        let per_vertex = slow_unknown(3, &[10], &[12, 12], o).len();
        assert_eq!(per_vertex + slow_unknown(3, &[11], &[12, 13], o).len(), 4);
        // testFinishedTaskExceedRatioInDynamicGraph: the undecided consumer has no subtasks
        // yet and is not looked at; its producer has 2 slow tasks.
        assert_eq!(baseline(0, &mut [], &o), None);
        assert_eq!(slow_unknown(3, &[10], &[12, 12], o), [0, 1]);
    }

    /// Flink's cases with input bytes (`testBalancedInput`, `...WithLargeLowerBound`,
    /// `testUnbalancedInput`; ratio 0.3, multiplier 1, parallelism 3, one task finished).
    #[test]
    fn flinks_weighted_cases() {
        let o = options(0.3, 1.0, 0);
        // Balanced: 1 KiB each; the finished task ran shortest, both others are slow.
        let finished = weighed(&[(5, 1_024)]);
        let running = weighed(&[(5, 1_024), (6, 1_024)]);
        assert_eq!(slow(3, &finished, &running, &o), [0, 1]);
        let large_bound = options(0.3, 1.0, u64::from(u32::MAX));
        assert!(slow(3, &finished, &running, &large_bound).is_empty());
        // Unbalanced: the finished task read 1,024 bytes in 1,000 ms; the others ran as long on
        // 1,024,000 and 4,096,000 bytes: far faster per byte, none is slow.
        let finished = weighed(&[(1_000, 1_024)]);
        let running = weighed(&[(1_000, 1_024_000), (1_000, 4_096_000)]);
        assert!(slow(3, &finished, &running, &o).is_empty());
        // The same times with unknown bytes: both slow.
        let times = unknown(&[1_000, 1_000]);
        assert_eq!(slow(3, &unknown(&[1_000]), &times, &o), [0, 1]);
    }

    /// Flink's `testSortedExecutionTimeWithInputBytes`: the order of (ms, bytes) pairs.
    #[test]
    fn time_per_byte_orders_attempts() {
        let at = |ms, bytes| TimeWithBytes { ms, bytes };
        // Unbalanced bytes: 10 ms on 20 bytes is faster than 10 ms on 10.
        assert_eq!(at(10, Some(20)).compare(&at(10, Some(10))), Ordering::Less);
        // Balanced: 10 ms before 20 ms.
        assert_eq!(at(10, Some(10)).compare(&at(20, Some(10))), Ordering::Less);
        // Unknown bytes: times alone.
        assert_eq!(at(10, None).compare(&at(20, None)), Ordering::Less);
        // No bytes but some time is slower than anything on some bytes, ...
        assert_eq!(at(1, Some(0)).compare(&at(10, Some(10))), Ordering::Greater);
        assert_eq!(at(1, Some(0)).compare(&at(9, Some(0))), Ordering::Equal);
        // ... no bytes and no time faster.
        assert_eq!(at(0, Some(0)).compare(&at(10, Some(10))), Ordering::Less);
        // Known against unknown bytes: Flink refuses (an exception) unless a time is 0; here a
        // job vertex's bytes are all known or all unknown, so only the baseline of 0 ms meets
        // known bytes, and times decide.
        assert_eq!(at(20, Some(100)).compare(&at(0, None)), Ordering::Greater);
        assert_eq!(at(20, Some(100)).compare(&at(15, None)), Ordering::Greater);
        // Exact where doubles would round: 1 ms per 3 bytes against 333,333 ms per 999,999.
        assert_eq!(
            at(1, Some(3)).compare(&at(333_333, Some(999_999))),
            Ordering::Equal
        );
    }

    /// A task that reads four times the bytes and runs three times as long as its peers is
    /// not slow per byte; one that reads as much and runs twice as long is.
    #[test]
    fn skewed_input_is_not_taken_for_a_slow_node() {
        let o = options(0.5, 1.5, 0);
        // 4 tasks, 2 finished: round(2.0) = 2 make the baseline, the median the 2nd fastest per
        // byte: 1,100 ms on 100 bytes, x 1.5 = 1,650 ms per 100 bytes.
        let finished = weighed(&[(1_000, 100), (1_100, 100)]);
        let mut f = finished.clone();
        assert_eq!(
            baseline(4, &mut f, &o),
            Some(TimeWithBytes {
                ms: 1_650,
                bytes: Some(100)
            })
        );
        let running = weighed(&[(3_000, 400), (2_000, 100)]);
        assert_eq!(slow(4, &finished, &running, &o), [1]);
        // Unknown bytes, the same times: both slow (the baseline is 1,650 ms).
        let times = unknown(&[3_000, 2_000]);
        assert_eq!(slow(4, &unknown(&[1_000, 1_100]), &times, &o), [0, 1]);
    }

    #[test]
    fn the_baseline_is_the_median_of_the_shortest_finished_times_times_the_multiplier() {
        let o = options(0.75, 1.5, 0);
        // 8 tasks, 6 finished: round(6.0) = 6 shortest, median the 4th shortest (index 3).
        let finished = [1_900, 1_000, 1_200, 1_500, 1_100, 1_700];
        assert_eq!(baseline_ms(8, &finished, &o), Some(2_250));
        // 5 of 8 finished is below 0.75.
        let finished = [1_000, 1_100, 1_200, 1_500, 1_700];
        assert_eq!(baseline_ms(8, &finished, &o), None);
        // All finished: the vertex is done, nothing to look at.
        assert_eq!(baseline_ms(8, &[1_000; 8], &o), None);
        // 7 of 10 with ratio 0.7: round(7.0) = 7, the shortest 7's median is the 4th shortest,
        // whatever the longer ones.
        let finished = [70, 10, 60, 20, 50, 30, 40];
        assert_eq!(baseline_ms(10, &finished, &options(0.7, 2.0, 0)), Some(80));
        // Truncated as Java's `(long)`: 1,001 x 1.5 = 1,501.5.
        assert_eq!(baseline_ms(4, &[1_001, 1_001, 1_001], &o), Some(1_501));
    }

    #[test]
    fn the_lower_bound_and_the_baseline_both_hold() {
        let o = options(0.75, 1.5, 60_000);
        let t = |ms| TimeWithBytes { ms, bytes: None };
        assert!(!is_slow(t(59_999), t(0), &o));
        assert!(is_slow(t(60_000), t(60_000), &o));
        assert!(!is_slow(t(60_000), t(60_001), &o));
        assert!(is_slow(t(2_250), t(2_250), &options(0.75, 1.5, 0)));
        assert!(!is_slow(t(2_249), t(2_250), &options(0.75, 1.5, 0)));
        // The lower bound is on the time, whatever the bytes.
        let w = |ms, bytes| TimeWithBytes {
            ms,
            bytes: Some(bytes),
        };
        assert!(!is_slow(w(59_999, 1), w(1, 1_000), &o));
        assert!(is_slow(w(60_000, 1), w(1, 1_000), &o));
    }
}
