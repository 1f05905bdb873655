//! Speculative execution of slow tasks in batch jobs, as Flink 1.20's `SpeculativeScheduler`
//! with its `DefaultSpeculativeExecutionHandler` and `ExecutionTimeBasedSlowTaskDetector`.
//!
//! On each [`Event::CheckSlowTasks`](crate::Event::CheckSlowTasks) the detector
//! (`speculative/detector.rs`) finds the slow attempts; the TaskManagers they run on are
//! blocked for `block-slow-node-duration` (`speculative/blocklist.rs`: no new slots from them,
//! for any task; with a duration of 0 nothing is blocked), and each slow execution vertex gets
//! speculative attempts up to `max-concurrent-executions`, each in a free slot of its own on a
//! TaskManager that is not blocked, as Flink's slot allocation serves them: the TaskManager of
//! the slow attempt itself when it is not blocked and has the first free slot. The first
//! attempt of a vertex to finish wins: it
//! becomes the vertex's current attempt, so consumers' descriptors name its partitions and its
//! TaskManager, and every other attempt is cancelled. An attempt that fails while another
//! attempt of its vertex still runs does not fail the vertex (if it was the current one, the
//! oldest speculative attempt takes its place) but counts with the restart strategy, which may
//! fail the job; only a partition-not-found failure, or the failure of the last running
//! attempt, goes to failover, as in Flink.
//!
//! Differences from Flink, each for a reason:
//! - Only vertices whose pipelined region is the vertex alone speculate (Flink speculates only
//!   with blocking exchanges too; here the rule is per vertex, so a batch job with some
//!   pipelined edges still speculates elsewhere). Streaming jobs never speculate.
//! - A speculative attempt is placed only when a free slot is there at the check; otherwise the
//!   next check tries again (Flink queues its slot request). So speculative attempts never take
//!   a slot a waiting region asked for first.
//! - The original attempt keeps its shared slot (slot sharing as configured); speculative
//!   attempts share with nobody (Flink drops slot sharing altogether when speculating).
//! - Execution times are weighed by input bytes only for tasks of vertices decided at run time
//!   (adaptive batch), which know them; other tasks compare times alone, Flink's case of
//!   unknown bytes (see `speculative/detector.rs`).
//!
//! Off (the default), none of this state exists and no code path changes: the trace digests are
//! those of a scheduler without the feature.

mod blocklist;
mod detector;
mod options;

use std::collections::{BTreeMap, HashMap, HashSet};

use conflux_deploy::{
    AllocationId, ExecutionAttemptId, ExecutionState, TaskManagerId, TaskManagerLocation,
};
use conflux_graph::{ExecutionVertexIndex, IndexVec, IntermediateResultPartitionId, JobType};

pub use options::{SpeculativeExecutionOptions, SpeculativeOptionsError};

use crate::api::{Command, FailureCause, JobStatus, SchedulerError};
use crate::failure_handling::TaskFailure;
use crate::scheduler::Scheduler;
use blocklist::Blocklist;

/// `deployed_at` of a vertex whose current attempt has not deployed.
const NOT_DEPLOYED: u64 = u64::MAX;

/// What speculative execution did in a run (Flink reports the winners as
/// `numEffectiveSpeculativeExecutions`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SpeculativeStats {
    /// Speculative attempts deployed.
    pub started: u64,
    /// Vertices finished by a speculative attempt (it won its race, or it carried on after the
    /// original failed).
    pub won: u64,
    /// Speculative attempts cancelled: another attempt of their vertex finished first, their
    /// vertex was restarted by a failover, or the job ended.
    pub cancelled: u64,
    /// Speculative attempts that failed (their TaskManager lost included).
    pub failed: u64,
}

/// A speculative attempt that runs beside its vertex's current attempt.
#[derive(Clone, Copy, Debug)]
struct SpeculativeAttempt {
    attempt: u32,
    allocation: AllocationId,
    location: TaskManagerLocation,
    deployed_at: u64,
    running: bool,
}

