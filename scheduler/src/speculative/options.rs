//! The options of speculative execution: Flink 1.20's `execution.batch.speculative.*`
//! (`BatchExecutionOptions`) and `slow-task-detector.*` (`SlowTaskDetectorOptions`), with
//! Flink's defaults.

/// Settings of speculative execution and of the slow task detector, as Flink 1.20's
/// `BatchExecutionOptions` (`execution.batch.speculative.*`) and `SlowTaskDetectorOptions`
/// (`slow-task-detector.*`). Times are ms. Off by default, as in Flink.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpeculativeExecutionOptions {
    /// `execution.batch.speculative.enabled` (default false): run speculative attempts of slow
    /// tasks. Off, the scheduler behaves exactly as without this feature.
    pub enabled: bool,
    /// `execution.batch.speculative.max-concurrent-executions` (default 2): at most this many
    /// attempts of one execution vertex run at once, the original included.
    pub max_concurrent_executions: u32,
    /// `execution.batch.speculative.block-slow-node-duration` (default 1 min): how long a
    /// TaskManager that ran a slow task gives no new slots, ms. 0 blocks nothing.
    pub block_slow_node_duration_ms: u64,
    /// `slow-task-detector.check-interval` (default 1 s): how often the driver sends
    /// [`Event::CheckSlowTasks`](crate::Event::CheckSlowTasks), ms; must be positive.
    pub check_interval_ms: u64,
    /// `slow-task-detector.execution-time.baseline-lower-bound` (default 1 min): an attempt
    /// that ran shorter than this is never slow, ms.
    pub baseline_lower_bound_ms: u64,
    /// `slow-task-detector.execution-time.baseline-ratio` (default 0.75): the share of a job
    /// vertex's tasks that must have finished before its baseline exists; in `[0, 1)`.
    pub baseline_ratio: f64,
    /// `slow-task-detector.execution-time.baseline-multiplier` (default 1.5): the baseline is
    /// the median execution time of the first finished tasks times this; positive.
    pub baseline_multiplier: f64,
}

impl Default for SpeculativeExecutionOptions {
    fn default() -> Self {
        SpeculativeExecutionOptions {
            enabled: false,
            max_concurrent_executions: 2,
            block_slow_node_duration_ms: 60_000,
            check_interval_ms: 1_000,
            baseline_lower_bound_ms: 60_000,
            baseline_ratio: 0.75,
            baseline_multiplier: 1.5,
        }
    }
}

/// An option out of its range (Flink checks the same bounds when the detector is built).
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum SpeculativeOptionsError {
    /// `execution.batch.speculative.max-concurrent-executions` below 1.
    #[error("execution.batch.speculative.max-concurrent-executions must be at least 1, got {0}")]
    MaxConcurrentExecutions(u32),
    /// `slow-task-detector.check-interval` of 0.
    #[error("slow-task-detector.check-interval must be positive, got 0 ms")]
    CheckInterval,
    /// `slow-task-detector.execution-time.baseline-ratio` outside `[0, 1)`.
    #[error("slow-task-detector.execution-time.baseline-ratio must be in [0, 1), got {0}")]
    BaselineRatio(f64),
    /// `slow-task-detector.execution-time.baseline-multiplier` not positive.
    #[error("slow-task-detector.execution-time.baseline-multiplier must be positive, got {0}")]
    BaselineMultiplier(f64),
}

impl SpeculativeExecutionOptions {
    /// Checks the ranges Flink checks (`ExecutionTimeBasedSlowTaskDetector`'s constructor; a
    /// maximum below 1 would never allow even the original attempt).
    ///
    /// # Errors
    /// [`SpeculativeOptionsError`] naming the option and its value.
    pub fn validate(&self) -> Result<(), SpeculativeOptionsError> {
        if self.max_concurrent_executions < 1 {
            return Err(SpeculativeOptionsError::MaxConcurrentExecutions(
                self.max_concurrent_executions,
            ));
        }
        if self.check_interval_ms == 0 {
            return Err(SpeculativeOptionsError::CheckInterval);
        }
        // Written so that NaN fails too.
        if !(self.baseline_ratio >= 0.0 && self.baseline_ratio < 1.0) {
            return Err(SpeculativeOptionsError::BaselineRatio(self.baseline_ratio));
        }
        if !(self.baseline_multiplier > 0.0 && self.baseline_multiplier.is_finite()) {
            return Err(SpeculativeOptionsError::BaselineMultiplier(
                self.baseline_multiplier,
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_flinks() {
        let o = SpeculativeExecutionOptions::default();
        assert!(!o.enabled);
        assert_eq!(o.max_concurrent_executions, 2);
        assert_eq!(o.block_slow_node_duration_ms, 60_000);
        assert_eq!(o.check_interval_ms, 1_000);
        assert_eq!(o.baseline_lower_bound_ms, 60_000);
        assert_eq!(o.baseline_ratio, 0.75);
        assert_eq!(o.baseline_multiplier, 1.5);
        assert_eq!(o.validate(), Ok(()));
    }

    #[test]
    fn out_of_range_options_are_named() {
        let ok = SpeculativeExecutionOptions::default();
        let check = |o: SpeculativeExecutionOptions| o.validate().map_err(|e| e.to_string());
        assert_eq!(
            check(SpeculativeExecutionOptions {
                baseline_ratio: 1.0,
                ..ok
            }),
            Err("slow-task-detector.execution-time.baseline-ratio must be in [0, 1), got 1".into())
        );
        assert!(check(SpeculativeExecutionOptions {
            baseline_ratio: f64::NAN,
            ..ok
        })
        .is_err());
        assert_eq!(
            check(SpeculativeExecutionOptions {
                baseline_multiplier: 0.0,
                ..ok
            }),
            Err(
                "slow-task-detector.execution-time.baseline-multiplier must be positive, got 0"
                    .into()
            )
        );
        assert_eq!(
            check(SpeculativeExecutionOptions {
                check_interval_ms: 0,
                ..ok
            }),
            Err("slow-task-detector.check-interval must be positive, got 0 ms".into())
        );
        assert_eq!(
            check(SpeculativeExecutionOptions {
                max_concurrent_executions: 0,
                ..ok
            }),
            Err(
                "execution.batch.speculative.max-concurrent-executions must be at least 1, got 0"
                    .into()
            )
        );
        // Flink allows a ratio of 0 (a baseline of 0) and a lower bound of 0.
        assert_eq!(
            check(SpeculativeExecutionOptions {
                baseline_ratio: 0.0,
                baseline_lower_bound_ms: 0,
                ..ok
            }),
            Ok(())
        );
    }
}
