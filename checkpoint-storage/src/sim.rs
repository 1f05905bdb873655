//! The synthetic stateful job behind `conflux checkpoint-sim`: N subtasks, each with
//! a RocksDB-like local database (SST flushes and compaction churn, an append-only MANIFEST that
//! rolls, CURRENT, OPTIONS, an info LOG), checkpointed K times with concurrent checkpoints,
//! aborts and job-manager failovers, once with file merging and once without, on the same
//! seeded sequence of events.
//!
//! Every retained checkpoint is restored and each file's bytes compared with what the database
//! held at that checkpoint, at every failover and at the end. At the end an orphan sweep runs
//! and the report gives objects created, requests, bytes written, live bytes, space
//! amplification (physical bytes in the store / live logical bytes reachable from retained
//! checkpoints) and misc bytes per checkpoint.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Range;
use std::time::Duration;

use object_store::path::Path;

use crate::error::{CheckpointError, Result};
use crate::handle::{CheckpointId, StateHandle, SubtaskKey};
use crate::merging::{amplification, FileMergingConfig, FileMergingSnapshotManager};
use crate::registry::{CompletedCheckpoint, JobCheckpoints, RestoreMode, SubtaskState};
use crate::storage::{CheckpointStorage, RequestCounts, StorageConfig};
use crate::sweep::{sweep_orphans, Protection};
use crate::upload_plan::{
    classify, execute_plan, restore_files, FileClass, IncrementalSnapshotTracker, LocalFile,
    LocalSnapshot, ManifestPolicy, RecordedFile, SnapshotRecord, UploadPlanConfig,
};

/// Bytes of one MANIFEST version edit in the synthetic database.
const EDIT_BYTES: u64 = 48;

/// Options of a simulation. [`SimConfig::default`] is the case: 1,000 small state files
/// per checkpoint x 100 checkpoints.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Subtasks (each with its own database and file-merging manager).
    pub subtasks: u32,
    /// Checkpoints triggered.
    pub checkpoints: u64,
    /// New SST files per checkpoint over all subtasks.
    pub files_per_checkpoint: u32,
    /// Smallest SST file, bytes.
    pub min_file_bytes: u64,
    /// Largest SST file, bytes.
    pub max_file_bytes: u64,
    /// Live SST files per subtask above which compaction churn deletes files (default 10 x
    /// the new files per checkpoint: live state well above the per-checkpoint delta).
    pub live_files_per_subtask: Option<u32>,
    /// At most this many checkpoints pending at once.
    pub max_concurrent: u32,
    /// Chance that a checkpoint is still pending when the next one is triggered.
    pub overlap_rate: f64,
    /// Chance that a checkpoint aborts instead of completing.
    pub abort_rate: f64,
    /// Job-manager failovers, evenly spaced; each strikes in the middle of a checkpoint.
    pub failovers: u32,
    /// Completed checkpoints retained.
    pub retained: usize,
    /// File merging options of the merged run (the unmerged run has `enabled = false`).
    pub merging: FileMergingConfig,
    /// MANIFEST upload policy.
    pub manifest: ManifestPolicy,
    /// MANIFEST roll threshold of the synthetic database, bytes.
    pub manifest_roll_bytes: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// Where objects go (`merged/` and `unmerged/` under it).
    pub storage: StorageConfig,
}

impl Default for SimConfig {
    fn default() -> SimConfig {
        SimConfig {
            subtasks: 4,
            checkpoints: 100,
            files_per_checkpoint: 1000,
            min_file_bytes: 256,
            max_file_bytes: 2048,
            live_files_per_subtask: None,
            max_concurrent: 2,
            overlap_rate: 0.2,
            abort_rate: 0.05,
            failovers: 2,
            retained: 1,
            merging: FileMergingConfig::default(),
            manifest: ManifestPolicy::AppendedRanges,
            manifest_roll_bytes: crate::upload_plan::DEFAULT_MANIFEST_ROLL_BYTES,
            seed: 42,
            storage: StorageConfig::Memory,
        }
    }
}

