//! Failover driving: Flink's `DefaultScheduler` failure handling (`ExecutionFailureHandler`,
//! `restartTasksWithDelay`) over the failover strategy and the restart back-off.
//!
//! A failure asks the failover strategy for the restart set (after Flink's filter of CREATED
//! vertices) and the back-off for a delay; the set is cancelled at once, and reset and
//! rescheduled when the delay is due. A lost TaskManager fails every task on it and makes the
//! partitions it stored unavailable. A failure the restart strategy does not allow fails the job
//! ("Recovery is suppressed by ..."); so does a failure of one attempt of a vertex whose other
//! attempt runs on (speculative execution), which otherwise restarts nothing.

use conflux_deploy::{ExecutionAttemptId, ExecutionState, TaskManagerId};
use conflux_graph::{
    ConsumedPartitionGroupId, ExecutionVertexIndex, IntermediateResultPartitionId,
};

use crate::api::{Command, FailureCause, JobStatus, SchedulerError};
use crate::failover_strategy::{tasks_to_restart, PartitionAvailability};
use crate::restart_backoff::{PendingRestart, RestartDecision};
use crate::scheduler::Scheduler;
use crate::scheduling_strategy::sort_unless_ascending;
use crate::task_failure::TaskFailure;
use crate::work_budget::{cost, Budget, ResetRun, ScheduleRun};

impl Scheduler {
    /// What a failure was, for the job's failure reason.
    fn describe(&self, failure: &TaskFailure) -> String {
        match failure {
            TaskFailure::Reported(FailureCause::Task) => "task failure".to_owned(),
            TaskFailure::Reported(FailureCause::TaskManagerLost) => {
                "its TaskManager was lost".to_owned()
            }
            TaskFailure::Reported(FailureCause::PartitionNotFound(p)) => format!(
                "PartitionNotFoundException: {}",
                conflux_deploy::partition_name(&self.graph, *p)
            ),
            // Fails the job before failure handling (never restarted); named for completeness.
            TaskFailure::Reported(FailureCause::NonRecoverable) => {
                "non-recoverable failure".to_owned()
            }
            TaskFailure::NoResourceAvailable(why) => format!("NoResourceAvailableException: {why}"),
        }
    }

    /// Records a failure of `v` with the restart strategy (Flink's `recordTaskFailure`): the
    /// decision when it may restart, or `None` after failing the job with Flink's "Recovery is
    /// suppressed by ..." reason.
    pub(crate) fn record_failure(
        &mut self,
        v: ExecutionVertexIndex,
        failure: &TaskFailure,
        now_ms: u64,
    ) -> Option<RestartDecision> {
        let decision = self.backoff.on_failure(now_ms);
        if decision.is_none() {
            let reason = format!(
                "Recovery is suppressed by the restart strategy {} ({} restart(s) so far): {} failed: {}",
                self.backoff.strategy(),
                self.backoff.restarts(),
                self.graph.execution_vertex_name(v),
                self.describe(failure)
            );
            self.terminate(JobStatus::Failed, Some(reason));
        }
        decision
    }
}

impl Scheduler {
    /// `v` failed. A FINISHED vertex "fails" when its results are lost (its TaskManager is
    /// gone). When another attempt of `v` runs on (speculative execution) and the cause is not a
    /// missing partition, that attempt takes over and the failure only counts with the restart
    /// strategy (Flink's `handleLocalExecutionAttemptFailure`: a strategy that allows no more
    /// restarts fails the job).
    pub(crate) fn vertex_failed(
        &mut self,
        v: ExecutionVertexIndex,
        failure: &TaskFailure,
        now_ms: u64,
    ) -> Result<(), SchedulerError> {
        let failed_partition = failure.partition();
        if self.speculative_take_over(v, failed_partition) {
            self.record_failure(v, failure, now_ms);
            return Ok(());
        }
        if self.state[v] == ExecutionState::Finished {
            for p in self.graph.produced_partitions(v).collect::<Vec<_>>() {
                let i = self.graph.partition_index(p);
                self.lost[i] = true;
            }
        } else {
            self.set_state(v, ExecutionState::Failed);
            self.release_slot(v);
            self.cancel_request(v);
        }
        let restart: Vec<ExecutionVertexIndex> = {
            let availability = Availability { scheduler: self };
            tasks_to_restart(
                &self.graph,
                &self.regions,
                self.config.failover,
                v,
                failed_partition,
                &availability,
            )
            .into_iter()
            .filter(|&x| self.state[x] != ExecutionState::Created)
            .collect()
        };
        match self.record_failure(v, failure, now_ms) {
            None => {}
            Some(decision) => {
                let delay = decision.delay_ms;
                self.out.push(Command::Restart(restart.clone()));
                self.cancel_for_restart(&restart);
                let vertices = restart.iter().map(|&x| (x, self.attempt[x])).collect();
                if delay == 0 {
                    self.reset_and_reschedule(vertices, now_ms)?;
                } else {
                    self.pending_restarts.push(PendingRestart {
                        due_ms: now_ms.saturating_add(delay),
                        vertices,
                    });
                }
            }
        }
        Ok(())
    }