/// The scheduler's speculative execution state; it exists only when the feature is on.
#[derive(Debug)]
pub(crate) struct SpeculativeState {
    options: SpeculativeExecutionOptions,
    /// Per vertex, when its current attempt deployed, virtual ms ([`NOT_DEPLOYED`] before).
    deployed_at: IndexVec<ExecutionVertexIndex, u64>,
    /// Per vertex, how long its finishing attempt ran, ms (meaningful while FINISHED).
    execution_ms: IndexVec<ExecutionVertexIndex, u64>,
    /// The speculative attempts running beside each vertex's current attempt (ordered, so
    /// that every walk over them is deterministic).
    attempts: BTreeMap<ExecutionVertexIndex, Vec<SpeculativeAttempt>>,
    /// The highest attempt number issued, per vertex that ever had a speculative attempt: a
    /// restart continues above it, so a late report of a cancelled attempt is never taken for
    /// the new one.
    issued: HashMap<ExecutionVertexIndex, u32>,
    /// Vertices whose current attempt is a former speculative one, in a slot of its own.
    own_slot: HashSet<ExecutionVertexIndex>,
    blocklist: Blocklist,
    stats: SpeculativeStats,
}

impl SpeculativeState {
    /// The state for `n` execution vertices when `options` enable speculation in a batch job;
    /// `None` otherwise. O(N).
    pub(crate) fn new(
        options: SpeculativeExecutionOptions,
        job_type: JobType,
        n: usize,
    ) -> Option<Box<SpeculativeState>> {
        (options.enabled && job_type == JobType::Batch).then(|| {
            Box::new(SpeculativeState {
                options,
                deployed_at: IndexVec::from_elem(NOT_DEPLOYED, n),
                execution_ms: IndexVec::from_elem(0, n),
                attempts: BTreeMap::new(),
                issued: HashMap::new(),
                own_slot: HashSet::new(),
                blocklist: Blocklist::default(),
                stats: SpeculativeStats::default(),
            })
        })
    }

    /// Heap bytes of the per-vertex arrays (the maps grow with the speculating vertices).
    pub(crate) fn heap_bytes(&self) -> usize {
        (self.deployed_at.capacity() + self.execution_ms.capacity()) * std::mem::size_of::<u64>()
    }

    // The per-vertex arrays are read and written through these, which treat a vertex beyond
    // them as not deployed and grow them on a write: a graph initialised vertex by vertex
    // appends execution vertices after the scheduler was built.

    /// When `v`'s current attempt deployed ([`NOT_DEPLOYED`] before).
    fn deployed_at(&self, v: ExecutionVertexIndex) -> u64 {
        self.deployed_at.get(v).copied().unwrap_or(NOT_DEPLOYED)
    }

    fn set_deployed_at(&mut self, v: ExecutionVertexIndex, at: u64) {
        while self.deployed_at.len() <= v.idx() {
            self.deployed_at.push(NOT_DEPLOYED);
        }
        self.deployed_at[v] = at;
    }

    /// How long `v`'s finishing attempt ran, ms.
    fn execution_ms(&self, v: ExecutionVertexIndex) -> u64 {
        self.execution_ms.get(v).copied().unwrap_or(0)
    }

    fn set_execution_ms(&mut self, v: ExecutionVertexIndex, ms: u64) {
        while self.execution_ms.len() <= v.idx() {
            self.execution_ms.push(0);
        }
        self.execution_ms[v] = ms;
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Vertices initialised after the scheduler was built (a graph grown vertex by vertex) read
    /// as not deployed and are added on a write.
    #[test]
    fn the_per_vertex_times_grow_with_the_graph() {
        let options = SpeculativeExecutionOptions {
            enabled: true,
            ..SpeculativeExecutionOptions::default()
        };
        assert!(SpeculativeState::new(options, JobType::Streaming, 2).is_none());
        let off = SpeculativeExecutionOptions::default();
        assert!(SpeculativeState::new(off, JobType::Batch, 2).is_none());
        let mut s = SpeculativeState::new(options, JobType::Batch, 2).expect("on");
        let (v1, v5) = (ExecutionVertexIndex(1), ExecutionVertexIndex(5));
        assert_eq!(s.deployed_at(v5), NOT_DEPLOYED);
        assert_eq!(s.execution_ms(v5), 0);
        s.set_deployed_at(v5, 7);
        s.set_execution_ms(v5, 1_500);
        s.set_deployed_at(v1, 3);
        assert_eq!((s.deployed_at(v1), s.deployed_at(v5)), (3, 7));
        assert_eq!(s.deployed_at(ExecutionVertexIndex(4)), NOT_DEPLOYED);
        assert_eq!(s.execution_ms(v5), 1_500);
    }
}