/// Misc (non-SST) bytes uploaded per completed checkpoint, over all subtasks.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct MiscBytes {
    /// Mean over the first 10% of checkpoints (at least one).
    pub first: f64,
    /// Mean over the last 10%.
    pub last: f64,
    /// Mean over all.
    pub mean: f64,
    /// Largest.
    pub max: u64,
}

/// Median, 95th percentile and maximum of a series.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Distribution {
    /// Median.
    pub median: f64,
    /// 95th percentile (nearest rank).
    pub p95: f64,
    /// Maximum.
    pub max: f64,
}

impl Distribution {
    /// The figures of `values` (all 0 when empty).
    pub fn of(values: &[f64]) -> Distribution {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Distribution::default();
        }
        v.sort_by(f64::total_cmp);
        // Nearest rank: the smallest index whose share of the values reaches q.
        let rank = |q: f64| {
            let n = v.len();
            let i = (1..=n).find(|&i| i as f64 >= q * n as f64).unwrap_or(n);
            v[i - 1]
        };
        Distribution {
            median: rank(0.5),
            p95: rank(0.95),
            max: v[v.len() - 1],
        }
    }
}

/// The figures of one run (merged or unmerged).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ModeReport {
    /// Objects created in the store.
    pub objects_created: u64,
    /// PUT requests.
    pub put_requests: u64,
    /// DELETE requests.
    pub delete_requests: u64,
    /// LIST calls.
    pub list_requests: u64,
    /// GET and HEAD requests (restores, compaction).
    pub get_requests: u64,
    /// Bytes sent by PUTs.
    pub bytes_written: u64,
    /// Objects in the store at the end.
    pub live_objects: u64,
    /// Bytes in the store at the end (physical).
    pub live_bytes: u64,
    /// Bytes of distinct state reachable from retained checkpoints at the end (logical).
    pub logical_bytes: u64,
    /// `live_bytes / logical_bytes` at the end.
    pub space_amplification: f64,
    /// Amplification of the managers' owned files after each completion in the second half of
    /// the run (steady state; 1.0 without merging).
    pub steady_space_amplification: Distribution,
    /// Misc bytes per checkpoint.
    pub misc_bytes_per_checkpoint: MiscBytes,
    /// Files that failed to restore with the right bytes (missing, corrupt, different).
    pub restore_failures: u64,
    /// Files restored and checked.
    pub restored_files_checked: u64,
    /// Checkpoints completed.
    pub checkpoints_completed: u64,
    /// Checkpoints aborted (explicitly, or by a newer completion).
    pub checkpoints_aborted: u64,
    /// Job-manager failovers.
    pub failovers: u64,
    /// Objects deleted by orphan sweeps.
    pub orphans_swept: u64,
    /// Background compaction runs that rewrote something.
    pub compactions: u64,
    /// Bytes copied by compaction.
    pub compaction_bytes: u64,
    /// First restore failure, if any.
    pub first_failure: Option<String>,
}

/// Both runs.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct SimReport {
    /// With file merging.
    pub merged: ModeReport,
    /// Without.
    pub unmerged: ModeReport,
    /// `unmerged.objects_created / merged.objects_created`.
    pub objects_ratio: f64,
}

/// Runs the simulation with and without merging.
///
/// # Errors
/// [`CheckpointError`] when the store fails or the simulation hits a bug; restore mismatches
/// are not errors but counted in [`ModeReport::restore_failures`].
pub async fn run(config: &SimConfig) -> Result<SimReport> {
    let merged = run_mode(config, true).await?;
    let unmerged = run_mode(config, false).await?;
    let objects_ratio = if merged.objects_created == 0 {
        0.0
    } else {
        unmerged.objects_created as f64 / merged.objects_created as f64
    };
    Ok(SimReport {
        merged,
        unmerged,
        objects_ratio,
    })
}

