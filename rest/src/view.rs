//! What the REST API reads, and what a JobManager's job loop publishes for it.
//!
//! Per job a [`JobView`]: its fixed description ([`JobInfo`]: ids, names, plan), the latest
//! [`JobSnapshot`] the job loop published (swapped whole behind a mutex held only for the swap
//! or to clone the `Arc`), and per job vertex a [`SubtaskTable`] the job loop updates in place
//! as tasks change state (a mutex per vertex, held for one batch of updates or one copy).
//! **A request never touches the scheduler**: it reads a snapshot (O(job vertices)), or copies
//! the subtask table of the one vertex it shows.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use conflux_blob_api::JobId;

use crate::body::{LegacyExceptionInfo, Plan, RootExceptionInfo};
use crate::ids::HexId;
use crate::states::{ExecutionState, JobStatus};

/// Locks `mutex`; a panic while it was held leaves whole values behind (every update replaces
/// a value or a record), so a poisoned lock is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One job as the REST API sees it.
#[derive(Debug)]
pub struct JobView {
    info: JobInfo,
    snapshot: Mutex<Arc<JobSnapshot>>,
    subtasks: Box<[Mutex<SubtaskTable>]>,
    locations: Mutex<Vec<(u32, SocketAddr)>>,
}

impl JobView {
    /// A view of a job whose vertices have `parallelisms` (0 for a vertex not initialised
    /// yet: its table grows when it is), every task CREATED at `snapshot`'s time.
    pub fn new(info: JobInfo, snapshot: JobSnapshot, parallelisms: &[u32]) -> JobView {
        let created = snapshot.timestamps[JobStatus::Initializing.ordinal()];
        let subtasks = parallelisms
            .iter()
            .map(|&p| Mutex::new(SubtaskTable::created(p, created)))
            .collect();
        JobView {
            info,
            snapshot: Mutex::new(Arc::new(snapshot)),
            subtasks,
            locations: Mutex::new(Vec::new()),
        }
    }

    /// What never changes.
    pub fn info(&self) -> &JobInfo {
        &self.info
    }

    /// The latest snapshot.
    pub fn snapshot(&self) -> Arc<JobSnapshot> {
        Arc::clone(&lock(&self.snapshot))
    }

    /// Replaces the snapshot (the old one is dropped outside the lock).
    pub fn publish(&self, snapshot: JobSnapshot) {
        let snapshot = Arc::new(snapshot);
        let old = std::mem::replace(&mut *lock(&self.snapshot), snapshot);
        drop(old);
    }

    /// The subtask table of job vertex `vertex` (topological position), locked: the job loop
    /// updates it, a request copies it. `None` for an unknown vertex.
    pub fn subtasks(&self, vertex: usize) -> Option<MutexGuard<'_, SubtaskTable>> {
        self.subtasks.get(vertex).map(lock)
    }

    /// Records where TaskManager `id` serves data (its host and endpoint in subtask details).
    pub fn add_location(&self, id: u32, data_address: SocketAddr) {
        let mut locations = lock(&self.locations);
        match locations.iter_mut().find(|(i, _)| *i == id) {
            Some(entry) => entry.1 = data_address,
            None => locations.push((id, data_address)),
        }
    }

    /// Where TaskManager `id` serves data, if known.
    pub fn location(&self, id: u32) -> Option<SocketAddr> {
        lock(&self.locations)
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, a)| *a)
    }
}

/// `STREAMING` or `BATCH`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobType {
    /// A streaming job.
    Streaming,
    /// A batch job.
    Batch,
}

impl JobType {
    /// Flink's name.
    pub fn as_str(self) -> &'static str {
        match self {
            JobType::Streaming => "STREAMING",
            JobType::Batch => "BATCH",
        }
    }
}

/// What never changes about a job.
#[derive(Clone, Debug)]
pub struct JobInfo {
    /// Its id.
    pub id: JobId,
    /// Its name.
    pub name: String,
    /// Streaming or batch.
    pub job_type: JobType,
    /// Its job vertices in topological order (the order of the tables and snapshots).
    pub vertices: Vec<VertexInfo>,
    /// Its plan, as `/jobs/:jobid/plan` shows it.
    pub plan: Plan,
}

impl JobInfo {
    /// The topological position of the vertex with JobVertexID `id`. O(V).
    pub fn vertex_position(&self, id: HexId) -> Option<usize> {
        self.vertices.iter().position(|v| v.id == id)
    }
}

/// What never changes about a job vertex.
#[derive(Clone, Debug)]
pub struct VertexInfo {
    /// Its JobVertexID.
    pub id: HexId,
    /// Its name.
    pub name: String,
    /// Its max parallelism.
    pub max_parallelism: i64,
    /// Its slot sharing group's id.
    pub slot_sharing_group_id: HexId,
}

