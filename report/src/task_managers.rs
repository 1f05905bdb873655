//! The TaskManagers of a run.

use serde::{Deserialize, Serialize};

/// One TaskManager that received tasks of the job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskManagerReport {
    /// Its id (`tm3`).
    pub id: String,
    /// Slots it offered.
    pub slots: u32,
    /// Tasks of this job deployed to it.
    pub tasks: u64,
    /// Its process's peak resident set size as it last reported, bytes; `null` when it never
    /// reported one (and for `run`'s simulated TaskManagers).
    pub peak_rss_bytes: Option<u64>,
    /// Encoded TDD bytes it received (all jobs since it registered); `null` where not counted
    /// (`run`) or never reported.
    pub tdd_bytes_received: Option<u64>,
    /// Blobs it fetched from the blob server (cluster: all jobs since it registered; `run`:
    /// this job).
    pub blob_fetches: u64,
    /// Offloaded groups its descriptor cache served (`run`); `null` on the cluster.
    pub cache_hits: Option<u64>,
    /// Whether it was lost while the job ran.
    pub lost: bool,
}

/// The TaskManager `conflux cluster --kill-task-manager-after-ms` killed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KilledTaskManager {
    /// Its id.
    pub id: String,
    /// Its process id.
    pub pid: u32,
    /// Tasks deployed to it when it was killed.
    pub tasks: u64,
    /// When, ms after the submission.
    pub after_ms: u64,
}
