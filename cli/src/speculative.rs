//! The speculative execution flags (Flink 1.20's `execution.batch.speculative.*` and
//! `slow-task-detector.*` options) of `run`, `cluster` and `jobmanager`, and the slow
//! TaskManagers of `run`'s simulated cluster and of `cluster`'s real one.

use conflux_scheduler::SpeculativeExecutionOptions;
use conflux_sim::SlowTaskManagers;

use crate::Failure;

/// Speculative execution and slow TaskManagers, flattened into the flags of `conflux run` and
/// `conflux cluster`.
#[derive(clap::Args)]
pub(crate) struct SpeculativeArgs {
    #[command(flatten)]
    pub(crate) options: SpeculativeOptionsArgs,
    #[command(flatten)]
    pub(crate) slow: SlowTaskManagersArgs,
}

/// Speculative execution, flattened into the flags of `conflux run`, `cluster` and
/// `jobmanager`.
#[derive(clap::Args)]
#[command(next_help_heading = crate::headings::SPECULATIVE)]
pub(crate) struct SpeculativeOptionsArgs {
    /// Run speculative attempts of slow tasks (Flink's `execution.batch.speculative.enabled`;
    /// batch jobs only).
    #[arg(long)]
    speculative: bool,
    /// At most this many attempts of one task at once, the original included
    /// (`execution.batch.speculative.max-concurrent-executions`).
    #[arg(long, default_value_t = 2)]
    speculative_max_concurrent_executions: u32,
    /// How long a TaskManager that ran a slow task gives no new slots, ms
    /// (`execution.batch.speculative.block-slow-node-duration`; 0 blocks nothing).
    #[arg(long, default_value_t = 60_000)]
    speculative_block_slow_node_duration_ms: u64,
    /// How often slow tasks are looked for, ms (`slow-task-detector.check-interval`).
    #[arg(long, default_value_t = 1_000)]
    slow_task_check_interval_ms: u64,
    /// A task that ran shorter than this is never slow, ms
    /// (`slow-task-detector.execution-time.baseline-lower-bound`).
    #[arg(long, default_value_t = 60_000)]
    slow_task_baseline_lower_bound_ms: u64,
    /// Share of a vertex's tasks that must have finished before its tasks can be slow, in
    /// [0, 1) (`slow-task-detector.execution-time.baseline-ratio`).
    #[arg(long, default_value_t = 0.75)]
    slow_task_baseline_ratio: f64,
    /// A task is slow past the median execution time of the first finished ones times this
    /// (`slow-task-detector.execution-time.baseline-multiplier`).
    #[arg(long, default_value_t = 1.5)]
    slow_task_baseline_multiplier: f64,
}

/// Slow TaskManagers, for tests and demonstrations of speculative execution.
#[derive(clap::Args)]
#[command(next_help_heading = crate::headings::SPECULATIVE)]
pub(crate) struct SlowTaskManagersArgs {
    /// TaskManagers whose tasks take --slowdown times as long (`run`: a seeded choice among
    /// those started with the job; `cluster`: the first ones it starts).
    #[arg(long, default_value_t = 0)]
    pub(crate) slow_task_managers: u32,
    /// How many times as long tasks take on a slow TaskManager (1 to 1,000).
    #[arg(long, default_value_t = 10.0)]
    pub(crate) slowdown: f64,
}

impl SpeculativeArgs {
    /// The scheduler's speculative execution options (see [`SpeculativeOptionsArgs::options`]).
    pub(crate) fn options(&self) -> Result<SpeculativeExecutionOptions, Failure> {
        self.options.options()
    }

    /// The simulated cluster's slow TaskManagers (see
    /// [`SlowTaskManagersArgs::slow_task_managers`]).
    pub(crate) fn slow_task_managers(&self) -> Result<SlowTaskManagers, Failure> {
        self.slow.slow_task_managers()
    }
}

impl SpeculativeOptionsArgs {
    /// The scheduler's speculative execution options.
    ///
    /// # Errors
    /// An input failure naming an option out of its range.
    pub(crate) fn options(&self) -> Result<SpeculativeExecutionOptions, Failure> {
        let options = SpeculativeExecutionOptions {
            enabled: self.speculative,
            max_concurrent_executions: self.speculative_max_concurrent_executions,
            block_slow_node_duration_ms: self.speculative_block_slow_node_duration_ms,
            check_interval_ms: self.slow_task_check_interval_ms,
            baseline_lower_bound_ms: self.slow_task_baseline_lower_bound_ms,
            baseline_ratio: self.slow_task_baseline_ratio,
            baseline_multiplier: self.slow_task_baseline_multiplier,
        };
        options
            .validate()
            .map_err(|e| Failure::Input(anyhow::anyhow!(with_flag(e.to_string()))))?;
        Ok(options)
    }
}

impl SlowTaskManagersArgs {
    /// The simulated cluster's slow TaskManagers.
    ///
    /// # Errors
    /// An input failure for a slowdown out of range (or not a number).
    pub(crate) fn slow_task_managers(&self) -> Result<SlowTaskManagers, Failure> {
        check_slowdown(self.slowdown)?;
        Ok(SlowTaskManagers {
            count: self.slow_task_managers,
            slowdown: self.slowdown,
        })
    }
}

/// The largest `--slowdown`: a task of 1-2 s takes at most about half an hour; larger factors
/// overflowed the times they multiply (a slow TaskManager became a fast one).
pub(crate) const MAX_SLOWDOWN: f64 = 1_000.0;

/// `--slowdown F`: a factor from 1 to [`MAX_SLOWDOWN`].
///
/// # Errors
/// An input failure for a slowdown out of that range (or not a number).
pub(crate) fn check_slowdown(slowdown: f64) -> Result<(), Failure> {
    if (1.0..=MAX_SLOWDOWN).contains(&slowdown) {
        Ok(())
    } else {
        // Scientific notation for the huge ones, so that the message stays one short line.
        let shown = if slowdown.abs() >= 1e6 {
            format!("{slowdown:e}")
        } else {
            slowdown.to_string()
        };
        Err(Failure::Input(anyhow::anyhow!(
            "--slowdown {shown} is not a factor from 1 to {MAX_SLOWDOWN}"
        )))
    }
}

/// The flag of each Flink option the speculative options' errors name.
const FLAGS: [(&str, &str); 6] = [
    (
        "max-concurrent-executions",
        "--speculative-max-concurrent-executions",
    ),
    (
        "block-slow-node-duration",
        "--speculative-block-slow-node-duration-ms",
    ),
    ("check-interval", "--slow-task-check-interval-ms"),
    (
        "baseline-lower-bound",
        "--slow-task-baseline-lower-bound-ms",
    ),
    ("baseline-ratio", "--slow-task-baseline-ratio"),
    ("baseline-multiplier", "--slow-task-baseline-multiplier"),
];

/// An options error that names the flag before the Flink option it states.
fn with_flag(message: String) -> String {
    match FLAGS.iter().find(|(key, _)| message.contains(key)) {
        Some((_, flag)) => format!("{flag}: {message}"),
        None => message,
    }
}
