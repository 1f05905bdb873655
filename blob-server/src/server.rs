//! The blob server: local files, a durable copy, reference counts, and the HTTP endpoint.

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::runtime::{Handle, Runtime};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::clock::Clock;
use crate::config::BlobServerConfig;
use crate::layout::{self, blocking, io_err, TempFile};
use crate::store::BlobStore;
use crate::{bridge, http};
use crate::{BlobError, BlobKey, BlobKind, BlobReader, BlobWriter, Digest, JobId};

/// Upload bytes gathered before one write to the temporary file.
const FLUSH_BYTES: usize = 1 << 20;
/// Stripes of the per-key locks that order puts, deletes and repairs of one key.
const KEY_LOCK_STRIPES: usize = 64;
/// How long [`BlobServer::shutdown`] waits for open requests.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What the server knows of one stored blob.
#[derive(Clone, Copy, Debug)]
struct Entry {
    refs: u64,
    size: u64,
    /// Clock time of the last put or get, for the TTL of transient blobs.
    last_access_ms: u64,
}

#[derive(Debug, Default)]
struct Counters {
    puts: AtomicU64,
    gets: AtomicU64,
    deletes: AtomicU64,
    bytes_received: AtomicU64,
    bytes_served: AtomicU64,
    durable_fetches: AtomicU64,
    digest_mismatches: AtomicU64,
    expired: AtomicU64,
    rejected: AtomicU64,
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

/// Counters of a [`BlobServer`] since it started, and what it holds now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Successful stores (HTTP PUT and [`BlobWriter::put_permanent`]), new content or not.
    pub puts: u64,
    /// Read requests (HTTP GET and local reads), found or not.
    pub gets: u64,
    /// Delete requests (one reference each).
    pub deletes: u64,
    /// Bytes of content stored by successful puts.
    pub bytes_received: u64,
    /// Bytes of content served.
    pub bytes_served: u64,
    /// Reads served from the durable copy because the local file was missing or damaged.
    pub durable_fetches: u64,
    /// Local files found not to match their digest (never served).
    pub digest_mismatches: u64,
    /// Transient blobs dropped after their TTL.
    pub expired: u64,
    /// Uploads rejected for exceeding the size cap.
    pub rejected: u64,
    /// Distinct blobs held now.
    pub blobs: u64,
    /// Bytes of the distinct blobs held now.
    pub stored_bytes: u64,
}

/// An upload waiting to be committed under its key.
enum Pending {
    /// Already written (and hashed) to a temporary file.
    File(TempFile),
    /// In memory (the synchronous `BlobWriter` path).
    Bytes(Bytes),
}

/// The state behind the HTTP handlers and the local API.
pub(crate) struct ServerCore {
    root: PathBuf,
    incoming: PathBuf,
    durable: Option<BlobStore>,
    index: Mutex<HashMap<BlobKey, Entry>>,
    key_locks: Box<[tokio::sync::Mutex<()>]>,
    temp_counter: AtomicU64,
    pub(crate) max_blob_bytes: u64,
    pub(crate) auth_token: Option<String>,
    transient_ttl_ms: u64,
    clock: Arc<dyn Clock>,
    counters: Counters,
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

/// Reads `<root>/job_*/blob_*` and `<root>/no_job/blob_*` with their reference-count sidecars:
/// (key, size in bytes, references). Files whose name is not a blob of that folder are skipped.
fn scan_local(root: &Path) -> Result<Vec<(BlobKey, u64, u64)>, BlobError> {
    let mut blobs = Vec::new();
    let read_dir =
        |dir: &Path| fs::read_dir(dir).map_err(io_err(format!("listing {}", dir.display())));
    for dir in read_dir(root)? {
        let dir = dir.map_err(io_err(format!("listing {}", root.display())))?;
        let Some(job) = dir
            .file_name()
            .to_str()
            .and_then(layout::parse_job_dir_name)
        else {
            continue;
        };
        let dir_path = dir.path();
        if !dir_path.is_dir() {
            continue;
        }
        for file in read_dir(&dir_path)? {
            let file = file.map_err(io_err(format!("listing {}", dir_path.display())))?;
            let Some(key) = file
                .file_name()
                .to_str()
                .and_then(layout::parse_blob_file_name)
            else {
                continue;
            };
            if key.job != job {
                continue;
            }
            let size = file
                .metadata()
                .map_err(io_err(format!(
                    "reading metadata of {}",
                    file.path().display()
                )))?
                .len();
            let refs = fs::read_to_string(layout::refs_path(root, &key))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(1);
            blobs.push((key, size, refs));
        }
    }
    Ok(blobs)
}

impl ServerCore {
    fn lock_index(&self) -> MutexGuard<'_, HashMap<BlobKey, Entry>> {
        // The map holds plain data; a panic elsewhere while holding the lock cannot leave it
        // half-updated in a way later calls would trip on.
        self.index.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn key_lock(&self, key: &BlobKey) -> &tokio::sync::Mutex<()> {
        &self.key_locks[usize::from(key.digest.0[0]) % self.key_locks.len()]
    }

