//! The blob server: local files, a durable copy, reference counts, and the HTTP endpoint.
//!
//! [`BlobServer`] here is the handle (start, stop, the local API); its state and operations
//! are split by aspect: `state` (index, locks, reference counts), `recovery` (start-up),
//! `upload`, `download`, `cleanup` (deletes, job cleanup, expiry), `stats` and `routes` (the
//! HTTP face). `routes` uses the state; nothing but this module uses `routes`.

mod cleanup;
mod download;
mod listener;
mod recovery;
mod routes;
mod state;
mod stats;
mod upload;

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use conflux_blob_api::{BlobError, BlobKey, BlobKind, BlobReader, BlobWriter, JobId};
use tokio::runtime::{Handle, Runtime};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::bridge;
use crate::config::BlobServerConfig;
use crate::layout::{self, blocking, io_err};
use crate::store::BlobStore;

use self::state::{ServerCore, KEY_LOCK_STRIPES};
use self::stats::{bump, Counters};
use self::upload::Pending;

pub use self::stats::ServerStats;

/// How long [`BlobServer::shutdown`] waits for open requests.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The blob server (Flink's `BlobServer`): stores blobs as local files, keeps a durable copy of
/// every permanent blob in a [`BlobStore`], and serves them over HTTP.
///
/// ## Protocol (HTTP/1.1; any client, e.g. curl)
///
/// | request | answer |
/// |---|---|
/// | `PUT /blobs/{permanent\|transient}/{job hex\|no_job}` with the content as body | `201`, body: the key; headers `Location: /blobs/<key>`, `X-Blob-References` |
/// | `GET /blobs/<key>` (also `HEAD`) | `200` and the content |
/// | `DELETE /blobs/<key>` | `204`; drops one reference (unknown keys too: deletes are idempotent) |
/// | `DELETE /jobs/<job hex>` | `204`; deletes every blob of the job, locally and durably |
/// | `GET /jobs` | `200`, JSON `{"jobs": ["<job hex>", ...]}`: the jobs with blobs here, sorted |
/// | `GET /health` | `200 ok`, never needs the token |
///
/// Errors: `400` a key, kind or job that does not parse (before any file is touched, so no
/// path traversal), or an upload body that cannot be read (bad chunked encoding, cut off);
/// `401` a missing or wrong bearer token; `404` an unknown (or expired) key; `408` an upload
/// that sent nothing for [`BlobServerConfig::idle_timeout_ms`]; `413` an upload above
/// [`BlobServerConfig::max_blob_bytes`] (header `X-Blob-Limit`); `500` a damaged blob without
/// a good durable copy, I/O and store failures. The body of an error is its message, except
/// for `500`s, whose details (file and store names) go to the server's log only.
///
/// Connections: at most [`BlobServerConfig::max_connections`] are served at once (more wait
/// in the listen backlog); one waiting longer than
/// [`BlobServerConfig::header_read_timeout_ms`] for a request's head (idle keep-alive ones
/// too) is closed, and so is one whose download the client has not read for
/// [`BlobServerConfig::idle_timeout_ms`]. Downloads stream from the blob file through a
/// 64 KiB buffer.
///
/// ## Storage and guarantees
///
/// An upload streams to `<storage>/incoming/temp-<n>`, hashed (BLAKE3) while written, then is
/// renamed to `job_<job>/blob_<key>`, as in Flink: a reader sees a whole blob or none. A new
/// permanent blob is copied to the durable store before the upload succeeds. Equal content of
/// one job and kind has one key; each store adds a reference and each delete drops one, and the
/// content goes (locally and durably) with the last reference, so one owner's delete never
/// removes content another still references. Counts above 1 are written next to the blob and
/// to the durable store, so a restart, even on an empty storage directory, recovers both the
/// blobs (listed from the durable store) and their counts.
///
/// Every read is checked against the digest; a damaged or missing local file is read again from
/// the durable copy, which also repairs it; damaged content is never served.
///
/// Transient blobs (Flink's `TransientBlobKey`) are kept locally only and expire
/// [`BlobServerConfig::transient_ttl_ms`] after their last access (swept every
/// [`BlobServerConfig::cleanup_interval_ms`], and checked on access). Unlike Flink, a GET does
/// not delete a transient blob.
///
/// Local files are not fsynced: durability is the durable store's job, and a file damaged by a
/// crash fails its digest check and is repaired from it.
///
/// ## Threads
///
/// [`BlobServer::start`] runs on the caller's tokio runtime (which should be multi-thread if
/// the synchronous [`BlobWriter`] methods are used; see the crate documentation);
/// [`BlobServer::start_blocking`] brings its own two-thread runtime, for synchronous embedders
/// and the simulator.
pub struct BlobServer {
    core: Arc<ServerCore>,
    addr: SocketAddr,
    handle: Handle,
    shutdown: Option<oneshot::Sender<()>>,
    serve_task: Option<JoinHandle<()>>,
    sweeper: Option<JoinHandle<()>>,
    runtime: Option<Runtime>,
}