    /// `attempt` failed in a way every attempt would (Flink's non-recoverable error, a
    /// `SuppressRestartsException`): the job fails at once, without asking the restart
    /// strategy, and its remaining tasks are cancelled. O(N) (the job's end).
    pub(crate) fn non_recoverable_failure(&mut self, attempt: ExecutionAttemptId) {
        let v = ExecutionVertexIndex(attempt.vertex);
        if self.is_current(attempt) {
            self.set_state(v, ExecutionState::Failed);
            self.release_slot(v);
            self.cancel_request(v);
        }
        let reason = format!(
            "{} failed with a non-recoverable error: every attempt would fail the same way, so \
             the job fails without a restart ({} restarts before)",
            self.graph.execution_vertex_name(v),
            self.backoff.restarts()
        );
        self.terminate(JobStatus::Failed, Some(reason));
    }

    /// An explicit restart of whole regions: cancel, reset and reschedule at once.
    pub(crate) fn restart_now(
        &mut self,
        set: Vec<ExecutionVertexIndex>,
    ) -> Result<(), SchedulerError> {
        self.out.push(Command::Restart(set.clone()));
        self.cancel_for_restart(&set);
        let vertices = set.iter().map(|&x| (x, self.attempt[x])).collect();
        self.reset_and_reschedule(vertices, 0)
    }

    /// Resets and reschedules the restarts due at `now_ms` together, in one round: failures
    /// merged into one restart attempt share its due time, so their regions come back at once.
    pub(crate) fn fire_due_restarts(&mut self, now_ms: u64) -> Result<(), SchedulerError> {
        if !self.pending_restarts.iter().any(|p| p.due_ms <= now_ms) {
            return Ok(());
        }
        let (mut due, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending_restarts)
            .into_iter()
            .partition(|p| p.due_ms <= now_ms);
        self.pending_restarts = waiting;
        if self.status != JobStatus::Running {
            return Ok(());
        }
        // Earliest first; a vertex named twice is reset once (its attempt moves on).
        due.sort_by_key(|p| p.due_ms);
        let vertices = due.into_iter().flat_map(|p| p.vertices).collect();
        self.reset_and_reschedule(vertices, now_ms)
    }

    /// Cancels the running members of a restart set. Finished ones stay FINISHED until they are
    /// reset, but their partitions stop counting as produced now: no consumer may be scheduled
    /// against a partition that is about to be replaced (Flink keeps counting them until the
    /// reset, after the restart delay).
    fn cancel_for_restart(&mut self, set: &[ExecutionVertexIndex]) {
        for &x in set {
            self.cancel_speculative_attempts(x);
            match self.state[x] {
                ExecutionState::Finished => self.unproduce_partitions(x),
                ExecutionState::Deploying
                | ExecutionState::Initializing
                | ExecutionState::Running => {
                    self.out.push(Command::Cancel(ExecutionAttemptId {
                        vertex: x.0,
                        attempt: self.attempt[x],
                    }));
                    self.set_state(x, ExecutionState::Canceled);
                    self.release_slot(x);
                }
                ExecutionState::Scheduled => {
                    self.set_state(x, ExecutionState::Canceled);
                    self.cancel_request(x);
                    self.release_slot(x);
                }
                _ => {}
            }
        }
    }

    /// A vertex's partitions no longer hold all data: blocking ones count as unfinished in every
    /// group containing them again (Flink's `partitionUnfinished`), and none is available.
    fn unproduce_partitions(&mut self, v: ExecutionVertexIndex) {
        for p in self.graph.produced_partitions(v).collect::<Vec<_>>() {
            let i = self.graph.partition_index(p);
            let t = self
                .graph
                .job_graph()
                .data_set(p.result)
                .result_partition_type;
            if self.data_produced[i] && t.is_blocking_or_blocking_persistent() {
                for cvg in self.graph.consumer_vertex_groups(p) {
                    self.unfinished_partitions[cvg.consumed_partition_group()] += 1;
                }
            }
            self.data_produced[i] = false;
            self.lost[i] = true;
        }
    }

    /// Flink's `resetForNewExecution` for each vertex still at the attempt the failover saw,
    /// then `restartTasks` on their regions.
    ///
    /// When it is the last thing its handler call does (the call set `defer_schedule`), the
    /// reset and the scheduling after it are only recorded and done within the call's work
    /// budget, the rest in continuation calls (`continuation.rs`); otherwise they are done here,
    /// whole.
    fn reset_and_reschedule(
        &mut self,
        vertices: Vec<(ExecutionVertexIndex, u32)>,
        now_ms: u64,
    ) -> Result<(), SchedulerError> {
        let mut run = ResetRun::new(vertices, now_ms);
        if std::mem::take(&mut self.defer_schedule)
            && self.pending_reset.is_none()
            && self.pending_schedule.is_none()
        {
            self.pending_reset = Some(run);
            return Ok(());
        }
        let mut unlimited = Budget::unlimited();
        let done = self.step_reset(&mut run, &mut unlimited);
        debug_assert!(done, "an unlimited budget finishes the reset");
        match self.reset_done(run, &mut unlimited) {
            Some(schedule) => self.maybe_schedule_regions(schedule),
            None => Ok(()),
        }
    }

