//! The durable copy of permanent blobs on an object store (Flink's HA `BlobStore`,
//! `FileSystemBlobStore`): a local directory by default, S3-compatible by configuration.

use std::fmt;
use std::path::Path as FsPath;
use std::sync::Arc;

use bytes::Bytes;
use conflux_blob_api::{BlobError, BlobKey, BlobKind, JobId};
use conflux_object_store::S3Config;
use futures_util::StreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use tokio::io::AsyncReadExt;

use crate::config::DurableStoreConfig;
use crate::layout::{self, io_err};

/// Blobs above this size are uploaded in parts rather than read into memory at once.
const MULTIPART_THRESHOLD: u64 = 16 << 20;
/// Part size of multipart uploads: 8 MiB (S3's minimum is 5 MiB).
const PART_BYTES: usize = 8 << 20;

/// A durable blob store: blobs under `job_<job>/<p|t>-<digest hex>` (Flink's `job_<job>/`
/// folders; `no_job/` for job-unrelated blobs), plus a small `<name>.refs` object holding the reference count when it is above 1, so that a server
/// that lost its local directory recovers the counts too. Cheap to clone (shared client).
///
/// Every [`BlobStore::get`] checks the digest (as Flink re-checks downloads from the HA store).
#[derive(Clone)]
pub struct BlobStore {
    inner: Arc<dyn ObjectStore>,
    description: Arc<str>,
}

impl fmt::Debug for BlobStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobStore")
            .field("store", &self.description)
            .finish()
    }
}

impl fmt::Display for BlobStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.description)
    }
}

/// The object name of a blob inside its job's folder: `<p|t>-<digest hex>`. Shorter than the
/// local `blob_<key>` (the job is the folder already), which keeps whole object keys short
/// enough for file-system-backed S3 servers that derive 255-byte file names from them (`s3s-fs`
/// does for multipart uploads).
fn object_name(key: &BlobKey) -> String {
    let kind = match key.kind {
        BlobKind::Permanent => 'p',
        BlobKind::Transient => 't',
    };
    format!("{kind}-{}", key.digest)
}

fn object_path(key: &BlobKey) -> Path {
    Path::from_iter([layout::job_dir_name(key.job), object_name(key)])
}

fn refs_object_path(key: &BlobKey) -> Path {
    Path::from_iter([
        layout::job_dir_name(key.job),
        format!("{}.refs", object_name(key)),
    ])
}

/// The key of the object `<dir>/<name>`, if it is a blob.
fn parse_object_path(dir: &str, name: &str) -> Option<BlobKey> {
    let job = layout::parse_job_dir_name(dir)?;
    let (kind, digest) = name.split_once('-')?;
    let job = job.map_or_else(|| "no_job".to_owned(), |job| job.to_string());
    format!("{kind}-{job}-{digest}").parse().ok()
}

impl BlobStore {
    /// The store `config` describes, or `None` for [`DurableStoreConfig::None`].
    ///
    /// # Errors
    /// [`BlobError::Io`] when a local directory cannot be created, [`BlobError::Config`] for an
    /// S3 setting the client refuses.
    pub fn open(config: &DurableStoreConfig) -> Result<Option<BlobStore>, BlobError> {
        match config {
            DurableStoreConfig::None => Ok(None),
            DurableStoreConfig::Local { dir } => BlobStore::local(dir).map(Some),
            DurableStoreConfig::S3(s3) => BlobStore::s3(s3).map(Some),
        }
    }

