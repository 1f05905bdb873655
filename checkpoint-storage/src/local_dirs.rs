//! Placement of RocksDB instance directories on a host's local disks (`LocalDirAllocator`).
//!
//! Flink picks a random start per task and walks round-robin from it, with no coordination
//! across tasks or TaskManagers, so on a host with few instances per disk some disks get 2-3
//! instances and others none. The strategies here:
//!
//! | strategy | coordination | balance |
//! |---|---|---|
//! | [`PlacementStrategy::Random`] | none (Flink's) | by chance |
//! | [`PlacementStrategy::RoundRobin`] | in-process counter | per process |
//! | [`PlacementStrategy::HostRoundRobin`] | a counter file under an exclusive `flock` | per host |
//! | [`PlacementStrategy::LeastLoaded`] | live instance markers, counted under the host lock | per host, live instances only |
//! | [`PlacementStrategy::Weighted`] | none | proportional to weights (default: free bytes) |
//!
//! All TaskManagers of a host share its filesystem, so the host lock needs no ZooKeeper; it
//! must live on the same inode for all of them (in containers: a hostPath). Every instance holds
//! an exclusive `flock` on a marker file in its directory for its whole life: the kernel drops
//! it when the process dies, so crashed instances stop counting. Candidate directories are
//! canonicalised and sorted; directories on one device count once; directories that are
//! missing, unwritable or below the free-space floor are skipped on every pick. Any failure of
//! coordination (lock file unreachable, lock held too long, a different directory list)
//! falls back to a random pick: placement never fails a task because of coordination.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use conflux_common::{Fnv1a64, SplitMix64};
use rustix::fs::{flock, FlockOperation};

use crate::error::{CheckpointError, Result};
use crate::handle::sanitize;

/// Directory under each disk that holds instance directories.
pub const INSTANCES_DIR: &str = "conflux-instances";

/// Marker file of an instance, locked for the instance's life.
pub const MARKER_FILE: &str = ".instance.lock";

/// Default name of the host-wide lock and counter file, in the first candidate directory.
pub const DEFAULT_LOCK_FILE: &str = ".conflux-localdir.lock";

/// How long a pick waits for the host lock before falling back to random.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(2);

/// How a directory is picked for a new instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum PlacementStrategy {
    /// Uniformly at random (Flink's behaviour, per task).
    Random,
    /// Round-robin within this allocator (this process), from a random start.
    RoundRobin,
    /// Round-robin across every process of the host, through a counter file under an
    /// exclusive file lock.
    HostRoundRobin,
    /// The directory with the fewest live instances on the host (markers whose lock is held),
    /// ties broken by the host counter.
    LeastLoaded,
    /// At random, proportionally to [`LocalDirConfig::weights`] (default: free bytes).
    Weighted,
}

impl PlacementStrategy {
    /// Every strategy, in documentation order.
    pub const ALL: [PlacementStrategy; 5] = [
        PlacementStrategy::Random,
        PlacementStrategy::RoundRobin,
        PlacementStrategy::HostRoundRobin,
        PlacementStrategy::LeastLoaded,
        PlacementStrategy::Weighted,
    ];

    /// Its name: `random`, `round-robin`, `host-round-robin`, `least-loaded`, `weighted`.
    pub fn as_str(self) -> &'static str {
        match self {
            PlacementStrategy::Random => "random",
            PlacementStrategy::RoundRobin => "round-robin",
            PlacementStrategy::HostRoundRobin => "host-round-robin",
            PlacementStrategy::LeastLoaded => "least-loaded",
            PlacementStrategy::Weighted => "weighted",
        }
    }

    /// Parses [`Self::as_str`]'s names.
    pub fn parse(s: &str) -> Option<PlacementStrategy> {
        PlacementStrategy::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// Options of a [`LocalDirAllocator`].
#[derive(Clone, Debug)]
pub struct LocalDirConfig {
    /// Candidate directories (Flink's `state.backend.rocksdb.localdir`).
    pub dirs: Vec<PathBuf>,
    /// The strategy.
    pub strategy: PlacementStrategy,
    /// Host-wide lock and counter file; default `<first candidate>/.conflux-localdir.lock`.
    pub lock_file: Option<PathBuf>,
    /// Directories with fewer free bytes are skipped (default 0: only unwritable ones are).
    pub min_free_bytes: u64,
    /// Count directories on one device once (default on). Off only for demonstrations and
    /// tests on a single disk.
    pub dedupe_devices: bool,
    /// Weights of [`PlacementStrategy::Weighted`], one per entry of `dirs`; default: free bytes.
    pub weights: Option<Vec<u64>>,
    /// Seed of random picks; default: from the clock and process id.
    pub seed: Option<u64>,
}

impl LocalDirConfig {
    /// `dirs` with `strategy` and the defaults.
    pub fn new(dirs: Vec<PathBuf>, strategy: PlacementStrategy) -> LocalDirConfig {
        LocalDirConfig {
            dirs,
            strategy,
            lock_file: None,
            min_free_bytes: 0,
            dedupe_devices: true,
            weights: None,
            seed: None,
        }
    }
}

/// The identity of a state-backend instance; its directory name is made of it plus a random id,
/// so two instances never share a directory (FLINK-12296: chained operators once did).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InstanceName {
    /// Job id.
    pub job: String,
    /// Job vertex id.
    pub vertex: String,
    /// Subtask index.
    pub subtask: u32,
    /// Operator id.
    pub operator: String,
}

