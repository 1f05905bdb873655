//! When a failed job restarts: Flink's `RestartBackoffTimeStrategy` implementations
//! (`restart-strategy.type`: none, fixed-delay, exponential-delay, failure-rate), without jitter
//! so that runs replay exactly.
//!
//! The exponential-delay strategy is Flink 1.19+'s (FLIP-364): failures that arrive while a
//! restart is pending are merged into that attempt (they restart at the same time and do not
//! count again), the delay of attempt `k` is `initial x multiplier^k` capped at the maximum, and
//! the attempt count starts over after a quiet `reset_after_ms`.

use std::collections::VecDeque;

use conflux_graph::ExecutionVertexIndex;

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
    /// `reset_after_ms` without failure; the job fails after `attempts` restarts. Failures while a
    /// restart is pending join it (FLIP-364).
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

/// A restart waiting for its back-off delay: the vertices and the attempts the failover saw
/// (a vertex whose attempt moved on since is skipped).
#[derive(Debug)]
pub(crate) struct PendingRestart {
    pub(crate) due_ms: u64,
    pub(crate) vertices: Vec<(ExecutionVertexIndex, u32)>,
}

/// What the back-off decided about one failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RestartDecision {
    /// Delay before the restart, ms.
    pub(crate) delay_ms: u64,
    /// Whether the failure starts a new restart attempt (`false`: it joins the pending one and
    /// restarts at the same time).
    pub(crate) new_attempt: bool,
}

/// The state of a restart strategy over a job's failures.
#[derive(Clone, Debug)]
pub(crate) struct RestartBackoff {
    strategy: RestartStrategy,
    /// Restart attempts granted so far (merged failures excluded).
    restarts: u32,
    /// Exponential delay: attempts since the last reset (Flink's `currentRestartAttempt`).
    attempt: u32,
    /// Exponential delay: when the pending (or last) restart runs, ms.
    next_restart_ms: Option<u64>,
    /// Failure rate: failure times within the interval.
    recent: VecDeque<u64>,
}

impl RestartBackoff {
    pub(crate) fn new(strategy: RestartStrategy) -> RestartBackoff {
        RestartBackoff {
            strategy,
            restarts: 0,
            attempt: 0,
            next_restart_ms: None,
            recent: VecDeque::new(),
        }
    }

    /// Restart attempts granted so far.
    pub(crate) fn restarts(&self) -> u32 {
        self.restarts
    }

    /// A failure at `now_ms`: when to restart, or `None` when the job must fail.
    pub(crate) fn on_failure(&mut self, now_ms: u64) -> Option<RestartDecision> {
        let new = |delay_ms| RestartDecision {
            delay_ms,
            new_attempt: true,
        };
        let decision = match self.strategy {
            RestartStrategy::None => None,
            RestartStrategy::FixedDelay { attempts, delay_ms } => {
                (self.restarts < attempts).then(|| new(delay_ms))
            }
            RestartStrategy::ExponentialDelay {
                initial_ms,
                max_ms,
                multiplier,
                reset_after_ms,
                attempts,
            } => {
                if let Some(next) = self.next_restart_ms.filter(|&next| now_ms <= next) {
                    // A restart is pending: this failure joins it.
                    return (self.attempt <= attempts).then_some(RestartDecision {
                        delay_ms: next - now_ms,
                        new_attempt: false,
                    });
                }
                if self
                    .next_restart_ms
                    .is_none_or(|next| now_ms - next >= reset_after_ms)
                {
                    self.attempt = 0;
                }
                let delay = exponential_delay(initial_ms, max_ms, multiplier, self.attempt);
                self.next_restart_ms = Some(now_ms.saturating_add(delay));
                self.attempt = self.attempt.saturating_add(1);
                (self.attempt <= attempts).then(|| new(delay))
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
                (self.recent.len() <= max_failures as usize).then(|| new(delay_ms))
            }
        };
        if decision.is_some_and(|d| d.new_attempt) {
            self.restarts += 1;
        }
        decision
    }
}

