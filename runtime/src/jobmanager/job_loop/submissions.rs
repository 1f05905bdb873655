//! Task submissions on their way to the TaskManagers, with back-pressure: per TaskManager at
//! most `max_in_flight` are handed to its connection and not yet acknowledged; the others wait
//! here, in the order the scheduler deployed them. A submission's acknowledgement deadline
//! starts when it is handed over (Flink's ask timeout starts with the `submitTask` call), so
//! that a burst of a million deployments is not timed while it waits in the JobManager's own
//! outbound queue. A submission cancelled before it was handed over is never sent.

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;
use conflux_deploy::{ExecutionAttemptId, TaskManagerId};

use crate::jobmanager::registry::Registry;

/// One TaskManager's submissions.
#[derive(Default)]
struct Window {
    /// Handed to the connection, not yet acknowledged.
    in_flight: usize,
    /// Waiting for room, in deploy order.
    waiting: VecDeque<(ExecutionAttemptId, Bytes)>,
}

/// Every submission of the running job not yet acknowledged.
pub(super) struct Submissions {
    max_in_flight: usize,
    windows: HashMap<TaskManagerId, Window>,
    /// Handed over and awaiting acknowledgement: deadline (ms of the loop's clock) and
    /// TaskManager.
    sent: HashMap<ExecutionAttemptId, (u64, TaskManagerId)>,
    /// Deadlines in hand-over order, which is deadline order (one timeout for all). Entries
    /// answered meanwhile are skipped when they come up.
    deadlines: VecDeque<(u64, ExecutionAttemptId)>,
    /// Waiting submissions by attempt (a withdrawn one is removed, and skipped when its turn
    /// comes).
    waiting: HashMap<ExecutionAttemptId, TaskManagerId>,
}

impl Submissions {
    /// No submissions; at most `max_in_flight` (at least 1) unacknowledged per TaskManager.
    pub(super) fn new(max_in_flight: usize) -> Submissions {
        Submissions {
            max_in_flight: max_in_flight.max(1),
            windows: HashMap::new(),
            sent: HashMap::new(),
            deadlines: VecDeque::new(),
            waiting: HashMap::new(),
        }
    }

    /// Queues `attempt`'s encoded submission for `task_manager`; [`pump`](Self::pump) sends it
    /// when there is room.
    pub(super) fn push(
        &mut self,
        task_manager: TaskManagerId,
        attempt: ExecutionAttemptId,
        frame: Bytes,
    ) {
        self.waiting.insert(attempt, task_manager);
        self.windows
            .entry(task_manager)
            .or_default()
            .waiting
            .push_back((attempt, frame));
    }

    /// Hands `task_manager`'s waiting submissions to its connection while its window has room;
    /// each one's deadline is `now_ms + timeout_ms`. A TaskManager that is gone gets them
    /// counted as sent: its loss fails the tasks, and the deadline covers a loss not seen.
    pub(super) fn pump(
        &mut self,
        registry: &Registry,
        task_manager: TaskManagerId,
        now_ms: u64,
        timeout_ms: u64,
    ) {
        let Some(window) = self.windows.get_mut(&task_manager) else {
            return;
        };
        if window.in_flight >= self.max_in_flight || window.waiting.is_empty() {
            return;
        }
        let outbox = registry.outbox(task_manager);
        let deadline = now_ms.saturating_add(timeout_ms);
        while window.in_flight < self.max_in_flight {
            let Some((attempt, frame)) = window.waiting.pop_front() else {
                break;
            };
            if self.waiting.remove(&attempt).is_none() {
                // Withdrawn: cancelled before it was sent.
                continue;
            }
            if let Some(outbox) = &outbox {
                outbox.send_encoded(frame);
            }
            window.in_flight += 1;
            self.sent.insert(attempt, (deadline, task_manager));
            self.deadlines.push_back((deadline, attempt));
        }
    }

    /// `attempt`'s submission was answered (acknowledged, refused, or a state of the task
    /// arrived): its TaskManager's window has room for one more. Returns that TaskManager,
    /// whose waiting submissions the caller pumps; `None` when it was not awaiting an answer.
    pub(super) fn answered(&mut self, attempt: ExecutionAttemptId) -> Option<TaskManagerId> {
        let (_, task_manager) = self.sent.remove(&attempt)?;
        self.room(task_manager);
        Some(task_manager)
    }

