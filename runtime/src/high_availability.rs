//! What a JobManager that leads under high availability is given ([`LeaderContext`]): its
//! fencing token, its lease, and the job store a submission is written to before it is
//! acknowledged ([`JobStore`]). The ZooKeeper side lives in `conflux-ha`; the store's files
//! in the caller (`conflux jobmanager`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use conflux_blob_api::JobId;

use crate::protocol::JobSubmission;

/// A boxed future of the job store.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a leader makes submissions durable (Flink's `JobGraphStore`): a job is acknowledged
/// only once [`put`](Self::put) succeeded, and a later leader recovers every job still in the
/// store.
pub trait JobStore: Send + Sync {
    /// Stores `submission` as job `job`'s graph and writes its pointer.
    ///
    /// # Errors
    /// A message naming what could not be written (the submission is then refused).
    fn put<'a>(
        &'a self,
        job: JobId,
        submission: &'a JobSubmission,
    ) -> StoreFuture<'a, Result<(), String>>;

    /// Removes job `job` (it ended): a later leader does not recover it.
    fn remove(&self, job: JobId) -> StoreFuture<'_, ()>;
}

/// A leading JobManager's high-availability context.
#[derive(Clone)]
pub struct LeaderContext {
    /// The leader's fencing token: TaskManagers get it in their welcome and refuse a leader
    /// whose token is below the highest they have seen.
    pub fencing_token: u64,
    /// Whether the leader may still act: checked before every frame written to a TaskManager
    /// (a leader past its lease writes nothing more and drops its TaskManagers).
    pub lease: conflux_ha::LeaseHandle,
    /// Where submissions are made durable.
    pub job_store: Arc<dyn JobStore>,
}

impl std::fmt::Debug for LeaderContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderContext")
            .field("fencing_token", &self.fencing_token)
            .field("lease_valid", &self.lease.is_valid())
            .finish_non_exhaustive()
    }
}
