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
use std::time::Duration;

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::prefix::PrefixStore;
use object_store::{
    BackoffConfig, ClientOptions, ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions,
    PutPayload, RetryConfig,
};

use crate::error::{CheckpointError, Result};
use crate::handle::StateHandle;

/// An S3-compatible bucket.
#[derive(Clone)]
pub struct S3Config {
    /// Bucket name.
    pub bucket: String,
    /// Access key id.
    pub access_key_id: String,
    /// Secret access key (never printed by `Debug`).
    pub secret_access_key: String,
    /// Region (default `us-east-1`).
    pub region: String,
    /// Endpoint, e.g. `http://127.0.0.1:9000`; `None` is AWS.
    pub endpoint: Option<String>,
    /// Allow a plain-HTTP endpoint (test servers on loopback).
    pub allow_http: bool,
    /// Key prefix inside the bucket.
    pub prefix: Option<String>,
}

impl S3Config {
    /// A bucket with its credentials, region `us-east-1`, AWS endpoint, HTTPS only, no prefix.
    pub fn new(bucket: &str, access_key_id: &str, secret_access_key: &str) -> S3Config {
        S3Config {
            bucket: bucket.to_owned(),
            access_key_id: access_key_id.to_owned(),
            secret_access_key: secret_access_key.to_owned(),
            region: "us-east-1".to_owned(),
            endpoint: None,
            allow_http: false,
            prefix: None,
        }
    }
}

impl fmt::Debug for S3Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Config")
            .field("bucket", &self.bucket)
            .field("access_key_id", &self.access_key_id)
            .field("region", &self.region)
            .field("endpoint", &self.endpoint)
            .field("allow_http", &self.allow_http)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

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

    /// A store in an S3-compatible bucket. Requests are retried at most 3 times within 30 s.
    ///
    /// # Errors
    /// [`CheckpointError::Config`] when the client refuses the settings (e.g. an `http://`
    /// endpoint without [`S3Config::allow_http`]).
    pub fn s3(config: &S3Config) -> Result<CheckpointStorage> {
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&config.bucket)
            .with_access_key_id(&config.access_key_id)
            .with_secret_access_key(&config.secret_access_key)
            .with_region(&config.region)
            // S3-compatible servers on loopback have no per-bucket DNS names.
            .with_virtual_hosted_style_request(false)
            .with_retry(RetryConfig {
                backoff: BackoffConfig::default(),
                max_retries: 3,
                retry_timeout: Duration::from_secs(30),
            })
            // Client options replace earlier ones, `allow_http` included: set them together.
            .with_client_options(
                ClientOptions::new()
                    .with_allow_http(config.allow_http)
                    .with_connect_timeout(Duration::from_secs(10))
                    .with_timeout(Duration::from_secs(300)),
            );
        if let Some(endpoint) = &config.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        let s3 = builder
            .build()
            .map_err(|e| CheckpointError::Config(format!("S3 bucket {}: {e}", config.bucket)))?;
        let endpoint = config.endpoint.as_deref().unwrap_or("aws");
        let store: Arc<dyn ObjectStore> = match &config.prefix {
            Some(prefix) => Arc::new(PrefixStore::new(s3, prefix.as_str())),
            None => Arc::new(s3),
        };
        Ok(CheckpointStorage::from_object_store(
            store,
            &format!("s3://{} at {endpoint}", config.bucket),
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