    /// A store in the local directory `dir` (created if missing).
    ///
    /// # Errors
    /// [`BlobError::Io`] when the directory cannot be created.
    pub fn local(dir: impl AsRef<FsPath>) -> Result<BlobStore, BlobError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir)
            .map_err(io_err(format!("creating directory {}", dir.display())))?;
        let store = LocalFileSystem::new_with_prefix(dir)
            .map_err(|e| BlobError::Store {
                context: format!("opening {}", dir.display()),
                source: Box::new(e),
            })?
            // Removes a job's directory with its last blob.
            .with_automatic_cleanup(true);
        Ok(BlobStore::from_object_store(
            Arc::new(store),
            format!("file://{}", dir.display()),
        ))
    }

    /// A store in an S3-compatible bucket, with the client [`S3Config::build`] makes: requests
    /// are retried at most 3 times within 30 s, so an unreachable endpoint fails in bounded
    /// time. Named `s3://<bucket>[/<prefix>] at <endpoint|aws>` in errors and logs.
    ///
    /// # Errors
    /// [`BlobError::Config`] when the client refuses the settings. An `http://` endpoint
    /// without [`S3Config::allow_http`] fails the first request instead.
    pub fn s3(config: &S3Config) -> Result<BlobStore, BlobError> {
        let store = config
            .build()
            .map_err(|e| BlobError::Config(e.to_string()))?;
        let endpoint = config.endpoint_name();
        let description = match &config.prefix {
            Some(prefix) => format!("s3://{}/{prefix} at {endpoint}", config.bucket),
            None => format!("s3://{} at {endpoint}", config.bucket),
        };
        Ok(BlobStore::from_object_store(store, description))
    }

    /// A store on any [`ObjectStore`] (e.g. `object_store::memory::InMemory` in tests);
    /// `description` names it in errors and logs.
    pub fn from_object_store(
        store: Arc<dyn ObjectStore>,
        description: impl Into<String>,
    ) -> BlobStore {
        BlobStore {
            inner: store,
            description: description.into().into(),
        }
    }

    /// A [`BlobError::Store`] for `what` on `path`, keeping the client's error as its source
    /// (its own sources name the causes: the client's top error often says only "builder
    /// error" or "error sending request").
    fn store_error(&self, what: &str, path: &Path, e: object_store::Error) -> BlobError {
        BlobError::Store {
            context: format!("{what} {path} in {}", self.description),
            source: Box::new(e),
        }
    }

    /// Stores `bytes` as `key`'s content (atomically: readers never see part of it).
    ///
    /// # Errors
    /// [`BlobError::Store`] naming the object.
    pub async fn put(&self, key: &BlobKey, bytes: Bytes) -> Result<(), BlobError> {
        let path = object_path(key);
        self.inner
            .put(&path, PutPayload::from(bytes))
            .await
            .map_err(|e| self.store_error("writing", &path, e))?;
        Ok(())
    }

    /// Stores the content of the local file `file` as `key`'s content; files above 16 MiB go
    /// up in 8 MiB parts instead of being read into memory at once.
    ///
    /// # Errors
    /// [`BlobError::Io`] reading the file, [`BlobError::Store`] naming the object.
    pub async fn put_file(&self, key: &BlobKey, file: &FsPath) -> Result<(), BlobError> {
        let context = || format!("reading {}", file.display());
        let mut reader = tokio::fs::File::open(file)
            .await
            .map_err(io_err(context()))?;
        let len = reader.metadata().await.map_err(io_err(context()))?.len();
        if len <= MULTIPART_THRESHOLD {
            let mut buf = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
            reader
                .read_to_end(&mut buf)
                .await
                .map_err(io_err(context()))?;
            return self.put(key, Bytes::from(buf)).await;
        }
        let path = object_path(key);
        let upload = self
            .inner
            .put_multipart(&path)
            .await
            .map_err(|e| self.store_error("starting upload of", &path, e))?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
        let mut buf = vec![0u8; PART_BYTES];
        loop {
            let n = match reader.read(&mut buf).await {
                Ok(n) => n,
                Err(e) => {
                    writer.abort().await.ok();
                    return Err(io_err(context())(e));
                }
            };
            if n == 0 {
                break;
            }
            if let Err(e) = writer.wait_for_capacity(2).await {
                return Err(self.store_error("uploading", &path, e));
            }
            writer.write(&buf[..n]);
        }
        writer
            .finish()
            .await
            .map_err(|e| self.store_error("finishing upload of", &path, e))?;
        Ok(())
    }

    /// `key`'s content, checked against its digest.
    ///
    /// # Errors
    /// [`BlobError::NotFound`], [`BlobError::DigestMismatch`] for a damaged copy,
    /// [`BlobError::Store`] naming the object.
    pub async fn get(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        let path = object_path(key);
        let result = match self.inner.get(&path).await {
            Ok(result) => result,
            Err(object_store::Error::NotFound { .. }) => return Err(BlobError::NotFound(*key)),
            Err(e) => return Err(self.store_error("reading", &path, e)),
        };
        let bytes = result
            .bytes()
            .await
            .map_err(|e| self.store_error("reading", &path, e))?;
        let key = *key;
        // Hashing a large blob is CPU work: keep it off the async workers.
        layout::blocking(move || {
            if key.matches(&bytes) {
                Ok(bytes)
            } else {
                Err(BlobError::DigestMismatch { key })
            }
        })
        .await
    }

    /// Whether the store holds `key`.
    ///
    /// # Errors
    /// [`BlobError::Store`] naming the object.
    pub async fn contains(&self, key: &BlobKey) -> Result<bool, BlobError> {
        let path = object_path(key);
        match self.inner.head(&path).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.store_error("looking up", &path, e)),
        }
    }

    /// Deletes `key`'s content and reference count. Deleting an absent blob is not an error.
    ///
    /// # Errors
    /// [`BlobError::Store`] naming the object.
    pub async fn delete(&self, key: &BlobKey) -> Result<(), BlobError> {
        self.delete_path(&refs_object_path(key)).await?;
        self.delete_path(&object_path(key)).await
    }

    async fn delete_path(&self, path: &Path) -> Result<(), BlobError> {
        match self.inner.delete(path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.store_error("deleting", path, e)),
        }
    }

    /// Deletes every blob of `job` (Flink's `BlobStore.deleteAll(jobId)`, part of the global
    /// cleanup of a job) and returns how many blobs were deleted.
    ///
    /// # Errors
    /// [`BlobError::Store`] naming the object or the job's folder.
    pub async fn delete_job(&self, job: JobId) -> Result<usize, BlobError> {
        let prefix = Path::from(layout::job_dir_name(Some(job)));
        let mut objects = Vec::new();
        let mut listing = self.inner.list(Some(&prefix));
        while let Some(meta) = listing.next().await {
            let meta = meta.map_err(|e| self.store_error("listing", &prefix, e))?;
            objects.push(meta.location);
        }
        let mut blobs = 0;
        for path in objects {
            if path
                .filename()
                .is_some_and(|name| parse_object_path(prefix.as_ref(), name).is_some())
            {
                blobs += 1;
            }
            self.delete_path(&path).await?;
        }
        Ok(blobs)
    }

    /// Every blob in the store with its size in bytes (reference-count objects and foreign
    /// objects are skipped). Costs one listing of the whole store: used at server start.
    ///
    /// # Errors
    /// [`BlobError::Store`].
    pub async fn list(&self) -> Result<Vec<(BlobKey, u64)>, BlobError> {
        let mut blobs = Vec::new();
        let mut listing = self.inner.list(None);
        while let Some(meta) = listing.next().await {
            let meta = meta.map_err(|e| self.store_error("listing", &Path::default(), e))?;
            let mut parts = meta.location.parts();
            let (Some(dir), Some(file), None) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            if let Some(key) = parse_object_path(dir.as_ref(), file.as_ref()) {
                blobs.push((key, meta.size));
            }
        }
        Ok(blobs)
    }

    /// The stored reference count of `key`: `None` when no count object exists (which means 1).
    pub(crate) async fn read_refs(&self, key: &BlobKey) -> Result<Option<u64>, BlobError> {
        let path = refs_object_path(key);
        let bytes = match self.inner.get(&path).await {
            Ok(result) => result
                .bytes()
                .await
                .map_err(|e| self.store_error("reading", &path, e))?,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(self.store_error("reading", &path, e)),
        };
        let count = std::str::from_utf8(&bytes)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| BlobError::Store {
                context: format!("reading {path} in {}", self.description),
                source: "not a reference count".into(),
            })?;
        Ok(Some(count))
    }

    /// Stores `key`'s reference count (a count of 1 is stored as no object).
    pub(crate) async fn write_refs(&self, key: &BlobKey, refs: u64) -> Result<(), BlobError> {
        let path = refs_object_path(key);
        if refs <= 1 {
            return self.delete_path(&path).await;
        }
        self.inner
            .put(&path, PutPayload::from(refs.to_string()))
            .await
            .map_err(|e| self.store_error("writing", &path, e))?;
        Ok(())
    }
}
