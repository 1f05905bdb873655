//! Seeded simulation of thousands of random event sequences against a reference model: the
//! objects reachable from retained and pending checkpoints, computed here from scratch.
//!
//! Checked after every event: no reachable object is missing. Checked often: every retained
//! checkpoint restores with the right bytes. Checked at the end of each sequence, after a
//! sweep: no unreachable object is left.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use conflux_checkpoint::sim::{content, SimRng};
use conflux_checkpoint::upload_plan::{
    execute_plan, restore_files, LocalFile, RecordedFile, SnapshotRecord,
};
use conflux_checkpoint::{
    sweep_orphans, CheckpointId, CheckpointStorage, FileMergingConfig, FileMergingSnapshotManager,
    IncrementalSnapshotTracker, JobCheckpoints, LocalSnapshot, Protection, RestoreMode,
    SpaceControl, StateHandle, SubtaskKey, SubtaskState, UploadPlanConfig,
};
use object_store::path::Path;

use crate::common::{seed_of, size_of};

const SUBTASKS: u32 = 2;

/// One subtask's local database in the model: SST names, a growing MANIFEST, CURRENT.
#[derive(Clone, Debug)]
struct Db {
    next: u64,
    sst: BTreeSet<String>,
    manifest: String,
    manifest_len: u64,
}

impl Db {
    fn new(tag: u32) -> Db {
        Db {
            next: u64::from(tag) * 1_000_000,
            sst: BTreeSet::new(),
            manifest: format!("MANIFEST-{tag}-0"),
            manifest_len: 64,
        }
    }

    fn advance(&mut self, rng: &mut SimRng) {
        for _ in 0..rng.range(1..4) {
            self.next += 1;
            self.sst.insert(format!("{:08}.sst", self.next));
        }
        for _ in 0..rng.range(0..3) {
            let n = self.sst.len() as u64;
            if n > 2 {
                let pick = usize::try_from(rng.range(0..n)).unwrap();
                let name = self.sst.iter().nth(pick).cloned().unwrap();
                self.sst.remove(&name);
            }
        }
        self.manifest_len += 48;
    }

    fn reopen(&mut self) {
        self.next += 1;
        self.manifest = format!("MANIFEST-x-{}", self.next);
        self.manifest_len = 64;
    }

    fn files(&self) -> BTreeMap<String, u64> {
        let mut f: BTreeMap<String, u64> =
            self.sst.iter().map(|n| (n.clone(), size_of(n))).collect();
        f.insert(self.manifest.clone(), self.manifest_len);
        f.insert("CURRENT".to_owned(), size_of("CURRENT"));
        f.insert("LOG".to_owned(), 10);
        f
    }
}

/// A checkpoint as the model sees it.
#[derive(Clone, Debug, Default)]
struct ModelCheckpoint {
    acked: BTreeMap<u32, SubtaskState>,
    files: BTreeMap<u32, BTreeMap<String, u64>>,
}

struct Run {
    rng: SimRng,
    storage: CheckpointStorage,
    config: FileMergingConfig,
    retained_n: usize,
    jm: JobCheckpoints,
    managers: Vec<FileMergingSnapshotManager>,
    trackers: Vec<IncrementalSnapshotTracker>,
    dbs: Vec<Db>,
    keys: Vec<SubtaskKey>,
    /// Model: completed checkpoints, newest last; pending ones.
    retained: VecDeque<(u64, ModelCheckpoint)>,
    pending: BTreeMap<u64, ModelCheckpoint>,
    next_id: u64,
    generation: u32,
    seed: u64,
    quiesce: bool,
}

impl Run {
    fn new(seed: u64) -> Run {
        let mut rng = SimRng::new(seed);
        let config = FileMergingConfig {
            enabled: rng.unit() < 0.75,
            max_file_size: [200, 1000, 1 << 20][usize::try_from(rng.range(0..3)).unwrap()],
            across_checkpoint_boundary: rng.unit() < 0.4,
            max_space_amplification: 1.2,
            space_control: if rng.unit() < 0.5 {
                SpaceControl::Compaction
            } else {
                SpaceControl::ExcludeFromReuse
            },
            nonce: None,
        };
        let retained_n = usize::try_from(rng.range(1..3)).unwrap();
        let storage = CheckpointStorage::memory();
        let keys: Vec<SubtaskKey> = (0..SUBTASKS)
            .map(|i| SubtaskKey::new("j", "o", i, SUBTASKS))
            .collect();
        let mut run = Run {
            rng,
            storage,
            config,
            retained_n,
            jm: JobCheckpoints::new(retained_n),
            managers: Vec::new(),
            trackers: keys
                .iter()
                .map(|_| IncrementalSnapshotTracker::new())
                .collect(),
            dbs: (0..SUBTASKS).map(Db::new).collect(),
            keys,
            retained: VecDeque::new(),
            pending: BTreeMap::new(),
            next_id: 1,
            generation: 0,
            seed,
            quiesce: false,
        };
        run.managers = run.new_managers();
        run
    }

