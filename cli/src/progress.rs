//! Progress on stderr for commands that can run for seconds: shown only when stderr is a
//! terminal (so piped and captured outputs stay byte for byte as they were), cleared when done
//! or dropped on any path.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressFinish, ProgressStyle};

/// Whether progress may be drawn: stderr is a terminal.
pub(crate) fn on_terminal() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stderr())
}

/// A spinner with `message` and the elapsed time, ticking by itself (a thread of indicatif's)
/// so that a phase that reports nothing still shows life; `None` off a terminal. Cleared when
/// dropped.
pub(crate) fn spinner(message: impl Into<String>) -> Option<ProgressBar> {
    if !on_terminal() {
        return None;
    }
    let bar = ProgressBar::new_spinner()
        .with_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        )
        .with_message(message.into())
        .with_finish(ProgressFinish::AndClear);
    bar.enable_steady_tick(Duration::from_millis(100));
    Some(bar)
}
