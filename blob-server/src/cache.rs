//! The TaskManager-side cache (Flink's `PermanentBlobCache` with its `BlobCacheSizeTracker`,
//! and `TransientBlobCache`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use conflux_blob_api::{BlobError, BlobKey, BlobKind, BlobReader, JobId};
use lru::LruCache;
use tokio::runtime::Handle;

use crate::bridge;
use crate::cache_memory::SharedBlobMemory;
use crate::client::BlobClient;
use crate::clock::Clock;
use crate::config::BlobCacheConfig;
use crate::layout::{self, blocking, io_err};
use crate::store::BlobStore;

/// Counters of a [`BlobCache`] since it was created, and what it holds now. The simulator
/// reports blob fetches and cache hits per TaskManager from these.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlobCacheStats {
    /// Reads served from a cached, verified local file.
    pub hits: u64,
    /// Reads not served locally (the sum of the fetches below and of failed reads).
    pub misses: u64,
    /// Misses served from the durable store.
    pub durable_fetches: u64,
    /// Misses served by the blob server.
    pub server_fetches: u64,
    /// Blobs evicted to stay within the byte budget (least recently used first).
    pub evictions: u64,
    /// Transient blobs dropped after their TTL.
    pub expired: u64,
    /// Local files or downloads that did not match their digest (never served; re-fetched).
    pub digest_mismatches: u64,
    /// Bytes downloaded from the durable store or the server.
    pub bytes_fetched: u64,
    /// Bytes served to readers (hits and misses).
    pub bytes_served: u64,
    /// Blobs cached now.
    pub cached_blobs: u64,
    /// Bytes cached now (at most the budget).
    pub cached_bytes: u64,
}

#[derive(Debug, Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    durable_fetches: AtomicU64,
    server_fetches: AtomicU64,
    evictions: AtomicU64,
    expired: AtomicU64,
    digest_mismatches: AtomicU64,
    bytes_fetched: AtomicU64,
    bytes_served: AtomicU64,
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    size: u64,
    /// Clock time of the last access, for the TTL of transient blobs.
    last_access_ms: u64,
}

/// The cached blobs in LRU order (an access-ordered map, as Flink's `LinkedHashMap`; unbounded
/// in entries because the budget is in bytes) and their total size.
///
/// Invariant: `bytes` is the sum of the entries' sizes.
#[derive(Debug)]
struct State {
    entries: LruCache<BlobKey, Entry>,
    bytes: u64,
    last_sweep_ms: u64,
}

impl State {
    fn new() -> State {
        State {
            entries: LruCache::unbounded(),
            bytes: 0,
            last_sweep_ms: 0,
        }
    }

    /// Makes `key` the most recently used, accessed at `now` (ms).
    fn touch(&mut self, key: &BlobKey, now: u64) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.last_access_ms = now;
        }
    }

    fn remove(&mut self, key: &BlobKey) -> Option<Entry> {
        let entry = self.entries.pop(key)?;
        self.bytes -= entry.size;
        Some(entry)
    }

    /// Removes and returns the least recently used blob.
    fn pop_lru(&mut self) -> Option<BlobKey> {
        let (key, entry) = self.entries.pop_lru()?;
        self.bytes -= entry.size;
        Some(key)
    }
}

/// Where a cache keeps its blobs.
enum Storage {
    /// Files: `<root>/job_<job>/blob_<key>`, written through `<root>/incoming`.
    Disk { root: PathBuf, incoming: PathBuf },
    /// A store in memory shared with other caches of the process.
    Memory(SharedBlobMemory),
}

impl Storage {
    /// Lets go of a cached blob: its file is removed, or the shared store releases it.
    fn remove(&self, key: &BlobKey) -> Result<(), BlobError> {
        match self {
            Storage::Disk { root, .. } => {
                layout::remove_file_if_exists(&layout::blob_path(root, key))
            }
            Storage::Memory(memory) => {
                memory.release(key);
                Ok(())
            }
        }
    }
}

struct Inner {
    storage: Storage,
    max_bytes: u64,
    transient_ttl_ms: u64,
    fetch_retries: u32,
    clock: Arc<dyn Clock>,
    client: Option<BlobClient>,
    durable: Option<BlobStore>,
    state: Mutex<State>,
    temp_counter: AtomicU64,
    counters: Counters,
}

