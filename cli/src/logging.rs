//! Diagnostics on standard error through `tracing`, filtered by `RUST_LOG`. One-shot commands
//! log warnings by default (their phases at debug level); the daemons (`jobmanager`,
//! `taskmanager`, `serve`, `blob-server`) log at INFO by default, as Flink's processes do:
//! where they listen, registrations, submissions and job state changes. Reports stay on
//! standard output.

use tracing_subscriber::filter::{EnvFilter, LevelFilter};

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// One line of text per event: time, level, target, message, fields.
    #[default]
    Text,
    /// One JSON object per line (tracing-subscriber's JSON layer, fields flattened):
    /// `timestamp`, `level`, `target`, `message` and the event's fields (`job`, `vertex`, ...).
    Json,
}

/// The log flags of the long-running commands.
#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub(crate) struct LogArgs {
    /// Log lines on standard error as text or as JSON objects, one per line.
    #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = LogFormat::Text)]
    pub(crate) log_format: LogFormat,
}

/// The daemons, which log at INFO by default.
const DAEMONS: [&str; 4] = ["jobmanager", "taskmanager", "serve", "blob-server"];

/// Installs the global subscriber for the command line `args` (the program first), before it is
/// parsed, so that what parsing and the configuration warn about is logged: INFO for a daemon
/// (the first argument not starting with `-` is the subcommand), warnings otherwise; JSON
/// when `--log-format json` (or `--log-format=json`) is given.
pub(crate) fn init_for(args: &[std::ffi::OsString]) {
    let words: Vec<&str> = args.iter().skip(1).filter_map(|a| a.to_str()).collect();
    let daemon = words
        .iter()
        .find(|w| !w.starts_with('-'))
        .is_some_and(|w| DAEMONS.contains(w));
    let json = words
        .windows(2)
        .any(|w| w[0] == "--log-format" && w[1] == "json")
        || words.contains(&"--log-format=json");
    init(
        if daemon {
            LevelFilter::INFO
        } else {
            LevelFilter::WARN
        },
        if json {
            LogFormat::Json
        } else {
            LogFormat::Text
        },
    );
}

/// Installs the global subscriber: `RUST_LOG` directives (e.g. `debug`,
/// `conflux=debug,conflux_blob=info`), `default` when unset; invalid directives are ignored
/// rather than failing the command. Lines go to standard error, so that stdout carries only
/// the report.
fn init(default: LevelFilter, format: LogFormat) {
    let mut filter = EnvFilter::builder()
        .with_default_directive(default.into())
        .from_env_lossy();
    // A command that only warns does not pass on the ZooKeeper client's retries (it reports
    // what they end in); a daemon does.
    if default == LevelFilter::WARN && std::env::var_os("RUST_LOG").is_none() {
        if let Ok(quiet) = "zookeeper_client=error".parse() {
            filter = filter.add_directive(quiet);
        }
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second installation (none happens) would be the only error: nothing to report then.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .try_init(),
    };
}
