//! Attached `submit`'s progress bar: finished tasks of the job out of its tasks, its state and
//! the elapsed time, polled from the JobManager on a connection of its own (the submitting one
//! is blocked in its wait) and drawn on stderr. Only on a terminal: piped output is unchanged.

use std::time::Duration;

use conflux_blob::JobId;
use conflux_runtime::JobManagerClient;
use indicatif::{ProgressBar, ProgressFinish, ProgressStyle};

/// How often the job's summary is fetched.
const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// The bar's length and position for a job with `finished` of `total` tasks: never past the
/// end (a restarted task finishes again) and never an empty bar of length 0.
fn bar_position(finished: u32, total: u64) -> (u64, u64) {
    let total = total.max(1);
    (u64::from(finished).min(total), total)
}

/// Follows `job` on the JobManager at `address` until the returned guard is dropped, which
/// stops the polling and clears the bar. A failed poll stops it quietly: the wait reports what
/// went wrong. Must be called within a tokio runtime.
pub(super) fn follow(address: String, token: Option<String>, job: JobId) -> Follow {
    let bar = ProgressBar::new(1)
        .with_style(
            ProgressStyle::with_template(
                "{spinner} [{bar:40}] {pos}/{len} tasks finished, {msg} ({elapsed})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        )
        .with_message("submitted")
        .with_finish(ProgressFinish::AndClear);
    bar.enable_steady_tick(Duration::from_millis(100));
    let shown = bar.clone();
    let task = tokio::spawn(async move {
        let Ok(mut client) = JobManagerClient::connect(&address, token).await else {
            return;
        };
        loop {
            let Ok(summary) = client.status(job).await else {
                return;
            };
            let (position, length) = bar_position(summary.finished_tasks(), summary.total_tasks());
            shown.set_length(length);
            shown.set_position(position);
            shown.set_message(summary.status.clone());
            if summary.ended() {
                return;
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    });
    Follow { bar, task }
}

/// Stops following when dropped.
pub(super) struct Follow {
    bar: ProgressBar,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Follow {
    fn drop(&mut self) {
        self.task.abort();
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_stays_within_its_length() {
        assert_eq!(bar_position(3, 10), (3, 10));
        assert_eq!(bar_position(12, 10), (10, 10));
        assert_eq!(bar_position(0, 0), (0, 1));
    }
}