fn open_storage(config: &StorageConfig, mode: &str) -> Result<CheckpointStorage> {
    match config {
        StorageConfig::Memory => Ok(CheckpointStorage::memory()),
        StorageConfig::Local { dir } => CheckpointStorage::local(dir.join(mode)),
        StorageConfig::S3(s3) => {
            let mut s3 = s3.clone();
            s3.prefix = Some(match &s3.prefix {
                Some(p) => format!("{p}/{mode}"),
                None => mode.to_owned(),
            });
            CheckpointStorage::s3(&s3)
        }
    }
}

/// Runs one mode, in `<storage>/merged` or `<storage>/unmerged`.
///
/// # Errors
/// As [`run`]; [`CheckpointError::Config`] when that place already holds objects (the run
/// sweeps what it cannot reach).
pub async fn run_mode(config: &SimConfig, merged: bool) -> Result<ModeReport> {
    let mode = if merged { "merged" } else { "unmerged" };
    let storage = open_storage(&config.storage, mode)?;
    // The run sweeps everything it cannot reach: never let it loose on someone's objects.
    if let Some(existing) = storage.uncounted().list(None).await?.first() {
        return Err(CheckpointError::Config(format!(
            "{} already holds objects (e.g. {}): the simulation needs an empty place",
            storage.description(),
            existing.location
        )));
    }
    let mut merging = config.merging.clone();
    merging.enabled = merged;
    let mut sim = Sim::new(config, storage, merging);
    sim.run().await?;
    sim.finish().await
}

/// SplitMix64, seeded: every random choice of the simulation.
pub type SimRng = conflux_common::SplitMix64;

/// Deterministic content: byte `i` of stream `seed`, generated in 8-byte blocks so any prefix
/// of a stream is the stream's prefix (the MANIFEST grows by appending).
pub fn content(seed: u64, range: Range<u64>) -> Vec<u8> {
    let mut out = Vec::with_capacity(usize::try_from(range.end - range.start).unwrap_or(0));
    let mut i = range.start;
    while i < range.end {
        let block = i / 8;
        let mut r = SimRng::new(seed ^ block.wrapping_mul(0x2545_F491_4F6C_DD1D));
        let bytes = r.next_u64().to_le_bytes();
        let from = usize::try_from(i % 8).unwrap_or(0);
        let take = usize::try_from((8 - i % 8).min(range.end - i)).unwrap_or(0);
        out.extend_from_slice(&bytes[from..from + take]);
        i += take as u64;
    }
    out
}

fn name_seed(subtask: u32, name: &str) -> u64 {
    let mut h = conflux_common::Fnv1a64::with_state(
        conflux_common::Fnv1a64::OFFSET_BASIS ^ u64::from(subtask),
    );
    h.write_bytes(name.as_bytes());
    h.digest()
}

/// A RocksDB-like local database: what a checkpoint snapshots.
#[derive(Clone, Debug)]
struct LocalDb {
    index: u32,
    next_file: u64,
    /// Live SST files: name -> size.
    live: BTreeMap<String, u64>,
    manifest_number: u64,
    manifest_len: u64,
    options_number: u64,
    log_len: u64,
}

/// What a checkpoint captured of a database: enough to check a restore and to reopen.
#[derive(Clone, Debug)]
struct DbImage {
    files: BTreeMap<String, u64>,
    live: BTreeMap<String, u64>,
}

impl LocalDb {
    fn new(index: u32) -> LocalDb {
        let mut db = LocalDb {
            index,
            next_file: 1,
            live: BTreeMap::new(),
            manifest_number: 0,
            manifest_len: 0,
            options_number: 0,
            log_len: 0,
        };
        db.reopen();
        db
    }

