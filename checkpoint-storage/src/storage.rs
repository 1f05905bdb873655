//! Checkpoint storage on the `object_store` crate: the local filesystem by default, an
//! S3-compatible bucket by configuration, or memory (tests), with counters of every request.
//!
//! Objects are immutable once written except for the across-boundary merged files (see
//! [`crate::merging`]), which are re-written with a longer content whose prefix is unchanged: a
//! PUT replaces an object atomically, so a reader of an earlier segment sees the same bytes.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

pub use conflux_object_store::S3Config;

use crate::error::{CheckpointError, Result};
use crate::handle::StateHandle;

/// Where checkpoint objects live.
#[derive(Clone, Debug)]
pub enum StorageConfig {
    /// A local directory (created if missing): the default.
    Local {
        /// The directory.
        dir: PathBuf,
    },
    /// An S3-compatible bucket.
    S3(S3Config),
    /// Process memory: tests and simulations.
    Memory,
}

#[derive(Default, Debug)]
struct Counters {
    put: AtomicU64,
    objects_created: AtomicU64,
    get: AtomicU64,
    delete: AtomicU64,
    list: AtomicU64,
    bytes_written: AtomicU64,
    bytes_read: AtomicU64,
}

/// Requests made through one [`CheckpointStorage`] (and its clones), since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RequestCounts {
    /// PUT requests (creates and overwrites).
    pub put: u64,
    /// Objects created (PUTs of a new object; the NameNode / object-count pressure).
    pub objects_created: u64,
    /// GET and HEAD requests.
    pub get: u64,
    /// DELETE requests (including those of objects already gone).
    pub delete: u64,
    /// LIST calls (a paginated listing counts once).
    pub list: u64,
    /// Bytes sent by PUTs.
    pub bytes_written: u64,
    /// Bytes received by GETs.
    pub bytes_read: u64,
}

/// The object store of checkpoints, with request counters. Cheap to clone (clones share the
/// store and the counters).
#[derive(Clone)]
pub struct CheckpointStorage {
    store: Arc<dyn ObjectStore>,
    counters: Arc<Counters>,
    description: Arc<str>,
}

impl fmt::Debug for CheckpointStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CheckpointStorage")
            .field("store", &self.description)
            .field("counts", &self.counts())
            .finish()
    }
}

impl CheckpointStorage {
    /// Opens the configured store.
    ///
    /// # Errors
    /// [`CheckpointError::Io`] when a local directory cannot be created,
    /// [`CheckpointError::Config`] when the S3 client refuses the settings.
    pub fn open(config: &StorageConfig) -> Result<CheckpointStorage> {
        match config {
            StorageConfig::Local { dir } => CheckpointStorage::local(dir),
            StorageConfig::S3(s3) => CheckpointStorage::s3(s3),
            StorageConfig::Memory => Ok(CheckpointStorage::memory()),
        }
    }

