//! The job loop's side of the REST API: after every scheduler call, the execution state changes
//! the scheduler logged go into the job's [`JobRecorder`] (O(1) each: the subtask's record, its
//! vertex's counts and times); finished tasks' I/O, failures and status changes likewise. A
//! snapshot is published when the loop is about to wait for messages, at most every
//! [`PUBLISH_INTERVAL`] while it is busy, and when the job ends. Requests read only what was
//! published (and copy one vertex's subtask table): they never wait for this loop.

use std::sync::Arc;
use std::time::{Duration, Instant};

use conflux_deploy::{ExecutionAttemptId, TaskManagerLocation};
use conflux_graph::{ExecutionVertexIndex, JobVertexIndex};
use conflux_rest::{ExecutionState, IoCounts, JobRecorder, JobStatus, JobView, NO_TASK_MANAGER};
use conflux_scheduler::{Scheduler, StateTransition};

use crate::jobmanager::rest_view::{execution_state, job_status, log_job_state};
use crate::protocol::TaskMetrics;

/// While the loop is busy, a snapshot is published at most this often.
pub(super) const PUBLISH_INTERVAL: Duration = Duration::from_millis(20);

/// The job's REST view, as the loop keeps it.
pub(super) struct LoopView {
    recorder: JobRecorder,
    transitions: Vec<StateTransition>,
    last_publish: Instant,
    /// The job's status change of the current call, recorded after its task changes.
    status_due: Option<(JobStatus, i64)>,
}

/// Logs the change of a job vertex's aggregate state (Flink's
/// `ExecutionJobVertex.getAggregateJobVertexState`): at INFO when it becomes RUNNING (its first
/// task runs), FINISHED (all did), FAILED or CANCELED, else at DEBUG; one line per vertex and
/// change, never per task.
fn log_vertex_state(view: &JobView, j: usize, from: ExecutionState, to: ExecutionState) {
    let info = view.info();
    let Some(vertex) = info.vertices.get(j) else {
        return;
    };
    let notable = matches!(
        to,
        ExecutionState::Running
            | ExecutionState::Finished
            | ExecutionState::Failed
            | ExecutionState::Canceled
    );
    let (from, to) = (from.as_str(), to.as_str());
    if notable {
        tracing::info!(
            job = %info.id,
            vertex = %vertex.id,
            from,
            to,
            "Job vertex {} ({}) switched from state {from} to {to}.",
            vertex.name,
            vertex.id
        );
    } else {
        tracing::debug!(
            job = %info.id,
            vertex = %vertex.id,
            from,
            to,
            "Job vertex {} ({}) switched from state {from} to {to}.",
            vertex.name,
            vertex.id
        );
    }
}

/// Where an execution vertex is: its job vertex's position and its subtask index.
fn place(scheduler: &Scheduler, v: ExecutionVertexIndex) -> Option<(usize, u32)> {
    let graph = scheduler.graph();
    (v.0 < graph.num_execution_vertices()).then(|| {
        let id = graph.execution_vertex_id(v);
        (id.job_vertex.idx(), id.subtask)
    })
}

impl LoopView {
    /// Starts recording `scheduler`'s state changes into `view`.
    pub(super) fn new(view: Arc<JobView>, scheduler: &mut Scheduler) -> LoopView {
        scheduler.record_transitions();
        LoopView {
            recorder: JobRecorder::new(view),
            transitions: Vec::new(),
            last_publish: Instant::now(),
            status_due: None,
        }
    }

    /// A TaskManager's data address, for the subtasks deployed there.
    pub(super) fn task_manager(&self, location: TaskManagerLocation) {
        self.recorder
            .view()
            .add_location(location.id.0, location.data_address);
    }

    /// Applies the state changes of the scheduler calls since the last time. O(changes).
    /// Then the job's status change of the call, if any (so that a job's last vertex finishes
    /// before the job does, as in Flink's log), and RESTARTING while tasks wait out a restart
    /// delay (Flink's `DefaultScheduler`), RUNNING again when none does.
    pub(super) fn after_call(&mut self, scheduler: &mut Scheduler) {
        scheduler.take_transitions(&mut self.transitions);
        if !self.transitions.is_empty() {
            self.apply_transitions(scheduler);
        }
        if let Some((status, at)) = self.status_due.take() {
            self.set_status(status, at);
        }
        let waiting = scheduler.next_restart_due().is_some();
        match self.recorder.status() {
            JobStatus::Running if waiting => {
                self.set_status(JobStatus::Restarting, conflux_rest::now_ms());
            }
            JobStatus::Restarting if !waiting => {
                self.set_status(JobStatus::Running, conflux_rest::now_ms());
            }
            _ => {}
        }
    }