/// A directory handed to an instance. Its marker lock is held until it is dropped (or the
/// process dies); [`InstanceDir::remove`] also deletes the directory.
#[derive(Debug)]
pub struct InstanceDir {
    path: PathBuf,
    disk: usize,
    fallback: bool,
    marker: Option<File>,
}

impl InstanceDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Index of its disk in [`LocalDirAllocator::disks`].
    pub fn disk(&self) -> usize {
        self.disk
    }

    /// Whether coordination failed and the pick was random.
    pub fn used_fallback(&self) -> bool {
        self.fallback
    }

    /// Releases the marker and deletes the directory.
    ///
    /// # Errors
    /// [`CheckpointError::Io`] when the directory cannot be removed.
    pub fn remove(mut self) -> Result<()> {
        self.marker = None;
        std::fs::remove_dir_all(&self.path).map_err(|e| CheckpointError::io(&self.path, e))
    }
}

/// Picks local directories for state-backend instances (see the module documentation).
#[derive(Debug)]
pub struct LocalDirAllocator {
    disks: Vec<PathBuf>,
    weights: Option<Vec<u64>>,
    strategy: PlacementStrategy,
    lock_file: PathBuf,
    min_free_bytes: u64,
    list_hash: u64,
    counter: AtomicU64,
    rng: Mutex<SplitMix64>,
}

impl LocalDirAllocator {
    /// Canonicalises and sorts the candidate directories, drops duplicates (by device unless
    /// [`LocalDirConfig::dedupe_devices`] is off) and those not usable now.
    ///
    /// # Errors
    /// [`CheckpointError::NoUsableDirectory`] when none is usable.
    pub fn new(config: &LocalDirConfig) -> Result<LocalDirAllocator> {
        let mut candidates: Vec<(PathBuf, Option<u64>)> = Vec::new();
        for (i, dir) in config.dirs.iter().enumerate() {
            let Ok(canonical) = dir.canonicalize() else {
                tracing::warn!(dir = %dir.display(), "local directory skipped: cannot resolve it");
                continue;
            };
            let weight = config.weights.as_ref().and_then(|w| w.get(i).copied());
            candidates.push((canonical, weight));
        }
        candidates.sort();
        candidates.dedup_by(|a, b| a.0 == b.0);
        let mut devices = BTreeSet::new();
        let mut disks = Vec::new();
        let mut weights = Vec::new();
        for (dir, weight) in candidates {
            if !usable(&dir, config.min_free_bytes) {
                tracing::warn!(dir = %dir.display(), "local directory skipped: unwritable or full");
                continue;
            }
            if config.dedupe_devices {
                let Ok(meta) = std::fs::metadata(&dir) else {
                    continue;
                };
                // Two paths on one disk are one disk: balancing over them would be a lie.
                if !devices.insert(meta.dev()) {
                    tracing::info!(dir = %dir.display(), "local directory skipped: same device as another");
                    continue;
                }
            }
            disks.push(dir);
            weights.push(weight.unwrap_or(1));
        }
        if disks.is_empty() {
            return Err(CheckpointError::NoUsableDirectory(
                config
                    .dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            ));
        }
        let lock_file = config
            .lock_file
            .clone()
            .unwrap_or_else(|| disks[0].join(DEFAULT_LOCK_FILE));
        let list_hash = fnv(disks.iter().map(|d| d.to_string_lossy().into_owned()));
        let seed = config.seed.unwrap_or_else(clock_seed);
        let mut rng = SplitMix64::new(seed);
        let start = rng.next_u64();
        Ok(LocalDirAllocator {
            disks,
            weights: config.weights.as_ref().map(|_| weights),
            strategy: config.strategy,
            lock_file,
            min_free_bytes: config.min_free_bytes,
            list_hash,
            // Flink's random start, so processes without host coordination do not all begin
            // at the first disk.
            counter: AtomicU64::new(start),
            rng: Mutex::new(rng),
        })
    }