/// A TaskManager's blob cache: reads the local file, then the durable store (permanent blobs),
/// then the server over HTTP, as Flink's TaskManagers do; keeps what it fetched.
///
/// - **Verified**: every blob read from disk or downloaded is checked against its digest;
///   damaged content is never served, the local file is dropped and the blob fetched again
///   (server fetches are retried up to [`BlobCacheConfig::fetch_retries`] times).
/// - **Bounded**: cached bytes stay within [`BlobCacheConfig::max_bytes`] by evicting least
///   recently used blobs before a new one is stored, as Flink's `BlobCacheSizeTracker`
///   (FLINK-23354, 100 MiB by default); a hit makes a blob the most recently used. Unlike Flink,
///   every blob counts, not only those read through `readFile`.
/// - **Transient blobs** expire [`BlobCacheConfig::transient_ttl_ms`] after their last access
///   (checked on access and in sweeps; see [`BlobCache::expire_transient`]).
/// - **Per job**: [`BlobCache::release_job`] drops a job's blobs (Flink keeps a released job's
///   directory for one cleanup interval; here it goes at once).
///
/// Layout: `<dir>/incoming/temp-<n>` while downloading, then `<dir>/job_<job>/blob_<key>`; or,
/// with [`BlobCacheConfig::memory`], no files: the blobs are held in a [`SharedBlobMemory`].
/// Dropping a cache lets go of what it holds there.
///
/// Concurrent misses of one key may fetch it more than once; the cache keeps one copy.
pub struct BlobCache {
    inner: Arc<Inner>,
    handle: Handle,
}

impl fmt::Debug for BlobCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobCache")
            .field("root", &self.root())
            .field("max_bytes", &self.inner.max_bytes)
            .field("client", &self.inner.client)
            .field("durable", &self.inner.durable)
            .finish_non_exhaustive()
    }
}

impl BlobCache {
    /// A cache as `config` says, running its downloads on `runtime` (see the crate
    /// documentation on threads). Empties the cache directory of earlier blobs.
    ///
    /// # Errors
    /// [`BlobError::Io`] when the directory cannot be prepared, [`BlobError::Config`] for a bad
    /// server URL or S3 setting.
    pub fn new(config: BlobCacheConfig, runtime: Handle) -> Result<BlobCache, BlobError> {
        let client = config
            .server_url
            .as_ref()
            .map(|url| BlobClient::new(url.clone(), config.auth_token.clone()))
            .transpose()?;
        let durable = BlobStore::open(&config.durable)?;
        BlobCache::with_parts(config, runtime, client, durable)
    }

    /// A cache using the given client and durable store instead of those the configuration
    /// describes (its `server_url`, `auth_token` and `durable` are ignored): many caches (one per
    /// simulated TaskManager) can share one client's connection pool and one store.
    ///
    /// # Errors
    /// [`BlobError::Io`] when the directory cannot be prepared.
    pub fn with_parts(
        config: BlobCacheConfig,
        runtime: Handle,
        client: Option<BlobClient>,
        durable: Option<BlobStore>,
    ) -> Result<BlobCache, BlobError> {
        let storage = match config.memory {
            Some(memory) => Storage::Memory(memory),
            None => {
                let root = config.storage_dir;
                std::fs::create_dir_all(&root)
                    .map_err(io_err(format!("creating directory {}", root.display())))?;
                clear_blob_dirs(&root)?;
                let incoming = layout::reset_incoming(&root)?;
                Storage::Disk { root, incoming }
            }
        };
        Ok(BlobCache {
            inner: Arc::new(Inner {
                storage,
                max_bytes: config.max_bytes,
                transient_ttl_ms: config.transient_ttl_ms,
                fetch_retries: config.fetch_retries,
                clock: config.clock,
                client,
                durable,
                state: Mutex::new(State::new()),
                temp_counter: AtomicU64::new(0),
                counters: Counters::default(),
            }),
            handle: runtime,
        })
    }