impl fmt::Debug for BlobServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobServer")
            .field("addr", &self.addr)
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

impl BlobServer {
    /// Starts a server on the current tokio runtime: recovers the blobs of
    /// [`BlobServerConfig::storage_dir`] and of the durable store, then listens on
    /// [`BlobServerConfig::address`]. Leftovers of a killed server are removed first: files in
    /// `incoming/` and the staging files (`<object>#<n>`) of a local durable directory. With
    /// [`BlobServerConfig::recovered_jobs`], the blobs of every other job are then deleted.
    ///
    /// # Errors
    /// [`BlobError::Io`] when the storage directory cannot be used or the address bound,
    /// [`BlobError::Store`] / [`BlobError::Config`] for the durable store.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub async fn start(config: BlobServerConfig) -> Result<BlobServer, BlobError> {
        let handle = Handle::current();
        let root = config.storage_dir.clone();
        let incoming = blocking(move || {
            fs::create_dir_all(&root)
                .map_err(io_err(format!("creating directory {}", root.display())))?;
            layout::reset_incoming(&root)
        })
        .await?;
        if let crate::DurableStoreConfig::Local { dir } = &config.durable {
            let dir = dir.clone();
            blocking(move || recovery::sweep_staging(&dir)).await?;
        }
        let durable = match &config.durable {
            crate::DurableStoreConfig::None => None,
            other => {
                let other = other.clone();
                blocking(move || BlobStore::open(&other)).await?
            }
        };
        let core = Arc::new(ServerCore {
            root: config.storage_dir.clone(),
            incoming,
            durable,
            index: Mutex::new(HashMap::new()),
            key_locks: (0..KEY_LOCK_STRIPES)
                .map(|_| tokio::sync::Mutex::new(()))
                .collect(),
            temp_counter: AtomicU64::new(0),
            max_blob_bytes: config.max_blob_bytes,
            auth_token: config.auth_token.clone(),
            transient_ttl_ms: config.transient_ttl_ms,
            idle_timeout_ms: config.idle_timeout_ms.max(1),
            clock: Arc::clone(&config.clock),
            counters: Counters::default(),
        });
        core.recover().await?;
        if let Some(recovered) = &config.recovered_jobs {
            core.retain_jobs(recovered).await?;
        }

