//! When a failed job restarts: Flink's `RestartBackoffTimeStrategy` implementations
//! (`restart-strategy.type`: none, fixed-delay, exponential-delay, failure-rate). Which one a
//! job gets is decided by `restart_options.rs` (Flink's `RestartBackoffTimeStrategyFactoryLoader`).
//!
//! The exponential-delay strategy is Flink 1.19+'s (FLIP-364): failures that arrive while a
//! restart is pending are merged into that attempt (they restart at the same time and do not
//! count again), the delay of attempt `k` is `initial x multiplier^k` plus a jitter of up to
//! `jitter_factor` of it either way, within `[initial, max]`, and the attempt count starts over
//! after a quiet `reset_after_ms`. The jitter is drawn from a generator seeded by the
//! scheduler's [`seed`](crate::SchedulerConfig::seed), so that runs replay exactly.

use std::collections::VecDeque;
use std::fmt;

use conflux_common::SplitMix64;
use conflux_graph::ExecutionVertexIndex;

/// Flink's restart strategies (`restart-strategy.type`), each with its parameters (Flink 1.20's
/// defaults are in [`RestartStrategyOptions`](crate::RestartStrategyOptions)). Displayed as
/// Flink names it in "Recovery is suppressed by ...".
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RestartStrategy {
    /// Never restart: the first failure fails the job (Flink's default without checkpointing).
    None,
    /// Up to `attempts` restarts, each after `delay_ms`.
    FixedDelay {
        /// Restarts allowed before the job fails.
        attempts: u32,
        /// Delay before each restart, ms.
        delay_ms: u64,
    },
    /// Delays growing by `multiplier` from `initial_ms` up to `max_ms`, with a jitter of
    /// `jitter_factor`, reset after `reset_after_ms` without failure; the job fails after
    /// `attempts` restarts since the last reset. Failures while a restart is pending join it
    /// (FLIP-364).
    ExponentialDelay {
        /// First delay, ms (Flink: 1 s).
        initial_ms: u64,
        /// Largest delay, ms (Flink 1.20: 1 min).
        max_ms: u64,
        /// Growth per failure (Flink 1.20: 1.5).
        multiplier: f64,
        /// A quiet period after which the delay starts over, ms (Flink: 1 h).
        reset_after_ms: u64,
        /// Each delay moves by a random amount of up to this share of it either way, in [0, 1]
        /// (Flink: 0.1; 0 for none).
        jitter_factor: f64,
        /// Restarts allowed before the job fails (Flink's `attempts-before-reset-backoff`).
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
    /// Flink 1.20's exponential-delay defaults (its default strategy with checkpointing: 1 s
    /// growing by 1.5 up to 1 min, jitter 0.1, reset after 1 h), with at most `attempts`
    /// restarts.
    pub fn exponential_default(attempts: u32) -> RestartStrategy {
        RestartStrategy::ExponentialDelay {
            initial_ms: 1_000,
            max_ms: 60_000,
            multiplier: 1.5,
            reset_after_ms: 3_600_000,
            jitter_factor: 0.1,
            attempts,
        }
    }
}

/// Flink's names of the strategies (`NoRestartBackoffTimeStrategy`, ...) with their parameters,
/// as a failure reason quotes them ("recovery is suppressed by ...").
impl fmt::Display for RestartStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RestartStrategy::None => f.write_str("NoRestartBackoffTimeStrategy"),
            RestartStrategy::FixedDelay { attempts, delay_ms } => write!(
                f,
                "FixedDelayRestartBackoffTimeStrategy(attempts={attempts}, delay={delay_ms} ms)"
            ),
            RestartStrategy::ExponentialDelay {
                initial_ms,
                max_ms,
                multiplier,
                reset_after_ms,
                jitter_factor,
                attempts,
            } => write!(
                f,
                "ExponentialDelayRestartBackoffTimeStrategy(initial={initial_ms} ms, max={max_ms} ms, \
                 multiplier={multiplier}, reset after={reset_after_ms} ms, jitter={jitter_factor}, \
                 attempts={attempts})"
            ),
            RestartStrategy::FailureRate {
                max_failures,
                interval_ms,
                delay_ms,
            } => write!(
                f,
                "FailureRateRestartBackoffTimeStrategy(max failures={max_failures} per \
                 {interval_ms} ms, delay={delay_ms} ms)"
            ),
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
    /// Exponential delay: the jitter's draws.
    rng: SplitMix64,
}

impl RestartBackoff {
    /// The state of `strategy` before any failure; `seed` seeds the jitter.
    pub(crate) fn new(strategy: RestartStrategy, seed: u64) -> RestartBackoff {
        RestartBackoff {
            strategy,
            restarts: 0,
            attempt: 0,
            next_restart_ms: None,
            recent: VecDeque::new(),
            rng: SplitMix64::new(seed),
        }
    }

