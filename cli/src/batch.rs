//! The flags of adaptive batch scheduling shared by `run`, `cluster` and `submit`: Flink 1.20's
//! `execution.batch.adaptive.auto-parallelism.*` options, and the bytes synthetic tasks write
//! (what decides undecided vertices when the tasks do not move data).

use anyhow::anyhow;
use conflux_adaptive::BatchExecutionOptions;

use crate::Failure;

/// Adaptive batch options, flattened into the commands that run jobs.
#[derive(clap::Args, Clone)]
#[command(next_help_heading = crate::headings::ADAPTIVE)]
pub(crate) struct BatchArgs {
    /// Lower bound of a decided parallelism (Flink's `...auto-parallelism.min-parallelism`).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) min_parallelism: u32,
    /// Upper bound of a decided parallelism, and the subpartitions a producer writes for a
    /// consumer decided later (`...auto-parallelism.max-parallelism`).
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=32_768))]
    pub(crate) max_parallelism: u32,
    /// Bytes one subtask is meant to read (`...auto-parallelism.avg-data-volume-per-task`;
    /// default 16 MiB).
    #[arg(long, default_value_t = 16 << 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) avg_data_volume_per_task: u64,
    /// Parallelism of undecided sources (`...auto-parallelism.default-source-parallelism`;
    /// default: the max parallelism, as Flink 1.20).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=32_768))]
    pub(crate) default_source_parallelism: Option<u32>,
    /// Bytes every source vertex of synthetic tasks produces in all, over its subtasks, unless
    /// its job graph vertex gives `source_bytes` (default 1 GiB).
    #[arg(long, default_value_t = conflux_sim::DEFAULT_SOURCE_BYTES)]
    pub(crate) source_bytes: u64,
    /// Zipf exponent of synthetic tasks' bytes over subpartitions (0: even; 1.0: the k-th
    /// hottest subpartition gets 1/k of the hottest's share).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) skew: f64,
}

impl BatchArgs {
    /// The decider's options.
    ///
    /// # Errors
    /// When `--max-parallelism` is below `--min-parallelism`.
    pub(crate) fn options(&self) -> Result<BatchExecutionOptions, Failure> {
        let options = BatchExecutionOptions {
            min_parallelism: self.min_parallelism,
            max_parallelism: self.max_parallelism,
            avg_data_volume_per_task: self.avg_data_volume_per_task,
            default_source_parallelism: self.default_source_parallelism,
        };
        options
            .validate()
            .map_err(|e| Failure::input(anyhow!("--min-parallelism / --max-parallelism: {e}")))?;
        Ok(options)
    }

    /// The bytes model of synthetic tasks.
    ///
    /// # Errors
    /// When `--skew` is negative or not finite.
    pub(crate) fn bytes(&self) -> Result<conflux_sim::BytesModel, Failure> {
        if !(self.skew.is_finite() && self.skew >= 0.0) {
            return Err(Failure::input(anyhow!(
                "--skew {} is not a finite exponent of 0 or more",
                self.skew
            )));
        }
        Ok(conflux_sim::BytesModel {
            source_bytes: self.source_bytes,
            skew: self.skew,
        })
    }
}