    /// A reopen writes a fresh, compact MANIFEST and a new OPTIONS file, as RocksDB does.
    fn reopen(&mut self) {
        self.manifest_number = self.next_file;
        self.options_number = self.next_file + 1;
        self.next_file += 2;
        self.manifest_len = 64 + EDIT_BYTES * self.live.len() as u64;
    }

    fn manifest_name(&self) -> String {
        format!("MANIFEST-{:06}", self.manifest_number)
    }

    /// One checkpoint interval: flushes `new_files` SST files and, past `max_live`, compacts
    /// away as many old ones; the MANIFEST records every change and rolls past `roll`.
    fn advance(
        &mut self,
        rng: &mut SimRng,
        new_files: u32,
        size: Range<u64>,
        max_live: u32,
        roll: u64,
    ) {
        for _ in 0..new_files {
            let name = format!("{:06}.sst", self.next_file);
            self.next_file += 1;
            self.live.insert(name, rng.range(size.clone()));
        }
        let mut edits = u64::from(new_files);
        let max_live = usize::try_from(max_live).unwrap_or(usize::MAX);
        let excess = self.live.len().saturating_sub(max_live);
        if excess > 0 {
            // LSM-like victims (file names are in creation order): two thirds among the newest
            // third of the files (young level-0 / level-1 files are compacted soon), the rest
            // as runs of up to 16 files written together, anywhere (a deeper level's
            // compaction takes a key range, whose files were written by one earlier
            // compaction). Holes so appear in old merged files too.
            let names: Vec<String> = self.live.keys().cloned().collect();
            let n = names.len() as u64;
            let mut victims = BTreeSet::new();
            let young = u64::try_from(excess).unwrap_or(0) * 2 / 3;
            let mut guard = 0;
            while victims.len() < excess && guard < 100 * excess {
                guard += 1;
                if (victims.len() as u64) < young {
                    victims.insert(rng.range(n - n.div_ceil(3)..n));
                } else {
                    let start = rng.range(0..n);
                    let run = rng.range(1..17);
                    for v in start..(start + run).min(n) {
                        if victims.len() < excess {
                            victims.insert(v);
                        }
                    }
                }
            }
            for v in victims {
                if let Some(name) = names.get(usize::try_from(v).unwrap_or(usize::MAX)) {
                    self.live.remove(name);
                    edits += 1;
                }
            }
        }
        self.manifest_len += edits * EDIT_BYTES;
        if self.manifest_len > roll {
            self.manifest_number = self.next_file;
            self.next_file += 1;
            self.manifest_len = 64 + EDIT_BYTES * self.live.len() as u64;
        }
        self.log_len += 2048;
    }

    fn files(&self) -> BTreeMap<String, u64> {
        let mut files = self.live.clone();
        files.insert(self.manifest_name(), self.manifest_len);
        files.insert("CURRENT".to_owned(), self.current().len() as u64);
        files.insert(format!("OPTIONS-{:06}", self.options_number), 1024);
        files.insert("LOG".to_owned(), self.log_len);
        files
    }

    fn current(&self) -> String {
        format!("{}\n", self.manifest_name())
    }

    fn snapshot(&self) -> LocalSnapshot {
        LocalSnapshot {
            files: self
                .files()
                .into_iter()
                .map(|(name, size)| LocalFile { name, size })
                .collect(),
        }
    }

    fn image(&self) -> DbImage {
        DbImage {
            files: self.files(),
            live: self.live.clone(),
        }
    }

    fn read(&self, name: &str, range: Range<u64>) -> Vec<u8> {
        expected_bytes(self.index, name, &self.current(), range)
    }
}

/// The bytes a file of subtask `index` holds in `range` (every file's content is a function of
/// its name; CURRENT's is given).
fn expected_bytes(index: u32, name: &str, current: &str, range: Range<u64>) -> Vec<u8> {
    if name == "CURRENT" {
        let bytes = current.as_bytes();
        let s = usize::try_from(range.start)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        let e = usize::try_from(range.end)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        return bytes[s..e].to_vec();
    }
    content(name_seed(index, name), range)
}