        let listener = tokio::net::TcpListener::bind(config.address)
            .await
            .map_err(io_err(format!(
                "binding the blob server to {}",
                config.address
            )))?;
        let addr = listener
            .local_addr()
            .map_err(io_err("reading the blob server's address"))?;
        let (shutdown, signal) = oneshot::channel::<()>();
        let app = routes::router(Arc::clone(&core));
        let limits = listener::Limits {
            max_connections: config.max_connections,
            header_read_timeout: Duration::from_millis(config.header_read_timeout_ms.max(1)),
            stall_timeout: Duration::from_millis(config.idle_timeout_ms.max(1)),
        };
        let serve_task = tokio::spawn(listener::serve(
            listener,
            app,
            limits,
            Arc::clone(&core),
            signal,
        ));
        let sweep_core = Arc::clone(&core);
        let period = Duration::from_millis(config.cleanup_interval_ms.max(1));
        let sweeper = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(period);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                sweep_core.expire_transient().await;
            }
        });
        tracing::info!(
            address = %addr,
            storage = %config.storage_dir.display(),
            durable = ?core.durable.as_ref().map(ToString::to_string),
            "blob server started"
        );
        Ok(BlobServer {
            core,
            addr,
            handle,
            shutdown: Some(shutdown),
            serve_task: Some(serve_task),
            sweeper: Some(sweeper),
            runtime: None,
        })
    }

    /// Starts a server on a runtime of its own (two worker threads named
    /// `conflux-blob-server`), which lives as long as the server. For callers without a tokio
    /// runtime, such as the CLI and the simulator; may be called from anywhere.
    ///
    /// # Errors
    /// As [`BlobServer::start`]; [`BlobError::Io`] when the runtime cannot be built.
    pub fn start_blocking(config: BlobServerConfig) -> Result<BlobServer, BlobError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("conflux-blob-server")
            .enable_all()
            .build()
            .map_err(io_err("building the blob server's runtime"))?;
        let mut server = bridge::block_on(runtime.handle(), BlobServer::start(config))?;
        server.runtime = Some(runtime);
        Ok(server)
    }

    /// The address the server listens on (with the port chosen when the configured one was 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's base URL, `http://<address>`, for [`BlobClient`](crate::BlobClient) and
    /// [`BlobCacheConfig::server_url`](crate::BlobCacheConfig::server_url).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A handle of the runtime the server runs on.
    pub fn runtime_handle(&self) -> &Handle {
        &self.handle
    }

    /// The local storage root.
    pub fn storage_dir(&self) -> &Path {
        &self.core.root
    }

    /// Where `key`'s local file is (or would be): `<storage>/job_<job>/blob_<key>`.
    pub fn blob_path(&self, key: &BlobKey) -> PathBuf {
        layout::blob_path(&self.core.root, key)
    }

    /// The durable store, if one is configured.
    pub fn durable_store(&self) -> Option<&BlobStore> {
        self.core.durable.as_ref()
    }

    /// Stores `bytes` as a blob of `kind` for `job` and returns its key (adds a reference if the
    /// content is already stored).
    ///
    /// # Errors
    /// [`BlobError::TooLarge`] above the cap; I/O and durable-store failures (then nothing is
    /// stored).
    pub async fn put(
        &self,
        kind: BlobKind,
        job: Option<JobId>,
        bytes: Bytes,
    ) -> Result<BlobKey, BlobError> {
        self.core
            .put_bytes(kind, job, bytes)
            .await
            .map(|(key, _)| key)
    }

    /// A blob's content, verified against its digest (from the durable copy when the local file
    /// is missing or damaged).
    ///
    /// # Errors
    /// [`BlobError::NotFound`] for unknown or expired keys, [`BlobError::DigestMismatch`] when
    /// no undamaged copy exists, I/O and store failures.
    pub async fn get(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        self.core.get(key).await
    }

    /// Drops one reference to a blob; the last one deletes it locally and durably. Unknown keys
    /// are not an error.
    ///
    /// # Errors
    /// I/O and store failures.
    pub async fn delete(&self, key: &BlobKey) -> Result<(), BlobError> {
        self.core.delete(key).await
    }

    /// Deletes every blob of `job`, whatever its references, locally and in the durable store
    /// (Flink's `globalCleanupAsync`). Returns how many blobs the server held for the job.
    /// Uploads for the job racing with its cleanup may survive or be lost: clean up a job once
    /// it has ended.
    ///
    /// # Errors
    /// I/O and store failures.
    pub async fn cleanup_job(&self, job: JobId) -> Result<usize, BlobError> {
        self.core.cleanup_job(job).await
    }

    /// The jobs with blobs on this server, sorted (what `GET /jobs` lists).
    pub fn jobs(&self) -> Vec<JobId> {
        self.core.jobs()
    }

    /// Deletes the blobs of every job not in `recovered`, locally and in the durable store
    /// (Flink's `BlobServer.retainJobs`, FLINK-25436: a JobManager that recovered these jobs
    /// needs no other job's blobs). Job-unrelated blobs stay. Returns the jobs deleted,
    /// sorted. [`BlobServerConfig::recovered_jobs`] does the same at start.
    ///
    /// # Errors
    /// I/O and store failures (the jobs before the failing one are deleted).
    pub async fn retain_jobs(&self, recovered: &[JobId]) -> Result<Vec<JobId>, BlobError> {
        self.core.retain_jobs(recovered).await
    }

    /// Expires transient blobs unused for longer than the TTL now, instead of waiting for the
    /// periodic sweep (useful with a [`ManualClock`](crate::ManualClock)). Returns how many.
    pub async fn expire_transient(&self) -> usize {
        self.core.expire_transient().await
    }

    /// How many references `key` has (0: not stored).
    pub fn references(&self, key: &BlobKey) -> u64 {
        self.core
            .lock_index()
            .get(key)
            .map_or(0, |entry| entry.refs)
    }

    /// Whether the server holds `key` (expired transient blobs may count until swept).
    pub fn contains(&self, key: &BlobKey) -> bool {
        self.core.lock_index().contains_key(key)
    }

    /// Counters since start and what is held now.
    pub fn stats(&self) -> ServerStats {
        self.core.stats()
    }

    /// Stops accepting connections, lets open requests finish (at most 10 s) and stops the
    /// sweeper. Dropping the server does the same without waiting.
    pub async fn shutdown(mut self) {
        if let Some(signal) = self.shutdown.take() {
            signal.send(()).ok();
        }
        if let Some(sweeper) = self.sweeper.take() {
            sweeper.abort();
        }
        if let Some(task) = self.serve_task.take() {
            let abort = task.abort_handle();
            if tokio::time::timeout(SHUTDOWN_GRACE, task).await.is_err() {
                tracing::warn!(address = %self.addr, "open requests outlived the grace period");
                abort.abort();
            }
        }
        tracing::info!(address = %self.addr, "blob server stopped");
    }
}