    /// Advances a reset within `budget`; true when every vertex was looked at.
    pub(crate) fn step_reset(&mut self, run: &mut ResetRun, budget: &mut Budget) -> bool {
        while run.pos < run.vertices.len() {
            if budget.exhausted() {
                return false;
            }
            let (v, attempt) = run.vertices[run.pos];
            run.pos += 1;
            budget.spend(cost::RESET);
            if self.reset_vertex(v, attempt) {
                run.reset.push(v);
                // Its region is scheduled again once the reset is done; nothing reads the flag
                // before then.
                let r = self.regions.region_of(v);
                self.scheduled[r] = false;
                if run.regions.last() != Some(&r) {
                    run.regions.push(r);
                }
            }
        }
        true
    }

    /// The end of a complete reset: the command naming the vertices reset, and the scheduling
    /// run over their regions (`None`: nothing was reset).
    pub(crate) fn reset_done(&mut self, run: ResetRun, budget: &mut Budget) -> Option<ScheduleRun> {
        if run.reset.is_empty() {
            return None;
        }
        self.out.push(Command::ResetVertices(run.reset));
        let mut regions = run.regions;
        sort_unless_ascending(&mut regions, budget);
        regions.dedup();
        Some(ScheduleRun::of_regions(regions, run.now_ms))
    }

    /// Resets `v` for a new attempt unless it moved on from `attempt` (named twice, or reset
    /// already) or is CREATED; true when it was reset.
    fn reset_vertex(&mut self, v: ExecutionVertexIndex, attempt: u32) -> bool {
        if self.attempt[v] != attempt || self.state[v] == ExecutionState::Created {
            return false;
        }
        if self.state[v] == ExecutionState::Finished {
            self.unfinished_vertices += 1;
            let region = self.regions.region_of(v);
            if self.region_unfinished[region] == 0 {
                let groups: Vec<ConsumedPartitionGroupId> = self
                    .topology
                    .non_pipelined_consumed_groups(region)
                    .collect();
                for g in groups {
                    self.unfinished_consumer_regions[g] += 1;
                }
            }
            self.region_unfinished[region] += 1;
        }
        self.unproduce_partitions(v);
        for p in self.graph.produced_partitions(v).collect::<Vec<_>>() {
            // The new attempt's partitions exist afresh.
            let i = self.graph.partition_index(p);
            for cvg in self.graph.consumer_vertex_groups(p) {
                self.group_released[cvg.consumed_partition_group()] = false;
            }
            self.lost[i] = false;
            self.released[i] = false;
        }
        self.attempt[v] += 1;
        self.set_state(v, ExecutionState::Created);
        self.speculative_reset(v);
        self.allocation[v] = None;
        self.location[v] = crate::scheduler::NO_LOCATION;
        true
    }

    /// A TaskManager is gone: its slots go, partitions of finished tasks on it are lost, and
    /// every task still running there fails.
    pub(crate) fn task_manager_lost(
        &mut self,
        tm: TaskManagerId,
        now_ms: u64,
    ) -> Result<(), SchedulerError> {
        self.slots.remove_task_manager(tm);
        self.speculative_task_manager_lost(tm, now_ms);
        let mut failed = Vec::new();
        for v in self.state.indices() {
            if self.location_of(v).is_none_or(|l| l.id != tm) {
                continue;
            }
            if self.state[v] == ExecutionState::Finished {
                // Blocking partitions stored there are gone.
                for p in self.graph.produced_partitions(v).collect::<Vec<_>>() {
                    let i = self.graph.partition_index(p);
                    self.lost[i] = true;
                }
            } else if !self.state[v].is_terminal() && self.state[v] != ExecutionState::Created {
                failed.push((v, self.attempt[v]));
            }
        }
        for (v, attempt) in failed {
            // Each failure is handled on its own; a vertex an earlier failover of this loss
            // already cancelled or restarted (its attempt moved on) is skipped.
            if self.status == JobStatus::Running
                && self.attempt[v] == attempt
                && !self.state[v].is_terminal()
                && self.state[v] != ExecutionState::Created
            {
                self.allocation[v] = None;
                let lost = TaskFailure::Reported(FailureCause::TaskManagerLost);
                self.vertex_failed(v, &lost, now_ms)?;
            }
        }
        Ok(())
    }
}

/// The scheduler's view of partition availability for the failover strategy.
struct Availability<'a> {
    scheduler: &'a Scheduler,
}

impl PartitionAvailability for Availability<'_> {
    fn is_tracked(&self, p: IntermediateResultPartitionId) -> bool {
        let s = self.scheduler;
        let i = s.graph.partition_index(p);
        let producer = s.graph.producer_of(p);
        // Flink tracks a partition from its producer's deployment until it is released or its
        // TaskManager is lost (`JobMasterPartitionTracker`).
        !s.lost[i]
            && !s.released[i]
            && matches!(
                s.state[producer],
                ExecutionState::Deploying
                    | ExecutionState::Initializing
                    | ExecutionState::Running
                    | ExecutionState::Finished
            )
    }
}
