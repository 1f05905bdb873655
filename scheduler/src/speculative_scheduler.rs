//! The scheduler side of speculative execution, as Flink 1.20's `SpeculativeScheduler`: the
//! hooks the scheduler calls on a slow task check, a deploy, a finish, a failure, a reset and
//! a release, over the component's state ([`SpeculativeState`], `speculative.rs`, which knows
//! nothing of the scheduler). Inert when speculation is off (`Scheduler::speculative` is
//! `None`).

use conflux_deploy::{AllocationId, ExecutionAttemptId, ExecutionState, TaskManagerId};
use conflux_graph::{ExecutionVertexIndex, IntermediateResultPartitionId};

use crate::api::{Command, FailureCause, JobStatus, SchedulerError};
use crate::scheduler::Scheduler;
use crate::speculative::detector;
use crate::speculative::{SpeculativeAttempt, SpeculativeStats, NOT_DEPLOYED};
use crate::task_failure::TaskFailure;

impl Scheduler {
    /// What speculative execution did so far (all zero when it is off).
    pub fn speculative_stats(&self) -> SpeculativeStats {
        self.speculative
            .as_ref()
            .map_or_else(SpeculativeStats::default, |s| s.stats)
    }

    /// Whether `a` is a running speculative attempt (one beside its vertex's current attempt).
    /// A driver ships the tasks of [`Command::DeploySpeculative`] while this holds.
    pub fn is_speculative_attempt(&self, a: ExecutionAttemptId) -> bool {
        self.speculative_attempt(a).is_some()
    }

    /// Whether a TaskManager is blocked as a slow node (gives no new slots).
    pub fn is_blocked(&self, tm: TaskManagerId) -> bool {
        self.speculative
            .as_ref()
            .is_some_and(|s| s.blocklist.is_blocked(tm))
    }

    fn speculative_attempt(&self, a: ExecutionAttemptId) -> Option<&SpeculativeAttempt> {
        self.speculative
            .as_ref()?
            .attempts
            .get(&ExecutionVertexIndex(a.vertex))?
            .iter()
            .find(|x| x.attempt == a.attempt)
    }

    /// Ends the blocks of slow nodes due at `now_ms` (their free slots serve again at the end
    /// of the call). O(blocked).
    pub(crate) fn expire_blocked_nodes(&mut self, now_ms: u64) {
        let Some(s) = self.speculative.as_mut() else {
            return;
        };
        for tm in s.blocklist.expire(now_ms) {
            self.slots.set_blocked(tm, false);
        }
    }