    /// The disks, canonical and sorted.
    pub fn disks(&self) -> &[PathBuf] {
        &self.disks
    }

    /// The strategy.
    pub fn strategy(&self) -> PlacementStrategy {
        self.strategy
    }

    /// The host lock file.
    pub fn lock_file(&self) -> &Path {
        &self.lock_file
    }

    fn random(&self) -> u64 {
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        rng.next_u64()
    }

    /// Creates a unique directory for `name` on a disk chosen by the strategy and locks its
    /// marker. Never fails because of coordination (falls back to random).
    ///
    /// # Errors
    /// [`CheckpointError::NoUsableDirectory`] when no disk is usable now,
    /// [`CheckpointError::Io`] when the directory cannot be created on the chosen disk.
    pub fn allocate(&self, name: &InstanceName) -> Result<InstanceDir> {
        let usable_now: Vec<usize> = (0..self.disks.len())
            .filter(|&i| usable(&self.disks[i], self.min_free_bytes))
            .collect();
        if usable_now.is_empty() {
            return Err(CheckpointError::NoUsableDirectory(
                self.disks
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            ));
        }
        let n = usable_now.len() as u64;
        let random_pick = |s: &LocalDirAllocator| usable_now[index(s.random(), n)];
        match self.strategy {
            PlacementStrategy::Random => self.create(random_pick(self), name, false),
            PlacementStrategy::RoundRobin => {
                let c = self.counter.fetch_add(1, Ordering::Relaxed);
                self.create(self.next_usable(c, &usable_now), name, false)
            }
            PlacementStrategy::Weighted => {
                let weights: Vec<u64> = usable_now
                    .iter()
                    .map(|&i| match &self.weights {
                        Some(w) => w.get(i).copied().unwrap_or(1),
                        None => free_bytes(&self.disks[i]).unwrap_or(1),
                    })
                    .collect();
                let total: u64 = weights.iter().sum();
                let pick = if total == 0 {
                    random_pick(self)
                } else {
                    let mut r = self.random() % total;
                    let mut chosen = usable_now[0];
                    for (&i, &w) in usable_now.iter().zip(&weights) {
                        if r < w {
                            chosen = i;
                            break;
                        }
                        r -= w;
                    }
                    chosen
                };
                self.create(pick, name, false)
            }
            PlacementStrategy::HostRoundRobin => {
                match self.with_host_lock(|counter| Ok(self.next_usable(counter, &usable_now))) {
                    Ok(disk) => self.create(disk, name, false),
                    Err(e) => {
                        tracing::warn!(error = %e, "host round-robin failed: random directory");
                        self.create(random_pick(self), name, true)
                    }
                }
            }
            PlacementStrategy::LeastLoaded => {
                // The marker must exist before the lock is released, or a concurrent pick would
                // not see this instance: creation happens inside the critical section.
                let result = self.with_host_lock(|counter| {
                    let live = self.live_instances();
                    let min = usable_now.iter().map(|&i| live[i]).min().unwrap_or(0);
                    let least: Vec<usize> = usable_now
                        .iter()
                        .copied()
                        .filter(|&i| live[i] == min)
                        .collect();
                    let disk = least[index(counter, least.len() as u64)];
                    self.create(disk, name, false)
                });
                match result {
                    Ok(dir) => Ok(dir),
                    Err(e) => {
                        tracing::warn!(error = %e, "least-loaded placement failed: random directory");
                        self.create(random_pick(self), name, true)
                    }
                }
            }
        }
    }

    /// The `counter`-th disk in the configured order, skipping unusable ones, so processes
    /// agree on the mapping even while a disk is full.
    fn next_usable(&self, counter: u64, usable_now: &[usize]) -> usize {
        let n = self.disks.len() as u64;
        for step in 0..n {
            let i = index(counter.wrapping_add(step), n);
            if usable_now.contains(&i) {
                return i;
            }
        }
        usable_now[0]
    }

