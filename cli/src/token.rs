//! The JobManager's shared secret: `--token`, `CONFLUX_TOKEN`, the configuration's
//! `conflux.token`, or `--token-file`. Never printed: `--help` hides the environment's value,
//! the `Debug` of the flags hides it, and `cluster` hands it to its TaskManagers in their
//! environment, not on their command lines (which `ps` shows to every user).

use std::path::PathBuf;

use anyhow::anyhow;

use crate::Failure;

/// The environment variable of the shared secret.
pub(crate) const TOKEN_ENV: &str = "CONFLUX_TOKEN";

/// The shared-secret flags of the commands that talk to a JobManager (or are one).
#[derive(clap::Args, Clone, Default)]
#[command(next_help_heading = crate::headings::CONFIG)]
pub(crate) struct TokenArgs {
    /// The JobManager's shared secret (`ps` shows a command line to every user of the host:
    /// prefer --token-file, CONFLUX_TOKEN or `conflux.token` in --config).
    #[arg(long, env = TOKEN_ENV, hide_env_values = true)]
    token: Option<String>,
    /// Read the shared secret from this file (its first line); wins over --token, CONFLUX_TOKEN
    /// and `conflux.token`.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
}

impl std::fmt::Debug for TokenArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenArgs")
            .field(
                "token",
                &self.token.as_ref().map(|_| conflux_config::Secret::HIDDEN),
            )
            .field("token_file", &self.token_file)
            .finish()
    }
}

impl TokenArgs {
    /// The secret, if any.
    ///
    /// # Errors
    /// An input failure when `--token-file` cannot be read or its first line is empty (the
    /// message names the file, never its content).
    pub(crate) fn token(&self) -> Result<Option<String>, Failure> {
        let Some(path) = &self.token_file else {
            return Ok(self.token.clone());
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::input(anyhow!("--token-file {}: {e}", path.display())))?;
        let line = text.lines().next().unwrap_or("").trim();
        if line.is_empty() {
            return Err(Failure::input(anyhow!(
                "--token-file {}: the first line is empty",
                path.display()
            )));
        }
        Ok(Some(line.to_owned()))
    }
}
