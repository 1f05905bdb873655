//! How a command fails: the exit code and the one line on stderr (plus `{"error": ...}` on stdout
//! in JSON mode). Exit codes: 0 success, 2 invalid input or usage, 1 the work itself failed, 3 a
//! threshold the user set was reached (`plan compat --fail-on`).

use std::io::Write;
use std::process::ExitCode;

use crate::Format;

/// A failure with its exit code.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Invalid input or usage: exit 2.
    Input(anyhow::Error),
    /// The work failed: exit 1.
    Work(anyhow::Error),
    /// The work failed and its report (with the failure in it) is already on stdout: exit 1,
    /// the message on stderr only.
    Reported(anyhow::Error),
    /// The work succeeded and its report is on stdout, but reached the threshold the user
    /// asked to fail on (`plan compat --fail-on`): exit 3, the message on stderr only.
    Threshold(anyhow::Error),
    /// Standard output could not be written: exit 1, nothing more on stdout, and nothing at all
    /// for a closed pipe (as Unix tools end quietly when their reader has gone).
    Output(std::io::Error),
}

impl Failure {
    /// Invalid input (exit 2) from any error.
    pub(crate) fn input(e: impl Into<anyhow::Error>) -> Failure {
        Failure::Input(e.into())
    }

    /// Reports the failure on stderr (and stdout in JSON mode) and gives the exit code.
    pub(crate) fn exit(self, format: Format) -> ExitCode {
        let (code, message, on_stdout) = match self {
            Failure::Input(e) => (2, one_line(&e), true),
            Failure::Work(e) => (1, one_line(&e), true),
            Failure::Reported(e) => (1, one_line(&e), false),
            Failure::Threshold(e) => (3, one_line(&e), false),
            Failure::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                tracing::debug!(error = %e, "standard output closed");
                return ExitCode::from(1);
            }
            Failure::Output(e) => (
                1,
                escape_controls(&format!("writing standard output: {e}")),
                false,
            ),
        };
        report_error(&message, format == Format::Json && on_stdout);
        ExitCode::from(code)
    }
}

/// Writes `error: MESSAGE` on stderr and, when `json`, `{"error": MESSAGE}` on stdout. Write
/// errors are ignored: there is nowhere left to report them.
pub(crate) fn report_error(message: &str, json: bool) {
    let _ = writeln!(std::io::stderr(), "error: {message}");
    if json {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", serde_json::json!({ "error": message }));
        let _ = out.flush();
    }
}

/// The error and its causes on one line, skipping a cause the message already quotes (library
/// errors often include their source in their own message). Control characters (also those of
/// ids quoted from the input) are escaped, so the line is one line and cannot drive a terminal.
pub(crate) fn one_line(error: &anyhow::Error) -> String {
    let mut message = error.to_string();
    for cause in error.chain().skip(1) {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
    }
    escape_controls(&message)
}

/// `text` with every control character escaped as Rust writes it (`\n`, `\t`, `\u{1b}`).
pub(crate) fn escape_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            escape_controls("a\u{1b}[31mb\nc\td"),
            "a\\u{1b}[31mb\\nc\\td"
        );
        assert_eq!(escape_controls("plain 'é'"), "plain 'é'");
    }

    #[test]
    fn causes_join_on_one_line() {
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(one_line(&e), "outer: inner");
        let quoted = anyhow::anyhow!("inner").context("outer: inner");
        assert_eq!(one_line(&quoted), "outer: inner");
    }
}
