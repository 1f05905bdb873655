//! Configuration of the server, the cache and the durable store.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use conflux_blob_api::JobId;
use conflux_object_store::S3Config;

use crate::cache_memory::SharedBlobMemory;
use crate::clock::{Clock, SystemClock};

/// Default cap on one blob: 1 GiB (1,073,741,824 bytes). Flink has no cap; one protects the
/// server's disk from a runaway upload.
pub const DEFAULT_MAX_BLOB_BYTES: u64 = 1 << 30;

/// Default byte budget of a [`BlobCache`](crate::BlobCache): 100 MiB (104,857,600 bytes), as
/// Flink's `BlobCacheSizeTracker` (FLINK-23354, 1.14).
pub const DEFAULT_BLOB_CACHE_BYTES: u64 = 100 << 20;

/// Default cap on the connections a [`BlobServer`](crate::BlobServer) serves at once: 256
/// (two descriptors each at most, a socket and a blob file, within a common limit of 1,024).
/// Flink's `blob.fetch.num-concurrent` is 50, for clients that do not keep connections open.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// Default time for a request's head, and so for an idle keep-alive connection: 30,000 ms.
pub const DEFAULT_HEADER_READ_TIMEOUT_MS: u64 = 30_000;

/// Default time a transfer may make no progress: 60,000 ms.
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 60_000;

/// Default TTL of transient blobs: 3,600,000 ms (1 hour), Flink's
/// `blob.service.cleanup.interval`.
pub const DEFAULT_TRANSIENT_TTL_MS: u64 = 3_600_000;

/// Where the durable copy of permanent blobs goes (Flink's HA `BlobStore`).
#[derive(Clone, Debug, Default)]
pub enum DurableStoreConfig {
    /// No durable copy (Flink's `VoidBlobStore`): a lost storage directory loses its blobs.
    #[default]
    None,
    /// A directory of the local (or a mounted network) file system, laid out as
    /// [`BlobStore`](crate::BlobStore) says.
    Local {
        /// The root directory; created if missing.
        dir: PathBuf,
    },
    /// An S3-compatible object store.
    S3(S3Config),
}

/// How a [`BlobServer`](crate::BlobServer) runs. Build it with [`BlobServerConfig::new`] and
/// change fields as needed. `Debug` hides the token.
#[derive(Clone)]
pub struct BlobServerConfig {
    /// The address to listen on; port 0 takes any free port (Flink's `blob.server.port`, default
    /// `0`). Default `127.0.0.1:0`.
    pub address: SocketAddr,
    /// The local storage root (Flink's `blob.storage.directory`): `incoming/` for uploads in
    /// progress, `job_<job>/blob_<key>` and `no_job/blob_<key>` for stored blobs.
    pub storage_dir: PathBuf,
    /// The durable copy of permanent blobs. Default: a local directory `<storage_dir>/durable`
    /// (point it at another disk, a network mount or S3 for real durability).
    pub durable: DurableStoreConfig,
    /// The largest accepted blob in bytes; larger uploads get HTTP 413 and no more than this many
    /// bytes are written. Default [`DEFAULT_MAX_BLOB_BYTES`].
    pub max_blob_bytes: u64,
    /// A shared secret: when set, every request except `GET /health` must carry
    /// `Authorization: Bearer <token>` or gets HTTP 401. Default none.
    pub auth_token: Option<String>,
    /// How long a transient blob lives after its last access, in ms. Default
    /// [`DEFAULT_TRANSIENT_TTL_MS`].
    pub transient_ttl_ms: u64,
    /// How often expired transient blobs are swept, in ms (Flink uses the cleanup interval for
    /// both). Default [`DEFAULT_TRANSIENT_TTL_MS`].
    pub cleanup_interval_ms: u64,
    /// The clock TTLs are measured with. Default [`SystemClock`].
    pub clock: Arc<dyn Clock>,
    /// Most connections served at once, as Flink's `blob.fetch.num-concurrent`; past it new
    /// connections wait in the listen backlog (using no descriptor of the server) until one
    /// closes. Keep it well below the process's descriptor limit: a download holds its socket
    /// and its blob file. Default [`DEFAULT_MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// How long a connection may take to send a request's head, in ms, counted from when it
    /// waits for one: bounds slow clients and idle keep-alive connections alike, so idle
    /// sockets cannot hold the connection cap. Default [`DEFAULT_HEADER_READ_TIMEOUT_MS`].
    pub header_read_timeout_ms: u64,
    /// How long a transfer may make no progress, in ms: an upload whose body sends nothing
    /// gets HTTP 408, a download the client does not read is cut. Default
    /// [`DEFAULT_IDLE_TIMEOUT_MS`].
    pub idle_timeout_ms: u64,
    /// The jobs being recovered, as a JobManager knows them when it starts (Flink's
    /// `BlobServer.retainJobs`, FLINK-25436): when set, the blobs of every other job are
    /// deleted at start, locally and in the durable store (job-unrelated blobs stay). `None`
    /// keeps every job's blobs. A JobManager reads the jobs a server holds with `GET /jobs`
    /// ([`BlobClient::jobs`](crate::BlobClient::jobs)). Default `None`.
    pub recovered_jobs: Option<Vec<JobId>>,
}

