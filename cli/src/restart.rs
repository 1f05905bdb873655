//! The restart strategy flags (Flink 1.20's `restart-strategy.*` options) of `run`, `simulate`,
//! `cluster` and `jobmanager`. Which strategy they make is the scheduler's rule
//! ([`RestartStrategyOptions::load`], Flink's `RestartBackoffTimeStrategyFactoryLoader`): none
//! unless configured, `--restart-attempts N` alone is exponential delay with N attempts.

use conflux_scheduler::{
    RestartOption, RestartOptionsError, RestartStrategy, RestartStrategyOptions,
    RestartStrategyType,
};

use crate::Failure;

/// Restart strategy flags, flattened into the commands that run jobs.
#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub(crate) struct RestartArgs {
    /// Restart strategy (Flink's `restart-strategy.type`; default none, Flink's without
    /// checkpointing: the first task failure fails the job; Flink's other spellings such as
    /// `fixeddelay` or `off` are accepted too).
    #[arg(long, value_parser = parse_strategy)]
    restart_strategy: Option<RestartStrategyType>,
    /// Restarts allowed: fixed-delay's `attempts` (default 1) or exponential-delay's
    /// `attempts-before-reset-backoff` (default 2^31 - 1); alone, it means exponential-delay.
    #[arg(long)]
    restart_attempts: Option<u32>,
    /// Delay before a restart, ms: fixed-delay's and failure-rate's `delay`, exponential-delay's
    /// `initial-backoff` (default 1,000).
    #[arg(long)]
    restart_delay_ms: Option<u64>,
    /// Exponential-delay: the largest delay, ms (`max-backoff`, default 60,000).
    #[arg(long)]
    restart_max_delay_ms: Option<u64>,
    /// Exponential-delay: growth of the delay per restart, above 1 (`backoff-multiplier`,
    /// default 1.5).
    #[arg(long)]
    restart_backoff_multiplier: Option<f64>,
    /// Exponential-delay: after this long without failure delays and attempts start over, ms
    /// (`reset-backoff-threshold`, default 3,600,000).
    #[arg(long)]
    restart_reset_backoff_threshold_ms: Option<u64>,
    /// Exponential-delay: each delay moves by up to this share of it either way, 0 to 1, drawn
    /// from the seed (`jitter-factor`, default 0.1).
    #[arg(long)]
    restart_jitter_factor: Option<f64>,
    /// Failure-rate: failures allowed within the interval (`max-failures-per-interval`,
    /// default 1).
    #[arg(long)]
    restart_max_failures_per_interval: Option<u32>,
    /// Failure-rate: the interval, ms (`failure-rate-interval`, default 60,000).
    #[arg(long)]
    restart_failure_rate_interval_ms: Option<u64>,
}

/// `--restart-strategy NAME`, as Flink reads `restart-strategy.type`.
fn parse_strategy(name: &str) -> Result<RestartStrategyType, String> {
    name.parse().map_err(|e: RestartOptionsError| e.to_string())
}

impl RestartArgs {
    /// The options as configured.
    fn options(&self) -> RestartStrategyOptions {
        RestartStrategyOptions {
            strategy: self.restart_strategy,
            attempts: self.restart_attempts,
            delay_ms: self.restart_delay_ms,
            max_delay_ms: self.restart_max_delay_ms,
            backoff_multiplier: self.restart_backoff_multiplier,
            reset_backoff_threshold_ms: self.restart_reset_backoff_threshold_ms,
            jitter_factor: self.restart_jitter_factor,
            max_failures_per_interval: self.restart_max_failures_per_interval,
            failure_rate_interval_ms: self.restart_failure_rate_interval_ms,
        }
    }

    /// Whether any restart flag was given.
    pub(crate) fn given(&self) -> bool {
        self.options() != RestartStrategyOptions::default()
    }

    /// The restart strategy the flags configure (no job here checkpoints, so without flags:
    /// none).
    ///
    /// # Errors
    /// An input failure naming the flag: one the strategy does not use, or a value out of
    /// range.
    pub(crate) fn strategy(&self) -> Result<RestartStrategy, Failure> {
        self.options().load(false).map_err(|e| {
            let message = match &e {
                RestartOptionsError::NotApplicable { option, strategy } => {
                    let flag = flag(*option);
                    if *strategy == RestartStrategyType::None && self.restart_strategy.is_none() {
                        format!("{flag} needs --restart-strategy (without it no job restarts)")
                    } else {
                        format!(
                            "{flag} does not apply to --restart-strategy {strategy} ({})",
                            uses(*option)
                        )
                    }
                }
                other => match other.option() {
                    Some(option) => format!("{}: {other}", flag(option)),
                    None => other.to_string(),
                },
            };
            Failure::input(anyhow::anyhow!(message))
        })
    }
}

/// The flag of an option.
fn flag(option: RestartOption) -> &'static str {
    match option {
        RestartOption::Attempts => "--restart-attempts",
        RestartOption::Delay => "--restart-delay-ms",
        RestartOption::MaxDelay => "--restart-max-delay-ms",
        RestartOption::BackoffMultiplier => "--restart-backoff-multiplier",
        RestartOption::ResetBackoffThreshold => "--restart-reset-backoff-threshold-ms",
        RestartOption::JitterFactor => "--restart-jitter-factor",
        RestartOption::MaxFailuresPerInterval => "--restart-max-failures-per-interval",
        RestartOption::FailureRateInterval => "--restart-failure-rate-interval-ms",
    }
}

/// Which strategies use an option, for messages.
fn uses(option: RestartOption) -> String {
    let users: Vec<&str> = [
        RestartStrategyType::FixedDelay,
        RestartStrategyType::FailureRate,
        RestartStrategyType::ExponentialDelay,
    ]
    .into_iter()
    .filter(|&t| option.key(t).is_some())
    .map(RestartStrategyType::as_str)
    .collect();
    format!("it is an option of {}", users.join(" and "))
}