    fn expired(&self, key: &BlobKey, entry: &Entry, now: u64) -> bool {
        key.kind == BlobKind::Transient
            && now.saturating_sub(entry.last_access_ms) > self.transient_ttl_ms
    }

    /// Rebuilds the index from the storage directory and the durable store, uploading durable
    /// copies that are missing. Local blobs are counted as they are and checked on read.
    async fn recover(self: &Arc<Self>) -> Result<(), BlobError> {
        let root = self.root.clone();
        let local = blocking(move || scan_local(&root)).await?;
        let now = self.clock.now_ms();
        let mut index: HashMap<BlobKey, Entry> = local
            .into_iter()
            .map(|(key, size, refs)| {
                (
                    key,
                    Entry {
                        refs,
                        size,
                        last_access_ms: now,
                    },
                )
            })
            .collect();
        let local_blobs = index.len();
        let mut from_durable = 0usize;
        if let Some(store) = &self.durable {
            let durable: HashMap<BlobKey, u64> = store.list().await?.into_iter().collect();
            for (key, size) in &durable {
                if index.contains_key(key) || key.kind != BlobKind::Permanent {
                    continue;
                }
                let refs = store.read_refs(key).await?.unwrap_or(1);
                index.insert(
                    *key,
                    Entry {
                        refs,
                        size: *size,
                        last_access_ms: now,
                    },
                );
                from_durable += 1;
            }
            for key in index.keys() {
                if key.kind != BlobKind::Permanent || durable.contains_key(key) {
                    continue;
                }
                tracing::warn!(key = %key, store = %store, "blob has no durable copy; uploading it");
                let path = layout::blob_path(&self.root, key);
                let k = *key;
                let uploaded = match blocking(move || layout::read_verified(&path, &k)).await {
                    Ok(bytes) => store.put(key, bytes).await,
                    Err(e) => Err(e),
                };
                if let Err(e) = uploaded {
                    tracing::error!(key = %key, error = %e, "cannot restore the durable copy");
                }
            }
        }
        tracing::info!(
            storage = %self.root.display(),
            local_blobs,
            from_durable,
            "blob server recovered its index"
        );
        *self.lock_index() = index;
        Ok(())
    }

