//! `conflux-blob`: content-addressed blobs for shipping large deployment data, after Flink's
//! blob server (`BlobServer`, `PermanentBlobCache`, `BlobStore`).
//!
//! This crate depends on nothing else of Conflux but `conflux-blob-api`, whose names
//! ([`BlobKey`], [`JobId`], [`BlobError`]), traits ([`BlobWriter`] / [`BlobReader`]) and
//! [`MemoryBlobStore`] it re-exports. It adds the runtime implementations of those traits:
//!
//! - [`BlobServer`]: the JobManager side. An HTTP server (axum on tokio) that stores blobs as
//!   local files under a storage directory, keeps a durable copy of every permanent blob in a
//!   [`BlobStore`], counts references, and implements [`BlobWriter`] for the co-located
//!   JobManager (as Flink's `BlobServer` implements `BlobWriter`).
//! - [`BlobCache`]: the TaskManager side (Flink's `PermanentBlobCache` / `TransientBlobCache`):
//!   local file, then durable store, then server; LRU within a byte budget; implements
//!   [`BlobReader`]. Many caches of one process may keep their blobs in one
//!   [`SharedBlobMemory`] instead of files.
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
mod cache_memory;
mod client;
mod clock;
mod config;
mod layout;
mod protocol;
mod server;
mod store;

pub use cache::{BlobCache, BlobCacheStats};
pub use cache_memory::SharedBlobMemory;
pub use client::BlobClient;
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{
    BlobCacheConfig, BlobServerConfig, DurableStoreConfig, DEFAULT_BLOB_CACHE_BYTES,
    DEFAULT_HEADER_READ_TIMEOUT_MS, DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_BLOB_BYTES,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_TRANSIENT_TTL_MS,
};
pub use conflux_blob_api::{
    BlobError, BlobKey, BlobKind, BlobReader, BlobWriter, Bytes, Digest, JobId, MemoryBlobStore,
};
pub use conflux_object_store::S3Config;
pub use server::{BlobServer, ServerStats};
pub use store::BlobStore;
