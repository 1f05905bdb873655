//! The simulation engine: subtasks with databases, trackers and file-merging managers, driven
//! through checkpoints, aborts and job-manager failovers.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use object_store::path::Path;

use super::config::SimConfig;
use super::db::{expected_bytes, DbImage, LocalDb, SimRng};
use super::report::{Distribution, MiscBytes, ModeReport};
use crate::error::{CheckpointError, Result};
use crate::handle::{CheckpointId, StateHandle, SubtaskKey};
use crate::merging::{amplification, FileMergingConfig, FileMergingSnapshotManager};
use crate::registry::{CompletedCheckpoint, JobCheckpoints, RestoreMode, SubtaskState};
use crate::storage::{CheckpointStorage, RequestCounts};
use crate::sweep::{sweep_orphans, Protection};
use crate::upload_plan::{
    classify, execute_plan, restore_files, FileClass, IncrementalSnapshotTracker, RecordedFile,
    SnapshotRecord, UploadPlanConfig,
};

pub(super) struct Sim<'a> {
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
    pub(super) fn new(
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

    /// Runs every step, calling `progress(done, total)` after each.
    pub(super) async fn run(&mut self, progress: &(dyn Fn(u64, u64) + Sync)) -> Result<()> {
        let k = self.config.checkpoints;
        let failover_at: BTreeSet<u64> = (1..=u64::from(self.config.failovers))
            .map(|f| f * k / (u64::from(self.config.failovers) + 1))
            .filter(|s| *s > 0)
            .collect();
        for step in 1..=k {
            if failover_at.contains(&step) {
                self.failover().await?;
                progress(step, k);
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
            progress(step, k);
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
                    // The reopened database writes a new MANIFEST: the restored chain (every
                    // shared file but the SST files of the record) is never reused.
                    let retired: Vec<StateHandle> = state
                        .shared
                        .iter()
                        .filter(|(name, _)| classify(name) != FileClass::Sst)
                        .map(|(_, h)| h.clone())
                        .collect();
                    self.managers[i].retire(&retired);
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

    pub(super) async fn finish(mut self) -> Result<ModeReport> {
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
