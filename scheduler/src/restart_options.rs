//! Which restart strategy a job gets: Flink 1.20's `restart-strategy.*` options
//! ([`RestartStrategyOptions`]) and the rule that turns them into a [`RestartStrategy`] (Flink's
//! `RestartBackoffTimeStrategyFactoryLoader`).
//!
//! A configured `restart-strategy.type` wins; without one, Flink's default applies: exponential
//! delay with its defaults when checkpointing is enabled, otherwise no restart at all (the first
//! task failure fails the job). Conflux adds one rule: an attempt count configured without a
//! type means exponential delay with that many attempts (how `--restart-attempts N` alone always
//! read). Unlike Flink, which ignores options of other strategies, an option the chosen
//! strategy does not use is refused, so that a mistyped combination is never silently inert.

use std::fmt;
use std::str::FromStr;

use crate::restart_backoff::{RestartStrategy, FLINK_MAX_ATTEMPTS};

/// Flink's `restart-strategy.type` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RestartStrategyType {
    /// `none` (also `off`, `disable`): never restart.
    None,
    /// `fixed-delay` (also `fixeddelay`).
    FixedDelay,
    /// `failure-rate` (also `failurerate`).
    FailureRate,
    /// `exponential-delay` (also `exponentialdelay`).
    ExponentialDelay,
}

impl RestartStrategyType {
    /// The type's main name: `none`, `fixed-delay`, `failure-rate`, `exponential-delay`.
    pub fn as_str(self) -> &'static str {
        match self {
            RestartStrategyType::None => "none",
            RestartStrategyType::FixedDelay => "fixed-delay",
            RestartStrategyType::FailureRate => "failure-rate",
            RestartStrategyType::ExponentialDelay => "exponential-delay",
        }
    }
}

impl fmt::Display for RestartStrategyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Reads a type as Flink does: case-insensitive, with Flink's alternative names.
impl FromStr for RestartStrategyType {
    type Err = RestartOptionsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "off" | "disable" => Ok(RestartStrategyType::None),
            "fixed-delay" | "fixeddelay" => Ok(RestartStrategyType::FixedDelay),
            "failure-rate" | "failurerate" => Ok(RestartStrategyType::FailureRate),
            "exponential-delay" | "exponentialdelay" => Ok(RestartStrategyType::ExponentialDelay),
            _ => Err(RestartOptionsError::UnknownStrategy(s.to_owned())),
        }
    }
}

/// One of the restart options, for messages; [`key`](Self::key) is Flink's configuration key
/// for a strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RestartOption {
    /// [`RestartStrategyOptions::attempts`].
    Attempts,
    /// [`RestartStrategyOptions::delay_ms`].
    Delay,
    /// [`RestartStrategyOptions::max_delay_ms`].
    MaxDelay,
    /// [`RestartStrategyOptions::backoff_multiplier`].
    BackoffMultiplier,
    /// [`RestartStrategyOptions::reset_backoff_threshold_ms`].
    ResetBackoffThreshold,
    /// [`RestartStrategyOptions::jitter_factor`].
    JitterFactor,
    /// [`RestartStrategyOptions::max_failures_per_interval`].
    MaxFailuresPerInterval,
    /// [`RestartStrategyOptions::failure_rate_interval_ms`].
    FailureRateInterval,
}