    fn new_managers(&self) -> Vec<FileMergingSnapshotManager> {
        (0..SUBTASKS)
            .map(|i| {
                let mut config = self.config.clone();
                config.nonce = Some(format!("g{}s{i}", self.generation));
                FileMergingSnapshotManager::new(
                    &format!("tm{i}"),
                    self.storage.clone(),
                    Path::from("job"),
                    config,
                )
            })
            .collect()
    }

    fn ctx(&self) -> String {
        format!(
            "seed {} config {:?} retained {}",
            self.seed, self.config, self.retained_n
        )
    }

    /// Model: objects reachable from retained checkpoints and acknowledged pending uploads.
    fn reachable(&self) -> BTreeSet<String> {
        self.retained
            .iter()
            .map(|(_, c)| c)
            .chain(self.pending.values())
            .flat_map(|c| c.acked.values())
            .flat_map(|s| s.shared.iter().chain(s.private.iter()))
            .filter_map(|(_, h)| h.path().map(ToString::to_string))
            .collect()
    }

    async fn objects(&self) -> BTreeSet<String> {
        self.storage
            .uncounted()
            .list(None)
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.location.to_string())
            .collect()
    }

    async fn check_reachable(&self, event: &str) {
        let objects = self.objects().await;
        let missing: Vec<_> = self.reachable().difference(&objects).cloned().collect();
        assert!(
            missing.is_empty(),
            "after {event}: reachable objects deleted {missing:?}; {}",
            self.ctx()
        );
    }

    async fn check_restores(&self) {
        for (id, c) in &self.retained {
            for (i, state) in &c.acked {
                let files = restore_files(&self.storage.uncounted(), state)
                    .await
                    .unwrap_or_else(|e| panic!("restore of {id} subtask {i}: {e}; {}", self.ctx()));
                let expected = &c.files[i];
                for (name, size) in expected {
                    if name == "LOG" {
                        assert!(!files.contains_key(name), "LOG uploaded");
                        continue;
                    }
                    let bytes = files
                        .get(name)
                        .unwrap_or_else(|| panic!("{id}: {name} not restored; {}", self.ctx()));
                    assert_eq!(
                        bytes,
                        &content(seed_of(name), 0..*size),
                        "{id} {name}; {}",
                        self.ctx()
                    );
                }
            }
        }
    }

    async fn trigger(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        let cp = CheckpointId(id);
        self.jm.trigger(cp, self.keys.iter().cloned()).unwrap();
        let mut model = ModelCheckpoint::default();
        // Sometimes a subtask never acknowledges: the checkpoint can only abort.
        let silent = (!self.quiesce && self.rng.unit() < 0.15)
            .then(|| u32::try_from(self.rng.range(0..2)).unwrap());
        for i in 0..SUBTASKS {
            let ix = usize::try_from(i).unwrap();
            self.dbs[ix].advance(&mut self.rng);
            let files = self.dbs[ix].files();
            let snapshot = LocalSnapshot {
                files: files
                    .iter()
                    .map(|(n, s)| LocalFile {
                        name: n.clone(),
                        size: *s,
                    })
                    .collect(),
            };
            let manager = &mut self.managers[ix];
            let plan = self.trackers[ix].plan(cp, &snapshot, &UploadPlanConfig::default(), |h| {
                manager.try_reuse(cp, h)
            });
            let (state, record) = execute_plan(&plan, &self.keys[ix], manager, |name, range| {
                Ok(content(seed_of(name), range))
            })
            .await
            .unwrap();
            manager.finish_snapshot(&self.keys[ix], cp).await.unwrap();
            self.trackers[ix].record(cp, record);
            model.files.insert(i, files);
            if silent != Some(i) {
                self.jm
                    .acknowledge(cp, &self.keys[ix], state.clone())
                    .unwrap();
                model.acked.insert(i, state);
            }
        }
        self.pending.insert(id, model);
    }

    async fn complete(&mut self, id: u64) {
        let completion = self.jm.complete(CheckpointId(id)).unwrap();
        self.storage.discard(&completion.discard).await.unwrap();
        // Model: older pending ones are aborted; the newest N completed are retained.
        let model = self.pending.remove(&id).unwrap();
        let older: Vec<u64> = self.pending.range(..id).map(|(k, _)| *k).collect();
        for o in &older {
            self.pending.remove(o);
        }
        assert_eq!(
            completion.aborted,
            older.iter().map(|o| CheckpointId(*o)).collect::<Vec<_>>()
        );
        self.retained.push_back((id, model));
        while self.retained.len() > self.retained_n {
            self.retained.pop_front();
        }
        // A task misses this round of notifications.
        let lost = !self.quiesce && self.rng.unit() < 0.1;
        for ix in 0..self.keys.len() {
            if lost && ix == 0 {
                continue;
            }
            self.managers[ix].notify_checkpoint_complete(&self.keys[ix], CheckpointId(id));
            self.trackers[ix].notify_complete(CheckpointId(id));
            for a in &completion.aborted {
                self.managers[ix]
                    .notify_checkpoint_aborted(&self.keys[ix], *a)
                    .await
                    .unwrap();
                self.trackers[ix].notify_aborted(*a);
            }
            if let Some(s) = completion.subsumed.iter().max() {
                self.managers[ix]
                    .notify_checkpoint_subsumed(&self.keys[ix], *s)
                    .await
                    .unwrap();
            }
        }
    }

    async fn abort(&mut self, id: u64) {
        let private = self.jm.abort(CheckpointId(id)).unwrap();
        self.storage.discard(&private).await.unwrap();
        self.pending.remove(&id);
        let notify = self.rng.unit() < 0.8;
        for ix in 0..self.keys.len() {
            if notify {
                self.managers[ix]
                    .notify_checkpoint_aborted(&self.keys[ix], CheckpointId(id))
                    .await
                    .unwrap();
                self.trackers[ix].notify_aborted(CheckpointId(id));
            }
        }
    }

    async fn failover(&mut self) {
        let retained: Vec<_> = self.jm.retained().cloned().collect();
        self.jm = JobCheckpoints::recover(retained, self.retained_n);
        self.pending.clear();
        self.generation += 1;
        self.managers = self.new_managers();
        let latest = self.retained.back().cloned();
        for ix in 0..self.keys.len() {
            let i = u32::try_from(ix).unwrap();
            match &latest {
                Some((id, c)) => {
                    let state = c.acked[&i].clone();
                    let handles: Vec<StateHandle> = state
                        .shared
                        .iter()
                        .chain(state.private.iter())
                        .map(|(_, h)| h.clone())
                        .collect();
                    self.managers[ix]
                        .restore(
                            &self.keys[ix],
                            CheckpointId(*id),
                            &handles,
                            RestoreMode::Claim,
                        )
                        .await
                        .unwrap();
                    let sst = state
                        .shared
                        .iter()
                        .filter(|(n, _)| n.ends_with(".sst"))
                        .map(|(n, h)| {
                            (
                                n.clone(),
                                RecordedFile {
                                    handle: h.clone(),
                                    uploaded: false,
                                },
                            )
                        })
                        .collect();
                    self.trackers[ix] = IncrementalSnapshotTracker::restored(
                        CheckpointId(*id),
                        SnapshotRecord {
                            sst,
                            manifest: None,
                        },
                    );
                    self.dbs[ix].sst = c.files[&i]
                        .keys()
                        .filter(|n| n.ends_with(".sst"))
                        .cloned()
                        .collect();
                }
                None => {
                    self.trackers[ix] = IncrementalSnapshotTracker::new();
                    self.dbs[ix].sst.clear();
                }
            }
            self.dbs[ix].reopen();
        }
        self.sweep(false).await;
    }

    async fn sweep(&mut self, strict: bool) {
        let mut paths: std::collections::HashSet<String> = self.reachable().into_iter().collect();
        if !strict {
            paths.extend(
                self.managers
                    .iter()
                    .flat_map(FileMergingSnapshotManager::protected_paths),
            );
        }
        let protection = Protection {
            paths,
            in_flight_watermark: None,
        };
        sweep_orphans(&self.storage, None, Duration::ZERO, || protection)
            .await
            .unwrap();
    }

    async fn run(&mut self, events: u32) {
        for e in 0..events {
            let roll = self.rng.unit();
            let event;
            if roll < 0.40 || self.pending.is_empty() {
                if self.pending.len() < 3 {
                    self.trigger().await;
                    event = "trigger";
                } else {
                    let id = *self.pending.keys().next().unwrap();
                    self.abort(id).await;
                    event = "abort oldest";
                }
            } else if roll < 0.75 {
                let ids: Vec<u64> = self
                    .pending
                    .iter()
                    .filter(|(_, c)| c.acked.len() == SUBTASKS as usize)
                    .map(|(k, _)| *k)
                    .collect();
                if ids.is_empty() {
                    let id = *self.pending.keys().next().unwrap();
                    self.abort(id).await;
                    event = "abort";
                } else {
                    let id = ids[usize::try_from(self.rng.range(0..ids.len() as u64)).unwrap()];
                    self.complete(id).await;
                    event = "complete";
                }
            } else if roll < 0.87 {
                let ids: Vec<u64> = self.pending.keys().copied().collect();
                let id = ids[usize::try_from(self.rng.range(0..ids.len() as u64)).unwrap()];
                self.abort(id).await;
                event = "abort";
            } else if roll < 0.95 {
                for m in &mut self.managers {
                    m.control_space().await.unwrap();
                }
                event = "space control";
            } else {
                self.failover().await;
                event = "failover";
            }
            self.check_reachable(&format!("event {e} ({event})")).await;
            if e % 4 == 3 {
                self.check_restores().await;
            }
        }
        // Quiesce: settle what is pending, run two more checkpoints (compaction copies are then
        // used or dropped), close idle files, sweep without the managers' protection.
        for id in self.pending.keys().copied().collect::<Vec<_>>() {
            if self.pending.contains_key(&id) {
                self.abort(id).await;
            }
        }
        self.quiesce = true;
        for _ in 0..3 {
            self.trigger().await;
            let id = self.next_id - 1;
            if self.pending[&id].acked.len() == SUBTASKS as usize {
                self.complete(id).await;
            } else {
                self.abort(id).await;
            }
        }
        // Deliver every notification a task may have missed: aborts of every checkpoint not
        // retained, and the subsumption of everything before the oldest retained one.
        let retained: BTreeSet<u64> = self.retained.iter().map(|(id, _)| *id).collect();
        for ix in 0..self.keys.len() {
            for id in (1..self.next_id).filter(|id| !retained.contains(id)) {
                self.managers[ix]
                    .notify_checkpoint_aborted(&self.keys[ix], CheckpointId(id))
                    .await
                    .unwrap();
            }
            if let Some(oldest) = retained.first().filter(|o| **o > 1) {
                self.managers[ix]
                    .notify_checkpoint_subsumed(&self.keys[ix], CheckpointId(oldest - 1))
                    .await
                    .unwrap();
            }
        }
        for m in &mut self.managers {
            m.close_idle_files().await.unwrap();
        }
        self.check_reachable("quiesce").await;
        let protected: BTreeSet<String> = self
            .managers
            .iter()
            .flat_map(FileMergingSnapshotManager::protected_paths)
            .collect();
        self.sweep(true).await;
        let objects = self.objects().await;
        let reachable = self.reachable();
        assert_eq!(
            objects,
            reachable,
            "unreachable objects left after the sweep; {}",
            self.ctx()
        );
        // Nothing the managers still track was unreachable (it would have leaked without the
        // strict sweep).
        let leaked: Vec<_> = protected
            .iter()
            .filter(|p| !reachable.contains(*p))
            .filter(|p| p.contains("/shared/") || p.contains("/taskowned/"))
            .collect();
        if !leaked.is_empty() {
            let stats: Vec<_> = self
                .managers
                .iter()
                .flat_map(|m| m.file_stats())
                .filter(|f| leaked.contains(&&f.path.to_string()))
                .collect();
            panic!(
                "managers keep unreachable files {stats:#?}; retained {:?}; {}",
                self.retained.iter().map(|r| r.0).collect::<Vec<_>>(),
                self.ctx()
            );
        }
        self.check_restores().await;
    }
}

#[tokio::test]
async fn thousands_of_random_sequences_against_the_reference_model() {
    let sequences: u64 = std::env::var("CONFLUX_MODEL_SEQUENCES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    for seed in 0..sequences {
        let mut run = Run::new(seed);
        run.run(30).await;
    }
}
