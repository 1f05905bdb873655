//! What a JobManager that leads under high availability is given ([`LeaderContext`]): its
//! fencing token, its lease, and the ZooKeeper side of its job store (one pointer node per
//! stored job, as Flink's `ZooKeeperStateHandleStore` under `jobgraphs`). The election, the
//! lease and the pointers live in `conflux-ha`; the job store's files in `conflux-job-store`
//! ([`JobManagerConfig::storage_dir`](crate::JobManagerConfig::storage_dir)).

use std::path::Path;
use std::sync::Arc;

use conflux_blob_api::JobId;
use conflux_ha::{HaOptions, JobPointers, Leadership, LeaseHandle};

/// A leading JobManager's high-availability context. With it, a submission is acknowledged
/// only once its job store entry and its pointer both exist, and an ended job's pointer is
/// removed after its result is recorded; a JobManager past its lease writes nothing more.
#[derive(Clone, Debug)]
pub struct LeaderContext {
    /// The leader's fencing token: TaskManagers get it in their welcome and refuse a leader
    /// whose token is below the highest they have seen.
    pub fencing_token: u64,
    /// Whether the leader may still act: checked before every frame written to a TaskManager
    /// and before every write to the job store (a leader past its lease writes nothing more
    /// and drops its TaskManagers).
    pub lease: LeaseHandle,
    leadership: Arc<Leadership>,
    pointers: JobPointers,
}

impl LeaderContext {
    /// The context of `leadership` over `options`' cluster id.
    pub fn new(leadership: Arc<Leadership>, options: &HaOptions) -> LeaderContext {
        LeaderContext {
            fencing_token: leadership.token(),
            lease: leadership.validity(),
            pointers: JobPointers::new(options),
            leadership,
        }
    }

    /// Writes job `job`'s pointer, naming its job store entry at `entry`, fenced by the
    /// leader's latch node.
    ///
    /// # Errors
    /// A message naming the node or the path (no longer the leader, ZooKeeper unreachable, a
    /// path that is not UTF-8).
    pub(crate) async fn put_pointer(&self, job: JobId, entry: &Path) -> Result<(), String> {
        let pointer = entry
            .to_str()
            .ok_or_else(|| format!("{} is not UTF-8", entry.display()))?;
        self.pointers
            .put(&self.leadership, &job.to_string(), pointer)
            .await
            .map_err(|e| e.to_string())
    }

    /// Removes job `job`'s pointer (it ended); a failure is logged.
    pub(crate) async fn remove_pointer(&self, job: JobId) {
        if let Err(e) = self
            .pointers
            .remove(&self.leadership, &job.to_string())
            .await
        {
            tracing::warn!(%job, "job store pointer not removed: {e}");
        }
    }
}