impl Drop for BlobServer {
    fn drop(&mut self) {
        if let Some(signal) = self.shutdown.take() {
            signal.send(()).ok();
        }
        if let Some(sweeper) = self.sweeper.take() {
            sweeper.abort();
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl BlobWriter for BlobServer {
    /// Stores a permanent blob with local files and the durable copy, from any thread (see the
    /// crate documentation). The digest is computed on the calling thread.
    fn put_permanent(&self, job: JobId, bytes: &[u8]) -> Result<BlobKey, BlobError> {
        let size = bytes.len() as u64;
        if size > self.core.max_blob_bytes {
            bump(&self.core.counters.rejected, 1);
            return Err(BlobError::TooLarge {
                size,
                limit: self.core.max_blob_bytes,
            });
        }
        let key = BlobKey::for_content(BlobKind::Permanent, Some(job), bytes);
        let bytes = Bytes::copy_from_slice(bytes);
        let core = Arc::clone(&self.core);
        bridge::block_on(&self.handle, async move {
            core.commit(key, Pending::Bytes(bytes), size).await
        })?;
        Ok(key)
    }

    fn delete_permanent(&self, key: &BlobKey) -> Result<(), BlobError> {
        let core = Arc::clone(&self.core);
        let key = *key;
        bridge::block_on(&self.handle, async move { core.delete(&key).await })
    }
}

impl BlobReader for BlobServer {
    /// Reads a blob as [`BlobServer::get`] does, from any thread.
    fn read(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        let core = Arc::clone(&self.core);
        let key = *key;
        bridge::block_on(&self.handle, async move { core.get(&key).await })
    }
}
