//! What the REST API needs of a JobManager, as a trait: the runtime implements it over its job
//! table, its TaskManager registry and its metrics; tests implement it over fixed data.

use std::net::SocketAddr;
use std::sync::Arc;

use conflux_blob_api::JobId;

use crate::view::JobView;

/// A JobManager as its REST API sees it. Every method must be quick and must not wait for a
/// job's event loop: they read tables held under short locks and published snapshots.
pub trait RestBackend: Send + Sync + 'static {
    /// Every job kept, in submission order.
    fn jobs(&self) -> Vec<Arc<JobView>>;

    /// One job, if kept.
    fn job(&self, id: JobId) -> Option<Arc<JobView>>;

    /// The registered TaskManagers, by id.
    fn task_managers(&self) -> Vec<TaskManagerStatus>;

    /// Asks a job to cancel.
    fn cancel(&self, id: JobId) -> CancelOutcome;

    /// The JobManager's settings under Flink's keys (`rest.port`, `heartbeat.timeout`, ...;
    /// Conflux's own under `conflux.*`), for `/jobmanager/config`.
    fn configuration(&self) -> Vec<(String, String)>;

    /// The Prometheus text of `/metrics`.
    fn metrics(&self) -> String;
}

/// What became of a cancel request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job is being cancelled (or already was).
    Accepted,
    /// No such job.
    Unknown,
    /// The job had already ended with this status (`FINISHED` or `FAILED`).
    AlreadyEnded(crate::states::JobStatus),
}

/// A registered TaskManager now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskManagerStatus {
    /// Its number (`tm<n>`).
    pub id: u32,
    /// Where its data server listens.
    pub data_address: SocketAddr,
    /// Its slots.
    pub slots: u32,
    /// Its slots in use, per job.
    pub slots_in_use: Vec<(JobId, u32)>,
    /// When it last answered a heartbeat, epoch ms.
    pub last_heartbeat_ms: i64,
}

impl TaskManagerStatus {
    /// Its free slots.
    pub fn free_slots(&self) -> u32 {
        let used: u32 = self.slots_in_use.iter().map(|(_, n)| *n).sum();
        self.slots.saturating_sub(used)
    }
}