    /// A store in the local directory `dir`, created if missing.
    ///
    /// # Errors
    /// [`CheckpointError::Io`] when the directory cannot be created or opened.
    pub fn local(dir: impl AsRef<std::path::Path>) -> Result<CheckpointStorage> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|e| CheckpointError::io(dir, e))?;
        let store = LocalFileSystem::new_with_prefix(dir)
            .map_err(|e| CheckpointError::Config(format!("local store {}: {e}", dir.display())))?
            // Empty managed directories go with their last file, as Flink's JM deletes them.
            .with_automatic_cleanup(true);
        Ok(CheckpointStorage::from_object_store(
            Arc::new(store),
            &format!("file://{}", dir.display()),
        ))
    }

    /// A store in memory.
    pub fn memory() -> CheckpointStorage {
        CheckpointStorage::from_object_store(Arc::new(InMemory::new()), "memory")
    }

    /// A store in an S3-compatible bucket, with the client [`S3Config::build`] makes (shared
    /// with the blob store): requests are retried at most 3 times within 30 s.
    ///
    /// # Errors
    /// [`CheckpointError::Config`] when the client refuses the settings. An `http://` endpoint
    /// without [`S3Config::allow_http`] fails the first request instead.
    pub fn s3(config: &S3Config) -> Result<CheckpointStorage> {
        let store = config
            .build()
            .map_err(|e| CheckpointError::Config(e.to_string()))?;
        Ok(CheckpointStorage::from_object_store(
            store,
            &format!("s3://{} at {}", config.bucket, config.endpoint_name()),
        ))
    }

    /// Wraps any object store (e.g. one with injected faults or latency).
    pub fn from_object_store(store: Arc<dyn ObjectStore>, description: &str) -> CheckpointStorage {
        CheckpointStorage {
            store,
            counters: Arc::default(),
            description: description.into(),
        }
    }

    /// The same store with counters of its own: verification reads that must not show in a
    /// report's request counts.
    pub fn uncounted(&self) -> CheckpointStorage {
        CheckpointStorage {
            store: Arc::clone(&self.store),
            counters: Arc::default(),
            description: Arc::clone(&self.description),
        }
    }

    /// What the store is, e.g. `file:///tmp/x` or `s3://bucket at http://127.0.0.1:9000`.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Requests made so far through this storage and its clones.
    pub fn counts(&self) -> RequestCounts {
        let c = &self.counters;
        RequestCounts {
            put: c.put.load(Ordering::Relaxed),
            objects_created: c.objects_created.load(Ordering::Relaxed),
            get: c.get.load(Ordering::Relaxed),
            delete: c.delete.load(Ordering::Relaxed),
            list: c.list.load(Ordering::Relaxed),
            bytes_written: c.bytes_written.load(Ordering::Relaxed),
            bytes_read: c.bytes_read.load(Ordering::Relaxed),
        }
    }

    /// Creates the object `path`; fails if it exists (S3 `If-None-Match: *`), so a name is never
    /// written twice by mistake.
    ///
    /// # Errors
    /// [`CheckpointError::Store`] when the store fails or the object already exists.
    pub async fn create(&self, path: &Path, bytes: Bytes) -> Result<()> {
        let len = bytes.len() as u64;
        self.counters.put.fetch_add(1, Ordering::Relaxed);
        self.counters
            .bytes_written
            .fetch_add(len, Ordering::Relaxed);
        self.store
            .put_opts(
                path,
                PutPayload::from_bytes(bytes),
                PutOptions::from(PutMode::Create),
            )
            .await
            .map_err(|e| CheckpointError::store("put", path, e))?;
        self.counters
            .objects_created
            .fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Replaces the object `path` (or creates it) with `bytes`, atomically.
    ///
    /// # Errors
    /// [`CheckpointError::Store`] when the store fails.
    pub async fn overwrite(&self, path: &Path, bytes: Bytes) -> Result<()> {
        let len = bytes.len() as u64;
        self.counters.put.fetch_add(1, Ordering::Relaxed);
        self.counters
            .bytes_written
            .fetch_add(len, Ordering::Relaxed);
        self.store
            .put(path, PutPayload::from_bytes(bytes))
            .await
            .map_err(|e| CheckpointError::store("put", path, e))?;
        Ok(())
    }

    /// Reads a whole object.
    ///
    /// # Errors
    /// [`CheckpointError::Missing`] when it does not exist, [`CheckpointError::Store`] otherwise.
    pub async fn read(&self, path: &Path) -> Result<Bytes> {
        self.counters.get.fetch_add(1, Ordering::Relaxed);
        let bytes = async { self.store.get(path).await?.bytes().await }
            .await
            .map_err(|e| CheckpointError::store("get", path, e))?;
        self.counters
            .bytes_read
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(bytes)
    }

    /// Reads the bytes `range` of an object.
    ///
    /// # Errors
    /// [`CheckpointError::Missing`] when it does not exist, [`CheckpointError::Store`] when the
    /// range is outside the object or the store fails.
    pub async fn read_range(&self, path: &Path, range: Range<u64>) -> Result<Bytes> {
        self.counters.get.fetch_add(1, Ordering::Relaxed);
        let bytes = self
            .store
            .get_range(path, range)
            .await
            .map_err(|e| CheckpointError::store("get", path, e))?;
        self.counters
            .bytes_read
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(bytes)
    }

    /// The metadata of an object, or `None` if it does not exist.
    ///
    /// # Errors
    /// [`CheckpointError::Store`] when the store fails.
    pub async fn head(&self, path: &Path) -> Result<Option<ObjectMeta>> {
        self.counters.get.fetch_add(1, Ordering::Relaxed);
        match self.store.head(path).await {
            Ok(meta) => Ok(Some(meta)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(CheckpointError::store("head", path, e)),
        }
    }

    /// Deletes an object. Deleting an object that is already gone succeeds (discards are
    /// idempotent); returns whether it existed, where the store can tell (S3 cannot: `true`).
    ///
    /// # Errors
    /// [`CheckpointError::Store`] when the store fails.
    pub async fn delete(&self, path: &Path) -> Result<bool> {
        self.counters.delete.fetch_add(1, Ordering::Relaxed);
        match self.store.delete(path).await {
            Ok(()) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(CheckpointError::store("delete", path, e)),
        }
    }

    /// Lists every object under `prefix` (everything for `None`), sorted by path.
    ///
    /// # Errors
    /// [`CheckpointError::Store`] when the store fails.
    pub async fn list(&self, prefix: Option<&Path>) -> Result<Vec<ObjectMeta>> {
        self.counters.list.fetch_add(1, Ordering::Relaxed);
        let mut all: Vec<ObjectMeta> =
            self.store.list(prefix).try_collect().await.map_err(|e| {
                CheckpointError::store(
                    "list",
                    prefix.map_or_else(|| "/".to_owned(), ToString::to_string),
                    e,
                )
            })?;
        all.sort_by(|a, b| a.location.cmp(&b.location));
        Ok(all)
    }

    /// Reads the state a handle points at: a whole object, or a segment of a merged one.
    ///
    /// # Errors
    /// [`CheckpointError::UnresolvedPlaceholder`] for a placeholder,
    /// [`CheckpointError::Missing`] when the object is gone, [`CheckpointError::Corrupt`] when
    /// fewer bytes come back than the handle records.
    pub async fn read_handle(&self, handle: &StateHandle) -> Result<Bytes> {
        let (bytes, expected) = match handle {
            StateHandle::File(f) => (self.read(&f.path).await?, f.size),
            StateHandle::Segment(s) => {
                let end =
                    s.offset
                        .checked_add(s.length)
                        .ok_or_else(|| CheckpointError::Corrupt {
                            handle: handle.to_string(),
                            reason: "offset + length overflows".to_owned(),
                        })?;
                if s.length == 0 {
                    return Ok(Bytes::new());
                }
                (self.read_range(&s.path, s.offset..end).await?, s.length)
            }
            StateHandle::Placeholder(p) => {
                return Err(CheckpointError::UnresolvedPlaceholder(p.key.clone()))
            }
        };
        if bytes.len() as u64 != expected {
            return Err(CheckpointError::Corrupt {
                handle: handle.to_string(),
                reason: format!("{} bytes read, {expected} expected", bytes.len()),
            });
        }
        Ok(bytes)
    }

    /// Deletes the objects of whole-file handles (the JM-side discard). Segments are skipped: a
    /// merged physical file is deleted by its file-merging manager once no live segment is in it
    /// (FLIP-306: `SegmentFileStateHandle::discardState` is a no-op). Returns the number of
    /// DELETE requests made.
    ///
    /// # Errors
    /// [`CheckpointError::Store`] on the first failing delete.
    pub async fn discard(&self, handles: &[StateHandle]) -> Result<usize> {
        let mut deletes = 0;
        for handle in handles {
            if let StateHandle::File(f) = handle {
                self.delete(&f.path).await?;
                deletes += 1;
            }
        }
        Ok(deletes)
    }
}
