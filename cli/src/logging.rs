//! Diagnostics on standard error through `tracing`, filtered by `RUST_LOG` (default: warnings).
//! Every command logs its phases at debug level; reports stay on standard output.

use tracing_subscriber::filter::{EnvFilter, LevelFilter};

/// Installs the global subscriber: `RUST_LOG` directives (e.g. `debug`,
/// `conflux=debug,conflux_blob=info`), warnings and errors when unset; invalid directives are
/// ignored rather than failing the command. Lines go to standard error, so that stdout carries
/// only the report.
pub(crate) fn init() {
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::WARN.into())
        .from_env_lossy();
    // A second installation (none happens) would be the only error: nothing to report then.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
