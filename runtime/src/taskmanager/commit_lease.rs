//! `CommitLease`: the fence of a sink's commit. A TaskManager publishes a sink's file only
//! while its lease holds: nine tenths of the heartbeat timeout from when it sent the last
//! heartbeat answer the JobManager says it received (each heartbeat request names it), or,
//! before the first, from when it began to register.
//!
//! Why this fences: the JobManager declares a TaskManager lost (and deploys its tasks'
//! attempts elsewhere) only once no heartbeat answer arrived for the heartbeat timeout, counted
//! from the last answer it received, which arrived after the TaskManager sent it (and from the
//! registration, which came after the TaskManager began to register). So the lease runs out
//! before the JobManager can move on (clocks running at one rate; the tenth covers the time a
//! rename takes). A TaskManager cut off from its JobManager, or only heard no more (one-way
//! loss: it still hears the requests, but they name no newer answer), never publishes a file
//! after the JobManager gave its subtask to another attempt, even before it notices the loss
//! and cancels its tasks.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Answers remembered, by sequence number, until a request names them.
const REMEMBERED_ANSWERS: usize = 256;

#[derive(Debug)]
struct State {
    /// Where the lease runs from.
    from: Instant,
    /// Heartbeat answers sent and when, oldest first.
    sent: VecDeque<(u64, Instant)>,
}

/// A TaskManager session's lease on publishing sink files.
#[derive(Debug)]
pub(crate) struct CommitLease {
    state: Mutex<State>,
    /// The heartbeat timeout less its margin.
    valid_for: Duration,
}

impl CommitLease {
    /// A lease running from `since` (when the TaskManager began to register), lasting 9/10 of
    /// `heartbeat_timeout` until renewed.
    pub(crate) fn new(heartbeat_timeout: Duration, since: Instant) -> CommitLease {
        CommitLease {
            state: Mutex::new(State {
                from: since,
                sent: VecDeque::new(),
            }),
            valid_for: heartbeat_timeout - heartbeat_timeout / 10,
        }
    }

    /// Heartbeat answer `seq` is about to be sent.
    pub(crate) fn answer_sent(&self, seq: u64) {
        let mut state = crate::taskmanager::sync::lock(&self.state);
        if state.sent.len() == REMEMBERED_ANSWERS {
            state.sent.pop_front();
        }
        state.sent.push_back((seq, Instant::now()));
    }

    /// A heartbeat request said the JobManager received answer `answered`: the lease runs from
    /// when that answer was sent (never backwards).
    pub(crate) fn acknowledged(&self, answered: Option<u64>) {
        let Some(answered) = answered else { return };
        let mut state = crate::taskmanager::sync::lock(&self.state);
        if let Some(&(_, at)) = state.sent.iter().find(|(seq, _)| *seq == answered) {
            state.from = state.from.max(at);
            state.sent.retain(|(seq, _)| *seq > answered);
        }
    }

    /// `Ok` while the lease holds; else why a commit is refused.
    pub(crate) fn check(&self) -> Result<(), String> {
        let since = crate::taskmanager::sync::lock(&self.state).from.elapsed();
        if since < self.valid_for {
            Ok(())
        } else {
            Err(format!(
                "commit fenced: the JobManager has received no heartbeat answer sent in the last \
                 {} ms (lease {} ms): it may have given this subtask to another attempt",
                since.as_millis(),
                self.valid_for.as_millis()
            ))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a panic is the wanted failure in tests
mod tests {
    use super::*;

    /// The lease runs from the answer the JobManager acknowledged, not from the request that
    /// acknowledged it: a TaskManager that hears requests naming no newer answer (its answers
    /// are lost) loses its lease.
    #[test]
    fn the_lease_runs_from_the_last_answer_the_jobmanager_received() {
        let lease = CommitLease::new(Duration::from_millis(200), Instant::now());
        assert_eq!(lease.valid_for, Duration::from_millis(180));
        assert!(lease.check().is_ok());
        lease.answer_sent(1);
        std::thread::sleep(Duration::from_millis(120));
        lease.answer_sent(2);
        // Requests keep coming, but name only answer 1 (answer 2 was lost).
        lease.acknowledged(Some(1));
        lease.acknowledged(None);
        std::thread::sleep(Duration::from_millis(80));
        let refused = lease.check().unwrap_err();
        assert!(refused.starts_with("commit fenced: "), "{refused}");
        // Answer 2 arrives after all: the lease runs from when it was sent, 80 ms ago.
        lease.acknowledged(Some(2));
        assert!(lease.check().is_ok());
        // An unknown or older answer changes nothing.
        lease.acknowledged(Some(1));
        lease.acknowledged(Some(99));
        assert!(lease.check().is_ok());
    }
}