/// A job's state at one instant, published whole by the job loop.
#[derive(Clone, Debug)]
pub struct JobSnapshot {
    /// Its status.
    pub status: JobStatus,
    /// When it entered each status, epoch ms (0: never), by [`JobStatus::ordinal`].
    pub timestamps: [i64; 11],
    /// When its status or a task's last changed, epoch ms.
    pub last_modification: i64,
    /// Per job vertex (topological order), its aggregates.
    pub vertices: Vec<VertexSnapshot>,
    /// Restarts so far (Flink's `numRestarts`).
    pub restarts: u64,
    /// Why it failed, once FAILED.
    pub failure: Option<String>,
    /// Its failures (copied on write: a new failure replaces the `Arc`).
    pub exceptions: Arc<Exceptions>,
    /// Per TaskManager, the slots this job uses there now.
    pub slots_in_use: Vec<(u32, u32)>,
}

impl JobSnapshot {
    /// A job just submitted at `now_ms`: INITIALIZING and CREATED then, every vertex's tasks
    /// CREATED.
    pub fn submitted(now_ms: i64, parallelisms: &[u32]) -> JobSnapshot {
        let mut timestamps = [0; 11];
        timestamps[JobStatus::Initializing.ordinal()] = now_ms;
        timestamps[JobStatus::Created.ordinal()] = now_ms;
        JobSnapshot {
            status: JobStatus::Created,
            timestamps,
            last_modification: now_ms,
            vertices: parallelisms
                .iter()
                .map(|&p| VertexSnapshot::created(p))
                .collect(),
            restarts: 0,
            failure: None,
            exceptions: Arc::default(),
            slots_in_use: Vec::new(),
        }
    }

    /// When the job was submitted (its INITIALIZING timestamp), epoch ms.
    pub fn start_ms(&self) -> i64 {
        self.timestamps[JobStatus::Initializing.ordinal()]
    }

    /// When it ended, epoch ms; -1 while it has not.
    pub fn end_ms(&self) -> i64 {
        if self.status.is_globally_terminal() {
            self.timestamps[self.status.ordinal()]
        } else {
            -1
        }
    }

    /// Its tasks per state, summed over the vertices.
    pub fn task_counts(&self) -> [u32; 10] {
        let mut sum = [0u32; 10];
        for v in &self.vertices {
            for (s, c) in sum.iter_mut().zip(v.counts) {
                *s += c;
            }
        }
        sum
    }
}

/// A job vertex's aggregates, kept by the job loop in O(1) per task state change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VertexSnapshot {
    /// Its parallelism (-1 while undecided).
    pub parallelism: i64,
    /// Its tasks per state, by [`ExecutionState::ordinal`].
    pub counts: [u32; 10],
    /// Its first task's deployment (of the current attempts' round: a vertex all of whose
    /// tasks were reset starts again), epoch ms; -1 before.
    pub start_ms: i64,
    /// When a task of it last changed state, epoch ms (its end once every task is terminal).
    pub last_change_ms: i64,
    /// Its finished tasks' I/O, summed.
    pub io: IoCounts,
    /// Tasks whose I/O is in `io`.
    pub reported: u32,
}

impl VertexSnapshot {
    /// `parallelism` tasks CREATED (a vertex of parallelism 0 is not initialised yet).
    pub fn created(parallelism: u32) -> VertexSnapshot {
        let mut counts = [0; 10];
        counts[ExecutionState::Created.ordinal()] = parallelism;
        VertexSnapshot {
            parallelism: if parallelism == 0 {
                -1
            } else {
                i64::from(parallelism)
            },
            counts,
            start_ms: -1,
            last_change_ms: 0,
            io: IoCounts::default(),
            reported: 0,
        }
    }
}

/// Bytes and records a task read and wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounts {
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Records read.
    pub read_records: u64,
    /// Records written.
    pub write_records: u64,
}

impl IoCounts {
    /// `self + other`, saturating.
    pub fn plus(self, other: IoCounts) -> IoCounts {
        IoCounts {
            read_bytes: self.read_bytes.saturating_add(other.read_bytes),
            write_bytes: self.write_bytes.saturating_add(other.write_bytes),
            read_records: self.read_records.saturating_add(other.read_records),
            write_records: self.write_records.saturating_add(other.write_records),
        }
    }

