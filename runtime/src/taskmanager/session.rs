//! What a TaskManager's sessions and tasks share: its counters (`Counters`) and, per session,
//! the context every task of it runs with (`SessionContext`: blob cache, gate loader, the
//! channel of task updates to the JobManager, running tasks, metrics). Below the TaskManager's
//! loop that builds them and the tasks and servers that read them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use conflux_blob::BlobCache;
use conflux_deploy::ExecutionAttemptId;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::gate_loader::GateLoader;
use super::sync::lock;
use super::wordcount::WordCountContext;
use crate::connection::encode;
use crate::metrics::TaskManagerMetrics;
use crate::protocol::{TaskManagerStats, ToJobManager};
use crate::rss::peak_rss_bytes;

/// Counters of a TaskManager, shared by its sessions and tasks.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) tasks: AtomicU64,
    pub(crate) tdd_bytes_received: AtomicU64,
    /// Blob fetches of the caches of ended sessions.
    pub(crate) blob_fetches_before: AtomicU64,
    /// The current session's blob cache, for the metrics.
    pub(crate) blob_cache: Mutex<Option<Arc<BlobCache>>>,
}

impl Counters {
    /// Blob fetches so far, ended sessions' and the current one's.
    pub(crate) fn blob_fetches(&self) -> u64 {
        self.blob_fetches_before.load(Ordering::Relaxed)
            + lock(&self.blob_cache)
                .as_ref()
                .map_or(0, |c| c.stats().server_fetches)
    }
}

/// What tasks of one session share.
pub(crate) struct SessionContext {
    pub(crate) blob_cache: Arc<BlobCache>,
    pub(crate) gates: GateLoader,
    pub(crate) counters: Arc<Counters>,
    pub(crate) updates: mpsc::UnboundedSender<Bytes>,
    pub(crate) running: Mutex<HashMap<ExecutionAttemptId, AbortHandle>>,
    /// What word count tasks use: partitions, caches.
    pub(crate) wordcount: WordCountContext,
    /// How many times as long tasks take (see [`TaskManagerConfig::slowdown`](crate::config::TaskManagerConfig::slowdown)).
    pub(crate) slowdown: f64,
    /// Its Prometheus metrics.
    pub(crate) metrics: Arc<TaskManagerMetrics>,
    /// Its id (`tm<n>`) and host, as its tasks' metric labels carry them.
    pub(crate) labels: (String, String),
    /// The last peak RSS read and when.
    pub(super) rss: Mutex<(std::time::Instant, u64)>,
}

impl SessionContext {
    pub(crate) fn stats(&self) -> TaskManagerStats {
        TaskManagerStats {
            tasks: self.counters.tasks.load(Ordering::Relaxed),
            tdd_bytes_received: self.counters.tdd_bytes_received.load(Ordering::Relaxed),
            blob_fetches: self.counters.blob_fetches(),
            peak_rss_bytes: self.peak_rss(),
        }
    }

    /// The peak RSS, read from the system at most every 100 ms (messages are frequent).
    fn peak_rss(&self) -> u64 {
        let mut cached = lock(&self.rss);
        if cached.0.elapsed() > Duration::from_millis(100) || cached.1 == 0 {
            // 0 on the wire: the platform does not tell (reported as unknown).
            *cached = (std::time::Instant::now(), peak_rss_bytes().unwrap_or(0));
        }
        cached.1
    }

    pub(crate) fn send(&self, message: &ToJobManager) {
        match encode(message) {
            Ok(frame) => {
                let _ = self.updates.send(frame);
            }
            Err(e) => tracing::error!("message to the JobManager not sent: {e}"),
        }
    }
}
