//! How a job loop keeps its [`JobView`] up to date: [`JobRecorder`] applies each task state
//! change in O(1) (the subtask's record, its vertex's counts, times and I/O sums), keeps the
//! job's status, timestamps and failures, and publishes a [`JobSnapshot`] when asked
//! (O(job vertices)). The job loop owns it; requests only read what it published.

use std::sync::{Arc, MutexGuard};

use crate::body::{ExceptionInfo, LegacyExceptionInfo, RootExceptionInfo};
use crate::render::{JOB_FAILURE, TASK_FAILURE};
use crate::states::{ExecutionState, JobStatus};
use crate::view::{
    Exceptions, ExecutionStateCode, IoCounts, JobSnapshot, JobView, SubtaskRecord, SubtaskTable,
    VertexSnapshot, NO_TASK_MANAGER,
};

/// The job loop's side of a [`JobView`].
#[derive(Debug)]
pub struct JobRecorder {
    view: Arc<JobView>,
    snapshot: JobSnapshot,
    /// Per vertex, its subtasks whose current attempt was deployed.
    deployed: Vec<u32>,
    dirty: bool,
}

impl JobRecorder {
    /// Takes over `view` as it is (its latest snapshot and tables).
    pub fn new(view: Arc<JobView>) -> JobRecorder {
        let snapshot = JobSnapshot::clone(&view.snapshot());
        let deployed = vec![0; snapshot.vertices.len()];
        JobRecorder {
            view,
            snapshot,
            deployed,
            dirty: false,
        }
    }

    /// The view it keeps.
    pub fn view(&self) -> &Arc<JobView> {
        &self.view
    }

    /// The job's status as recorded.
    pub fn status(&self) -> JobStatus {
        self.snapshot.status
    }

    /// Whether something changed since the last [`publish`](Self::publish).
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// The changes of job vertex `vertex` (topological position), under its table's lock until
    /// the returned value is dropped. `None` for an unknown vertex.
    pub fn vertex(&mut self, vertex: usize) -> Option<VertexUpdate<'_>> {
        let table = self.view.subtasks(vertex)?;
        let aggregate = self.snapshot.vertices.get_mut(vertex)?;
        let deployed = self.deployed.get_mut(vertex)?;
        Some(VertexUpdate {
            table,
            aggregate,
            deployed,
            last_modification: &mut self.snapshot.last_modification,
            dirty: &mut self.dirty,
        })
    }

    /// A vertex decided at run time gets its `parallelism` subtasks, CREATED at `now_ms`.
    pub fn initialize_vertex(&mut self, vertex: usize, parallelism: u32, now_ms: i64) {
        if let Some(mut table) = self.view.subtasks(vertex) {
            table.initialize(parallelism, now_ms);
        }
        if let Some(v) = self.snapshot.vertices.get_mut(vertex) {
            *v = VertexSnapshot::created(parallelism);
        }
        if let Some(d) = self.deployed.get_mut(vertex) {
            *d = 0;
        }
        self.dirty = true;
    }

    /// The job entered `status` at `now_ms` (nothing when it already is there).
    pub fn set_status(&mut self, status: JobStatus, now_ms: i64) {
        if self.snapshot.status == status {
            return;
        }
        self.snapshot.status = status;
        self.snapshot.timestamps[status.ordinal()] = now_ms;
        self.snapshot.last_modification = now_ms;
        self.dirty = true;
    }

    /// Someone asked to cancel the job at `now_ms`: CANCELLING until it ends.
    pub fn cancelling(&mut self, now_ms: i64) {
        if !self.snapshot.status.is_globally_terminal() {
            self.set_status(JobStatus::Cancelling, now_ms);
        }
    }

    /// Where TaskManager `id` is, as subtask details and failures show it.
    fn place(&self, task_manager: u32) -> (String, String) {
        match self.view.location(task_manager) {
            Some(address) => (address.to_string(), format!("tm{task_manager}")),
            None => ("(unassigned)".into(), "(unassigned)".into()),
        }
    }

    /// Subtask `subtask` of vertex `vertex`, attempt `attempt`, on TaskManager `task_manager`
    /// ([`NO_TASK_MANAGER`] if none), failed at `now_ms` for `reason`: an entry of the
    /// exception history and of the deprecated task list.
    pub fn task_failed(
        &mut self,
        vertex: usize,
        subtask: u32,
        attempt: u32,
        task_manager: u32,
        reason: &str,
        now_ms: i64,
    ) {
        let info = self.view.info();
        let name = info.vertices.get(vertex).map_or("?", |v| v.name.as_str());
        let parallelism = self
            .snapshot
            .vertices
            .get(vertex)
            .map_or(0, |v| v.parallelism);
        let task = format!("{name} ({}/{parallelism})", u64::from(subtask) + 1);
        let (endpoint, task_manager_id) = self.place(task_manager);
        let stacktrace = format!("{TASK_FAILURE}: {reason}");
        let entry = ExceptionInfo {
            exception_name: TASK_FAILURE.into(),
            stacktrace: stacktrace.clone(),
            timestamp: now_ms,
            failure_labels: serde_json::Map::new(),
            task_name: Some(format!("{task} - execution #{attempt}")),
            location: Some(endpoint.clone()),
            endpoint: Some(endpoint.clone()),
            task_manager_id: Some(task_manager_id.clone()),
        };
        let legacy = LegacyExceptionInfo {
            exception: stacktrace,
            task,
            location: endpoint.clone(),
            endpoint,
            timestamp: now_ms,
            task_manager_id,
        };
        Arc::make_mut(&mut self.snapshot.exceptions).push(
            RootExceptionInfo {
                exception: entry,
                concurrent_exceptions: Vec::new(),
            },
            Some(legacy),
        );
        self.dirty = true;
    }

    /// The job gave up at `now_ms` for `reason`: an entry of the exception history and the
    /// execution result's cause. As in Flink, the task failure that made it give up (the latest
    /// entry, when it is one) becomes this entry's concurrent failure instead of an entry of
    /// its own.
    pub fn job_failed(&mut self, reason: &str, now_ms: i64) {
        let exceptions = Arc::make_mut(&mut self.snapshot.exceptions);
        let concurrent = if exceptions
            .history
            .first()
            .is_some_and(|e| e.exception.task_name.is_some())
        {
            vec![exceptions.history.remove(0).exception]
        } else {
            Vec::new()
        };
        exceptions.push(
            RootExceptionInfo {
                exception: ExceptionInfo {
                    exception_name: JOB_FAILURE.into(),
                    stacktrace: format!("{JOB_FAILURE}: {reason}"),
                    timestamp: now_ms,
                    failure_labels: serde_json::Map::new(),
                    task_name: None,
                    location: None,
                    endpoint: None,
                    task_manager_id: None,
                },
                concurrent_exceptions: concurrent,
            },
            None,
        );
        self.snapshot.failure = Some(reason.to_owned());
        self.dirty = true;
    }

    /// Publishes what was recorded, with the job's `restarts` and the slots it uses per
    /// TaskManager. O(job vertices + TaskManagers).
    pub fn publish(&mut self, restarts: u64, slots_in_use: Vec<(u32, u32)>) {
        self.snapshot.restarts = restarts;
        self.snapshot.slots_in_use = slots_in_use;
        self.view.publish(self.snapshot.clone());
        self.dirty = false;
    }

    /// The exceptions recorded so far.
    pub fn exceptions(&self) -> &Exceptions {
        &self.snapshot.exceptions
    }
}