    /// The strategy.
    pub(crate) fn strategy(&self) -> RestartStrategy {
        self.strategy
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
                jitter_factor,
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
                let grown = grown_delay(initial_ms, multiplier, self.attempt);
                let jitter = draw_jitter(&mut self.rng, grown, jitter_factor);
                let delay = within(grown, jitter, initial_ms, max_ms);
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

/// `initial x multiplier^attempt` truncated to whole ms (Flink's `currentBackoffTime`),
/// saturating at `u64::MAX`.
fn grown_delay(initial_ms: u64, multiplier: f64, attempt: u32) -> u64 {
    let exponent = i32::try_from(attempt).unwrap_or(i32::MAX);
    let grown = (initial_ms as f64 * multiplier.powi(exponent)).clamp(0.0, u64::MAX as f64);
    #[allow(clippy::cast_possible_truncation)] // clamped to [0, u64::MAX] above
    {
        grown as u64
    }
}

/// Flink's `calculateJitterBackoffMS`: uniform in `[-n, n]` with `n = delay x factor` truncated;
/// 0 (and no draw) when the factor is 0.
fn draw_jitter(rng: &mut SplitMix64, delay_ms: u64, factor: f64) -> i128 {
    if factor <= 0.0 {
        return 0;
    }
    #[allow(clippy::cast_possible_truncation)] // a share in [0, 1] of a u64, truncated as Flink
    let offset = (delay_ms as f64 * factor).clamp(0.0, (u64::MAX / 4) as f64) as u64;
    i128::from(rng.below(offset * 2 + 1)) - i128::from(offset)
}

/// Flink's `calculateActualBackoffTime`: the grown delay plus its jitter, within
/// `[initial, max]`.
fn within(grown_ms: u64, jitter: i128, initial_ms: u64, max_ms: u64) -> u64 {
    let with_jitter = (i128::from(grown_ms) + jitter).min(i128::from(max_ms));
    let delay = with_jitter.max(i128::from(initial_ms));
    u64::try_from(delay).unwrap_or(max_ms)
}

/// The delay of attempt `attempt` without jitter, within `[initial, max]`.
#[cfg(test)]
fn exponential_delay(initial_ms: u64, max_ms: u64, multiplier: f64, attempt: u32) -> u64 {
    within(
        grown_delay(initial_ms, multiplier, attempt),
        0,
        initial_ms,
        max_ms,
    )
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
        RestartBackoff::new(
            RestartStrategy::ExponentialDelay {
                initial_ms,
                max_ms,
                multiplier,
                reset_after_ms,
                jitter_factor: 0.0,
                attempts,
            },
            0,
        )
    }

    #[test]
    fn fixed_delay_allows_its_attempts() {
        let mut b = RestartBackoff::new(
            RestartStrategy::FixedDelay {
                attempts: 2,
                delay_ms: 10,
            },
            0,
        );
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

    /// The delays after `failures` failures 8 ms apart, over 1,000 seeds.
    fn jittered_delays(
        initial_ms: u64,
        max_ms: u64,
        jitter_factor: f64,
        failures: u32,
    ) -> std::collections::BTreeSet<u64> {
        (0..1_000)
            .map(|seed| {
                let strategy = RestartStrategy::ExponentialDelay {
                    initial_ms,
                    max_ms,
                    multiplier: 2.0,
                    reset_after_ms: u64::from(u32::MAX),
                    jitter_factor,
                    attempts: FLINK_MAX_ATTEMPTS,
                };
                let mut b = RestartBackoff::new(strategy, seed);
                let mut last = 0;
                for k in 1..=failures {
                    last = b.on_failure(u64::from(k) * 8).expect("unlimited").delay_ms;
                }
                last
            })
            .collect()
    }

    /// Flink's `testJitter`: initial 2 ms, x2, max 7 ms, jitter 0.25: the second delay is 4 ± 1,
    /// the third 8 ± 2 capped at 7, the fourth 7.
    #[test]
    fn exponential_delay_jitter_stays_within_its_share() {
        assert_eq!(jittered_delays(2, 7, 0.25, 2), [3, 4, 5].into());
        assert_eq!(jittered_delays(2, 7, 0.25, 3), [6, 7].into());
        assert_eq!(jittered_delays(2, 7, 0.25, 4), [7].into());
    }

    /// Flink's `testJitterNoHigherThanMax`: jitter 1 spreads delays over `[initial, max]`.
    #[test]
    fn exponential_delay_jitter_never_leaves_initial_and_max() {
        assert_eq!(jittered_delays(1, 7, 1.0, 1), [1, 2].into());
        assert_eq!(jittered_delays(1, 7, 1.0, 2), [1, 2, 3, 4].into());
        assert_eq!(jittered_delays(1, 7, 1.0, 3), (1..=7).collect());
    }

    /// The same seed draws the same jitter: runs replay.
    #[test]
    fn exponential_delay_jitter_replays_from_its_seed() {
        let run = |seed| {
            let mut b = RestartBackoff::new(RestartStrategy::exponential_default(10), seed);
            delays(&mut b, &[0, 10_000, 20_000, 30_000, 40_000])
        };
        assert_eq!(run(7), run(7));
        let delays = run(7);
        for (d, grown) in delays.iter().zip([1_000u64, 1_500, 2_250, 3_375, 5_062]) {
            let d = d.expect("restart");
            assert!(d.abs_diff(grown) <= grown / 10, "{d} vs {grown}");
        }
    }

    #[test]
    fn failure_rate_counts_failures_in_the_interval() {
        let strategy = RestartStrategy::FailureRate {
            max_failures: 2,
            interval_ms: 1_000,
            delay_ms: 5,
        };
        let mut b = RestartBackoff::new(strategy, 0);
        assert_eq!(
            delays(&mut b, &[0, 500, 900]),
            [Some(5), Some(5), None],
            "third failure within one second"
        );
        let mut b = RestartBackoff::new(strategy, 0);
        assert_eq!(
            delays(&mut b, &[0, 500, 1_600]),
            [Some(5), Some(5), Some(5)],
            "the first two left the interval"
        );
        assert_eq!(
            RestartBackoff::new(RestartStrategy::None, 0).on_failure(0),
            None
        );
    }
}