    /// The slow task check (Flink's `notifySlowTasks(findSlowTasks(...))`): blocks the slow
    /// nodes, then deploys speculative attempts of the slow vertices that may have more, in
    /// vertex order, while free slots last. Attempts are weighed by their task's input bytes
    /// where known ([`input_bytes_per_task`](Self::input_bytes_per_task)). O(N + finished
    /// tasks) per check: every vertex's state is looked at, as Flink's detector does.
    pub(crate) fn check_slow_tasks(&mut self, now_ms: u64) {
        if self.status != JobStatus::Running {
            return;
        }
        let Some(s) = self.speculative.as_ref() else {
            return;
        };
        let options = s.options;
        let graph = std::sync::Arc::clone(&self.graph);
        let job = graph.job_graph();
        // (vertex, TaskManagers of its slow attempts)
        let mut slow: Vec<(ExecutionVertexIndex, Vec<TaskManagerId>)> = Vec::new();
        let mut finished = Vec::new();
        for j in job.vertex_indices() {
            let range = graph.execution_vertices_of(j);
            let parallelism = (range.end - range.start) as usize;
            // Per subtask, its input bytes when its vertex was decided at run time (all of
            // them or none: Flink never compares known bytes with unknown ones).
            let input_bytes = self
                .input_bytes_per_task(j)
                .filter(|b| b.len() == parallelism);
            let with_bytes = |i: u32, ms: u64| detector::TimeWithBytes {
                ms,
                bytes: input_bytes.and_then(|b| b.get((i - range.start) as usize).copied()),
            };
            finished.clear();
            for i in range.clone() {
                let v = ExecutionVertexIndex(i);
                if self.state[v] == ExecutionState::Finished {
                    finished.push(with_bytes(i, s.execution_ms(v)));
                }
            }
            let Some(baseline) = detector::baseline(parallelism, &mut finished, &options) else {
                continue;
            };
            for i in range.clone() {
                let v = ExecutionVertexIndex(i);
                let state = self.state[v];
                if state.is_terminal() || state == ExecutionState::Created {
                    continue;
                }
                let mut tms = Vec::new();
                let mut any = false;
                let since = |at: u64| {
                    with_bytes(
                        i,
                        if at == NOT_DEPLOYED {
                            0
                        } else {
                            now_ms.saturating_sub(at)
                        },
                    )
                };
                if detector::is_slow(since(s.deployed_at(v)), baseline, &options) {
                    any = true;
                    // Only a node a task runs on is slow: a SCHEDULED attempt's slot may be
                    // reserved there, but it does not run yet (blocking that node could starve
                    // the very request the attempt waits in).
                    if is_running(state) {
                        tms.extend(self.location_of(v).map(|l| l.id));
                    }
                }
                for x in s.attempts.get(&v).into_iter().flatten() {
                    if detector::is_slow(since(x.deployed_at), baseline, &options) {
                        any = true;
                        tms.push(x.location.id);
                    }
                }
                if any {
                    slow.push((v, tms));
                }
            }
        }
        if slow.is_empty() {
            return;
        }
        if options.block_slow_node_duration_ms > 0 {
            let end = now_ms.saturating_add(options.block_slow_node_duration_ms);
            for tm in slow.iter().flat_map(|(_, tms)| tms) {
                if let Some(s) = self.speculative.as_mut() {
                    s.blocklist.block(*tm, end);
                }
                self.slots.set_blocked(*tm, true);
            }
        }
        let mut tasks = Vec::new();
        for (v, _) in slow {
            if self.regions.member_indices(self.regions.region_of(v)).len() != 1 {
                continue; // its attempts could not run alone
            }
            let Some(s) = self.speculative.as_mut() else {
                return;
            };
            let running = s.attempts.get(&v).map_or(0, Vec::len) + 1;
            let wanted = (options.max_concurrent_executions as usize).saturating_sub(running);
            for _ in 0..wanted {
                let Some(s) = self.speculative.as_mut() else {
                    return;
                };
                // Any free slot, as Flink's allocator gives one: only the blocklist keeps the
                // attempt off a slow node (with a block duration of 0, the slow task's own
                // TaskManager may serve it).
                let Some(allocation) = self.slots.take_free_slot() else {
                    break;
                };
                let Some(location) = self.slots.location(allocation.task_manager) else {
                    break;
                };
                let issued = s.issued.entry(v).or_insert(0);
                let attempt = (*issued).max(self.attempt[v]) + 1;
                *issued = attempt;
                s.attempts.entry(v).or_default().push(SpeculativeAttempt {
                    attempt,
                    allocation,
                    location,
                    deployed_at: now_ms,
                    running: false,
                });
                s.stats.started += 1;
                tasks.push((
                    ExecutionAttemptId {
                        vertex: v.0,
                        attempt,
                    },
                    allocation,
                ));
            }
        }
        if !tasks.is_empty() {
            self.out.push(Command::DeploySpeculative { tasks });
        }
    }

    /// The current attempt of `v` deployed now (the detector counts execution time from here).
    pub(crate) fn speculative_deployed(&mut self, v: ExecutionVertexIndex) {
        let now = self.owed_at_ms;
        if let Some(s) = self.speculative.as_mut() {
            s.set_deployed_at(v, now);
        }
    }

    /// A speculative attempt reports RUNNING.
    pub(crate) fn speculative_attempt_running(&mut self, a: ExecutionAttemptId) {
        if let Some(x) = self.speculative.as_mut().and_then(|s| {
            s.attempts
                .get_mut(&ExecutionVertexIndex(a.vertex))?
                .iter_mut()
                .find(|x| x.attempt == a.attempt)
        }) {
            x.running = true;
        }
    }

    /// `v` is about to finish (by its current attempt): its execution time is recorded, and
    /// every other attempt of it is cancelled (Flink's `cancelPendingExecutions`).
    pub(crate) fn speculative_vertex_finishing(&mut self, v: ExecutionVertexIndex, now_ms: u64) {
        let Some(s) = self.speculative.as_mut() else {
            return;
        };
        let at = s.deployed_at(v);
        let ran = if at == NOT_DEPLOYED {
            0
        } else {
            now_ms.saturating_sub(at)
        };
        s.set_execution_ms(v, ran);
        if s.own_slot.contains(&v) {
            s.stats.won += 1;
        }
        self.cancel_speculative_attempts(v);
    }