    /// Streams an upload to a temporary file, hashing it as it goes, then commits it under its
    /// key. Returns the key and its reference count.
    ///
    /// Never writes more than `max_blob_bytes`: a declared or actual size above it is
    /// [`BlobError::TooLarge`], and the temporary file is removed.
    pub(crate) async fn put_stream<S, E>(
        self: &Arc<Self>,
        kind: BlobKind,
        job: Option<JobId>,
        body: &mut S,
        declared_len: Option<u64>,
    ) -> Result<(BlobKey, u64), BlobError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: fmt::Display,
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
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| BlobError::Io {
                context: format!("receiving upload into {}", sink.temp.path().display()),
                source: std::io::Error::other(e.to_string()),
            })?;
            size += chunk.len() as u64;
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
    pub(crate) async fn put_bytes(
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
    async fn commit(
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

    /// Writes the reference count next to the blob and to the durable store (no file or object
    /// means 1).
    async fn persist_refs(self: &Arc<Self>, key: &BlobKey, refs: u64) -> Result<(), BlobError> {
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

    /// A blob's verified content: the local file, else the durable copy (which then repairs
    /// the local file). Damaged content is never returned.
    pub(crate) async fn get(self: &Arc<Self>, key: &BlobKey) -> Result<Bytes, BlobError> {
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
        let path = layout::blob_path(&self.root, key);
        let k = *key;
        let bytes = match blocking(move || layout::read_verified(&path, &k)).await {
            Ok(bytes) => bytes,
            Err(BlobError::NotFound(_)) => {
                tracing::debug!(key = %key, "no local file; reading the durable copy");
                self.read_durable(key, false).await?
            }
            Err(BlobError::DigestMismatch { .. }) => {
                bump(&self.counters.digest_mismatches, 1);
                tracing::error!(
                    key = %key,
                    path = %layout::blob_path(&self.root, key).display(),
                    "stored blob does not match its digest; not serving it"
                );
                self.read_durable(key, true).await?
            }
            Err(e) => return Err(e),
        };
        bump(&self.counters.bytes_served, bytes.len() as u64);
        Ok(bytes)
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

    /// Drops one reference; the last one removes the local file and the durable copy.
    pub(crate) async fn delete(self: &Arc<Self>, key: &BlobKey) -> Result<(), BlobError> {
        bump(&self.counters.deletes, 1);
        let _guard = self.key_lock(key).lock().await;
        let remaining = {
            let mut index = self.lock_index();
            match index.get_mut(key) {
                None => None,
                Some(entry) => {
                    entry.refs = entry.refs.saturating_sub(1);
                    let refs = entry.refs;
                    if refs == 0 {
                        index.remove(key);
                    }
                    Some(refs)
                }
            }
        };
        match remaining {
            None => {
                tracing::debug!(key = %key, "delete of an unknown blob ignored");
                Ok(())
            }
            Some(0) => {
                self.remove_files(key).await?;
                if let (BlobKind::Permanent, Some(store)) = (key.kind, &self.durable) {
                    store.delete(key).await?;
                }
                tracing::debug!(key = %key, "last reference dropped: blob deleted");
                Ok(())
            }
            Some(refs) => {
                tracing::debug!(key = %key, refs, "reference dropped");
                self.persist_refs(key, refs).await
            }
        }
    }

    async fn remove_files(&self, key: &BlobKey) -> Result<(), BlobError> {
        let blob = layout::blob_path(&self.root, key);
        let refs = layout::refs_path(&self.root, key);
        blocking(move || {
            layout::remove_file_if_exists(&blob)?;
            layout::remove_file_if_exists(&refs)
        })
        .await
    }

    /// Deletes every blob of `job`, whatever its references: the local folder, the index
    /// entries and the durable copies. Returns how many blobs the index held for the job.
    pub(crate) async fn cleanup_job(self: &Arc<Self>, job: JobId) -> Result<usize, BlobError> {
        let keys: Vec<BlobKey> = self
            .lock_index()
            .keys()
            .filter(|key| key.job == Some(job))
            .copied()
            .collect();
        for key in &keys {
            let _guard = self.key_lock(key).lock().await;
            self.lock_index().remove(key);
        }
        let dir = self.root.join(layout::job_dir_name(Some(job)));
        blocking(move || layout::remove_dir_if_exists(&dir)).await?;
        let durable = match &self.durable {
            Some(store) => store.delete_job(job).await?,
            None => 0,
        };
        tracing::info!(job = %job, blobs = keys.len(), durable, "job blobs cleaned up");
        Ok(keys.len())
    }

    /// Drops transient blobs unused for longer than the TTL; returns how many.
    pub(crate) async fn expire_transient(self: &Arc<Self>) -> usize {
        let now = self.clock.now_ms();
        let candidates: Vec<BlobKey> = self
            .lock_index()
            .iter()
            .filter(|(key, entry)| self.expired(key, entry, now))
            .map(|(key, _)| *key)
            .collect();
        let mut expired = 0;
        for key in candidates {
            let _guard = self.key_lock(&key).lock().await;
            let still_expired = {
                let mut index = self.lock_index();
                let gone = index
                    .get(&key)
                    .is_some_and(|entry| self.expired(&key, entry, now));
                if gone {
                    index.remove(&key);
                }
                gone
            };
            if still_expired {
                expired += 1;
                if let Err(e) = self.remove_files(&key).await {
                    tracing::warn!(key = %key, error = %e, "cannot remove expired blob");
                }
                tracing::debug!(key = %key, "transient blob expired");
            }
        }
        bump(&self.counters.expired, expired as u64);
        expired
    }

    fn stats(&self) -> ServerStats {
        let (blobs, stored_bytes) = {
            let index = self.lock_index();
            (index.len() as u64, index.values().map(|e| e.size).sum())
        };
        let c = &self.counters;
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ServerStats {
            puts: get(&c.puts),
            gets: get(&c.gets),
            deletes: get(&c.deletes),
            bytes_received: get(&c.bytes_received),
            bytes_served: get(&c.bytes_served),
            durable_fetches: get(&c.durable_fetches),
            digest_mismatches: get(&c.digest_mismatches),
            expired: get(&c.expired),
            rejected: get(&c.rejected),
            blobs,
            stored_bytes,
        }
    }
}

/// The blob server (Flink's `BlobServer`): stores blobs as local files, keeps a durable copy of
/// every permanent blob in a [`BlobStore`], and serves them over HTTP.
///
/// ## Protocol (HTTP/1.1; any client, e.g. curl)
///
/// | request | answer |
/// |---|---|
/// | `PUT /blobs/{permanent\|transient}/{job hex\|no_job}` with the content as body | `201`, body: the key; headers `Location: /blobs/<key>`, `X-Blob-References` |
/// | `GET /blobs/<key>` (also `HEAD`) | `200` and the content |
/// | `DELETE /blobs/<key>` | `204`; drops one reference (unknown keys too: deletes are idempotent) |
/// | `DELETE /jobs/<job hex>` | `204`; deletes every blob of the job, locally and durably |
/// | `GET /health` | `200 ok`, never needs the token |
///
/// Errors: `400` a key, kind or job that does not parse (before any file is touched, so no
/// path traversal); `401` a missing or wrong bearer token; `404` an unknown (or expired) key;
/// `413` an upload above [`BlobServerConfig::max_blob_bytes`] (header `X-Blob-Limit`);
/// `500` a damaged blob without a good durable copy, I/O and store failures. The body of an
/// error is its message.
///
/// ## Storage and guarantees
///
/// An upload streams to `<storage>/incoming/temp-<n>`, hashed (BLAKE3) while written, then is
/// renamed to `job_<job>/blob_<key>`, as in Flink: a reader sees a whole blob or none. A new
/// permanent blob is copied to the durable store before the upload succeeds. Equal content of
/// one job and kind has one key; each store adds a reference and each delete drops one, and the
/// content goes (locally and durably) with the last reference, so one owner's delete never
/// removes content another still references. Counts above 1 are written next to the blob and
/// to the durable store, so a restart, even on an empty storage directory, recovers both the
/// blobs (listed from the durable store) and their counts.
///
/// Every read is checked against the digest; a damaged or missing local file is read again from
/// the durable copy, which also repairs it; damaged content is never served.
///
/// Transient blobs (Flink's `TransientBlobKey`) are kept locally only and expire
/// [`BlobServerConfig::transient_ttl_ms`] after their last access (swept every
/// [`BlobServerConfig::cleanup_interval_ms`], and checked on access). Unlike Flink, a GET does
/// not delete a transient blob.
///
/// Local files are not fsynced: durability is the durable store's job, and a file damaged by a
/// crash fails its digest check and is repaired from it.
///
/// ## Threads
///
/// [`BlobServer::start`] runs on the caller's tokio runtime (which should be multi-thread if
/// the synchronous [`BlobWriter`] methods are used; see the crate documentation);
/// [`BlobServer::start_blocking`] brings its own two-thread runtime, for synchronous embedders
/// and the simulator.
pub struct BlobServer {
    core: Arc<ServerCore>,
    addr: SocketAddr,
    handle: Handle,
    shutdown: Option<oneshot::Sender<()>>,
    serve_task: Option<JoinHandle<()>>,
    sweeper: Option<JoinHandle<()>>,
    runtime: Option<Runtime>,
}

impl fmt::Debug for BlobServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobServer")
            .field("addr", &self.addr)
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

impl BlobServer {
    /// Starts a server on the current tokio runtime: recovers the blobs of
    /// [`BlobServerConfig::storage_dir`] and of the durable store, then listens on
    /// [`BlobServerConfig::address`]. Leftovers in `incoming/` are removed.
    ///
    /// # Errors
    /// [`BlobError::Io`] when the storage directory cannot be used or the address bound,
    /// [`BlobError::Store`] / [`BlobError::Config`] for the durable store.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub async fn start(config: BlobServerConfig) -> Result<BlobServer, BlobError> {
        let handle = Handle::current();
        let root = config.storage_dir.clone();
        let incoming = blocking(move || {
            fs::create_dir_all(&root)
                .map_err(io_err(format!("creating directory {}", root.display())))?;
            layout::reset_incoming(&root)
        })
        .await?;
        let durable = match &config.durable {
            crate::DurableStoreConfig::None => None,
            other => {
                let other = other.clone();
                blocking(move || BlobStore::open(&other)).await?
            }
        };
        let core = Arc::new(ServerCore {
            root: config.storage_dir.clone(),
            incoming,
            durable,
            index: Mutex::new(HashMap::new()),
            key_locks: (0..KEY_LOCK_STRIPES)
                .map(|_| tokio::sync::Mutex::new(()))
                .collect(),
            temp_counter: AtomicU64::new(0),
            max_blob_bytes: config.max_blob_bytes,
            auth_token: config.auth_token.clone(),
            transient_ttl_ms: config.transient_ttl_ms,
            clock: Arc::clone(&config.clock),
            counters: Counters::default(),
        });
        core.recover().await?;

        let listener = tokio::net::TcpListener::bind(config.address)
            .await
            .map_err(io_err(format!(
                "binding the blob server to {}",
                config.address
            )))?;
        let addr = listener
            .local_addr()
            .map_err(io_err("reading the blob server's address"))?;
        let (shutdown, signal) = oneshot::channel::<()>();
        let app = http::router(Arc::clone(&core));
        let serve_task = tokio::spawn(async move {
            use axum::serve::ListenerExt;
            // Small requests must not wait for Nagle's algorithm.
            let listener = listener.tap_io(|tcp| {
                if let Err(e) = tcp.set_nodelay(true) {
                    tracing::debug!(error = %e, "cannot set TCP_NODELAY");
                }
            });
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    signal.await.ok();
                })
                .await;
            if let Err(e) = served {
                tracing::error!(error = %e, "blob server stopped");
            }
        });
        let sweep_core = Arc::clone(&core);
        let period = Duration::from_millis(config.cleanup_interval_ms.max(1));
        let sweeper = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(period);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                sweep_core.expire_transient().await;
            }
        });
        tracing::info!(
            address = %addr,
            storage = %config.storage_dir.display(),
            durable = ?core.durable.as_ref().map(ToString::to_string),
            "blob server started"
        );
        Ok(BlobServer {
            core,
            addr,
            handle,
            shutdown: Some(shutdown),
            serve_task: Some(serve_task),
            sweeper: Some(sweeper),
            runtime: None,
        })
    }

    /// Starts a server on a runtime of its own (two worker threads named
    /// `conflux-blob-server`), which lives as long as the server. For callers without a tokio
    /// runtime, such as the CLI and the simulator; may be called from anywhere.
    ///
    /// # Errors
    /// As [`BlobServer::start`]; [`BlobError::Io`] when the runtime cannot be built.
    pub fn start_blocking(config: BlobServerConfig) -> Result<BlobServer, BlobError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("conflux-blob-server")
            .enable_all()
            .build()
            .map_err(io_err("building the blob server's runtime"))?;
        let mut server = bridge::block_on(runtime.handle(), BlobServer::start(config))?;
        server.runtime = Some(runtime);
        Ok(server)
    }

    /// The address the server listens on (with the port chosen when the configured one was 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's base URL, `http://<address>`, for [`BlobClient`](crate::BlobClient) and
    /// [`BlobCacheConfig::server_url`](crate::BlobCacheConfig::server_url).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A handle of the runtime the server runs on.
    pub fn runtime_handle(&self) -> &Handle {
        &self.handle
    }

    /// The local storage root.
    pub fn storage_dir(&self) -> &Path {
        &self.core.root
    }

    /// Where `key`'s local file is (or would be): `<storage>/job_<job>/blob_<key>`.
    pub fn blob_path(&self, key: &BlobKey) -> PathBuf {
        layout::blob_path(&self.core.root, key)
    }

    /// The durable store, if one is configured.
    pub fn durable_store(&self) -> Option<&BlobStore> {
        self.core.durable.as_ref()
    }

    /// Stores `bytes` as a blob of `kind` for `job` and returns its key (adds a reference if the
    /// content is already stored).
    ///
    /// # Errors
    /// [`BlobError::TooLarge`] above the cap; I/O and durable-store failures (then nothing is
    /// stored).
    pub async fn put(
        &self,
        kind: BlobKind,
        job: Option<JobId>,
        bytes: Bytes,
    ) -> Result<BlobKey, BlobError> {
        self.core
            .put_bytes(kind, job, bytes)
            .await
            .map(|(key, _)| key)
    }

    /// A blob's content, verified against its digest (from the durable copy when the local file
    /// is missing or damaged).
    ///
    /// # Errors
    /// [`BlobError::NotFound`] for unknown or expired keys, [`BlobError::DigestMismatch`] when
    /// no undamaged copy exists, I/O and store failures.
    pub async fn get(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        self.core.get(key).await
    }

    /// Drops one reference to a blob; the last one deletes it locally and durably. Unknown keys
    /// are not an error.
    ///
    /// # Errors
    /// I/O and store failures.
    pub async fn delete(&self, key: &BlobKey) -> Result<(), BlobError> {
        self.core.delete(key).await
    }

    /// Deletes every blob of `job`, whatever its references, locally and in the durable store
    /// (Flink's `globalCleanupAsync`). Returns how many blobs the server held for the job.
    /// Uploads for the job racing with its cleanup may survive or be lost: clean up a job once
    /// it has ended.
    ///
    /// # Errors
    /// I/O and store failures.
    pub async fn cleanup_job(&self, job: JobId) -> Result<usize, BlobError> {
        self.core.cleanup_job(job).await
    }

    /// Expires transient blobs unused for longer than the TTL now, instead of waiting for the
    /// periodic sweep (useful with a [`ManualClock`](crate::ManualClock)). Returns how many.
    pub async fn expire_transient(&self) -> usize {
        self.core.expire_transient().await
    }

    /// How many references `key` has (0: not stored).
    pub fn references(&self, key: &BlobKey) -> u64 {
        self.core
            .lock_index()
            .get(key)
            .map_or(0, |entry| entry.refs)
    }

    /// Whether the server holds `key` (expired transient blobs may count until swept).
    pub fn contains(&self, key: &BlobKey) -> bool {
        self.core.lock_index().contains_key(key)
    }

    /// Counters since start and what is held now.
    pub fn stats(&self) -> ServerStats {
        self.core.stats()
    }

    /// Stops accepting connections, lets open requests finish (at most 10 s) and stops the
    /// sweeper. Dropping the server does the same without waiting.
    pub async fn shutdown(mut self) {
        if let Some(signal) = self.shutdown.take() {
            signal.send(()).ok();
        }
        if let Some(sweeper) = self.sweeper.take() {
            sweeper.abort();
        }
        if let Some(task) = self.serve_task.take() {
            let abort = task.abort_handle();
            if tokio::time::timeout(SHUTDOWN_GRACE, task).await.is_err() {
                tracing::warn!(address = %self.addr, "open requests outlived the grace period");
                abort.abort();
            }
        }
        tracing::info!(address = %self.addr, "blob server stopped");
    }
}

