//! The embedded blob setup of `conflux run`: a real blob server on a temporary directory (its
//! durable copy on the local file system), and one real blob cache per simulated TaskManager,
//! reading the durable store first and the server second, as Flink's TaskManagers do. The caches
//! keep what they fetch in memory, in one content-addressed store shared by all of them: each
//! TaskManager still fetches and checks every blob it reads, but none makes a directory or
//! writes a file (ten thousand cache directories took seconds to make and remove on file systems
//! with slow metadata), so the run directory holds the server's few files only.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use anyhow::Context;
use conflux_blob::{
    BlobCache, BlobCacheConfig, BlobClient, BlobError, BlobKey, BlobReader, BlobServer,
    BlobServerConfig, BlobStore, BlobWriter, Bytes, DurableStoreConfig, JobId, SharedBlobMemory,
};
use conflux_deploy::TaskManagerId;
use conflux_sim::BlobEnvironment;

use crate::work_dir::{self, Kind, WorkDir};

/// The blob server and the TaskManagers' caches of one run.
pub(crate) struct EmbeddedBlobs {
    // Declared first so it is dropped first: the server and caches go before their directory.
    server: Arc<Mutex<Option<BlobServer>>>,
    caches: Mutex<HashMap<TaskManagerId, Arc<BlobCache>>>,
    config: BlobServerConfig,
    client: BlobClient,
    durable: Option<BlobStore>,
    runtime: tokio::runtime::Runtime,
    /// What the caches hold, once per blob.
    memory: SharedBlobMemory,
    _dir: WorkDir,
}

impl EmbeddedBlobs {
    /// Starts a server on a free loopback port over a new temporary directory.
    pub(crate) fn start() -> anyhow::Result<EmbeddedBlobs> {
        let dir = WorkDir::create(Kind::Run).context("creating the blob storage directory")?;
        let mut config = BlobServerConfig::new(dir.path().join("server"));
        let durable_dir = dir.path().join("durable");
        config.durable = DurableStoreConfig::Local {
            dir: durable_dir.clone(),
        };
        let server =
            BlobServer::start_blocking(config.clone()).context("starting the blob server")?;
        // Restarts bind the same port, so caches keep their server URL.
        config.address = server.local_addr();
        let client = BlobClient::new(server.url(), None).context("creating the blob client")?;
        let durable = BlobStore::open(&config.durable).context("opening the durable blob store")?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("conflux-blob-cache")
            .enable_all()
            .build()
            .context("building the blob caches' runtime")?;
        Ok(EmbeddedBlobs {
            server: Arc::new(Mutex::new(Some(server))),
            caches: Mutex::new(HashMap::new()),
            memory: SharedBlobMemory::new(),
            config,
            client,
            durable,
            runtime,
            _dir: dir,
        })
    }

    /// The server's URL.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.config.address)
    }

    /// Totals over the TaskManagers' blob caches: (server fetches, durable-store fetches, hits).
    pub(crate) fn cache_totals(&self) -> (u64, u64, u64) {
        lock(&self.caches).values().fold((0, 0, 0), |(s, d, h), c| {
            let stats = c.stats();
            (
                s + stats.server_fetches,
                d + stats.durable_fetches,
                h + stats.hits,
            )
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The JobManager's writer: whatever server currently runs (none while it restarts, so uploads
/// then fail and descriptors stay inline, as Flink falls back).
struct CurrentServer(Arc<Mutex<Option<BlobServer>>>);

impl BlobWriter for CurrentServer {
    fn put_permanent(&self, job: JobId, bytes: &[u8]) -> Result<BlobKey, BlobError> {
        work_dir::pause_if_stopping();
        match lock(&self.0).as_ref() {
            Some(server) => server.put_permanent(job, bytes),
            None => Err(BlobError::Remote(
                "the blob server is restarting".to_owned(),
            )),
        }
    }

    fn delete_permanent(&self, key: &BlobKey) -> Result<(), BlobError> {
        match lock(&self.0).as_ref() {
            Some(server) => server.delete_permanent(key),
            None => Err(BlobError::Remote(
                "the blob server is restarting".to_owned(),
            )),
        }
    }
}

impl BlobReader for CurrentServer {
    fn read(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        match lock(&self.0).as_ref() {
            Some(server) => server.read(key),
            None => Err(BlobError::Remote(
                "the blob server is restarting".to_owned(),
            )),
        }
    }
}

impl BlobEnvironment for EmbeddedBlobs {
    fn writer(&self) -> Arc<dyn BlobWriter> {
        Arc::new(CurrentServer(Arc::clone(&self.server)))
    }

    fn reader(&self, task_manager: TaskManagerId) -> Arc<dyn BlobReader> {
        let mut caches = lock(&self.caches);
        if let Some(cache) = caches.get(&task_manager) {
            return cache.clone();
        }
        // In memory: `storage_dir` is neither made nor used.
        let mut config = BlobCacheConfig::new(PathBuf::new());
        config.memory = Some(self.memory.clone());
        match BlobCache::with_parts(
            config,
            self.runtime.handle().clone(),
            Some(self.client.clone()),
            self.durable.clone(),
        ) {
            Ok(cache) => {
                let cache = Arc::new(cache);
                caches.insert(task_manager, Arc::clone(&cache));
                cache
            }
            // The cache could not be made: read through the server directly; the run reports
            // the fetches all the same.
            Err(error) => {
                tracing::warn!(
                    %task_manager, %error,
                    "blob cache could not be made; reading from the server"
                );
                Arc::new(CurrentServer(Arc::clone(&self.server)))
            }
        }
    }

    fn restart_server(&self) -> Result<(), String> {
        work_dir::pause_if_stopping();
        let old = lock(&self.server).take();
        drop(old);
        let server = BlobServer::start_blocking(self.config.clone())
            .map_err(|e| format!("restarting the blob server: {e}"))?;
        *lock(&self.server) = Some(server);
        Ok(())
    }
}
