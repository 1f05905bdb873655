//! `conflux-blob-api`: the light API of Conflux's content-addressed blobs, after Flink's
//! `BlobWriter` / `PermanentBlobService` interfaces and its `BlobKey` / `JobID`.
//!
//! This crate is what the scheduling and deployment crates depend on: the names
//! ([`BlobKey`], [`JobId`], [`Digest`], [`BlobKind`]), the synchronous [`BlobWriter`] /
//! [`BlobReader`] traits, their error [`BlobError`], and [`MemoryBlobStore`] for tests and
//! simulations. It has no async runtime, HTTP or object-store dependency (only `serde`,
//! `thiserror`, `blake3` and `bytes`), so depending on it keeps a crate's tree small; the
//! runtime implementations (the HTTP `BlobServer`, the TaskManager-side `BlobCache`, the
//! durable `BlobStore`) live in `conflux-blob`, which re-exports everything here.

mod error;
mod key;
mod key_parse;
mod memory;
mod service;

pub use bytes::Bytes;
pub use error::BlobError;
pub use key::{BlobKey, BlobKind, Digest, JobId};
pub use memory::MemoryBlobStore;
pub use service::{BlobReader, BlobWriter};
