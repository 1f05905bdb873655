//! `Shared`: what the JobManager's tasks share (configuration, metrics, the TaskManager registry,
//! the job table, the storage directory, shutdown). Below the JobManager that builds it and the
//! servers, admission and recovery that read it.

use std::net::SocketAddr;
use std::sync::Arc;

use conflux_blob::BlobServer;
use conflux_blob_api::JobId;
use tokio::sync::{Notify, Semaphore};

use super::jobs::Jobs;
use super::registry::Registry;
use crate::config::JobManagerConfig;
use crate::metrics::JobManagerMetrics;

pub(crate) struct Shared {
    pub(crate) config: JobManagerConfig,
    /// Prometheus metrics (`GET /metrics` on the REST port).
    pub(crate) metrics: JobManagerMetrics,
    /// Where the REST API listens, if it does.
    pub(crate) rest_address: Option<SocketAddr>,
    /// The blob server's counters, for the metrics.
    pub(crate) blob_server: std::sync::Weak<BlobServer>,
    pub(crate) registry: Arc<Registry>,
    pub(crate) jobs: Jobs,
    pub(crate) blob_server_url: String,
    /// Bounds the submissions being loaded and checked at once.
    pub(crate) loading: Semaphore,
    pub(crate) shutdown: Notify,
    /// The storage directory (`high-availability.storageDir`), when jobs are kept and
    /// recovered.
    pub(crate) store: Option<conflux_job_store::StorageDir>,
    /// The recovered jobs not yet ended: a registering TaskManager keeps their partitions
    /// (the welcome's `keep_jobs`).
    pub(crate) recovering: std::sync::Mutex<Vec<JobId>>,
    /// Set when shutdown begins: jobs it cancels keep their job store entries (a later
    /// JobManager recovers them), as Flink suspends rather than ends them.
    pub(crate) stopping: std::sync::atomic::AtomicBool,
}

impl Shared {
    /// The recovered jobs not yet ended.
    pub(crate) fn recovering(&self) -> Vec<JobId> {
        self.recovering
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}