impl RestartOption {
    /// Flink's key of this option for `strategy`, or `None` when that strategy has no such
    /// option.
    pub fn key(self, strategy: RestartStrategyType) -> Option<&'static str> {
        use RestartOption as O;
        use RestartStrategyType as T;
        Some(match (strategy, self) {
            (T::FixedDelay, O::Attempts) => "restart-strategy.fixed-delay.attempts",
            (T::FixedDelay, O::Delay) => "restart-strategy.fixed-delay.delay",
            (T::FailureRate, O::MaxFailuresPerInterval) => {
                "restart-strategy.failure-rate.max-failures-per-interval"
            }
            (T::FailureRate, O::FailureRateInterval) => {
                "restart-strategy.failure-rate.failure-rate-interval"
            }
            (T::FailureRate, O::Delay) => "restart-strategy.failure-rate.delay",
            (T::ExponentialDelay, O::Attempts) => {
                "restart-strategy.exponential-delay.attempts-before-reset-backoff"
            }
            (T::ExponentialDelay, O::Delay) => "restart-strategy.exponential-delay.initial-backoff",
            (T::ExponentialDelay, O::MaxDelay) => "restart-strategy.exponential-delay.max-backoff",
            (T::ExponentialDelay, O::BackoffMultiplier) => {
                "restart-strategy.exponential-delay.backoff-multiplier"
            }
            (T::ExponentialDelay, O::ResetBackoffThreshold) => {
                "restart-strategy.exponential-delay.reset-backoff-threshold"
            }
            (T::ExponentialDelay, O::JitterFactor) => {
                "restart-strategy.exponential-delay.jitter-factor"
            }
            _ => return None,
        })
    }

    /// A short name of the option, for messages where no strategy applies.
    pub fn name(self) -> &'static str {
        match self {
            RestartOption::Attempts => "attempts",
            RestartOption::Delay => "delay",
            RestartOption::MaxDelay => "max delay",
            RestartOption::BackoffMultiplier => "backoff multiplier",
            RestartOption::ResetBackoffThreshold => "reset-backoff threshold",
            RestartOption::JitterFactor => "jitter factor",
            RestartOption::MaxFailuresPerInterval => "max failures per interval",
            RestartOption::FailureRateInterval => "failure-rate interval",
        }
    }
}

/// Why restart options do not make a strategy; each names the option.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RestartOptionsError {
    /// An unknown `restart-strategy.type`.
    #[error(
        "unknown restart strategy '{0}' (expected none, fixed-delay, failure-rate or exponential-delay)"
    )]
    UnknownStrategy(String),
    /// An option the chosen strategy does not use (or options without any strategy).
    #[error("the {} option does not apply to restart strategy {strategy}", .option.name())]
    NotApplicable {
        /// The option.
        option: RestartOption,
        /// The strategy (`none` when no type was configured).
        strategy: RestartStrategyType,
    },
    /// A value out of the range Flink's strategy accepts.
    #[error("{key} {value} {reason}")]
    OutOfRange {
        /// The option.
        option: RestartOption,
        /// Flink's key.
        key: &'static str,
        /// The value given.
        value: String,
        /// What the range is.
        reason: &'static str,
    },
}

impl RestartOptionsError {
    /// The option the error is about, if any.
    pub fn option(&self) -> Option<RestartOption> {
        match self {
            RestartOptionsError::UnknownStrategy(_) => None,
            RestartOptionsError::NotApplicable { option, .. }
            | RestartOptionsError::OutOfRange { option, .. } => Some(*option),
        }
    }
}

/// Flink 1.20's `restart-strategy.*` options as configured (`None`: not set, the default
/// applies). One field stands for the option of the same meaning in each strategy that has it:
/// `attempts` is `fixed-delay.attempts` and `exponential-delay.attempts-before-reset-backoff`,
/// `delay_ms` is `fixed-delay.delay`, `failure-rate.delay` and
/// `exponential-delay.initial-backoff`. Defaults (Flink 1.20): fixed delay 1 attempt after 1 s;
/// failure rate 1 failure per 1 min, 1 s delay; exponential delay from 1 s by 1.5 up to 1 min,
/// jitter 0.1, reset after 1 h, 2^31 - 1 attempts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RestartStrategyOptions {
    /// `restart-strategy.type`.
    pub strategy: Option<RestartStrategyType>,
    /// Restarts allowed (fixed delay: in all; exponential delay: before the back-off resets).
    pub attempts: Option<u32>,
    /// Delay before a restart, ms (exponential delay: the first one).
    pub delay_ms: Option<u64>,
    /// Exponential delay: the largest delay, ms.
    pub max_delay_ms: Option<u64>,
    /// Exponential delay: growth per attempt, above 1.
    pub backoff_multiplier: Option<f64>,
    /// Exponential delay: a quiet time after which delays and attempts start over, ms.
    pub reset_backoff_threshold_ms: Option<u64>,
    /// Exponential delay: share of each delay it may move either way, in [0, 1].
    pub jitter_factor: Option<f64>,
    /// Failure rate: failures allowed within the interval.
    pub max_failures_per_interval: Option<u32>,
    /// Failure rate: the interval, ms.
    pub failure_rate_interval_ms: Option<u64>,
}

