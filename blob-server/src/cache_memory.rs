//! Blob contents in memory, shared by the [`BlobCache`](crate::BlobCache)s of one process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use conflux_blob_api::BlobKey;

/// Where [`BlobCache`](crate::BlobCache)s configured with it
/// ([`BlobCacheConfig::memory`](crate::BlobCacheConfig::memory)) keep their blobs instead of
/// files: in memory, content-addressed, one copy of a blob however many caches hold it, dropped
/// when the last cache lets it go (evicted, expired, its job released, the cache dropped).
///
/// For many TaskManagers in one process, such as the ten thousand of a simulated cluster: each
/// cache still fetches a blob itself (counted, its digest checked) before it holds it, and keeps
/// its own LRU order and byte budget; only the storage is shared, so a cache costs no directory
/// and a blob no file per TaskManager. Bytes in memory are not checked again on a hit: they were
/// checked when fetched, and unlike a file nothing else writes them.
#[derive(Clone, Debug, Default)]
pub struct SharedBlobMemory {
    blobs: Arc<Mutex<HashMap<BlobKey, Held>>>,
}

#[derive(Debug)]
struct Held {
    bytes: Bytes,
    /// Caches holding it (at least 1 while in the map).
    holders: u32,
}

impl SharedBlobMemory {
    /// An empty store.
    pub fn new() -> SharedBlobMemory {
        SharedBlobMemory::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<BlobKey, Held>> {
        // Plain data: keep using it after a panic elsewhere.
        self.blobs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The content of `key`, if a cache holds it.
    pub(crate) fn get(&self, key: &BlobKey) -> Option<Bytes> {
        self.lock().get(key).map(|h| h.bytes.clone())
    }

    /// One more cache holds `key`, whose verified content is `bytes` (the first copy is kept).
    pub(crate) fn hold(&self, key: &BlobKey, bytes: &Bytes) {
        self.lock()
            .entry(*key)
            .and_modify(|h| h.holders += 1)
            .or_insert_with(|| Held {
                bytes: bytes.clone(),
                holders: 1,
            });
    }

    /// A cache lets `key` go; the content is dropped with its last holder.
    pub(crate) fn release(&self, key: &BlobKey) {
        let mut blobs = self.lock();
        if let Some(held) = blobs.get_mut(key) {
            held.holders -= 1;
            if held.holders == 0 {
                blobs.remove(key);
            }
        }
    }

    /// Blobs held now (each once, however many caches hold it).
    pub fn blobs(&self) -> usize {
        self.lock().len()
    }

    /// Bytes held now (each blob once).
    pub fn bytes(&self) -> u64 {
        self.lock().values().map(|h| h.bytes.len() as u64).sum()
    }
}