    /// As [`answered`](Self::answered), for an answer that came from `from`: an answer about
    /// `attempt` from another peer frees nothing.
    pub(super) fn answered_by(
        &mut self,
        attempt: ExecutionAttemptId,
        from: TaskManagerId,
    ) -> Option<TaskManagerId> {
        match self.sent.get(&attempt) {
            Some(&(_, to)) if to == from => self.answered(attempt),
            _ => None,
        }
    }

    fn room(&mut self, task_manager: TaskManagerId) {
        if let Some(window) = self.windows.get_mut(&task_manager) {
            window.in_flight = window.in_flight.saturating_sub(1);
        }
    }

    /// The scheduler cancels `attempt`: true when its submission was still waiting, so it is
    /// never sent and no cancel message is needed.
    pub(super) fn withdraw(&mut self, attempt: ExecutionAttemptId) -> bool {
        self.waiting.remove(&attempt).is_some()
    }

    /// A TaskManager is lost: what waits for it is dropped (its tasks fail with it).
    pub(super) fn task_manager_lost(&mut self, task_manager: TaskManagerId) {
        if let Some(window) = self.windows.remove(&task_manager) {
            for (attempt, _) in window.waiting {
                self.waiting.remove(&attempt);
            }
        }
    }

    /// The earliest acknowledgement deadline, ms.
    pub(super) fn next_deadline(&self) -> Option<u64> {
        self.deadlines.front().map(|(d, _)| *d)
    }

    /// Takes the submissions whose deadline is at or before `now_ms` and still unanswered,
    /// with their TaskManagers (whose windows get their room back).
    pub(super) fn expired(&mut self, now_ms: u64) -> Vec<(ExecutionAttemptId, TaskManagerId)> {
        let mut expired = Vec::new();
        while let Some(&(deadline, attempt)) = self.deadlines.front() {
            if deadline > now_ms {
                break;
            }
            self.deadlines.pop_front();
            if self.sent.get(&attempt).map(|(d, _)| *d) != Some(deadline) {
                continue;
            }
            if let Some(task_manager) = self.answered(attempt) {
                expired.push((attempt, task_manager));
            }
        }
        expired
    }

    /// Submissions handed over and not answered, over all TaskManagers.
    #[cfg(test)]
    fn in_flight(&self) -> usize {
        self.sent.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(vertex: u32) -> ExecutionAttemptId {
        ExecutionAttemptId { vertex, attempt: 0 }
    }

    #[test]
    fn a_window_sends_at_most_its_size_and_times_from_the_hand_over() {
        let registry = Registry::default();
        let tm = TaskManagerId(0);
        let mut s = Submissions::new(2);
        for v in 0..5 {
            s.push(tm, attempt(v), Bytes::new());
        }
        s.pump(&registry, tm, 100, 10_000);
        assert_eq!(s.in_flight(), 2);
        assert_eq!(s.next_deadline(), Some(10_100));
        // Withdrawn while waiting: never sent.
        assert!(s.withdraw(attempt(2)));
        assert!(
            !s.withdraw(attempt(0)),
            "already sent: a cancel message is needed"
        );
        assert_eq!(
            s.answered_by(attempt(0), TaskManagerId(9)),
            None,
            "not from its peer"
        );
        assert_eq!(s.answered_by(attempt(0), tm), Some(tm));
        s.pump(&registry, tm, 5_000, 10_000);
        // Vertex 3 went out (2 was withdrawn), timed from 5,000.
        assert_eq!(s.in_flight(), 2);
        assert_eq!(s.expired(10_100), vec![(attempt(1), tm)]);
        assert_eq!(s.expired(14_999), vec![]);
        assert_eq!(s.expired(15_000), vec![(attempt(3), tm)]);
        s.pump(&registry, tm, 15_000, 10_000);
        assert_eq!(s.in_flight(), 1, "vertex 4, the last");
        assert_eq!(s.answered(attempt(4)), Some(tm));
        assert_eq!(s.answered(attempt(4)), None);
        assert_eq!(
            s.next_deadline(),
            Some(25_000),
            "a stale deadline, skipped when due"
        );
        assert_eq!(s.expired(25_000), vec![]);
    }

    #[test]
    fn a_lost_task_manager_drops_what_waits_for_it() {
        let registry = Registry::default();
        let mut s = Submissions::new(1);
        s.push(TaskManagerId(0), attempt(0), Bytes::new());
        s.push(TaskManagerId(0), attempt(1), Bytes::new());
        s.pump(&registry, TaskManagerId(0), 0, 10);
        s.task_manager_lost(TaskManagerId(0));
        assert!(!s.withdraw(attempt(1)));
        assert_eq!(s.expired(10), vec![(attempt(0), TaskManagerId(0))]);
    }
}