/// Flink 1.20's defaults.
const FIXED_DELAY_ATTEMPTS: u32 = 1;
const DELAY_MS: u64 = 1_000;
const MAX_BACKOFF_MS: u64 = 60_000;
const BACKOFF_MULTIPLIER: f64 = 1.5;
const RESET_BACKOFF_THRESHOLD_MS: u64 = 3_600_000;
const JITTER_FACTOR: f64 = 0.1;
const MAX_FAILURES_PER_INTERVAL: u32 = 1;
const FAILURE_RATE_INTERVAL_MS: u64 = 60_000;

impl RestartStrategyOptions {
    /// The strategy these options configure, as Flink's `RestartBackoffTimeStrategyFactoryLoader`
    /// decides it for a job (`checkpointing`: whether the job checkpoints; no Conflux job does,
    /// so callers pass false): the configured type with its options, else (an attempt count
    /// alone: exponential delay, Conflux's rule) Flink's default, exponential delay with its
    /// defaults when checkpointing, otherwise none. O(1).
    ///
    /// # Errors
    /// [`RestartOptionsError::NotApplicable`] for an option the strategy does not use (any
    /// option but attempts without a type); [`RestartOptionsError::OutOfRange`] for a value
    /// Flink's strategy refuses (fixed delay: any attempts and delay; failure rate: at least 1
    /// failure per interval of at least 1 ms; exponential delay: initial and max at least 1 ms,
    /// initial at most max, multiplier above 1, reset threshold at least 1 ms, jitter in
    /// [0, 1], at least 1 attempt).
    pub fn load(&self, checkpointing: bool) -> Result<RestartStrategy, RestartOptionsError> {
        let strategy = match (self.strategy, self.attempts) {
            (Some(t), _) => t,
            (None, Some(_)) => RestartStrategyType::ExponentialDelay,
            (None, None) => {
                self.check_applicable(RestartStrategyType::None)?;
                return Ok(if checkpointing {
                    RestartStrategy::exponential_default(FLINK_MAX_ATTEMPTS)
                } else {
                    RestartStrategy::None
                });
            }
        };
        self.check_applicable(strategy)?;
        let out_of_range = |option: RestartOption, value: String, reason| {
            Err(RestartOptionsError::OutOfRange {
                option,
                key: option.key(strategy).unwrap_or("restart-strategy"),
                value,
                reason,
            })
        };
        match strategy {
            RestartStrategyType::None => Ok(RestartStrategy::None),
            RestartStrategyType::FixedDelay => Ok(RestartStrategy::FixedDelay {
                attempts: self.attempts.unwrap_or(FIXED_DELAY_ATTEMPTS),
                delay_ms: self.delay_ms.unwrap_or(DELAY_MS),
            }),
            RestartStrategyType::FailureRate => {
                let max_failures = self
                    .max_failures_per_interval
                    .unwrap_or(MAX_FAILURES_PER_INTERVAL);
                let interval_ms = self
                    .failure_rate_interval_ms
                    .unwrap_or(FAILURE_RATE_INTERVAL_MS);
                if max_failures == 0 {
                    return out_of_range(
                        RestartOption::MaxFailuresPerInterval,
                        max_failures.to_string(),
                        "is not at least 1",
                    );
                }
                if interval_ms == 0 {
                    return out_of_range(
                        RestartOption::FailureRateInterval,
                        "0 ms".to_owned(),
                        "is not at least 1 ms",
                    );
                }
                Ok(RestartStrategy::FailureRate {
                    max_failures,
                    interval_ms,
                    delay_ms: self.delay_ms.unwrap_or(DELAY_MS),
                })
            }
            RestartStrategyType::ExponentialDelay => {
                let initial_ms = self.delay_ms.unwrap_or(DELAY_MS);
                let max_ms = self.max_delay_ms.unwrap_or(MAX_BACKOFF_MS);
                let multiplier = self.backoff_multiplier.unwrap_or(BACKOFF_MULTIPLIER);
                let reset_after_ms = self
                    .reset_backoff_threshold_ms
                    .unwrap_or(RESET_BACKOFF_THRESHOLD_MS);
                let jitter_factor = self.jitter_factor.unwrap_or(JITTER_FACTOR);
                let attempts = self.attempts.unwrap_or(FLINK_MAX_ATTEMPTS);
                if initial_ms == 0 {
                    return out_of_range(
                        RestartOption::Delay,
                        "0 ms".to_owned(),
                        "is not at least 1 ms",
                    );
                }
                if max_ms < initial_ms {
                    return out_of_range(
                        RestartOption::MaxDelay,
                        format!("{max_ms} ms"),
                        "is below the initial backoff",
                    );
                }
                if !(multiplier > 1.0 && multiplier.is_finite()) {
                    return out_of_range(
                        RestartOption::BackoffMultiplier,
                        multiplier.to_string(),
                        "is not a finite number above 1",
                    );
                }
                if reset_after_ms == 0 {
                    return out_of_range(
                        RestartOption::ResetBackoffThreshold,
                        "0 ms".to_owned(),
                        "is not at least 1 ms",
                    );
                }
                if !(0.0..=1.0).contains(&jitter_factor) {
                    return out_of_range(
                        RestartOption::JitterFactor,
                        jitter_factor.to_string(),
                        "is not between 0 and 1",
                    );
                }
                if attempts == 0 {
                    return out_of_range(
                        RestartOption::Attempts,
                        "0".to_owned(),
                        "is not at least 1",
                    );
                }
                Ok(RestartStrategy::ExponentialDelay {
                    initial_ms,
                    max_ms,
                    multiplier,
                    reset_after_ms,
                    jitter_factor,
                    attempts,
                })
            }
        }
    }

