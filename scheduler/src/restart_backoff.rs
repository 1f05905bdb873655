//! When a failed job restarts: Flink's `RestartBackoffTimeStrategy` implementations
//! (`restart-strategy.type`: none, fixed-delay, exponential-delay, failure-rate), without jitter
//! so that runs replay exactly.

use std::collections::VecDeque;

/// Flink's restart strategies (`restart-strategy.type`), with their defaults in Flink 1.20.
/// Jitter is left out so that runs replay exactly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RestartStrategy {
    /// Never restart: the first failure fails the job.
    None,
    /// Up to `attempts` restarts, each after `delay_ms`.
    FixedDelay {
        /// Restarts allowed before the job fails.
        attempts: u32,
        /// Delay before each restart, ms.
        delay_ms: u64,
    },
    /// Delays growing by `multiplier` from `initial_ms` up to `max_ms`, reset after
    /// `reset_after_ms` without failure; the job fails after `attempts` restarts.
    ExponentialDelay {
        /// First delay, ms (Flink: 1 s).
        initial_ms: u64,
        /// Largest delay, ms (Flink 1.20: 1 min).
        max_ms: u64,
        /// Growth per failure (Flink 1.20: 1.5).
        multiplier: f64,
        /// A quiet period after which the delay starts over, ms (Flink: 1 h).
        reset_after_ms: u64,
        /// Restarts allowed before the job fails.
        attempts: u32,
    },
    /// Restart after `delay_ms` unless more than `max_failures` failures fell within the last
    /// `interval_ms`.
    FailureRate {
        /// Failures allowed per interval (Flink: 1).
        max_failures: u32,
        /// The interval, ms (Flink: 1 min).
        interval_ms: u64,
        /// Delay before each restart, ms (Flink: 1 s).
        delay_ms: u64,
    },
}

/// Flink's default number of restart attempts of the exponential-delay strategy
/// (`Integer.MAX_VALUE`): restarts go on; only the back-off grows.
pub const FLINK_MAX_ATTEMPTS: u32 = i32::MAX as u32;

impl RestartStrategy {
    /// Flink 1.20's exponential-delay defaults (its default strategy with checkpointing), with at
    /// most `attempts` restarts.
    pub fn exponential_default(attempts: u32) -> RestartStrategy {
        RestartStrategy::ExponentialDelay {
            initial_ms: 1_000,
            max_ms: 60_000,
            multiplier: 1.5,
            reset_after_ms: 3_600_000,
            attempts,
        }
    }
}

/// The state of a restart strategy over a job's failures.
#[derive(Clone, Debug)]
pub(crate) struct RestartBackoff {
    strategy: RestartStrategy,
    restarts: u32,
    next_delay_ms: u64,
    last_failure_ms: Option<u64>,
    recent: VecDeque<u64>,
}

impl RestartBackoff {
    pub(crate) fn new(strategy: RestartStrategy) -> RestartBackoff {
        let next_delay_ms = match strategy {
            RestartStrategy::ExponentialDelay { initial_ms, .. } => initial_ms,
            _ => 0,
        };
        RestartBackoff {
            strategy,
            restarts: 0,
            next_delay_ms,
            last_failure_ms: None,
            recent: VecDeque::new(),
        }
    }

    /// Restarts granted so far.
    pub(crate) fn restarts(&self) -> u32 {
        self.restarts
    }

    /// A failure at `now_ms`: the delay before restarting, or `None` when the job must fail.
    pub(crate) fn on_failure(&mut self, now_ms: u64) -> Option<u64> {
        let delay = match self.strategy {
            RestartStrategy::None => None,
            RestartStrategy::FixedDelay { attempts, delay_ms } => {
                (self.restarts < attempts).then_some(delay_ms)
            }
            RestartStrategy::ExponentialDelay {
                initial_ms,
                max_ms,
                multiplier,
                reset_after_ms,
                attempts,
            } => {
                if self
                    .last_failure_ms
                    .is_some_and(|last| now_ms.saturating_sub(last) >= reset_after_ms)
                {
                    self.next_delay_ms = initial_ms;
                    self.restarts = 0;
                }
                (self.restarts < attempts).then(|| {
                    let delay = self.next_delay_ms.min(max_ms);
                    // Float maths, then back to whole ms: the delay is capped by max_ms anyway.
                    let grown = (self.next_delay_ms as f64 * multiplier).clamp(0.0, max_ms as f64);
                    #[allow(clippy::cast_possible_truncation)] // clamped to [0, max_ms] above
                    let grown = grown as u64;
                    self.next_delay_ms = grown;
                    delay
                })
            }
            RestartStrategy::FailureRate {
                max_failures,
                interval_ms,
                delay_ms,
            } => {
                self.recent.push_back(now_ms);
                while self
                    .recent
                    .front()
                    .is_some_and(|&t| now_ms.saturating_sub(t) > interval_ms)
                {
                    self.recent.pop_front();
                }
                (self.recent.len() <= max_failures as usize).then_some(delay_ms)
            }
        };
        self.last_failure_ms = Some(now_ms);
        if delay.is_some() {
            self.restarts += 1;
        }
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_delay_allows_its_attempts() {
        let mut b = RestartBackoff::new(RestartStrategy::FixedDelay {
            attempts: 2,
            delay_ms: 10,
        });
        assert_eq!(b.on_failure(0), Some(10));
        assert_eq!(b.on_failure(5), Some(10));
        assert_eq!(b.on_failure(9), None);
        assert_eq!(b.restarts(), 2);
    }

    #[test]
    fn exponential_delay_grows_caps_and_resets() {
        let mut b = RestartBackoff::new(RestartStrategy::ExponentialDelay {
            initial_ms: 100,
            max_ms: 300,
            multiplier: 2.0,
            reset_after_ms: 10_000,
            attempts: 10,
        });
        let delays: Vec<_> = [0, 1, 2, 3].iter().map(|&t| b.on_failure(t)).collect();
        assert_eq!(delays, [Some(100), Some(200), Some(300), Some(300)]);
        assert_eq!(
            b.on_failure(20_000),
            Some(100),
            "a quiet hour resets the back-off"
        );
    }

    #[test]
    fn failure_rate_counts_failures_in_the_interval() {
        let mut b = RestartBackoff::new(RestartStrategy::FailureRate {
            max_failures: 2,
            interval_ms: 1_000,
            delay_ms: 5,
        });
        assert_eq!(b.on_failure(0), Some(5));
        assert_eq!(b.on_failure(500), Some(5));
        assert_eq!(b.on_failure(900), None, "third failure within one second");
        let mut b = RestartBackoff::new(RestartStrategy::FailureRate {
            max_failures: 2,
            interval_ms: 1_000,
            delay_ms: 5,
        });
        assert_eq!(b.on_failure(0), Some(5));
        assert_eq!(b.on_failure(500), Some(5));
        assert_eq!(
            b.on_failure(1_600),
            Some(5),
            "the first two left the interval"
        );
        assert_eq!(
            RestartBackoff::new(RestartStrategy::None).on_failure(0),
            None
        );
    }
}