struct Sim<'a> {
    config: &'a SimConfig,
    storage: CheckpointStorage,
    verify: CheckpointStorage,
    merging: FileMergingConfig,
    rng: SimRng,
    subtasks: Vec<SubtaskKey>,
    dbs: Vec<LocalDb>,
    trackers: Vec<IncrementalSnapshotTracker>,
    managers: Vec<FileMergingSnapshotManager>,
    jm: JobCheckpoints,
    images: BTreeMap<CheckpointId, Vec<DbImage>>,
    misc: BTreeMap<CheckpointId, u64>,
    misc_completed: Vec<u64>,
    pending: VecDeque<CheckpointId>,
    next_id: u64,
    generation: u32,
    steady: Vec<f64>,
    report: ModeReport,
}

impl<'a> Sim<'a> {
    fn new(
        config: &'a SimConfig,
        storage: CheckpointStorage,
        merging: FileMergingConfig,
    ) -> Sim<'a> {
        let subtasks: Vec<SubtaskKey> = (0..config.subtasks.max(1))
            .map(|i| SubtaskKey::new("sim", "stateful", i, config.subtasks.max(1)))
            .collect();
        let mut sim = Sim {
            config,
            verify: storage.uncounted(),
            storage,
            merging,
            rng: SimRng::new(config.seed),
            dbs: subtasks.iter().map(|s| LocalDb::new(s.subtask)).collect(),
            trackers: subtasks
                .iter()
                .map(|_| IncrementalSnapshotTracker::new())
                .collect(),
            managers: Vec::new(),
            subtasks,
            jm: JobCheckpoints::new(config.retained),
            images: BTreeMap::new(),
            misc: BTreeMap::new(),
            misc_completed: Vec::new(),
            pending: VecDeque::new(),
            next_id: 1,
            generation: 0,
            steady: Vec::new(),
            report: ModeReport::default(),
        };
        sim.managers = sim.new_managers();
        sim
    }

    fn new_managers(&self) -> Vec<FileMergingSnapshotManager> {
        self.subtasks
            .iter()
            .map(|s| {
                let mut config = self.merging.clone();
                // Reproducible names: generation distinguishes managers across failovers.
                config.nonce = Some(format!("g{}t{}", self.generation, s.subtask));
                FileMergingSnapshotManager::new(
                    &format!("job_sim_tm_{}", s.subtask),
                    self.storage.clone(),
                    Path::from("job-sim"),
                    config,
                )
            })
            .collect()
    }

    fn new_files(&self, i: usize) -> u32 {
        let n = self.config.subtasks.max(1);
        let per = self.config.files_per_checkpoint / n;
        let extra =
            u32::from(u32::try_from(i).unwrap_or(u32::MAX) < self.config.files_per_checkpoint % n);
        per + extra
    }

    async fn run(&mut self) -> Result<()> {
        let k = self.config.checkpoints;
        let failover_at: BTreeSet<u64> = (1..=u64::from(self.config.failovers))
            .map(|f| f * k / (u64::from(self.config.failovers) + 1))
            .filter(|s| *s > 0)
            .collect();
        for step in 1..=k {
            if failover_at.contains(&step) {
                self.failover().await?;
                continue;
            }
            let cp = self.trigger_and_upload(None).await?;
            self.pending.push_back(cp);
            let overlap =
                self.config.max_concurrent > 1 && self.rng.unit() < self.config.overlap_rate;
            let keep = if overlap {
                usize::try_from(self.config.max_concurrent - 1).unwrap_or(1)
            } else {
                0
            };
            while self.pending.len() > keep {
                let Some(c) = self.pending.pop_front() else {
                    break;
                };
                if self.rng.unit() < self.config.abort_rate {
                    self.abort(c).await?;
                } else {
                    self.complete(c, step * 2 > k, step < k).await?;
                }
            }
        }
        // The last completions: no compaction after them, whose copies no checkpoint would
        // ever reference.
        while let Some(c) = self.pending.pop_front() {
            self.complete(c, true, false).await?;
        }
        Ok(())
    }

    /// Triggers a checkpoint: every database advances, then each subtask (or the first
    /// `only` of them) plans, uploads and acknowledges.
    async fn trigger_and_upload(&mut self, only: Option<usize>) -> Result<CheckpointId> {
        let cp = CheckpointId(self.next_id);
        self.next_id += 1;
        let live = |n: u32| 10 * n.max(1);
        for i in 0..self.dbs.len() {
            let n = self.new_files(i);
            let max_live = self.config.live_files_per_subtask.unwrap_or(live(n));
            let size = self.config.min_file_bytes
                ..self.config.max_file_bytes.max(self.config.min_file_bytes) + 1;
            self.dbs[i].advance(
                &mut self.rng,
                n,
                size,
                max_live,
                self.config.manifest_roll_bytes,
            );
        }
        self.jm.trigger(cp, self.subtasks.iter().cloned())?;
        let plan_config = UploadPlanConfig {
            manifest: self.config.manifest,
            ..UploadPlanConfig::default()
        };
        let mut misc = 0;
        let mut images = Vec::new();
        for i in 0..self.subtasks.len() {
            images.push(self.dbs[i].image());
            if only.is_some_and(|n| i >= n) {
                continue;
            }
            let snapshot = self.dbs[i].snapshot();
            let manager = &mut self.managers[i];
            let plan =
                self.trackers[i].plan(cp, &snapshot, &plan_config, |h| manager.try_reuse(cp, h));
            misc += plan.upload_bytes().1;
            let db = &self.dbs[i];
            let (state, record) = execute_plan(&plan, &self.subtasks[i], manager, |name, range| {
                Ok(db.read(name, range))
            })
            .await?;
            manager.finish_snapshot(&self.subtasks[i], cp).await?;
            self.trackers[i].record(cp, record);
            if only.is_none() {
                self.jm.acknowledge(cp, &self.subtasks[i], state)?;
            }
        }
        self.images.insert(cp, images);
        self.misc.insert(cp, misc);
        Ok(cp)
    }

    async fn complete(&mut self, cp: CheckpointId, steady: bool, compact: bool) -> Result<()> {
        let completion = self.jm.complete(cp)?;
        self.storage.discard(&completion.discard).await?;
        self.report.checkpoints_completed += 1;
        if let Some(m) = self.misc.remove(&cp) {
            self.misc_completed.push(m);
        }
        for c in &completion.aborted {
            self.pending.retain(|p| p != c);
            self.notify_aborted(*c).await?;
        }
        let subsumed = completion.subsumed.iter().max().copied();
        for i in 0..self.subtasks.len() {
            self.managers[i].notify_checkpoint_complete(&self.subtasks[i], cp);
            self.trackers[i].notify_complete(cp);
            if let Some(s) = subsumed {
                self.managers[i]
                    .notify_checkpoint_subsumed(&self.subtasks[i], s)
                    .await?;
            }
        }
        let retained: BTreeSet<CheckpointId> = self.jm.retained().map(|c| c.id).collect();
        let oldest_live = self.pending.front().copied();
        self.images
            .retain(|id, _| retained.contains(id) || oldest_live.is_some_and(|p| *id >= p));
        if self.merging.enabled {
            if steady {
                let (p, l) = self.managers.iter().fold((0, 0), |(p, l), m| {
                    let s = m.space_stats();
                    (p + s.physical_bytes, l + s.logical_bytes)
                });
                let a = amplification(p, l);
                self.steady.push(a);
            }
            // Background compaction: its copies are used from the next checkpoint on.
            if compact {
                self.control_space().await?;
            }
        }
        Ok(())
    }

    /// One background space-control run of every manager.
    async fn control_space(&mut self) -> Result<()> {
        for m in &mut self.managers {
            let r = m.control_space().await?;
            if r.bytes_copied > 0 {
                self.report.compactions += 1;
                self.report.compaction_bytes += r.bytes_copied;
            }
        }
        Ok(())
    }

    async fn notify_aborted(&mut self, cp: CheckpointId) -> Result<()> {
        self.report.checkpoints_aborted += 1;
        self.misc.remove(&cp);
        for i in 0..self.subtasks.len() {
            self.managers[i]
                .notify_checkpoint_aborted(&self.subtasks[i], cp)
                .await?;
            self.trackers[i].notify_aborted(cp);
        }
        Ok(())
    }

    async fn abort(&mut self, cp: CheckpointId) -> Result<()> {
        let private = self.jm.abort(cp)?;
        self.storage.discard(&private).await?;
        self.notify_aborted(cp).await
    }

    /// A job-manager failover in the middle of a checkpoint: half the subtasks have uploaded
    /// but not acknowledged; pending checkpoints are lost; the registry is rebuilt from the
    /// retained checkpoints; every task restores from the latest one; the orphans are swept.
    async fn failover(&mut self) -> Result<()> {
        let half = self.subtasks.len().div_ceil(2);
        let doomed = self.trigger_and_upload(Some(half)).await?;
        self.misc.remove(&doomed);
        self.report.failovers += 1;
        self.report.checkpoints_aborted += self.pending.len() as u64 + 1;
        for c in self.pending.drain(..) {
            self.misc.remove(&c);
        }
        let retained: Vec<CompletedCheckpoint> = self.jm.retained().cloned().collect();
        self.jm = JobCheckpoints::recover(retained, self.config.retained);
        self.generation += 1;
        self.managers = self.new_managers();
        let latest = self.jm.latest().cloned();
        for i in 0..self.subtasks.len() {
            let key = self.subtasks[i].clone();
            match &latest {
                Some(c) => {
                    let state = c.subtasks.get(&key).cloned().unwrap_or_default();
                    let handles: Vec<StateHandle> = state
                        .shared
                        .iter()
                        .chain(state.private.iter())
                        .map(|(_, h)| h.clone())
                        .collect();
                    self.managers[i]
                        .restore(&key, c.id, &handles, RestoreMode::Claim)
                        .await?;
                    self.trackers[i] =
                        IncrementalSnapshotTracker::restored(c.id, record_of(&state));
                    let image = self.images.get(&c.id).and_then(|v| v.get(i)).cloned();
                    let Some(image) = image else {
                        return Err(CheckpointError::Internal(format!(
                            "no database image of {} subtask {i}",
                            c.id
                        )));
                    };
                    self.dbs[i].live = image.live;
                }
                None => {
                    self.trackers[i] = IncrementalSnapshotTracker::new();
                    self.dbs[i].live.clear();
                }
            }
            self.dbs[i].reopen();
        }
        if self.merging.enabled {
            // The restored files carry the waste the old managers were draining: control it
            // before the next checkpoint plans its reuse.
            self.control_space().await?;
        }
        self.verify_restores().await?;
        self.sweep().await
    }

    async fn sweep(&mut self) -> Result<()> {
        let protection = Protection {
            paths: self
                .jm
                .reachable_paths()
                .into_iter()
                .chain(
                    self.managers
                        .iter()
                        .flat_map(FileMergingSnapshotManager::protected_paths),
                )
                .collect(),
            in_flight_watermark: self.pending.front().copied(),
        };
        let report = sweep_orphans(&self.storage, None, Duration::ZERO, move || protection).await?;
        self.report.orphans_swept += report.deleted.len() as u64;
        Ok(())
    }

    /// Restores every retained checkpoint and compares each file with the database image.
    async fn verify_restores(&mut self) -> Result<()> {
        let retained: Vec<CompletedCheckpoint> = self.jm.retained().cloned().collect();
        for c in retained {
            let images = self.images.get(&c.id).cloned().unwrap_or_default();
            let subtasks = self.subtasks.clone();
            for (i, key) in subtasks.iter().enumerate() {
                let state = c.subtasks.get(key).cloned().unwrap_or_default();
                let Some(image) = images.get(i) else {
                    self.fail(format!("{} subtask {i}: no image to compare", c.id));
                    continue;
                };
                let restored = match restore_files(&self.verify, &state).await {
                    Ok(r) => r,
                    Err(e) => {
                        self.fail(format!("{} subtask {i}: {e}", c.id));
                        continue;
                    }
                };
                let current = image
                    .files
                    .keys()
                    .find(|n| classify(n) == FileClass::Manifest)
                    .map(|m| format!("{m}\n"))
                    .unwrap_or_default();
                for (name, size) in &image.files {
                    if classify(name) == FileClass::Log {
                        continue;
                    }
                    self.report.restored_files_checked += 1;
                    match restored.get(name) {
                        None => self.fail(format!("{} subtask {i}: {name} not restored", c.id)),
                        Some(bytes) => {
                            if *bytes != expected_bytes(key.subtask, name, &current, 0..*size) {
                                self.fail(format!("{} subtask {i}: {name} has other bytes", c.id));
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn fail(&mut self, what: String) {
        self.report.restore_failures += 1;
        if self.report.first_failure.is_none() {
            self.report.first_failure = Some(what);
        }
    }

    async fn finish(mut self) -> Result<ModeReport> {
        for m in &mut self.managers {
            m.close_idle_files().await?;
        }
        self.verify_restores().await?;
        self.sweep().await?;
        let counts: RequestCounts = self.storage.counts();
        let listed = self.verify.list(None).await?;
        let mut logical = BTreeMap::new();
        for c in self.jm.retained() {
            for h in c.handles() {
                logical.insert(h.key(), h.size());
            }
        }
        let steady = if self.merging.enabled {
            Distribution::of(&self.steady)
        } else {
            Distribution {
                median: 1.0,
                p95: 1.0,
                max: 1.0,
            }
        };
        let r = &mut self.report;
        r.steady_space_amplification = steady;
        r.objects_created = counts.objects_created;
        r.put_requests = counts.put;
        r.delete_requests = counts.delete;
        r.list_requests = counts.list;
        r.get_requests = counts.get;
        r.bytes_written = counts.bytes_written;
        r.live_objects = listed.len() as u64;
        r.live_bytes = listed.iter().map(|m| m.size).sum();
        r.logical_bytes = logical.values().sum();
        r.space_amplification = amplification(r.live_bytes, r.logical_bytes);
        let misc = &self.misc_completed;
        if !misc.is_empty() {
            let tenth = misc.len().div_ceil(10);
            let mean = |s: &[u64]| s.iter().sum::<u64>() as f64 / s.len().max(1) as f64;
            r.misc_bytes_per_checkpoint = MiscBytes {
                first: mean(&misc[..tenth]),
                last: mean(&misc[misc.len() - tenth..]),
                mean: mean(misc),
                max: misc.iter().copied().max().unwrap_or(0),
            };
        }
        Ok(self.report)
    }
}

/// The upload-tracker record of a restored subtask state: its SST files (the MANIFEST is
/// rewritten on reopen, so no chain carries over).
fn record_of(state: &SubtaskState) -> SnapshotRecord {
    SnapshotRecord {
        sst: state
            .shared
            .iter()
            .filter(|(name, _)| classify(name) == FileClass::Sst)
            .map(|(name, h)| {
                (
                    name.clone(),
                    RecordedFile {
                        handle: h.clone(),
                        uploaded: false,
                    },
                )
            })
            .collect(),
        manifest: None,
    }
}
