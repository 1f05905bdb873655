//! Downloads: the verified local file, else the durable copy, which repairs the local file.

use std::sync::Arc;

use bytes::Bytes;
use conflux_blob_api::{BlobError, BlobKey, BlobKind};

use crate::layout::{self, blocking};

use super::state::ServerCore;

/// A verified blob ready to be sent.
#[derive(Debug)]
pub(super) enum Download {
    /// The local file, rewound, of `len` bytes: streamed.
    File {
        /// The open file.
        file: std::fs::File,
        /// Its length in bytes.
        len: u64,
    },
    /// Content already in memory (read from the durable copy).
    Bytes(Bytes),
}
use super::stats::bump;

impl ServerCore {
    /// Counts a read of `key` and checks it is held and not expired (an expired transient
    /// blob is removed).
    ///
    /// # Errors
    /// [`BlobError::NotFound`] for unknown or expired keys; I/O failures removing the latter.
    async fn admit_read(self: &Arc<Self>, key: &BlobKey) -> Result<(), BlobError> {
        bump(&self.counters.gets, 1);
        let now = self.clock.now_ms();
        let expired = {
            let mut index = self.lock_index();
            match index.get_mut(key) {
                None => return Err(BlobError::NotFound(*key)),
                Some(entry) if self.expired(key, entry, now) => {
                    index.remove(key);
                    true
                }
                Some(entry) => {
                    entry.last_access_ms = now;
                    false
                }
            }
        };
        if expired {
            bump(&self.counters.expired, 1);
            self.remove_files(key).await?;
            return Err(BlobError::NotFound(*key));
        }
        Ok(())
    }

    /// The content read from the durable copy after the local file of `key` failed with
    /// `local` (missing or damaged); other failures are returned as they are.
    async fn after_local_failure(
        self: &Arc<Self>,
        key: &BlobKey,
        local: BlobError,
    ) -> Result<Bytes, BlobError> {
        match local {
            BlobError::NotFound(_) => {
                tracing::debug!(key = %key, "no local file; reading the durable copy");
                self.read_durable(key, false).await
            }
            BlobError::DigestMismatch { .. } => {
                bump(&self.counters.digest_mismatches, 1);
                tracing::error!(
                    key = %key,
                    path = %layout::blob_path(&self.root, key).display(),
                    "stored blob does not match its digest; not serving it"
                );
                self.read_durable(key, true).await
            }
            e => Err(e),
        }
    }

    /// A blob's verified content in memory: the local file, else the durable copy (which then
    /// repairs the local file). Damaged content is never returned.
    pub(super) async fn get(self: &Arc<Self>, key: &BlobKey) -> Result<Bytes, BlobError> {
        self.admit_read(key).await?;
        let path = layout::blob_path(&self.root, key);
        let k = *key;
        let bytes = match blocking(move || layout::read_verified(&path, &k)).await {
            Ok(bytes) => bytes,
            Err(e) => self.after_local_failure(key, e).await?,
        };
        bump(&self.counters.bytes_served, bytes.len() as u64);
        Ok(bytes)
    }

    /// A blob's verified content for streaming: the local file, open and checked (hashed
    /// through a small buffer, never read whole into memory), else the durable copy in
    /// memory as [`ServerCore::get`] reads it. Damaged content is never returned.
    pub(super) async fn open(self: &Arc<Self>, key: &BlobKey) -> Result<Download, BlobError> {
        self.admit_read(key).await?;
        let path = layout::blob_path(&self.root, key);
        let k = *key;
        let download = match blocking(move || layout::open_verified(&path, &k)).await {
            Ok((file, len)) => Download::File { file, len },
            Err(e) => Download::Bytes(self.after_local_failure(key, e).await?),
        };
        let len = match &download {
            Download::File { len, .. } => *len,
            Download::Bytes(bytes) => bytes.len() as u64,
        };
        bump(&self.counters.bytes_served, len);
        Ok(download)
    }

    /// Reads the durable copy of a blob whose local file is missing (`damaged == false`) or
    /// damaged, and rewrites the local file from it.
    async fn read_durable(
        self: &Arc<Self>,
        key: &BlobKey,
        damaged: bool,
    ) -> Result<Bytes, BlobError> {
        let local_error = || {
            if damaged {
                BlobError::DigestMismatch { key: *key }
            } else {
                BlobError::NotFound(*key)
            }
        };
        let store = match (&self.durable, key.kind) {
            (Some(store), BlobKind::Permanent) => store,
            _ => return Err(local_error()),
        };
        let _guard = self.key_lock(key).lock().await;
        if !self.lock_index().contains_key(key) {
            return Err(BlobError::NotFound(*key));
        }
        let bytes = match store.get(key).await {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::error!(key = %key, store = %store, error = %e, "no usable durable copy");
                return Err(match e {
                    BlobError::NotFound(_) => local_error(),
                    BlobError::DigestMismatch { .. } => e,
                    _ if damaged => local_error(),
                    _ => e,
                });
            }
        };
        bump(&self.counters.durable_fetches, 1);
        let core = Arc::clone(self);
        let (path, b) = (layout::blob_path(&self.root, key), bytes.clone());
        let repaired = blocking(move || {
            layout::write_atomically(&core.incoming, &core.temp_counter, &path, &b)
        })
        .await;
        match repaired {
            Ok(()) => tracing::info!(key = %key, "local copy restored from the durable store"),
            Err(e) => tracing::warn!(key = %key, error = %e, "cannot restore the local copy"),
        }
        Ok(bytes)
    }
}
