//! `OffloadArgs`: the flags that choose which shuffle descriptor groups go to the blob server
//! (`--offload-rule`, `--offload-threshold`), shared by the commands that build descriptors.

use clap::ValueEnum;
use conflux_deploy::{OffloadRule, DEFAULT_OFFLOAD_MIN_SIZE, DEFAULT_OFFLOAD_THRESHOLD_NUM};

use crate::Failure;

/// Which shuffle descriptor groups go to the blob server.
#[derive(clap::Args)]
#[command(next_help_heading = crate::headings::DESCRIPTORS)]
pub(crate) struct OffloadArgs {
    /// `count`: descriptors x consumers >= threshold (Flink 1.18+, default 2048 x 2048);
    /// `bytes`: compressed bytes >= threshold (Flink 1.14-1.17, default 1 MiB); `never`.
    #[arg(long, value_enum, default_value_t = OffloadRuleArg::Count)]
    pub(crate) offload_rule: OffloadRuleArg,
    /// Threshold of the rule (a count, or bytes).
    #[arg(long)]
    pub(crate) offload_threshold: Option<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OffloadRuleArg {
    Count,
    Bytes,
    Never,
}

impl OffloadArgs {
    pub(crate) fn rule(&self) -> Result<OffloadRule, Failure> {
        Ok(match self.offload_rule {
            OffloadRuleArg::Count => OffloadRule::DescriptorCount {
                threshold: self
                    .offload_threshold
                    .unwrap_or(DEFAULT_OFFLOAD_THRESHOLD_NUM),
            },
            OffloadRuleArg::Bytes => OffloadRule::CompressedBytes {
                min_size: match self.offload_threshold {
                    None => DEFAULT_OFFLOAD_MIN_SIZE,
                    Some(n) => usize::try_from(n).map_err(|_| {
                        Failure::Input(anyhow::anyhow!("--offload-threshold {n} is too large"))
                    })?,
                },
            },
            OffloadRuleArg::Never => OffloadRule::Never,
        })
    }
}
