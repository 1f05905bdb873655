//! What a TaskManager says while it cannot register: a warning at the first failed attempt
//! (whom it tries, why it failed, how often it retries), then one line per
//! [`REPEAT_INTERVAL`] with the attempts so far, never a line per attempt; and when it
//! registers at last, how long it took.

use std::time::{Duration, Instant};

/// At most one warning per this interval while registration keeps failing.
pub(crate) const REPEAT_INTERVAL: Duration = Duration::from_secs(30);

/// What to log about a failed registration attempt.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// The first failure of a series.
    First,
    /// Still failing: attempts so far and since when.
    Again { attempts: u64, for_secs: u64 },
    /// Nothing at WARN (debug only).
    Quiet,
}

/// The failed registration attempts since the last success.
#[derive(Debug, Default)]
pub(crate) struct RegistrationLog {
    /// When the first attempt of the series failed, and how many have.
    failing_since: Option<(Instant, u64)>,
    last_warned: Option<Instant>,
}

impl RegistrationLog {
    /// An attempt failed at `now`: what to log.
    pub(crate) fn failed(&mut self, now: Instant) -> Line {
        let (since, attempts) = self.failing_since.get_or_insert((now, 0));
        *attempts += 1;
        let (since, attempts) = (*since, *attempts);
        match self.last_warned {
            None => {
                self.last_warned = Some(now);
                Line::First
            }
            Some(last) if now.duration_since(last) >= REPEAT_INTERVAL => {
                self.last_warned = Some(now);
                Line::Again {
                    attempts,
                    for_secs: now.duration_since(since).as_secs(),
                }
            }
            Some(_) => Line::Quiet,
        }
    }

    /// Registration succeeded: the failed attempts before it and how long they lasted, if
    /// any; the series ends.
    pub(crate) fn succeeded(&mut self, now: Instant) -> Option<(u64, Duration)> {
        self.last_warned = None;
        self.failing_since
            .take()
            .map(|(since, attempts)| (attempts, now.duration_since(since)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a TaskManager whose JobManager did not answer retried forever without a
    /// line at the default level; then a line per attempt would flood. One warning, then one
    /// per 30 s.
    #[test]
    fn one_warning_then_one_per_interval() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut log = RegistrationLog::default();
        assert_eq!(log.failed(at(0)), Line::First);
        // Retries every 500 ms to 5 s: quiet until 30 s passed.
        let mut t = 500;
        while t < 30_000 {
            assert_eq!(log.failed(at(t)), Line::Quiet, "at {t} ms");
            t += 500;
        }
        assert_eq!(
            log.failed(at(30_000)),
            Line::Again {
                attempts: 61,
                for_secs: 30
            }
        );
        assert_eq!(log.failed(at(35_000)), Line::Quiet);
        assert_eq!(
            log.succeeded(at(36_000)),
            Some((62, Duration::from_secs(36)))
        );
        assert_eq!(log.succeeded(at(37_000)), None);
        assert_eq!(log.failed(at(40_000)), Line::First, "a new series");
    }
}
