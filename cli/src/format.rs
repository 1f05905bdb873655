//! `Format`: the report format every command takes (`--format text|json`), below the commands
//! and the failure reporting that follow it.

use clap::ValueEnum;

/// Report format.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// For people.
    Text,
    /// One JSON document on stdout.
    Json,
}
