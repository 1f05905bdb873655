//! Speculative execution on the cluster (Flink 1.20's `SpeculativeScheduler` as the job loop
//! drives it): the slow task detector's period, and where each speculative attempt runs.
//!
//! The scheduler decides everything (which tasks are slow, where their speculative attempts
//! go, which attempt wins); the loop only sends it `Event::CheckSlowTasks` every
//! `slow-task-detector.check-interval`, ships the attempts of `Command::DeploySpeculative`,
//! hears their messages from their own TaskManager, and sends their cancellations there. When
//! a speculative attempt becomes its vertex's current attempt (it finished first, or its
//! original failed), the vertex's partitions live where it ran: releases go there from then on.

use std::collections::HashMap;

use conflux_deploy::{ExecutionAttemptId, TaskManagerId};
use conflux_graph::{ExecutionVertexIndex, JobType};
use conflux_scheduler::{Scheduler, SpeculativeExecutionOptions};

/// The detector's timer and the TaskManagers of the live speculative attempts.
#[derive(Debug, Default)]
pub(super) struct SpeculativeRuns {
    /// `slow-task-detector.check-interval`, ms; `None` when speculative execution is off or the
    /// job streams (its scheduler never speculates then).
    check_interval_ms: Option<u64>,
    /// When the next check is due, ms since the loop started.
    next_check_ms: Option<u64>,
    /// The TaskManager of each speculative attempt shipped and not yet cancelled, failed or
    /// promoted (at most one per slot, so small).
    on: HashMap<ExecutionAttemptId, TaskManagerId>,
}

impl SpeculativeRuns {
    /// The runs of a job of `job_type` under `options`; the first check is due one interval
    /// after the loop starts.
    pub(super) fn new(options: &SpeculativeExecutionOptions, job_type: JobType) -> SpeculativeRuns {
        let check_interval_ms = (options.enabled && job_type == JobType::Batch)
            .then_some(options.check_interval_ms.max(1));
        SpeculativeRuns {
            check_interval_ms,
            next_check_ms: check_interval_ms,
            on: HashMap::new(),
        }
    }

    /// Whether speculative execution is on for the job.
    pub(super) fn enabled(&self) -> bool {
        self.check_interval_ms.is_some()
    }

    /// When the next slow task check is due, ms since the loop started.
    pub(super) fn next_check_ms(&self) -> Option<u64> {
        self.next_check_ms
    }

    /// Whether a check is due at `now_ms`; if so, the next is one interval after `now_ms` (a
    /// late check is not made up for: the detector looks at the present only).
    pub(super) fn check_due(&mut self, now_ms: u64) -> bool {
        match (self.next_check_ms, self.check_interval_ms) {
            (Some(at), Some(interval)) if at <= now_ms => {
                self.next_check_ms = Some(now_ms.saturating_add(interval));
                true
            }
            _ => false,
        }
    }

    /// A speculative attempt was shipped to `tm`.
    pub(super) fn deployed(&mut self, attempt: ExecutionAttemptId, tm: TaskManagerId) {
        self.on.insert(attempt, tm);
    }

    /// The TaskManager a live speculative attempt runs on.
    pub(super) fn runs_on(&self, attempt: ExecutionAttemptId) -> Option<TaskManagerId> {
        self.on.get(&attempt).copied()
    }

    /// Forgets a speculative attempt being cancelled; the TaskManager to tell, when it is one.
    pub(super) fn take(&mut self, attempt: ExecutionAttemptId) -> Option<TaskManagerId> {
        self.on.remove(&attempt)
    }

    /// After a scheduler call: a speculative attempt that became its vertex's current attempt
    /// now holds the vertex's partitions, so `deployed_on` (the TaskManager of each vertex's
    /// current attempt) follows it; attempts the scheduler no longer knows (failed, or lost
    /// with their TaskManager) are forgotten, so their late messages are dropped. O(live
    /// speculative attempts).
    pub(super) fn follow(&mut self, scheduler: &Scheduler, deployed_on: &mut [u32]) {
        if self.on.is_empty() {
            return;
        }
        self.on.retain(|&attempt, tm| {
            if scheduler.is_speculative_attempt(attempt) {
                return true;
            }
            let v = ExecutionVertexIndex(attempt.vertex);
            if v.0 < scheduler.graph().num_execution_vertices() && scheduler.attempt(v) == attempt {
                if let Some(slot) = deployed_on.get_mut(attempt.vertex as usize) {
                    *slot = tm.0;
                }
            }
            false
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(enabled: bool, check_interval_ms: u64) -> SpeculativeExecutionOptions {
        SpeculativeExecutionOptions {
            enabled,
            check_interval_ms,
            ..SpeculativeExecutionOptions::default()
        }
    }

    #[test]
    fn checks_are_due_every_interval_from_the_last_one() {
        let mut runs = SpeculativeRuns::new(&options(true, 50), JobType::Batch);
        assert!(runs.enabled());
        assert_eq!(runs.next_check_ms(), Some(50));
        assert!(!runs.check_due(49));
        assert!(runs.check_due(50));
        assert_eq!(runs.next_check_ms(), Some(100));
        // A late check is not made up for.
        assert!(runs.check_due(230));
        assert_eq!(runs.next_check_ms(), Some(280));
        assert!(!runs.check_due(279));
    }

    #[test]
    fn off_or_streaming_never_checks() {
        for runs in [
            SpeculativeRuns::new(&options(false, 50), JobType::Batch),
            SpeculativeRuns::new(&options(true, 50), JobType::Streaming),
        ] {
            let mut runs = runs;
            assert!(!runs.enabled());
            assert_eq!(runs.next_check_ms(), None);
            assert!(!runs.check_due(u64::MAX));
        }
    }

    #[test]
    fn a_cancelled_attempt_is_sent_to_its_own_task_manager_once() {
        let mut runs = SpeculativeRuns::new(&options(true, 50), JobType::Batch);
        let a = ExecutionAttemptId {
            vertex: 3,
            attempt: 1,
        };
        runs.deployed(a, TaskManagerId(7));
        assert_eq!(runs.runs_on(a), Some(TaskManagerId(7)));
        assert_eq!(runs.take(a), Some(TaskManagerId(7)));
        assert_eq!(runs.take(a), None);
        assert_eq!(runs.runs_on(a), None);
    }
}
