//! The server's state: the index of blobs with their reference counts, the per-key locks,
//! and the persistence of reference counts next to each blob and in the durable store.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use conflux_blob_api::{BlobError, BlobKey, BlobKind};

use crate::clock::Clock;
use crate::layout::{self, blocking};
use crate::store::BlobStore;

use super::stats::{Counters, ServerStats};

/// Stripes of the per-key locks that order puts, deletes and repairs of one key.
pub(super) const KEY_LOCK_STRIPES: usize = 64;

/// What the server knows of one stored blob.
#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    pub(super) refs: u64,
    pub(super) size: u64,
    /// Clock time of the last put or get, for the TTL of transient blobs.
    pub(super) last_access_ms: u64,
}

/// The state behind the HTTP handlers and the local API.
pub(super) struct ServerCore {
    /// The storage directory.
    pub(super) root: PathBuf,
    /// `<root>/incoming`: temporary files of writes in progress.
    pub(super) incoming: PathBuf,
    pub(super) durable: Option<BlobStore>,
    /// Every blob held, with its references; guarded by a plain mutex never held across an
    /// await.
    pub(super) index: Mutex<HashMap<BlobKey, Entry>>,
    /// Striped locks ordering puts, deletes and repairs of one key (held across awaits).
    pub(super) key_locks: Box<[tokio::sync::Mutex<()>]>,
    /// Numbers the temporary files.
    pub(super) temp_counter: AtomicU64,
    pub(super) max_blob_bytes: u64,
    pub(super) auth_token: Option<String>,
    pub(super) transient_ttl_ms: u64,
    /// How long an upload's body may send nothing, in ms.
    pub(super) idle_timeout_ms: u64,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) counters: Counters,
}

impl fmt::Debug for ServerCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerCore")
            .field("root", &self.root)
            .field("durable", &self.durable)
            .field("max_blob_bytes", &self.max_blob_bytes)
            .finish_non_exhaustive()
    }
}

impl ServerCore {
    /// The index, locked.
    pub(super) fn lock_index(&self) -> MutexGuard<'_, HashMap<BlobKey, Entry>> {
        // The map holds plain data; a panic elsewhere while holding the lock cannot leave it
        // half-updated in a way later calls would trip on.
        self.index.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The lock ordering the operations on `key`.
    pub(super) fn key_lock(&self, key: &BlobKey) -> &tokio::sync::Mutex<()> {
        &self.key_locks[usize::from(key.digest.0[0]) % self.key_locks.len()]
    }

    /// Whether `key` is a transient blob unused for longer than the TTL at `now` (ms).
    pub(super) fn expired(&self, key: &BlobKey, entry: &Entry, now: u64) -> bool {
        key.kind == BlobKind::Transient
            && now.saturating_sub(entry.last_access_ms) > self.transient_ttl_ms
    }

    /// Writes the reference count next to the blob and to the durable store (no file or object
    /// means 1).
    pub(super) async fn persist_refs(
        self: &Arc<Self>,
        key: &BlobKey,
        refs: u64,
    ) -> Result<(), BlobError> {
        let path = layout::refs_path(&self.root, key);
        let core = Arc::clone(self);
        blocking(move || {
            if refs <= 1 {
                layout::remove_file_if_exists(&path)
            } else {
                let count = refs.to_string();
                layout::write_atomically(
                    &core.incoming,
                    &core.temp_counter,
                    &path,
                    count.as_bytes(),
                )
            }
        })
        .await?;
        if let (BlobKind::Permanent, Some(store)) = (key.kind, &self.durable) {
            store.write_refs(key, refs).await?;
        }
        Ok(())
    }

    /// Counters since start and what is held now.
    pub(super) fn stats(&self) -> ServerStats {
        let (blobs, stored_bytes) = {
            let index = self.lock_index();
            (index.len() as u64, index.values().map(|e| e.size).sum())
        };
        self.counters.snapshot(blobs, stored_bytes)
    }
}