    /// `self - other`, saturating at 0.
    pub fn minus(self, other: IoCounts) -> IoCounts {
        IoCounts {
            read_bytes: self.read_bytes.saturating_sub(other.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(other.write_bytes),
            read_records: self.read_records.saturating_sub(other.read_records),
            write_records: self.write_records.saturating_sub(other.write_records),
        }
    }
}

/// A job's failures as the exceptions endpoint shows them, latest first, each list bounded.
#[derive(Clone, Debug, Default)]
pub struct Exceptions {
    /// The history.
    pub history: Vec<RootExceptionInfo>,
    /// Whether older entries were dropped.
    pub history_truncated: bool,
    /// Task failures.
    pub tasks: Vec<LegacyExceptionInfo>,
    /// Whether older task failures were dropped.
    pub tasks_truncated: bool,
}

/// Entries each list of [`Exceptions`] keeps (Flink's `web.exception-history-size` default).
pub const EXCEPTION_HISTORY_SIZE: usize = 16;

impl Exceptions {
    /// Adds a failure (and, for a task failure, its entry in the deprecated list) at the front,
    /// dropping the oldest beyond [`EXCEPTION_HISTORY_SIZE`].
    pub fn push(&mut self, entry: RootExceptionInfo, task: Option<LegacyExceptionInfo>) {
        self.history.insert(0, entry);
        if self.history.len() > EXCEPTION_HISTORY_SIZE {
            self.history.truncate(EXCEPTION_HISTORY_SIZE);
            self.history_truncated = true;
        }
        if let Some(task) = task {
            self.tasks.insert(0, task);
            if self.tasks.len() > EXCEPTION_HISTORY_SIZE {
                self.tasks.truncate(EXCEPTION_HISTORY_SIZE);
                self.tasks_truncated = true;
            }
        }
    }
}

/// No TaskManager (a subtask not deployed).
pub const NO_TASK_MANAGER: u32 = u32::MAX;

/// One job vertex's subtasks: each current attempt's state, TaskManager, state timestamps and
/// I/O. O(parallelism) memory, about 80 bytes a subtask.
#[derive(Clone, Debug, Default)]
pub struct SubtaskTable {
    /// Timestamps are stored as ms after this instant (epoch ms), plus one (0: never).
    pub base_ms: i64,
    /// Per subtask index.
    pub records: Vec<SubtaskRecord>,
}

/// A subtask's current attempt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubtaskRecord {
    /// Its state.
    pub state: ExecutionStateCode,
    /// Its attempt number.
    pub attempt: u32,
    /// Its TaskManager ([`NO_TASK_MANAGER`] before it is deployed).
    pub task_manager: u32,
    /// When it entered each state, as [`SubtaskTable::base_ms`] says.
    pub entered: [u32; 10],
    /// Its I/O, once it finished.
    pub io: IoCounts,
    /// Whether `io` is in.
    pub reported: bool,
}

/// An [`ExecutionState`] in one byte (default CREATED).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExecutionStateCode(u8);

impl From<ExecutionState> for ExecutionStateCode {
    fn from(s: ExecutionState) -> ExecutionStateCode {
        // At most 10 states.
        ExecutionStateCode(u8::try_from(s.ordinal()).unwrap_or(0))
    }
}

impl From<ExecutionStateCode> for ExecutionState {
    fn from(c: ExecutionStateCode) -> ExecutionState {
        ExecutionState::ALL
            .get(usize::from(c.0))
            .copied()
            .unwrap_or(ExecutionState::Created)
    }
}

impl SubtaskTable {
    fn created(parallelism: u32, now_ms: i64) -> SubtaskTable {
        let mut table = SubtaskTable {
            base_ms: now_ms,
            records: Vec::new(),
        };
        table.initialize(parallelism, now_ms);
        table
    }

    /// Gives a vertex initialised at run time its `parallelism` subtasks, CREATED at `now_ms`.
    pub fn initialize(&mut self, parallelism: u32, now_ms: i64) {
        let mut record = SubtaskRecord {
            task_manager: NO_TASK_MANAGER,
            ..SubtaskRecord::default()
        };
        record.entered[ExecutionState::Created.ordinal()] = self.encode(now_ms);
        self.records = vec![record; parallelism as usize];
    }

    /// `ms` (epoch) as stored.
    pub fn encode(&self, ms: i64) -> u32 {
        u32::try_from((ms - self.base_ms).max(0) + 1).unwrap_or(u32::MAX)
    }

    /// A stored time as epoch ms (0: never).
    pub fn decode(&self, stored: u32) -> i64 {
        if stored == 0 {
            0
        } else {
            self.base_ms + i64::from(stored) - 1
        }
    }

    /// When subtask record `r` entered each state, epoch ms (0: never).
    pub fn timestamps(&self, r: &SubtaskRecord) -> [i64; 10] {
        r.entered.map(|t| self.decode(t))
    }
}
