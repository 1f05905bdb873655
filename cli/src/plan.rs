//! `conflux plan ...` and `conflux serve` (being built).

use crate::{Failure, Format};

/// `conflux plan` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum PlanCommand {
    /// Plan statistics.
    Stats {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

impl PlanCommand {
    pub(crate) fn format(&self) -> Format {
        match self {
            PlanCommand::Stats { format } => *format,
        }
    }
}

/// Options of `conflux serve`.
#[derive(clap::Args)]
pub(crate) struct ServeArgs {}

pub(crate) fn run(_command: &PlanCommand) -> Result<(), Failure> {
    Err(Failure::Work(anyhow::anyhow!("plan is not built yet")))
}

pub(crate) fn serve(_args: &ServeArgs) -> Result<(), Failure> {
    Err(Failure::Work(anyhow::anyhow!("serve is not built yet")))
}
