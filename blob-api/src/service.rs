//! The synchronous blob traits the deployment code programs against.

use std::sync::Arc;

use bytes::Bytes;

use crate::{BlobError, BlobKey, JobId};

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
