//! `conflux-blob`: content-addressed blobs for shipping large deployment data, after Flink's
//! blob server (`BlobServer`, `PermanentBlobCache`, `BlobStore`).
//!
//! This crate depends on nothing else of Conflux. It gives the deployment crate [`BlobKey`] and
//! the [`BlobWriter`] / [`BlobReader`] traits, and a runtime the server, caches and stores:
//!
//! - [`BlobServer`]: the JobManager side. An HTTP server (axum on tokio) that stores blobs as
//!   local files under a storage directory, keeps a durable copy of every permanent blob in a
//!   [`BlobStore`], counts references, and implements [`BlobWriter`] for the co-located
//!   JobManager (as Flink's `BlobServer` implements `BlobWriter`).
//! - [`BlobCache`]: the TaskManager side (Flink's `PermanentBlobCache` / `TransientBlobCache`):
//!   local file, then durable store, then server; LRU within a byte budget; implements
//!   [`BlobReader`].
//! - [`BlobStore`]: the durable copy on an object store (Flink's HA `BlobStore`): a local
//!   directory by default, S3-compatible by configuration.
//! - [`BlobClient`]: the HTTP client of the server's protocol, used by the cache.
//!
//! Every byte served or stored is checked against the BLAKE3 digest in its [`BlobKey`].
//!
//! ## Threads
//!
//! The synchronous [`BlobWriter`] / [`BlobReader`] implementations of [`BlobServer`] and
//! [`BlobCache`] may be called from any thread, including a tokio worker: network and
//! object-store work runs on the runtime given at construction, and a call made from inside a
//! runtime waits on a short-lived helper thread (so it blocks its caller, like any synchronous
//! I/O, but never panics or dead-locks a multi-thread runtime). The one unsupported case is a
//! call from the only thread of a current-thread runtime that is also the runtime the server or
//! cache was started on: nothing would drive its I/O.

mod bridge;
mod cache;
mod client;
mod clock;
mod config;
mod http;
mod key;
mod layout;
mod memory;
mod server;
mod store;

use std::sync::Arc;

pub use bytes::Bytes;
pub use cache::{BlobCache, CacheStats};
pub use client::BlobClient;
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{
    BlobCacheConfig, BlobServerConfig, DurableStoreConfig, S3Config, DEFAULT_CACHE_BYTES,
    DEFAULT_MAX_BLOB_BYTES, DEFAULT_TRANSIENT_TTL_MS,
};
pub use key::{BlobKey, BlobKind, Digest, JobId};
pub use memory::MemoryBlobStore;
pub use server::{BlobServer, ServerStats};
pub use store::BlobStore;

/// Why a blob operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlobError {
    /// No blob under this key.
    #[error("blob {0} not found")]
    NotFound(BlobKey),
    /// A string that is not a blob key (or job id); nothing was touched.
    #[error("invalid blob key: {0}")]
    InvalidKey(String),
    /// Stored or received bytes do not hash to the key's digest; they are never served.
    #[error("blob {key}: content does not match its digest (corrupted)")]
    DigestMismatch {
        /// The key whose content is wrong.
        key: BlobKey,
    },
    /// An upload above the configured cap.
    #[error("blob of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Size of the upload in bytes (as far as known).
        size: u64,
        /// The cap in bytes.
        limit: u64,
    },
    /// The request lacked the shared secret.
    #[error("unauthorized: missing or wrong bearer token")]
    Unauthorized,
    /// File system or network failure.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, e.g. `writing /tmp/blobs/incoming/temp-3`.
        context: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The durable object store failed.
    #[error("object store: {0}")]
    Store(String),
    /// The remote server answered with an error.
    #[error("blob server: {0}")]
    Remote(String),
    /// An HTTP request could not be made or its answer not be read (connection refused, reset,
    /// timed out).
    #[error("request to {url} failed: {source}")]
    Transport {
        /// The URL requested.
        url: String,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A configuration that cannot work (a bad URL, an S3 setting the client refuses).
    #[error("invalid blob configuration: {0}")]
    Config(String),
    /// A background task failed or was cancelled (the runtime shut down); a bug unless the
    /// process is stopping.
    #[error("internal error (a bug unless shutting down): {0}")]
    Internal(String),
}

/// Stores blobs (the JobManager side: Flink's `BlobWriter`, implemented by its `BlobServer`).
/// Synchronous: callers are deployment threads, not an async runtime.
pub trait BlobWriter: Send + Sync {
    /// Stores `bytes` as a permanent blob of `job` and returns its key. Storing the same content
    /// again for the same job returns the same key and adds a reference.
    ///
    /// # Errors
    /// [`BlobError::TooLarge`] above the configured cap; I/O and store failures.
    fn put_permanent(&self, job: JobId, bytes: &[u8]) -> Result<BlobKey, BlobError>;

    /// Drops one reference to a permanent blob; the content is deleted when no reference is
    /// left. Deleting an unknown key is not an error (deletes are retried and idempotent).
    ///
    /// # Errors
    /// I/O and store failures.
    fn delete_permanent(&self, key: &BlobKey) -> Result<(), BlobError>;
}

/// Reads blobs (the TaskManager side: Flink's `PermanentBlobService`).
pub trait BlobReader: Send + Sync {
    /// The content of a blob, verified against its digest.
    ///
    /// # Errors
    /// [`BlobError::NotFound`], [`BlobError::DigestMismatch`], I/O and network failures.
    fn read(&self, key: &BlobKey) -> Result<Bytes, BlobError>;
}

impl<T: BlobWriter + ?Sized> BlobWriter for Arc<T> {
    fn put_permanent(&self, job: JobId, bytes: &[u8]) -> Result<BlobKey, BlobError> {
        (**self).put_permanent(job, bytes)
    }
    fn delete_permanent(&self, key: &BlobKey) -> Result<(), BlobError> {
        (**self).delete_permanent(key)
    }
}

impl<T: BlobReader + ?Sized> BlobReader for Arc<T> {
    fn read(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        (**self).read(key)
    }
}