    /// A blob's verified content: local file, else durable store, else server; what was
    /// fetched is kept (within the budget).
    ///
    /// # Errors
    /// [`BlobError::NotFound`] when no source has it, [`BlobError::DigestMismatch`] when the
    /// server keeps sending damaged content, network, store and I/O failures.
    pub async fn get(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        let inner = Arc::clone(&self.inner);
        let k = *key;
        if let Some(bytes) = blocking(move || inner.read_local(&k)).await? {
            return Ok(bytes);
        }
        Arc::clone(&self.inner).fetch_and_keep(*key).await
    }

    /// Drops every cached blob of `job` (Flink's `releaseJob` once the job's last task on this
    /// TaskManager is gone) and returns how many.
    ///
    /// # Errors
    /// [`BlobError::Io`] when the job's folder cannot be removed.
    pub fn release_job(&self, job: JobId) -> Result<usize, BlobError> {
        let mut state = self.inner.lock();
        let keys: Vec<BlobKey> = state
            .entries
            .iter()
            .map(|(key, _)| *key)
            .filter(|key| key.job == Some(job))
            .collect();
        for key in &keys {
            state.remove(key);
        }
        // Under the lock, so that no download of the job lands in the folder meanwhile.
        match &self.inner.storage {
            Storage::Disk { root, .. } => {
                layout::remove_dir_if_exists(&root.join(layout::job_dir_name(Some(job))))?;
            }
            Storage::Memory(memory) => {
                for key in &keys {
                    memory.release(key);
                }
            }
        }
        tracing::debug!(job = %job, blobs = keys.len(), "job released from the blob cache");
        Ok(keys.len())
    }

    /// Drops transient blobs unused for longer than the TTL now; returns how many. Also runs by
    /// itself at most once per TTL when blobs are stored.
    pub fn expire_transient(&self) -> usize {
        self.inner.expire_transient()
    }

    /// Whether `key` is cached now.
    pub fn contains(&self, key: &BlobKey) -> bool {
        self.inner.lock().entries.contains(key)
    }

    /// Keys cached now, least recently used first.
    pub fn lru_order(&self) -> Vec<BlobKey> {
        // The map iterates most recently used first.
        self.inner
            .lock()
            .entries
            .iter()
            .rev()
            .map(|(key, _)| *key)
            .collect()
    }

    /// Counters since creation and what is cached now.
    pub fn stats(&self) -> BlobCacheStats {
        let (cached_blobs, cached_bytes) = {
            let state = self.inner.lock();
            (state.entries.len() as u64, state.bytes)
        };
        let c = &self.inner.counters;
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        BlobCacheStats {
            hits: get(&c.hits),
            misses: get(&c.misses),
            durable_fetches: get(&c.durable_fetches),
            server_fetches: get(&c.server_fetches),
            evictions: get(&c.evictions),
            expired: get(&c.expired),
            digest_mismatches: get(&c.digest_mismatches),
            bytes_fetched: get(&c.bytes_fetched),
            bytes_served: get(&c.bytes_served),
            cached_blobs,
            cached_bytes,
        }
    }

    /// Where `key`'s cached file is (or would be; a cache in memory has none, and this names a
    /// path under an empty root).
    pub fn blob_path(&self, key: &BlobKey) -> PathBuf {
        layout::blob_path(self.root(), key)
    }

    /// The cache's directory (empty for a cache in memory).
    fn root(&self) -> &Path {
        match &self.inner.storage {
            Storage::Disk { root, .. } => root,
            Storage::Memory(_) => Path::new(""),
        }
    }
}

impl Drop for Inner {
    /// A cache in memory lets go of what it holds in the shared store; files stay for the
    /// directory's owner.
    fn drop(&mut self) {
        if let Storage::Memory(memory) = &self.storage {
            let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
            for (key, _) in state.entries.iter() {
                memory.release(key);
            }
        }
    }
}

impl BlobReader for BlobCache {
    /// As [`BlobCache::get`], from any thread: a hit reads the file on the calling thread; a
    /// miss downloads on the cache's runtime.
    fn read(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        if let Some(bytes) = self.inner.read_local(key)? {
            return Ok(bytes);
        }
        let inner = Arc::clone(&self.inner);
        let key = *key;
        bridge::block_on(&self.handle, async move { inner.fetch_and_keep(key).await })
    }
}

