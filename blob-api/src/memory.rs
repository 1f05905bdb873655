//! An in-memory blob store, for tests and simulations.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;

use crate::{BlobError, BlobKey, BlobKind, BlobReader, BlobWriter, JobId};

/// Blobs in a map, reference-counted per key, with counters of calls. Thread-safe.
#[derive(Debug, Default)]
pub struct MemoryBlobStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    blobs: HashMap<BlobKey, (Bytes, u32)>,
    puts: u64,
    reads: u64,
    fail_puts: bool,
}

impl MemoryBlobStore {
    /// An empty store.
    pub fn new() -> MemoryBlobStore {
        MemoryBlobStore::default()
    }

    /// Number of distinct blobs held.
    pub fn len(&self) -> usize {
        self.lock().blobs.len()
    }

    /// Whether no blob is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a blob is held.
    pub fn contains(&self, key: &BlobKey) -> bool {
        self.lock().blobs.contains_key(key)
    }

    /// Calls of `put_permanent` so far.
    pub fn puts(&self) -> u64 {
        self.lock().puts
    }

    /// Calls of `read` so far.
    pub fn reads(&self) -> u64 {
        self.lock().reads
    }

    /// Makes every later `put_permanent` fail with an I/O error (to test fallbacks).
    pub fn fail_puts(&self, fail: bool) {
        self.lock().fail_puts = fail;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind; keep using it.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl BlobWriter for MemoryBlobStore {
    fn put_permanent(&self, job: JobId, bytes: &[u8]) -> Result<BlobKey, BlobError> {
        let mut inner = self.lock();
        inner.puts += 1;
        if inner.fail_puts {
            return Err(BlobError::Io {
                context: "memory blob store set to fail".to_owned(),
                source: std::io::Error::other("injected failure"),
            });
        }
        let key = BlobKey::for_content(BlobKind::Permanent, Some(job), bytes);
        inner
            .blobs
            .entry(key)
            .and_modify(|(_, refs)| *refs += 1)
            .or_insert_with(|| (Bytes::copy_from_slice(bytes), 1));
        Ok(key)
    }

    fn delete_permanent(&self, key: &BlobKey) -> Result<(), BlobError> {
        let mut inner = self.lock();
        if let Some((_, refs)) = inner.blobs.get_mut(key) {
            *refs -= 1;
            if *refs == 0 {
                inner.blobs.remove(key);
            }
        }
        Ok(())
    }
}

impl BlobReader for MemoryBlobStore {
    fn read(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        let mut inner = self.lock();
        inner.reads += 1;
        inner
            .blobs
            .get(key)
            .map(|(b, _)| b.clone())
            .ok_or(BlobError::NotFound(*key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_counted_per_key() {
        let store = MemoryBlobStore::new();
        let job = JobId([1; 16]);
        let a = store.put_permanent(job, b"abc").unwrap();
        let b = store.put_permanent(job, b"abc").unwrap();
        assert_eq!(a, b);
        let other = store.put_permanent(JobId([2; 16]), b"abc").unwrap();
        assert_ne!(a, other);
        store.delete_permanent(&a).unwrap();
        assert_eq!(store.read(&a).unwrap(), Bytes::from_static(b"abc"));
        store.delete_permanent(&a).unwrap();
        assert!(matches!(store.read(&a), Err(BlobError::NotFound(_))));
        assert!(store.contains(&other));
        store.delete_permanent(&a).unwrap(); // idempotent
    }
}
