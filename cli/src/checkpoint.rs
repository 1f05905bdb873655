//! `conflux checkpoint-sim` and `conflux local-dirs` (being built).

use crate::{Failure, Format};

/// Options of `conflux checkpoint-sim`.
#[derive(clap::Args)]
pub(crate) struct CheckpointSimArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

/// Options of `conflux local-dirs`.
#[derive(clap::Args)]
pub(crate) struct LocalDirsArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

pub(crate) fn run_sim(_args: &CheckpointSimArgs) -> Result<(), Failure> {
    Err(Failure::Work(anyhow::anyhow!("checkpoint-sim is not built yet")))
}

pub(crate) fn run_local_dirs(_args: &LocalDirsArgs) -> Result<(), Failure> {
    Err(Failure::Work(anyhow::anyhow!("local-dirs is not built yet")))
}