impl Drop for BlobServer {
    fn drop(&mut self) {
        if let Some(signal) = self.shutdown.take() {
            signal.send(()).ok();
        }
        if let Some(sweeper) = self.sweeper.take() {
            sweeper.abort();
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl BlobWriter for BlobServer {
    /// Stores a permanent blob with local files and the durable copy, from any thread (see the
    /// crate documentation). The digest is computed on the calling thread.
    fn put_permanent(&self, job: JobId, bytes: &[u8]) -> Result<BlobKey, BlobError> {
        let size = bytes.len() as u64;
        if size > self.core.max_blob_bytes {
            bump(&self.core.counters.rejected, 1);
            return Err(BlobError::TooLarge {
                size,
                limit: self.core.max_blob_bytes,
            });
        }
        let key = BlobKey::for_content(BlobKind::Permanent, Some(job), bytes);
        let bytes = Bytes::copy_from_slice(bytes);
        let core = Arc::clone(&self.core);
        bridge::block_on(&self.handle, async move {
            core.commit(key, Pending::Bytes(bytes), size).await
        })?;
        Ok(key)
    }

    fn delete_permanent(&self, key: &BlobKey) -> Result<(), BlobError> {
        let core = Arc::clone(&self.core);
        let key = *key;
        bridge::block_on(&self.handle, async move { core.delete(&key).await })
    }
}

impl BlobReader for BlobServer {
    /// Reads a blob as [`BlobServer::get`] does, from any thread.
    fn read(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        let core = Arc::clone(&self.core);
        let key = *key;
        bridge::block_on(&self.handle, async move { core.get(&key).await })
    }
}