/// The state changes of one job vertex, applied under its table's lock.
#[derive(Debug)]
pub struct VertexUpdate<'a> {
    table: MutexGuard<'a, SubtaskTable>,
    aggregate: &'a mut VertexSnapshot,
    deployed: &'a mut u32,
    last_modification: &'a mut i64,
    dirty: &'a mut bool,
}

impl VertexUpdate<'_> {
    /// The state the vertex shows now for its tasks' states
    /// ([`ExecutionState::aggregate`]). O(1).
    pub fn aggregate_state(&self) -> ExecutionState {
        ExecutionState::aggregate(&self.aggregate.counts, self.aggregate.parallelism)
    }

    /// Subtask `subtask` entered `state` at `now_ms` in attempt `attempt`; `task_manager` is
    /// where it was deployed (read when it enters DEPLOYING). CREATED starts a new attempt:
    /// its times, TaskManager and I/O are cleared. O(1); an unknown subtask is ignored.
    pub fn set_state(
        &mut self,
        subtask: u32,
        state: ExecutionState,
        attempt: u32,
        task_manager: u32,
        now_ms: i64,
    ) {
        let encoded = self.table.encode(now_ms);
        let Some(record) = self.table.records.get_mut(subtask as usize) else {
            return;
        };
        let old = ExecutionState::from(record.state);
        let counts = &mut self.aggregate.counts;
        counts[old.ordinal()] = counts[old.ordinal()].saturating_sub(1);
        counts[state.ordinal()] += 1;
        if state == ExecutionState::Created {
            if record.reported {
                self.aggregate.io = self.aggregate.io.minus(record.io);
                self.aggregate.reported = self.aggregate.reported.saturating_sub(1);
            }
            if record.entered[ExecutionState::Deploying.ordinal()] != 0 {
                *self.deployed = self.deployed.saturating_sub(1);
                if *self.deployed == 0 {
                    self.aggregate.start_ms = -1;
                }
            }
            let mut fresh = SubtaskRecord {
                state: ExecutionStateCode::from(ExecutionState::Created),
                attempt,
                task_manager: NO_TASK_MANAGER,
                ..SubtaskRecord::default()
            };
            fresh.entered[ExecutionState::Created.ordinal()] = encoded;
            *record = fresh;
        } else {
            record.attempt = attempt;
            if state == ExecutionState::Deploying {
                if record.entered[ExecutionState::Deploying.ordinal()] == 0 {
                    *self.deployed += 1;
                }
                record.task_manager = task_manager;
                if self.aggregate.start_ms < 0 || now_ms < self.aggregate.start_ms {
                    self.aggregate.start_ms = now_ms;
                }
            }
            if state == ExecutionState::Running {
                // Conflux's tasks report no initialisation of their own: RUNNING ends it.
                record.entered[ExecutionState::Initializing.ordinal()] = encoded;
                if record.task_manager == NO_TASK_MANAGER {
                    record.task_manager = task_manager;
                }
            }
            record.entered[state.ordinal()] = encoded;
            record.state = ExecutionStateCode::from(state);
        }
        self.aggregate.last_change_ms = now_ms;
        *self.last_modification = now_ms;
        *self.dirty = true;
    }

    /// Subtask `subtask` finished having done `io` (counted once per attempt).
    pub fn finished_io(&mut self, subtask: u32, io: IoCounts) {
        let Some(record) = self.table.records.get_mut(subtask as usize) else {
            return;
        };
        if record.reported {
            return;
        }
        record.io = io;
        record.reported = true;
        self.aggregate.io = self.aggregate.io.plus(io);
        self.aggregate.reported += 1;
        *self.dirty = true;
    }
}