    /// Runs `f` with the host counter under the exclusive host lock, then stores counter + 1.
    fn with_host_lock<T>(&self, f: impl FnOnce(u64) -> Result<T>) -> Result<T> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.lock_file)
            .map_err(|e| CheckpointError::io(&self.lock_file, e))?;
        // Non-blocking attempts with a deadline: a hung holder must not hang task start.
        let deadline = Instant::now() + LOCK_TIMEOUT;
        loop {
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => break,
                Err(rustix::io::Errno::WOULDBLOCK) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => {
                    return Err(CheckpointError::io(&self.lock_file, e.into()));
                }
            }
        }
        let mut text = String::new();
        file.read_to_string(&mut text)
            .map_err(|e| CheckpointError::io(&self.lock_file, e))?;
        let mut fields = text.split_whitespace();
        // A damaged counter restarts at 0: balance degrades for a moment, nothing fails.
        let counter: u64 = fields.next().and_then(|c| c.parse().ok()).unwrap_or(0);
        if let Some(hash) = fields.next().and_then(|h| u64::from_str_radix(h, 16).ok()) {
            if hash != self.list_hash && !text.trim().is_empty() {
                // Another process maps counters to a different directory list: the modulo
                // would not balance anything.
                return Err(CheckpointError::Io {
                    path: self.lock_file.display().to_string(),
                    source: std::io::Error::other("written for a different directory list"),
                });
            }
        }
        let out = f(counter)?;
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)).map(|_| ()))
            .and_then(|()| writeln!(file, "{} {:016x}", counter.wrapping_add(1), self.list_hash))
            .map_err(|e| CheckpointError::io(&self.lock_file, e))?;
        // Closing the file releases the lock.
        Ok(out)
    }

    fn create(&self, disk: usize, name: &InstanceName, fallback: bool) -> Result<InstanceDir> {
        let dir_name = format!(
            "job_{}_vertex_{}_subtask_{}_op_{}_{:016x}",
            sanitize(&name.job),
            sanitize(&name.vertex),
            name.subtask,
            sanitize(&name.operator),
            self.random()
        );
        let path = self.disks[disk].join(INSTANCES_DIR).join(dir_name);
        std::fs::create_dir_all(&path).map_err(|e| CheckpointError::io(&path, e))?;
        let marker_path = path.join(MARKER_FILE);
        let marker =
            File::create(&marker_path).map_err(|e| CheckpointError::io(&marker_path, e))?;
        flock(&marker, FlockOperation::NonBlockingLockExclusive)
            .map_err(|e| CheckpointError::io(&marker_path, e.into()))?;
        Ok(InstanceDir {
            path,
            disk,
            fallback,
            marker: Some(marker),
        })
    }

    /// Live instances per disk (markers whose lock is held by some process, this one included).
    /// O(instance directories).
    pub fn live_instances(&self) -> Vec<usize> {
        self.disks
            .iter()
            .map(|disk| {
                let Ok(entries) = std::fs::read_dir(disk.join(INSTANCES_DIR)) else {
                    return 0;
                };
                entries
                    .filter_map(|e| e.ok())
                    .filter(|e| {
                        let Ok(marker) = File::open(e.path().join(MARKER_FILE)) else {
                            return false;
                        };
                        // If we get the lock, its holder is gone (the kernel released it);
                        // closing our file releases it again.
                        matches!(
                            flock(&marker, FlockOperation::NonBlockingLockExclusive),
                            Err(rustix::io::Errno::WOULDBLOCK)
                        )
                    })
                    .count()
            })
            .collect()
    }
}

/// Writable, and with at least `min_free` bytes free.
fn usable(dir: &Path, min_free: u64) -> bool {
    if !dir.is_dir() {
        return false;
    }
    if rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_err() {
        return false;
    }
    min_free == 0 || free_bytes(dir).is_some_and(|f| f >= min_free)
}

fn free_bytes(dir: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(dir).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

fn clock_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let low = u64::try_from(nanos & u128::from(u64::MAX)).unwrap_or(0);
    low ^ (u64::from(std::process::id()) << 32)
}

/// `x mod n` as an index (`n` > 0 and below `usize::MAX` here).
fn index(x: u64, n: u64) -> usize {
    usize::try_from(x % n.max(1)).unwrap_or(0)
}

/// FNV-1a over the items, each followed by a zero byte (so `["ab", "c"]` and `["a", "bc"]`
/// differ).
fn fnv(items: impl Iterator<Item = String>) -> u64 {
    let mut h = Fnv1a64::new();
    for item in items {
        h.write_bytes(item.as_bytes());
        h.write_bytes(&[0]);
    }
    h.digest()
}