    /// Refuses an option `strategy` has no key for.
    fn check_applicable(&self, strategy: RestartStrategyType) -> Result<(), RestartOptionsError> {
        let given = [
            (RestartOption::Attempts, self.attempts.is_some()),
            (RestartOption::Delay, self.delay_ms.is_some()),
            (RestartOption::MaxDelay, self.max_delay_ms.is_some()),
            (
                RestartOption::BackoffMultiplier,
                self.backoff_multiplier.is_some(),
            ),
            (
                RestartOption::ResetBackoffThreshold,
                self.reset_backoff_threshold_ms.is_some(),
            ),
            (RestartOption::JitterFactor, self.jitter_factor.is_some()),
            (
                RestartOption::MaxFailuresPerInterval,
                self.max_failures_per_interval.is_some(),
            ),
            (
                RestartOption::FailureRateInterval,
                self.failure_rate_interval_ms.is_some(),
            ),
        ];
        match given
            .into_iter()
            .find(|&(option, set)| set && option.key(strategy).is_none())
        {
            Some((option, _)) => Err(RestartOptionsError::NotApplicable { option, strategy }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(strategy: RestartStrategyType) -> RestartStrategyOptions {
        RestartStrategyOptions {
            strategy: Some(strategy),
            ..RestartStrategyOptions::default()
        }
    }

    /// Flink's `RestartBackoffTimeStrategyFactoryLoaderTest`: a configured type wins, and each
    /// gets Flink 1.20's defaults (`...SpecifiedInClusterConfig`).
    #[test]
    fn a_configured_type_gets_its_strategy_with_flinks_defaults() {
        let load = |t| typed(t).load(false).expect("loads");
        assert_eq!(load(RestartStrategyType::None), RestartStrategy::None);
        assert_eq!(
            load(RestartStrategyType::FixedDelay),
            RestartStrategy::FixedDelay {
                attempts: 1,
                delay_ms: 1_000
            }
        );
        assert_eq!(
            load(RestartStrategyType::FailureRate),
            RestartStrategy::FailureRate {
                max_failures: 1,
                interval_ms: 60_000,
                delay_ms: 1_000
            }
        );
        assert_eq!(
            load(RestartStrategyType::ExponentialDelay),
            RestartStrategy::ExponentialDelay {
                initial_ms: 1_000,
                max_ms: 60_000,
                multiplier: 1.5,
                reset_after_ms: 3_600_000,
                jitter_factor: 0.1,
                attempts: FLINK_MAX_ATTEMPTS,
            }
        );
        // Checkpointing changes only the default, never a configured type.
        assert_eq!(
            typed(RestartStrategyType::None).load(true),
            Ok(RestartStrategy::None)
        );
    }

    /// `testNoStrategySpecifiedWhenCheckpointingDisabled` and `...Enabled`: without a type, no
    /// restart, or exponential delay with every default when the job checkpoints.
    #[test]
    fn without_a_type_the_default_depends_on_checkpointing() {
        let none = RestartStrategyOptions::default();
        assert_eq!(none.load(false), Ok(RestartStrategy::None));
        assert_eq!(
            none.load(true),
            Ok(RestartStrategy::exponential_default(FLINK_MAX_ATTEMPTS))
        );
    }

    /// `testInvalidStrategySpecified...`: an unknown type is an error; Flink's other spellings
    /// are accepted, in any case.
    #[test]
    fn types_are_read_as_flink_reads_them() {
        for (name, t) in [
            ("none", RestartStrategyType::None),
            ("OFF", RestartStrategyType::None),
            ("disable", RestartStrategyType::None),
            ("fixed-delay", RestartStrategyType::FixedDelay),
            ("FixedDelay", RestartStrategyType::FixedDelay),
            ("failure-rate", RestartStrategyType::FailureRate),
            ("failurerate", RestartStrategyType::FailureRate),
            ("exponential-delay", RestartStrategyType::ExponentialDelay),
            ("exponentialdelay", RestartStrategyType::ExponentialDelay),
        ] {
            assert_eq!(name.parse::<RestartStrategyType>(), Ok(t), "{name}");
        }
        assert_eq!(
            "invalid-strategy".parse::<RestartStrategyType>(),
            Err(RestartOptionsError::UnknownStrategy(
                "invalid-strategy".to_owned()
            ))
        );
    }

    /// An attempt count alone means exponential delay with it (Conflux's rule); with a type it
    /// is that type's count.
    #[test]
    fn attempts_alone_mean_exponential_delay() {
        let attempts = RestartStrategyOptions {
            attempts: Some(5),
            ..RestartStrategyOptions::default()
        };
        assert_eq!(
            attempts.load(false),
            Ok(RestartStrategy::exponential_default(5))
        );
        let fixed = RestartStrategyOptions {
            strategy: Some(RestartStrategyType::FixedDelay),
            attempts: Some(3),
            delay_ms: Some(0),
            ..RestartStrategyOptions::default()
        };
        assert_eq!(
            fixed.load(false),
            Ok(RestartStrategy::FixedDelay {
                attempts: 3,
                delay_ms: 0
            })
        );
    }

    /// Options the strategy does not use and values Flink's strategies refuse name the option.
    #[test]
    fn inapplicable_options_and_bad_values_are_refused() {
        let delay_alone = RestartStrategyOptions {
            delay_ms: Some(5),
            ..RestartStrategyOptions::default()
        };
        assert_eq!(
            delay_alone.load(false),
            Err(RestartOptionsError::NotApplicable {
                option: RestartOption::Delay,
                strategy: RestartStrategyType::None
            })
        );
        let multiplier_of_fixed = RestartStrategyOptions {
            backoff_multiplier: Some(2.0),
            ..typed(RestartStrategyType::FixedDelay)
        };
        assert_eq!(
            multiplier_of_fixed.load(false).unwrap_err().to_string(),
            "the backoff multiplier option does not apply to restart strategy fixed-delay"
        );
        let cases = [
            (
                RestartStrategyOptions {
                    backoff_multiplier: Some(1.0),
                    ..typed(RestartStrategyType::ExponentialDelay)
                },
                "restart-strategy.exponential-delay.backoff-multiplier 1 is not a finite number above 1",
            ),
            (
                RestartStrategyOptions {
                    delay_ms: Some(2_000),
                    max_delay_ms: Some(1_000),
                    ..typed(RestartStrategyType::ExponentialDelay)
                },
                "restart-strategy.exponential-delay.max-backoff 1000 ms is below the initial backoff",
            ),
            (
                RestartStrategyOptions {
                    jitter_factor: Some(1.5),
                    ..typed(RestartStrategyType::ExponentialDelay)
                },
                "restart-strategy.exponential-delay.jitter-factor 1.5 is not between 0 and 1",
            ),
            (
                RestartStrategyOptions {
                    max_failures_per_interval: Some(0),
                    ..typed(RestartStrategyType::FailureRate)
                },
                "restart-strategy.failure-rate.max-failures-per-interval 0 is not at least 1",
            ),
        ];
        for (options, message) in cases {
            assert_eq!(options.load(false).unwrap_err().to_string(), message);
        }
    }
}