/// Removes `job_*` and `no_job` folders left by an earlier cache in `root`.
fn clear_blob_dirs(root: &Path) -> Result<(), BlobError> {
    let entries = std::fs::read_dir(root).map_err(io_err(format!("listing {}", root.display())))?;
    for entry in entries {
        let entry = entry.map_err(io_err(format!("listing {}", root.display())))?;
        if entry
            .file_name()
            .to_str()
            .and_then(layout::parse_job_dir_name)
            .is_some()
        {
            layout::remove_dir_if_exists(&entry.path())?;
        }
    }
    Ok(())
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Plain data: keep using it after a panic elsewhere.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn expired(&self, key: &BlobKey, entry: &Entry, now: u64) -> bool {
        key.kind == BlobKind::Transient
            && now.saturating_sub(entry.last_access_ms) > self.transient_ttl_ms
    }

    /// The cached, verified content of `key`, or `None` (a miss: not cached, expired, or the
    /// file was missing or damaged, in which case it is dropped).
    fn read_local(&self, key: &BlobKey) -> Result<Option<Bytes>, BlobError> {
        let now = self.clock.now_ms();
        {
            let mut state = self.lock();
            let Some(entry) = state.entries.peek(key).copied() else {
                bump(&self.counters.misses, 1);
                return Ok(None);
            };
            if self.expired(key, &entry, now) {
                state.remove(key);
                self.storage.remove(key)?;
                bump(&self.counters.expired, 1);
                bump(&self.counters.misses, 1);
                tracing::debug!(key = %key, "cached transient blob expired");
                return Ok(None);
            }
            state.touch(key, now);
            if let Storage::Memory(memory) = &self.storage {
                // Held since it was fetched and checked: a hit.
                if let Some(bytes) = memory.get(key) {
                    bump(&self.counters.hits, 1);
                    bump(&self.counters.bytes_served, bytes.len() as u64);
                    return Ok(Some(bytes));
                }
                state.remove(key);
                bump(&self.counters.misses, 1);
                return Ok(None);
            }
        }
        let Storage::Disk { root, .. } = &self.storage else {
            return Ok(None);
        };
        let path = layout::blob_path(root, key);
        match layout::read_verified(&path, key) {
            Ok(bytes) => {
                bump(&self.counters.hits, 1);
                bump(&self.counters.bytes_served, bytes.len() as u64);
                Ok(Some(bytes))
            }
            Err(e @ (BlobError::NotFound(_) | BlobError::DigestMismatch { .. })) => {
                if matches!(e, BlobError::DigestMismatch { .. }) {
                    bump(&self.counters.digest_mismatches, 1);
                    tracing::warn!(key = %key, path = %path.display(), "cached blob damaged; fetching it again");
                }
                let mut state = self.lock();
                state.remove(key);
                layout::remove_file_if_exists(&path)?;
                bump(&self.counters.misses, 1);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Downloads `key` (durable store first for permanent blobs, then the server), keeps it,
    /// and returns it.
    async fn fetch_and_keep(self: Arc<Self>, key: BlobKey) -> Result<Bytes, BlobError> {
        let bytes = self.fetch(&key).await?;
        bump(&self.counters.bytes_fetched, bytes.len() as u64);
        bump(&self.counters.bytes_served, bytes.len() as u64);
        let inner = Arc::clone(&self);
        let b = bytes.clone();
        let kept = match &self.storage {
            // Nothing to write: kept under the lock, on this thread.
            Storage::Memory(_) => inner.keep(&key, &b),
            Storage::Disk { .. } => blocking(move || inner.keep(&key, &b)).await,
        };
        if let Err(e) = kept {
            tracing::warn!(key = %key, error = %e, "cannot cache blob; serving it uncached");
        }
        Ok(bytes)
    }

    async fn fetch(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        if let (Some(store), BlobKind::Permanent) = (&self.durable, key.kind) {
            match store.get(key).await {
                Ok(bytes) => {
                    bump(&self.counters.durable_fetches, 1);
                    tracing::debug!(key = %key, store = %store, "blob fetched from the durable store");
                    return Ok(bytes);
                }
                Err(BlobError::NotFound(_)) => {}
                Err(e) => {
                    if matches!(e, BlobError::DigestMismatch { .. }) {
                        bump(&self.counters.digest_mismatches, 1);
                    }
                    tracing::warn!(key = %key, store = %store, error = %e, "durable store read failed; asking the server");
                }
            }
        }
        let Some(client) = &self.client else {
            return Err(BlobError::NotFound(*key));
        };
        let mut attempt = 0u32;
        loop {
            let error = match client.get(key).await {
                Ok(bytes) => {
                    bump(&self.counters.server_fetches, 1);
                    tracing::debug!(key = %key, "blob fetched from the server");
                    return Ok(bytes);
                }
                Err(
                    e @ (BlobError::NotFound(_)
                    | BlobError::Unauthorized
                    | BlobError::InvalidKey(_)),
                ) => return Err(e),
                Err(e) => e,
            };
            if matches!(error, BlobError::DigestMismatch { .. }) {
                bump(&self.counters.digest_mismatches, 1);
            }
            if attempt >= self.fetch_retries {
                return Err(error);
            }
            attempt += 1;
            tracing::warn!(key = %key, attempt, error = %error, "blob fetch failed; retrying");
            tokio::time::sleep(Duration::from_millis(20u64 << attempt.min(6))).await;
        }
    }

    /// Stores verified `bytes` under `key`, evicting least recently used blobs first.
    fn keep(&self, key: &BlobKey, bytes: &Bytes) -> Result<(), BlobError> {
        let size = bytes.len() as u64;
        let now = self.clock.now_ms();
        if now.saturating_sub(self.lock().last_sweep_ms) >= self.transient_ttl_ms {
            self.expire_transient();
        }
        if size > self.max_bytes {
            tracing::debug!(key = %key, size, budget = self.max_bytes, "blob larger than the cache; not kept");
            return Ok(());
        }
        if self.lock().entries.contains(key) {
            return Ok(());
        }
        // Written outside the lock; renamed into place under it.
        let temp = match &self.storage {
            Storage::Disk { incoming, .. } => {
                let (temp, mut file) = layout::TempFile::create(incoming, &self.temp_counter)?;
                std::io::Write::write_all(&mut file, bytes)
                    .map_err(io_err(format!("writing {}", temp.path().display())))?;
                drop(file);
                Some(temp)
            }
            Storage::Memory(_) => None,
        };
        let mut state = self.lock();
        if state.entries.contains(key) {
            state.touch(key, now);
            return Ok(());
        }
        let mut evicted = 0u64;
        while state.bytes + size > self.max_bytes {
            let Some(victim) = state.pop_lru() else {
                break;
            };
            self.storage.remove(&victim)?;
            evicted += 1;
            tracing::debug!(key = %victim, "blob evicted from the cache");
        }
        bump(&self.counters.evictions, evicted);
        match (&self.storage, temp) {
            (Storage::Disk { root, .. }, Some(temp)) => {
                temp.persist(&layout::blob_path(root, key))?;
            }
            (Storage::Memory(memory), _) => memory.hold(key, bytes),
            (Storage::Disk { .. }, None) => {
                return Err(BlobError::Internal("bug: no temporary file".into()));
            }
        }
        state.entries.put(
            *key,
            Entry {
                size,
                last_access_ms: now,
            },
        );
        state.bytes += size;
        Ok(())
    }

    fn expire_transient(&self) -> usize {
        let now = self.clock.now_ms();
        let mut state = self.lock();
        state.last_sweep_ms = now;
        let expired: Vec<BlobKey> = state
            .entries
            .iter()
            .filter(|(key, entry)| self.expired(key, entry, now))
            .map(|(key, _)| *key)
            .collect();
        for key in &expired {
            state.remove(key);
            if let Err(e) = self.storage.remove(key) {
                tracing::warn!(key = %key, error = %e, "cannot remove expired blob");
            }
        }
        bump(&self.counters.expired, expired.len() as u64);
        expired.len()
    }
}
