//! The slow task detector, as Flink 1.20's `ExecutionTimeBasedSlowTaskDetector`, as pure
//! functions over one job vertex's execution times.
//!
//! A job vertex is looked at once `baseline-ratio` of its tasks finished (and not all did).
//! Its baseline is the median of the first `round(parallelism x ratio)` finished execution
//! times (the shortest ones) times `baseline-multiplier`; an attempt that is not CREATED and
//! has run at least `baseline-lower-bound` and at least the baseline is slow. Execution time
//! runs from DEPLOYING to FINISHED, or to now for an unfinished attempt (0 before it deploys).
//!
//! Flink 1.17+ weighs each time by the task's input bytes when both are known and compares
//! time per byte. This scheduler is not told input bytes, which is Flink's case of unknown
//! bytes (`NUM_BYTES_UNKNOWN`): times are compared alone.

use super::options::SpeculativeExecutionOptions;

/// The baseline of a job vertex of `parallelism` tasks whose finished tasks ran `finished_ms`
/// (one time per finished task, in any order; reordered), ms; `None` while fewer than the
/// baseline ratio of its tasks finished, or once all did (Flink then skips the vertex).
/// O(finished) (a selection, not a sort).
pub(crate) fn baseline_ms(
    parallelism: usize,
    finished_ms: &mut [u64],
    options: &SpeculativeExecutionOptions,
) -> Option<u64> {
    let finished = finished_ms.len();
    if parallelism == 0 || finished >= parallelism {
        return None;
    }
    if (finished as f64) / (parallelism as f64) < options.baseline_ratio {
        return None;
    }
    // Java's `Math.round` of a non-negative value: half up.
    let count = java_round(parallelism as f64 * options.baseline_ratio);
    if count == 0 {
        return Some(0);
    }
    // The median of the `count` shortest times is the (count / 2)-th shortest of all.
    let count = count.min(finished);
    let (_, median, _) = finished_ms.select_nth_unstable(count / 2);
    Some(java_long(*median as f64 * options.baseline_multiplier))
}

/// Whether an attempt that has run `execution_ms` is slow against `baseline_ms`: it ran at
/// least the lower bound and at least the baseline (Flink compares with `>=`).
pub(crate) fn is_slow(
    execution_ms: u64,
    baseline_ms: u64,
    options: &SpeculativeExecutionOptions,
) -> bool {
    execution_ms >= options.baseline_lower_bound_ms && execution_ms >= baseline_ms
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

    /// Which of the running attempts (execution times, ms) are slow in a vertex of
    /// `parallelism` whose finished tasks ran `finished`.
    fn slow(
        parallelism: usize,
        finished: &[u64],
        running: &[u64],
        o: &SpeculativeExecutionOptions,
    ) -> Vec<usize> {
        let mut finished = finished.to_vec();
        let Some(baseline) = baseline_ms(parallelism, &mut finished, o) else {
            return Vec::new();
        };
        (0..running.len())
            .filter(|&i| is_slow(running[i], baseline, o))
            .collect()
    }

    /// The worked examples of Flink's `ExecutionTimeBasedSlowTaskDetectorTest` (parallelism
    /// 3; its tasks deploy together, so the finished one ran shortest).
    #[test]
    fn flinks_detector_cases() {
        // testNoFinishedTaskButRatioIsZero: a baseline of 0, every deployed task is slow.
        assert_eq!(slow(3, &[], &[0, 0, 0], &options(0.0, 1.0, 0)), [0, 1, 2]);
        // testFinishedTaskNotExceedRatio: 1 of 3 finished is below 0.5.
        assert!(slow(3, &[10], &[12, 12], &options(0.5, 1.0, 0)).is_empty());
        // testFinishedTaskExceedRatio: round(0.9) = 1 task makes the baseline; both others ran
        // longer.
        assert_eq!(slow(3, &[10], &[12, 12], &options(0.3, 1.0, 0)), [0, 1]);
        // testLargeLowerBound.
        assert!(slow(3, &[10], &[12, 12], &options(0.3, 1.0, u64::from(u32::MAX))).is_empty());
        // testLargeMultiplier.
        assert!(slow(3, &[10], &[12, 12], &options(0.3, 1_000_000.0, 0)).is_empty());
    }

    #[test]
    fn the_baseline_is_the_median_of_the_shortest_finished_times_times_the_multiplier() {
        let o = options(0.75, 1.5, 0);
        // 8 tasks, 6 finished: round(6.0) = 6 shortest, median the 4th shortest (index 3).
        let mut finished = vec![1_900, 1_000, 1_200, 1_500, 1_100, 1_700];
        assert_eq!(baseline_ms(8, &mut finished, &o), Some(2_250));
        // 5 of 8 finished is below 0.75.
        let mut finished = vec![1_000, 1_100, 1_200, 1_500, 1_700];
        assert_eq!(baseline_ms(8, &mut finished, &o), None);
        // All finished: the vertex is done, nothing to look at.
        let mut finished = vec![1_000; 8];
        assert_eq!(baseline_ms(8, &mut finished, &o), None);
        // 7 of 10 with ratio 0.7: round(7.0) = 7, the shortest 7's median is the 4th shortest,
        // whatever the longer ones.
        let mut finished = vec![70, 10, 60, 20, 50, 30, 40];
        assert_eq!(
            baseline_ms(10, &mut finished, &options(0.7, 2.0, 0)),
            Some(80)
        );
        // Truncated as Java's `(long)`: 1,001 x 1.5 = 1,501.5.
        let mut finished = vec![1_001, 1_001, 1_001];
        assert_eq!(baseline_ms(4, &mut finished, &o), Some(1_501));
    }

    #[test]
    fn the_lower_bound_and_the_baseline_both_hold() {
        let o = options(0.75, 1.5, 60_000);
        assert!(!is_slow(59_999, 0, &o));
        assert!(is_slow(60_000, 60_000, &o));
        assert!(!is_slow(60_000, 60_001, &o));
        assert!(is_slow(2_250, 2_250, &options(0.75, 1.5, 0)));
        assert!(!is_slow(2_249, 2_250, &options(0.75, 1.5, 0)));
    }
}