    /// Cancels the speculative attempts of `v` (another attempt finished, a failover restarts
    /// `v`, or the job ends) and returns their slots.
    pub(crate) fn cancel_speculative_attempts(&mut self, v: ExecutionVertexIndex) {
        let Some(s) = self.speculative.as_mut() else {
            return;
        };
        let Some(attempts) = s.attempts.remove(&v) else {
            return;
        };
        s.stats.cancelled += attempts.len() as u64;
        for x in attempts {
            self.out.push(Command::Cancel(ExecutionAttemptId {
                vertex: v.0,
                attempt: x.attempt,
            }));
            self.slots.return_slot(x.allocation);
        }
    }

    /// Cancels every speculative attempt (the job ends; a former speculative attempt that is
    /// its vertex's current one and runs is cancelled by the caller, and counted here).
    /// O(speculating vertices).
    pub(crate) fn cancel_all_speculative_attempts(&mut self) {
        let Some(s) = self.speculative.as_mut() else {
            return;
        };
        let running = s
            .own_slot
            .iter()
            .filter(|&&v| is_running(self.state[v]))
            .count();
        s.stats.cancelled += running as u64;
        let vertices: Vec<ExecutionVertexIndex> = s.attempts.keys().copied().collect();
        for v in vertices {
            self.cancel_speculative_attempts(v);
        }
    }

    /// A speculative attempt finished first: it becomes the vertex's current attempt (its
    /// partitions and TaskManager are the ones consumers are told of), the attempt it replaces
    /// is cancelled, and the vertex finishes.
    pub(crate) fn speculative_attempt_finished(
        &mut self,
        a: ExecutionAttemptId,
        now_ms: u64,
    ) -> Result<(), SchedulerError> {
        let v = ExecutionVertexIndex(a.vertex);
        let Some(winner) = self.take_speculative_attempt(a) else {
            return Ok(());
        };
        match self.state[v] {
            ExecutionState::Deploying | ExecutionState::Initializing | ExecutionState::Running => {
                self.out.push(Command::Cancel(self.attempt(v)));
            }
            ExecutionState::Scheduled => self.cancel_request(v),
            _ => {}
        }
        // The replaced attempt is cancelled (counted if it was a speculative one itself).
        self.set_state(v, ExecutionState::Canceled);
        self.release_slot(v);
        self.promote(v, winner);
        self.vertex_finished(v, now_ms)
    }

    /// The current attempt of `v` failed (not for a missing partition): when a speculative
    /// attempt of it still runs, the oldest takes its place and nothing fails (Flink's
    /// `handleLocalExecutionAttemptFailure`); true then.
    pub(crate) fn speculative_take_over(
        &mut self,
        v: ExecutionVertexIndex,
        failed_partition: Option<IntermediateResultPartitionId>,
    ) -> bool {
        if failed_partition.is_some() || self.state[v] == ExecutionState::Finished {
            return false;
        }
        let Some(s) = self.speculative.as_mut() else {
            return false;
        };
        let Some(attempts) = s.attempts.get_mut(&v) else {
            return false;
        };
        let next = attempts.remove(0);
        if attempts.is_empty() {
            s.attempts.remove(&v);
        }
        // The failed attempt's slot goes (counted if it was a speculative one itself).
        self.set_state(v, ExecutionState::Failed);
        self.release_slot(v);
        self.promote(v, next);
        true
    }

    /// A speculative attempt failed. A missing partition fails the vertex (Flink: a
    /// `PartitionException` always goes to failover; its current attempt is cancelled first);
    /// otherwise the current attempt carries on and the failure counts with the restart strategy
    /// (Flink's `handleLocalExecutionAttemptFailure`: one that allows no more restarts fails the
    /// job).
    pub(crate) fn speculative_attempt_failed(
        &mut self,
        a: ExecutionAttemptId,
        cause: FailureCause,
        now_ms: u64,
    ) -> Result<(), SchedulerError> {
        let v = ExecutionVertexIndex(a.vertex);
        let Some(failed) = self.take_speculative_attempt(a) else {
            return Ok(());
        };
        self.slots.return_slot(failed.allocation);
        if let Some(s) = self.speculative.as_mut() {
            s.stats.failed += 1;
        }
        if let FailureCause::PartitionNotFound(_) = cause {
            if is_running(self.state[v]) {
                self.out.push(Command::Cancel(self.attempt(v)));
                // A former speculative attempt is cancelled here, not failed: its slot goes
                // now, and the failover finds none.
                if self
                    .speculative
                    .as_ref()
                    .is_some_and(|s| s.own_slot.contains(&v))
                {
                    let state = std::mem::replace(&mut self.state[v], ExecutionState::Canceled);
                    self.release_slot(v);
                    self.state[v] = state;
                }
            }
            return self.vertex_failed(v, &TaskFailure::Reported(cause), now_ms);
        }
        self.record_failure(v, &TaskFailure::Reported(cause), now_ms);
        Ok(())
    }

