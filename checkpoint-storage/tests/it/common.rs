//! A one-subtask harness over the public API: job manager, manager, upload tracker, storage.

use std::collections::{BTreeMap, BTreeSet};

use conflux_checkpoint::sim::content;
use conflux_checkpoint::upload_plan::{execute_plan, restore_files, PlanEntry};
use conflux_checkpoint::{
    CheckpointId, CheckpointStorage, Completion, FileMergingConfig, FileMergingSnapshotManager,
    IncrementalSnapshotTracker, JobCheckpoints, LocalSnapshot, StateHandle, SubtaskKey,
    SubtaskState, UploadPlanConfig,
};
use object_store::path::Path;

pub(crate) fn subtask() -> SubtaskKey {
    SubtaskKey::new("job", "op", 0, 1)
}

pub(crate) fn cp(id: u64) -> CheckpointId {
    CheckpointId(id)
}

/// Size of a local file: a function of its name, so every test knows it.
pub(crate) fn size_of(name: &str) -> u64 {
    64 + name.bytes().map(u64::from).sum::<u64>() % 64
}

pub(crate) fn seed_of(name: &str) -> u64 {
    conflux_common::Fnv1a64::hash_bytes(name.as_bytes())
}

pub(crate) fn bytes_of(name: &str) -> Vec<u8> {
    content(seed_of(name), 0..size_of(name))
}

pub(crate) fn merged(enabled: bool) -> FileMergingConfig {
    FileMergingConfig {
        enabled,
        nonce: Some("n".to_owned()),
        ..FileMergingConfig::default()
    }
}

pub(crate) struct Harness {
    pub(crate) storage: CheckpointStorage,
    pub(crate) jm: JobCheckpoints,
    pub(crate) manager: FileMergingSnapshotManager,
    pub(crate) tracker: IncrementalSnapshotTracker,
    pub(crate) subtask: SubtaskKey,
    /// The plans' decisions per checkpoint, for assertions.
    pub(crate) plans: BTreeMap<u64, Vec<PlanEntry>>,
}

impl Harness {
    pub(crate) fn new(config: FileMergingConfig) -> Harness {
        let storage = CheckpointStorage::memory();
        Harness::on(storage, config, 1)
    }

    pub(crate) fn on(
        storage: CheckpointStorage,
        config: FileMergingConfig,
        retained: usize,
    ) -> Harness {
        Harness {
            manager: FileMergingSnapshotManager::new(
                "job_job_tm_0",
                storage.clone(),
                Path::from("root"),
                config,
            ),
            storage,
            jm: JobCheckpoints::new(retained),
            tracker: IncrementalSnapshotTracker::new(),
            subtask: subtask(),
            plans: BTreeMap::new(),
        }
    }

    /// Triggers `id` and uploads a snapshot of `names` (not acknowledged).
    pub(crate) async fn snapshot(&mut self, id: u64, names: &[&str]) -> SubtaskState {
        self.jm.trigger(cp(id), [self.subtask.clone()]).unwrap();
        self.upload(id, names).await
    }

    /// Uploads a snapshot of `names` for an already triggered checkpoint.
    pub(crate) async fn upload(&mut self, id: u64, names: &[&str]) -> SubtaskState {
        let snapshot = LocalSnapshot {
            files: names
                .iter()
                .map(|n| conflux_checkpoint::upload_plan::LocalFile {
                    name: (*n).to_owned(),
                    size: size_of(n),
                })
                .collect(),
        };
        let manager = &mut self.manager;
        let plan = self
            .tracker
            .plan(cp(id), &snapshot, &UploadPlanConfig::default(), |h| {
                manager.try_reuse(cp(id), h)
            });
        self.plans.insert(id, plan.entries.clone());
        let (state, record) = execute_plan(&plan, &self.subtask, manager, |name, range| {
            Ok(content(seed_of(name), range))
        })
        .await
        .unwrap();
        self.manager
            .finish_snapshot(&self.subtask, cp(id))
            .await
            .unwrap();
        self.tracker.record(cp(id), record);
        state
    }

    pub(crate) fn ack(&mut self, id: u64, state: SubtaskState) {
        self.jm.acknowledge(cp(id), &self.subtask, state).unwrap();
    }

    pub(crate) async fn checkpoint(&mut self, id: u64, names: &[&str]) -> SubtaskState {
        let state = self.snapshot(id, names).await;
        self.ack(id, state.clone());
        state
    }

    pub(crate) async fn complete(&mut self, id: u64) -> Completion {
        let completion = self.jm.complete(cp(id)).unwrap();
        self.storage.discard(&completion.discard).await.unwrap();
        self.manager
            .notify_checkpoint_complete(&self.subtask, cp(id));
        self.tracker.notify_complete(cp(id));
        for a in &completion.aborted {
            self.manager
                .notify_checkpoint_aborted(&self.subtask, *a)
                .await
                .unwrap();
            self.tracker.notify_aborted(*a);
        }
        if let Some(s) = completion.subsumed.iter().max() {
            self.manager
                .notify_checkpoint_subsumed(&self.subtask, *s)
                .await
                .unwrap();
        }
        completion
    }

    /// Aborts at the job manager; with `notify`, the task hears of it too.
    pub(crate) async fn abort(&mut self, id: u64, notify: bool) {
        let private = self.jm.abort(cp(id)).unwrap();
        self.storage.discard(&private).await.unwrap();
        if notify {
            self.manager
                .notify_checkpoint_aborted(&self.subtask, cp(id))
                .await
                .unwrap();
            self.tracker.notify_aborted(cp(id));
        }
    }

    pub(crate) async fn objects(&self) -> BTreeSet<String> {
        self.storage
            .uncounted()
            .list(None)
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.location.to_string())
            .collect()
    }

    /// Every retained checkpoint restores every file with its bytes.
    pub(crate) async fn check_restores(&self) {
        for c in self.jm.retained() {
            for state in c.subtasks.values() {
                let files = restore_files(&self.storage.uncounted(), state)
                    .await
                    .unwrap();
                for (name, bytes) in files {
                    assert_eq!(bytes, bytes_of(&name), "{} {name}", c.id);
                }
            }
        }
    }
}

/// The object a state's file `name` lives in.
pub(crate) fn path_of(state: &SubtaskState, name: &str) -> String {
    state
        .shared
        .iter()
        .chain(state.private.iter())
        .find(|(n, _)| n == name)
        .and_then(|(_, h)| h.path())
        .map(ToString::to_string)
        .unwrap_or_else(|| panic!("{name} not in {state:?}"))
}

pub(crate) fn handle_of(state: &SubtaskState, name: &str) -> StateHandle {
    state
        .shared
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, h)| h.clone())
        .unwrap_or_else(|| panic!("{name} not in {state:?}"))
}

pub(crate) fn set(items: &[&String]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).clone()).collect()
}
