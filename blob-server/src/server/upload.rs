//! Uploads: streaming to a temporary file while hashing, and committing under the key.

use std::fs;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use conflux_blob_api::{BlobError, BlobKey, BlobKind, Digest, JobId};
use futures_util::{Stream, StreamExt};

use crate::layout::{self, blocking, io_err, TempFile};

use super::state::{Entry, ServerCore};
use super::stats::bump;

/// Upload bytes gathered before one write to the temporary file.
const FLUSH_BYTES: usize = 1 << 20;

/// The least an upload must send per idle timeout, unless it finishes: 16 KiB (so a body
/// trickled a byte at a time cannot hold a connection and its staging file for long; over the
/// default 60 s it is a floor of 273 bytes per second).
pub(crate) const MIN_UPLOAD_PROGRESS_BYTES: u64 = 16 * 1024;

/// An upload waiting to be committed under its key.
pub(super) enum Pending {
    /// Already written (and hashed) to a temporary file.
    File(TempFile),
    /// In memory (the synchronous `BlobWriter` path).
    Bytes(Bytes),
}

impl ServerCore {
    /// Streams an upload to a temporary file, hashing it as it goes, then commits it under its
    /// key. Returns the key and its reference count.
    ///
    /// Never writes more than `max_blob_bytes`: a declared or actual size above it is
    /// [`BlobError::TooLarge`], and the temporary file is removed. A body that sends less than
    /// [`MIN_UPLOAD_PROGRESS_BYTES`] in an idle timeout (nothing, or a trickle) without
    /// finishing is [`BlobError::UploadStalled`].
    pub(super) async fn put_stream<S, E>(
        self: &Arc<Self>,
        kind: BlobKind,
        job: Option<JobId>,
        body: &mut S,
        declared_len: Option<u64>,
    ) -> Result<(BlobKey, u64), BlobError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let limit = self.max_blob_bytes;
        if let Some(size) = declared_len.filter(|&len| len > limit) {
            bump(&self.counters.rejected, 1);
            return Err(BlobError::TooLarge { size, limit });
        }
        struct Sink {
            temp: TempFile,
            file: fs::File,
            hasher: blake3::Hasher,
        }
        async fn flush(mut sink: Sink, chunks: Vec<Bytes>) -> Result<Sink, BlobError> {
            blocking(move || {
                for chunk in &chunks {
                    sink.hasher.update(chunk);
                    sink.file
                        .write_all(chunk)
                        .map_err(io_err(format!("writing {}", sink.temp.path().display())))?;
                }
                Ok(sink)
            })
            .await
        }
        let core = Arc::clone(self);
        let (temp, file) =
            blocking(move || TempFile::create(&core.incoming, &core.temp_counter)).await?;
        let mut sink = Sink {
            temp,
            file,
            hasher: blake3::Hasher::new(),
        };
        let mut pending = Vec::new();
        let mut pending_bytes = 0usize;
        let mut size = 0u64;
        let idle = Duration::from_millis(self.idle_timeout_ms);
        // Progress is counted in windows: each must bring the minimum, or the body's end.
        let mut window = tokio::time::Instant::now();
        let mut window_bytes = 0u64;
        loop {
            // A client that stops sending, or trickles, must not hold the connection and the
            // staging file.
            let Ok(next) = tokio::time::timeout_at(window + idle, body.next()).await else {
                return Err(BlobError::UploadStalled {
                    idle_ms: self.idle_timeout_ms,
                    min_bytes: MIN_UPLOAD_PROGRESS_BYTES,
                });
            };
            let Some(chunk) = next else {
                break;
            };
            // The client's fault (or its connection's): a 400 that names no server path.
            let chunk = chunk.map_err(|e| BlobError::BadUpload { source: e.into() })?;
            size += chunk.len() as u64;
            window_bytes += chunk.len() as u64;
            if window_bytes >= MIN_UPLOAD_PROGRESS_BYTES {
                window = tokio::time::Instant::now();
                window_bytes = 0;
            }
            if size > limit {
                bump(&self.counters.rejected, 1);
                return Err(BlobError::TooLarge { size, limit });
            }
            pending_bytes += chunk.len();
            pending.push(chunk);
            if pending_bytes >= FLUSH_BYTES {
                sink = flush(sink, std::mem::take(&mut pending)).await?;
                pending_bytes = 0;
            }
        }
        let sink = flush(sink, pending).await?;
        let key = BlobKey {
            kind,
            job,
            digest: Digest(*sink.hasher.finalize().as_bytes()),
        };
        drop(sink.file);
        let refs = self.commit(key, Pending::File(sink.temp), size).await?;
        Ok((key, refs))
    }

    /// Stores bytes already in memory; hashes on the blocking pool when large.
    pub(super) async fn put_bytes(
        self: &Arc<Self>,
        kind: BlobKind,
        job: Option<JobId>,
        bytes: Bytes,
    ) -> Result<(BlobKey, u64), BlobError> {
        let size = bytes.len() as u64;
        if size > self.max_blob_bytes {
            bump(&self.counters.rejected, 1);
            return Err(BlobError::TooLarge {
                size,
                limit: self.max_blob_bytes,
            });
        }
        let key = if bytes.len() > FLUSH_BYTES {
            let b = bytes.clone();
            blocking(move || Ok(BlobKey::for_content(kind, job, &b))).await?
        } else {
            BlobKey::for_content(kind, job, &bytes)
        };
        let refs = self.commit(key, Pending::Bytes(bytes), size).await?;
        Ok((key, refs))
    }

    /// Makes an upload visible under `key`: a new blob is renamed into place and copied to the
    /// durable store before it enters the index; known content only gains a reference.
    pub(super) async fn commit(
        self: &Arc<Self>,
        key: BlobKey,
        pending: Pending,
        size: u64,
    ) -> Result<u64, BlobError> {
        let _guard = self.key_lock(&key).lock().await;
        let now = self.clock.now_ms();
        let existing = self.lock_index().get_mut(&key).map(|entry| {
            entry.refs += 1;
            entry.last_access_ms = now;
            entry.refs
        });
        if let Some(refs) = existing {
            if let Err(e) = self.persist_refs(&key, refs).await {
                if let Some(entry) = self.lock_index().get_mut(&key) {
                    entry.refs -= 1;
                }
                return Err(e);
            }
            bump(&self.counters.puts, 1);
            bump(&self.counters.bytes_received, size);
            tracing::debug!(key = %key, refs, "blob stored again: one more reference");
            return Ok(refs);
        }
        let target = layout::blob_path(&self.root, &key);
        let core = Arc::clone(self);
        let (path, sidecar) = (target.clone(), layout::refs_path(&self.root, &key));
        let in_memory = match pending {
            Pending::File(temp) => {
                blocking(move || {
                    layout::remove_file_if_exists(&sidecar)?;
                    temp.persist(&path)
                })
                .await?;
                None
            }
            Pending::Bytes(bytes) => {
                let b = bytes.clone();
                blocking(move || {
                    layout::remove_file_if_exists(&sidecar)?;
                    layout::write_atomically(&core.incoming, &core.temp_counter, &path, &b)
                })
                .await?;
                Some(bytes)
            }
        };
        if let (BlobKind::Permanent, Some(store)) = (key.kind, &self.durable) {
            let copied = match in_memory {
                Some(bytes) => store.put(&key, bytes).await,
                None => store.put_file(&key, &target).await,
            };
            if let Err(e) = copied {
                tracing::error!(key = %key, error = %e, "durable copy failed; upload rejected");
                let path = target.clone();
                blocking(move || layout::remove_file_if_exists(&path))
                    .await
                    .ok();
                return Err(e);
            }
        }
        self.lock_index().insert(
            key,
            Entry {
                refs: 1,
                size,
                last_access_ms: now,
            },
        );
        bump(&self.counters.puts, 1);
        bump(&self.counters.bytes_received, size);
        tracing::debug!(key = %key, size, "blob stored");
        Ok(1)
    }
}