    /// A TaskManager is gone: the speculative attempts on it fail (their vertices' current
    /// attempts carry on; each failure counts with the restart strategy, which may fail the
    /// job) and its block ends.
    pub(crate) fn speculative_task_manager_lost(&mut self, tm: TaskManagerId, now_ms: u64) {
        let Some(s) = self.speculative.as_mut() else {
            return;
        };
        s.blocklist.remove(tm);
        let mut failed = Vec::new();
        s.attempts.retain(|&v, attempts| {
            let before = attempts.len();
            attempts.retain(|x| x.location.id != tm);
            let lost = before - attempts.len();
            s.stats.failed += lost as u64;
            failed.extend(std::iter::repeat_n(v, lost));
            !attempts.is_empty()
        });
        self.slots.set_blocked(tm, false);
        let lost = TaskFailure::Reported(FailureCause::TaskManagerLost);
        for v in failed {
            if self.status == JobStatus::Running {
                self.record_failure(v, &lost, now_ms);
            }
        }
    }

    /// `v` is reset for a new attempt: its number continues above every speculative attempt's,
    /// and it has not deployed.
    pub(crate) fn speculative_reset(&mut self, v: ExecutionVertexIndex) {
        let Some(s) = self.speculative.as_mut() else {
            return;
        };
        if let Some(&issued) = s.issued.get(&v) {
            self.attempt[v] = self.attempt[v].max(issued + 1);
        }
        s.set_deployed_at(v, NOT_DEPLOYED);
    }

    /// Returns the slot of `v`'s current attempt when it is a slot of its own (a former
    /// speculative attempt's); true then. `had`: the allocation it held. The attempt's end is
    /// counted by the state it is left in (FAILED: failed, CANCELED: cancelled; a finish was
    /// counted as won).
    pub(crate) fn release_own_slot(
        &mut self,
        v: ExecutionVertexIndex,
        had: Option<AllocationId>,
    ) -> bool {
        let Some(s) = self.speculative.as_mut() else {
            return false;
        };
        if !s.own_slot.remove(&v) {
            return false;
        }
        match self.state[v] {
            ExecutionState::Failed => s.stats.failed += 1,
            ExecutionState::Canceled => s.stats.cancelled += 1,
            _ => {}
        }
        if let Some(a) = had {
            self.slots.return_slot(a);
        }
        true
    }

    /// Removes a running speculative attempt from its vertex's list.
    fn take_speculative_attempt(&mut self, a: ExecutionAttemptId) -> Option<SpeculativeAttempt> {
        let s = self.speculative.as_mut()?;
        let v = ExecutionVertexIndex(a.vertex);
        let attempts = s.attempts.get_mut(&v)?;
        let i = attempts.iter().position(|x| x.attempt == a.attempt)?;
        let x = attempts.remove(i);
        if attempts.is_empty() {
            s.attempts.remove(&v);
        }
        Some(x)
    }

    /// Makes a speculative attempt the current attempt of `v` (whose previous slot was
    /// released): consumers are told of its partitions and TaskManager from now on.
    fn promote(&mut self, v: ExecutionVertexIndex, x: SpeculativeAttempt) {
        self.attempt[v] = x.attempt;
        self.allocation[v] = Some(x.allocation);
        self.location[v] = self.slots.intern_location(x.location);
        self.set_state(
            v,
            if x.running {
                ExecutionState::Running
            } else {
                ExecutionState::Deploying
            },
        );
        if let Some(s) = self.speculative.as_mut() {
            s.set_deployed_at(v, x.deployed_at);
            s.own_slot.insert(v);
        }
    }
}

/// Whether an attempt in `state` runs or is about to (DEPLOYING, INITIALIZING, RUNNING).
fn is_running(state: ExecutionState) -> bool {
    matches!(
        state,
        ExecutionState::Deploying | ExecutionState::Initializing | ExecutionState::Running
    )
}