impl BlobServerConfig {
    /// Defaults (see each field) with local storage under `storage_dir`.
    pub fn new(storage_dir: impl Into<PathBuf>) -> BlobServerConfig {
        let storage_dir = storage_dir.into();
        BlobServerConfig {
            address: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            durable: DurableStoreConfig::Local {
                dir: storage_dir.join("durable"),
            },
            storage_dir,
            max_blob_bytes: DEFAULT_MAX_BLOB_BYTES,
            auth_token: None,
            transient_ttl_ms: DEFAULT_TRANSIENT_TTL_MS,
            cleanup_interval_ms: DEFAULT_TRANSIENT_TTL_MS,
            clock: Arc::new(SystemClock::new()),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout_ms: DEFAULT_HEADER_READ_TIMEOUT_MS,
            idle_timeout_ms: DEFAULT_IDLE_TIMEOUT_MS,
            recovered_jobs: None,
        }
    }
}

impl fmt::Debug for BlobServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobServerConfig")
            .field("address", &self.address)
            .field("storage_dir", &self.storage_dir)
            .field("durable", &self.durable)
            .field("max_blob_bytes", &self.max_blob_bytes)
            .field(
                "auth_token",
                &self.auth_token.as_ref().map(|_| "<redacted>"),
            )
            .field("transient_ttl_ms", &self.transient_ttl_ms)
            .field("cleanup_interval_ms", &self.cleanup_interval_ms)
            .field("clock", &self.clock)
            .field("max_connections", &self.max_connections)
            .field("header_read_timeout_ms", &self.header_read_timeout_ms)
            .field("idle_timeout_ms", &self.idle_timeout_ms)
            .field("recovered_jobs", &self.recovered_jobs)
            .finish()
    }
}

/// How a [`BlobCache`](crate::BlobCache) runs. Build it with [`BlobCacheConfig::new`] and
/// change fields as needed. `Debug` hides the token.
#[derive(Clone)]
pub struct BlobCacheConfig {
    /// The cache's own directory (one per TaskManager): `incoming/`, `job_<job>/`, `no_job/`.
    /// Blobs left there by an earlier process are removed at start: a cache starts empty.
    pub storage_dir: PathBuf,
    /// The blob server, e.g. `http://127.0.0.1:6124`; `None` reads only the durable store.
    pub server_url: Option<String>,
    /// The durable store to read permanent blobs from before asking the server (Flink's
    /// TaskManagers read the HA store first). Default none.
    pub durable: DurableStoreConfig,
    /// The server's shared secret, sent as `Authorization: Bearer <token>`. Default none.
    pub auth_token: Option<String>,
    /// The byte budget of cached blobs; least recently used blobs are evicted to stay within it.
    /// A blob larger than the whole budget is served but not kept. Default
    /// [`DEFAULT_BLOB_CACHE_BYTES`] (Flink's `BlobCacheSizeTracker`, FLINK-23354).
    pub max_bytes: u64,
    /// How long a transient blob stays cached after its last access, in ms. Default
    /// [`DEFAULT_TRANSIENT_TTL_MS`].
    pub transient_ttl_ms: u64,
    /// Retries of a failed server fetch (connection errors, 5xx, digest mismatch), Flink's
    /// `blob.fetch.retries`. Default 5.
    pub fetch_retries: u32,
    /// The clock TTLs are measured with. Default [`SystemClock`].
    pub clock: Arc<dyn Clock>,
    /// Keep cached blobs in this store in memory, shared with other caches of the process,
    /// instead of files under `storage_dir` (which is then neither created nor used). Default
    /// none: files.
    pub memory: Option<SharedBlobMemory>,
}

impl BlobCacheConfig {
    /// Defaults (see each field) with the cache directory `storage_dir`, no server and no durable
    /// store yet.
    pub fn new(storage_dir: impl Into<PathBuf>) -> BlobCacheConfig {
        BlobCacheConfig {
            storage_dir: storage_dir.into(),
            server_url: None,
            durable: DurableStoreConfig::None,
            auth_token: None,
            max_bytes: DEFAULT_BLOB_CACHE_BYTES,
            transient_ttl_ms: DEFAULT_TRANSIENT_TTL_MS,
            fetch_retries: 5,
            clock: Arc::new(SystemClock::new()),
            memory: None,
        }
    }
}

impl fmt::Debug for BlobCacheConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobCacheConfig")
            .field("storage_dir", &self.storage_dir)
            .field("server_url", &self.server_url)
            .field("durable", &self.durable)
            .field(
                "auth_token",
                &self.auth_token.as_ref().map(|_| "<redacted>"),
            )
            .field("max_bytes", &self.max_bytes)
            .field("transient_ttl_ms", &self.transient_ttl_ms)
            .field("fetch_retries", &self.fetch_retries)
            .field("clock", &self.clock)
            .field("memory", &self.memory)
            .finish()
    }
}
