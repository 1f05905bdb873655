//! Standard output of every command. Reports go through here rather than `println!`, so that a
//! full disk or a closed pipe is an error (exit 1, one line on stderr) instead of a panic
//! (exit 101).

use std::io::Write;

use crate::failure::Failure;

/// Writes `text` to standard output and flushes it.
///
/// # Errors
/// [`Failure::Output`] with the io error when the write or the flush fails (`ENOSPC` on
/// `/dev/full`, `EPIPE` once a reader such as `head` has gone).
pub(crate) fn print(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(Failure::Output)
}

/// Writes a report through a buffered standard output as `write` renders it (nothing is
/// collected in memory first), then flushes.
///
/// # Errors
/// [`Failure::Output`] with the first io error of `write` or the flush.
pub(crate) fn write_with(
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), Failure> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    write(&mut out)
        .and_then(|()| out.flush())
        .map_err(Failure::Output)
}

/// Writes `value` as pretty JSON and a newline, as [`print()`].
///
/// # Errors
/// As [`print()`]; [`Failure::Work`] if the value cannot be serialised.
pub(crate) fn print_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| Failure::Work(e.into()))?;
    text.push('\n');
    print(&text)
}

/// Whether a panic payload is the one `println!` raises when standard output fails
/// (`failed printing to stdout: ...`), and the io error kind it names. Code that still uses
/// `println!` is caught by `main` through this and exits as [`print()`] would.
pub(crate) fn print_panic_error(payload: &(dyn std::any::Any + Send)) -> Option<std::io::Error> {
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())?;
    let cause = message.strip_prefix("failed printing to stdout: ")?;
    // std formats the io error as its text plus `(os error N)`; EPIPE is 32 on Linux and macOS.
    let kind = if cause.contains("os error 32") {
        std::io::ErrorKind::BrokenPipe
    } else {
        std::io::ErrorKind::Other
    };
    Some(std::io::Error::new(kind, cause.to_owned()))
}