    /// The task state changes taken from the scheduler, into the recorder, with each job
    /// vertex's aggregate state change logged.
    fn apply_transitions(&mut self, scheduler: &Scheduler) {
        let now = conflux_rest::now_ms();
        let graph = Arc::clone(scheduler.graph());
        let (transitions, recorder) = (&self.transitions, &mut self.recorder);
        // In runs of changes of one job vertex, each applied under one lock of its table.
        let mut i = 0;
        while i < transitions.len() {
            let Some((j, _)) = place(scheduler, transitions[i].vertex) else {
                i += 1;
                continue;
            };
            let range = graph.execution_vertices_of(JobVertexIndex(conflux_graph::index_u32(j)));
            let run = transitions[i..]
                .iter()
                .take_while(|t| range.contains(&t.vertex.0))
                .count()
                .max(1);
            let mut changed = None;
            if let Some(mut update) = recorder.vertex(j) {
                let before = update.aggregate_state();
                for t in &transitions[i..i + run] {
                    let task_manager = scheduler
                        .allocation(t.vertex)
                        .map_or(NO_TASK_MANAGER, |a| a.task_manager.0);
                    update.set_state(
                        t.vertex.0 - range.start,
                        execution_state(t.state),
                        scheduler.attempt(t.vertex).attempt,
                        task_manager,
                        now,
                    );
                }
                let after = update.aggregate_state();
                changed = (before != after).then_some((before, after));
            }
            if let Some((before, after)) = changed {
                log_vertex_state(recorder.view(), j, before, after);
            }
            i += run;
        }
    }

    /// The job entered `status` at `now_ms`: recorded, and logged in Flink's words when it
    /// changed.
    fn set_status(&mut self, status: JobStatus, now_ms: i64) {
        let old = self.recorder.status();
        if old == status {
            return;
        }
        self.recorder.set_status(status, now_ms);
        log_job_state(self.recorder.view(), old, status);
    }

    /// A task finished having done `metrics` (its vertex's I/O sums grow once per attempt).
    pub(super) fn finished(
        &mut self,
        scheduler: &Scheduler,
        attempt: ExecutionAttemptId,
        metrics: &TaskMetrics,
    ) {
        let Some((j, subtask)) = place(scheduler, ExecutionVertexIndex(attempt.vertex)) else {
            return;
        };
        if let Some(mut update) = self.recorder.vertex(j) {
            update.finished_io(
                subtask,
                IoCounts {
                    read_bytes: metrics.bytes_in,
                    write_bytes: metrics.bytes_out,
                    read_records: metrics.records_in,
                    write_records: metrics.records_out,
                },
            );
        }
    }

    /// A task failed on TaskManager `task_manager` (or none) for `reason`.
    pub(super) fn task_failed(
        &mut self,
        scheduler: &Scheduler,
        attempt: ExecutionAttemptId,
        task_manager: u32,
        reason: &str,
    ) {
        if let Some((j, subtask)) = place(scheduler, ExecutionVertexIndex(attempt.vertex)) {
            self.recorder.task_failed(
                j,
                subtask,
                attempt.attempt,
                task_manager,
                reason,
                conflux_rest::now_ms(),
            );
        }
    }

    /// The job's status changed (with its failure's reason when it failed).
    pub(super) fn job_status(
        &mut self,
        status: conflux_scheduler::JobStatus,
        reason: Option<&str>,
    ) {
        let now = conflux_rest::now_ms();
        if status == conflux_scheduler::JobStatus::Failed {
            self.recorder
                .job_failed(reason.unwrap_or("the job failed"), now);
        }
        // Recorded after the call's task changes (`after_call`); an earlier change of the same
        // call first.
        if let Some((earlier, at)) = self.status_due.replace((job_status(status), now)) {
            self.set_status(earlier, at);
        }
    }

    /// Someone asked to cancel the job.
    pub(super) fn cancelling(&mut self) {
        if !self.recorder.status().is_globally_terminal() {
            self.set_status(JobStatus::Cancelling, conflux_rest::now_ms());
        }
    }

    /// A vertex decided at run time got its subtasks.
    pub(super) fn vertex_initialized(&mut self, job_vertex: JobVertexIndex, parallelism: u32) {
        self.recorder
            .initialize_vertex(job_vertex.idx(), parallelism, conflux_rest::now_ms());
    }

    /// Publishes a snapshot when something changed and `now` is the time (`force`: the loop is
    /// about to wait, or the job ended), or the last one is older than [`PUBLISH_INTERVAL`].
    /// O(job vertices + TaskManagers).
    pub(super) fn publish(&mut self, scheduler: &Scheduler, force: bool) {
        if !self.recorder.is_dirty() || (!force && self.last_publish.elapsed() < PUBLISH_INTERVAL) {
            return;
        }
        let slots_in_use = scheduler
            .task_manager_slots()
            .into_iter()
            .filter(|s| s.slots > s.free)
            .map(|s| (s.task_manager.0, s.slots - s.free))
            .collect();
        self.recorder
            .publish(u64::from(scheduler.restarts()), slots_in_use);
        self.last_publish = Instant::now();
    }
}