/// Flink's `calculateActualBackoffTime` without jitter: `initial x multiplier^attempt`,
/// truncated to whole ms, within `[initial, max]`.
fn exponential_delay(initial_ms: u64, max_ms: u64, multiplier: f64, attempt: u32) -> u64 {
    let exponent = i32::try_from(attempt).unwrap_or(i32::MAX);
    let grown = (initial_ms as f64 * multiplier.powi(exponent)).clamp(0.0, max_ms as f64);
    #[allow(clippy::cast_possible_truncation)] // clamped to [0, max_ms] above
    let grown = grown as u64;
    grown.clamp(initial_ms.min(max_ms), max_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The delay of each failure, `None` where the job fails.
    fn delays(b: &mut RestartBackoff, times: &[u64]) -> Vec<Option<u64>> {
        times
            .iter()
            .map(|&t| b.on_failure(t).map(|d| d.delay_ms))
            .collect()
    }

    fn exponential(
        initial_ms: u64,
        max_ms: u64,
        multiplier: f64,
        reset_after_ms: u64,
        attempts: u32,
    ) -> RestartBackoff {
        RestartBackoff::new(RestartStrategy::ExponentialDelay {
            initial_ms,
            max_ms,
            multiplier,
            reset_after_ms,
            attempts,
        })
    }

    #[test]
    fn fixed_delay_allows_its_attempts() {
        let mut b = RestartBackoff::new(RestartStrategy::FixedDelay {
            attempts: 2,
            delay_ms: 10,
        });
        assert_eq!(delays(&mut b, &[0, 5, 9]), [Some(10), Some(10), None]);
        assert_eq!(b.restarts(), 2);
    }

    /// Flink's `ExponentialDelayRestartBackoffTimeStrategyTest#testBackoffMultiplier` (4 ms x 2.3,
    /// truncated), with each failure after the previous restart ran.
    #[test]
    fn exponential_delay_multiplies_and_truncates() {
        let mut b = exponential(4, 300, 2.3, 8, 10);
        assert_eq!(delays(&mut b, &[0, 5, 15]), [Some(4), Some(9), Some(21)]);
        assert_eq!(b.restarts(), 3);
    }

    /// `testMaxBackoff` and `testInitialBackoff`: never above the maximum, never below the start.
    #[test]
    fn exponential_delay_stays_between_initial_and_max() {
        let mut b = exponential(1, 6, 2.0, 1_000_000, FLINK_MAX_ATTEMPTS);
        let mut now = 0;
        let mut seen = Vec::new();
        for _ in 0..10 {
            let d = b.on_failure(now).expect("unlimited").delay_ms;
            seen.push(d);
            now += d + 1;
        }
        assert_eq!(seen, [1, 2, 4, 6, 6, 6, 6, 6, 6, 6]);
        assert_eq!(exponential_delay(42, 45, 2.0, 0), 42);
    }

    /// `testResetBackoff`: the attempt count starts over once `reset_after_ms` passed since the
    /// last restart ran, not before.
    #[test]
    fn exponential_delay_resets_after_a_quiet_threshold() {
        let mut b = exponential(1, 5, 2.0, 8, FLINK_MAX_ATTEMPTS);
        assert_eq!(delays(&mut b, &[0]), [Some(1)]); // restart at 1
        assert_eq!(
            delays(&mut b, &[8]),
            [Some(2)],
            "7 ms after the restart: grows"
        );
        assert_eq!(
            delays(&mut b, &[18]),
            [Some(1)],
            "8 ms after the restart: reset"
        );
    }

    /// FLIP-364: failures while a restart is pending join it: same restart time, no new attempt.
    #[test]
    fn exponential_delay_merges_failures_while_a_restart_is_pending() {
        let mut b = exponential(1_000, 60_000, 1.5, 3_600_000, 1);
        let first = b.on_failure(100).expect("first");
        assert_eq!(
            first,
            RestartDecision {
                delay_ms: 1_000,
                new_attempt: true
            }
        );
        for (t, left) in [(100, 1_000), (600, 500), (1_100, 0)] {
            assert_eq!(
                b.on_failure(t),
                Some(RestartDecision {
                    delay_ms: left,
                    new_attempt: false
                }),
                "failure at {t} joins the restart at 1,100"
            );
        }
        assert_eq!(b.restarts(), 1);
        assert_eq!(
            b.on_failure(1_101),
            None,
            "a second attempt exceeds attempts = 1"
        );
    }

    /// `testMaxAttempts`: `attempts` restarts are granted, the next attempt is not (failures
    /// 10 ms apart: after each restart ran, within the reset threshold).
    #[test]
    fn exponential_delay_allows_its_attempts() {
        let mut b = exponential(1, 3, 1.2, 1_000_000, 13);
        let mut now = 0;
        for _ in 0..13 {
            now += 10;
            assert!(b.on_failure(now).is_some());
        }
        assert_eq!(b.on_failure(now + 10), None);
        assert_eq!(b.restarts(), 13);
    }

    #[test]
    fn failure_rate_counts_failures_in_the_interval() {
        let strategy = RestartStrategy::FailureRate {
            max_failures: 2,
            interval_ms: 1_000,
            delay_ms: 5,
        };
        let mut b = RestartBackoff::new(strategy);
        assert_eq!(
            delays(&mut b, &[0, 500, 900]),
            [Some(5), Some(5), None],
            "third failure within one second"
        );
        let mut b = RestartBackoff::new(strategy);
        assert_eq!(
            delays(&mut b, &[0, 500, 1_600]),
            [Some(5), Some(5), Some(5)],
            "the first two left the interval"
        );
        assert_eq!(
            RestartBackoff::new(RestartStrategy::None).on_failure(0),
            None
        );
    }
}
