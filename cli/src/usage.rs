//! Command-line parsing errors as the other failures are reported: one line on stderr (exit 2)
//! and, when `--format json` was asked for, `{"error": ...}` on stdout. `--help` and `--version`
//! print to stdout and exit 0.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::error::ErrorKind;

use crate::failure::{escape_controls, report_error};
use crate::output;

/// Reports a clap error and gives the exit code.
pub(crate) fn exit(error: &clap::Error, args: &[OsString]) -> ExitCode {
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            match output::print(&error.render().to_string()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(failure) => failure.exit(crate::Format::Text),
            }
        }
        _ => {
            let message = escape_controls(&one_line(error));
            tracing::debug!(kind = ?error.kind(), "command line refused");
            report_error(&message, wants_json(args));
            ExitCode::from(2)
        }
    }
}

/// clap's message without its `Usage:` block and `--help` hint; a `tip:` joins the line in
/// parentheses, and so does a `[possible values: ...]` list. clap separates these blocks by blank lines, so a newline inside a quoted
/// argument stays in the message (to be escaped) rather than cutting it.
fn one_line(error: &clap::Error) -> String {
    if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return "a subcommand is required (see --help)".to_owned();
    }
    let rendered = error.render().to_string();
    let mut blocks = rendered
        .split("\n\n")
        .map(str::trim)
        .filter(|b| !b.is_empty());
    let first = blocks.next().unwrap_or("invalid command line");
    // clap's own continuation lines are indented (`  [possible values: ...]`): they join the
    // line; any other newline came from an argument.
    let first = first.replace("\n  ", " ");
    let mut message = first.strip_prefix("error: ").unwrap_or(&first).to_owned();
    for tip in blocks.filter_map(|b| b.strip_prefix("tip: ")) {
        message.push_str(&format!(" (tip: {tip})"));
    }
    message
}

/// Whether the raw arguments ask for `--format json` (either spelling), read without clap since
/// clap has just refused them.
fn wants_json(args: &[OsString]) -> bool {
    args.iter()
        .zip(args.iter().skip(1))
        .any(|(a, b)| a == "--format" && b == "json")
        || args.iter().any(|a| a == "--format=json")
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser, Debug)]
    struct Demo {
        #[arg(long)]
        slots: u32,
        #[arg(long)]
        format: Option<String>,
    }

    #[test]
    fn clap_errors_become_one_line() {
        let e = Demo::try_parse_from(["demo", "--slots", "x"]).unwrap_err();
        let line = one_line(&e);
        assert!(!line.contains('\n') && line.contains("--slots"), "{line}");
        assert!(!line.contains("Usage"), "{line}");
        let e = Demo::try_parse_from(["demo", "--slot", "1"]).unwrap_err();
        let line = one_line(&e);
        assert!(line.contains("'--slot'") && line.contains("tip:"), "{line}");
    }

    #[test]
    fn json_mode_is_read_from_raw_arguments() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(wants_json(&args(&["x", "--format", "json"])));
        assert!(wants_json(&args(&["x", "--format=json"])));
        assert!(!wants_json(&args(&["x", "--format", "text"])));
    }
}
