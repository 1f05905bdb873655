//! The replay engine: the job manager, the tasks' trackers and drafts, and the objects alive.

use std::collections::{BTreeMap, BTreeSet};

use object_store::path::Path;

use super::events::{Event, Script, ScriptRestoreMode, StoredCheckpoint};
use super::output::{Deletion, PlanSummary, ScriptError};
use crate::error::CheckpointError;
use crate::handle::{CheckpointId, FileHandle, Scope, SharedStateKey, StateHandle, SubtaskKey};
use crate::registry::{CompletedCheckpoint, JobCheckpoints, SubtaskState};
use crate::upload_plan::{
    IncrementalSnapshotTracker, LocalFile, LocalSnapshot, PlanEntry, RecordedFile, SnapshotRecord,
    UploadPlanConfig,
};

/// An error before it is tied to its event.
pub(super) enum Failure {
    Refused(CheckpointError),
    Invalid(String),
}

impl Failure {
    pub(super) fn at(self, event: usize, op: &'static str) -> ScriptError {
        match self {
            Failure::Refused(source) => ScriptError::Refused {
                event,
                op,
                source: Box::new(source),
            },
            Failure::Invalid(reason) => ScriptError::Invalid { event, op, reason },
        }
    }
}

impl From<CheckpointError> for Failure {
    fn from(e: CheckpointError) -> Failure {
        Failure::Refused(e)
    }
}

fn invalid<T>(reason: impl Into<String>) -> Result<T, Failure> {
    Err(Failure::Invalid(reason.into()))
}

/// What one event did, beyond the state it leaves.
#[derive(Default)]
pub(super) struct StepLog {
    pub(super) plan: Option<PlanSummary>,
    pub(super) created: Vec<String>,
    pub(super) deleted: Vec<Deletion>,
}

/// A task's state for a checkpoint it has not acknowledged yet.
#[derive(Default)]
struct Draft {
    state: SubtaskState,
    record: SnapshotRecord,
    /// Objects it uploaded (deleted by the task if never acknowledged).
    uploaded: Vec<String>,
}

/// One task: its upload tracker and its unacknowledged snapshots.
#[derive(Default)]
struct Task {
    tracker: IncrementalSnapshotTracker,
    drafts: BTreeMap<u64, Draft>,
    /// Checkpoints failed or aborted on this task: no more uploads nor acknowledgement.
    failed: BTreeSet<u64>,
    /// Checkpoints this task acknowledged: no more uploads nor acknowledgement.
    acked: BTreeSet<u64>,
}

/// Script local names are all shared state files: the upload plan sees them as SST files.
fn plan_name(local: &str) -> String {
    format!("{local}.sst")
}

fn local_name(plan_name: &str) -> &str {
    plan_name.strip_suffix(".sst").unwrap_or(plan_name)
}

fn file(remote: &str, scope: Scope) -> StateHandle {
    StateHandle::File(FileHandle {
        path: Path::from(remote),
        size: 0,
        scope,
    })
}

fn object_of(handle: &StateHandle) -> Option<String> {
    match handle {
        StateHandle::File(f) => Some(f.path.to_string()),
        StateHandle::Segment(s) => Some(s.path.to_string()),
        StateHandle::Placeholder(p) => match &p.key {
            SharedStateKey::Object(o) => Some(o.clone()),
            SharedStateKey::Segment(_) => None,
        },
    }
}

fn private_name(checkpoint: u64) -> String {
    format!("cp{checkpoint}.private")
}

fn meta_name(checkpoint: u64) -> String {
    format!("cp{checkpoint}.meta")
}

pub(super) struct Engine {
    pub(super) jm: JobCheckpoints,
    retained_limit: usize,
    max_concurrent: usize,
    keys: BTreeMap<u32, SubtaskKey>,
    tasks: BTreeMap<u32, Task>,
    pub(super) exists: BTreeSet<String>,
    /// Every object ever written: uploads must create new names.
    written: BTreeSet<String>,
    /// Savepoints: id -> objects.
    savepoints: BTreeMap<u64, Vec<String>>,
    /// Checkpoints that completed (savepoints included).
    completed: BTreeSet<u64>,
    /// Checkpoints triggered.
    triggered: BTreeSet<u64>,
    /// Highest checkpoint or savepoint id so far.
    highest: Option<u64>,
    /// The snapshot the current run started from without claim, if any.
    unclaimed_start: Option<u64>,
    pub(super) step: StepLog,
}

impl Engine {
    pub(super) fn new(script: &Script, tasks: &BTreeSet<u32>) -> Engine {
        let parallelism = u32::try_from(tasks.len()).unwrap_or(u32::MAX);
        Engine {
            jm: JobCheckpoints::new(script.retained_checkpoints),
            retained_limit: script.retained_checkpoints,
            max_concurrent: script.max_concurrent_checkpoints.max(1),
            keys: tasks
                .iter()
                .map(|t| (*t, SubtaskKey::new("script", "op", *t, parallelism)))
                .collect(),
            tasks: tasks.iter().map(|t| (*t, Task::default())).collect(),
            exists: BTreeSet::new(),
            written: BTreeSet::new(),
            savepoints: BTreeMap::new(),
            completed: BTreeSet::new(),
            triggered: BTreeSet::new(),
            highest: None,
            unclaimed_start: None,
            step: StepLog::default(),
        }
    }

    pub(super) fn apply(&mut self, event: &Event) -> Result<(), Failure> {
        match event {
            Event::Trigger { checkpoint } => self.trigger(*checkpoint),
            Event::Upload {
                checkpoint,
                task,
                local,
                remote,
            } => self.upload(*checkpoint, *task, local, remote),
            Event::Reuse {
                checkpoint,
                task,
                local,
                remote,
            } => self.reuse(*checkpoint, *task, local, remote),
            Event::Snapshot {
                checkpoint,
                task,
                local_files,
                new_remote,
            } => self.snapshot(*checkpoint, *task, local_files, new_remote),
            Event::UploadFails { checkpoint, task } => self.upload_fails(*checkpoint, *task),
            Event::Ack { checkpoint, task } => self.ack(*checkpoint, *task),
            Event::Complete { checkpoint } => self.complete(*checkpoint),
            Event::Abort { checkpoint } => self.abort(*checkpoint, "aborted"),
            Event::NotifyComplete { checkpoint, task } => {
                if !self.completed.contains(checkpoint) {
                    return invalid(format!("checkpoint {checkpoint} has not completed"));
                }
                self.task(*task)?
                    .tracker
                    .notify_complete(CheckpointId(*checkpoint));
                Ok(())
            }
            Event::NotifyAbort { checkpoint, task } => {
                let c = CheckpointId(*checkpoint);
                if !self.triggered.contains(checkpoint)
                    || self.completed.contains(checkpoint)
                    || self.jm.pending().contains(&c)
                {
                    return invalid(format!("checkpoint {checkpoint} was not aborted"));
                }
                let t = self.task(*task)?;
                t.tracker.notify_aborted(CheckpointId(*checkpoint));
                t.failed.insert(*checkpoint);
                let why = format!("task {task} cleans up its unacknowledged uploads of the aborted checkpoint {checkpoint}");
                self.clean_draft(*task, *checkpoint, &why);
                Ok(())
            }
            Event::Savepoint { checkpoint, files } => self.savepoint(*checkpoint, files),
            Event::Restore {
                checkpoint,
                mode,
                task,
                shared,
            } => self.restore(*checkpoint, *mode, *task, shared),
            Event::JmFailover { store } => self.jm_failover(store),
            Event::JobFailover => self.job_failover(),
        }
    }

    fn task(&mut self, task: u32) -> Result<&mut Task, Failure> {
        match self.tasks.get_mut(&task) {
            Some(t) => Ok(t),
            None => invalid(format!("unknown task {task}")),
        }
    }

    fn key(&self, task: u32) -> Result<SubtaskKey, Failure> {
        match self.keys.get(&task) {
            Some(k) => Ok(k.clone()),
            None => invalid(format!("unknown task {task}")),
        }
    }

    fn create(&mut self, object: &str) -> Result<(), Failure> {
        if object.is_empty() || Path::from(object).to_string() != object {
            return invalid(format!(
                "{object:?} is not a valid object name (non-empty, '/'-separated, no empty segments)"
            ));
        }
        if !self.written.insert(object.to_owned()) {
            return invalid(format!(
                "object {object} was written before: every upload creates a new object"
            ));
        }
        self.exists.insert(object.to_owned());
        self.step.created.push(object.to_owned());
        Ok(())
    }

    fn delete(&mut self, object: &str, why: &str) {
        if self.exists.remove(object) {
            self.step.deleted.push(Deletion {
                object: object.to_owned(),
                why: why.to_owned(),
            });
        }
    }

    /// The draft of a pending checkpoint on a task that has not failed it.
    fn draft(&mut self, checkpoint: u64, task: u32) -> Result<&mut Draft, Failure> {
        if !self.jm.pending().contains(&CheckpointId(checkpoint)) {
            return invalid(format!("checkpoint {checkpoint} is not pending"));
        }
        let t = self.task(task)?;
        if t.failed.contains(&checkpoint) {
            return invalid(format!(
                "checkpoint {checkpoint} already failed or was aborted on task {task}"
            ));
        }
        if t.acked.contains(&checkpoint) {
            return invalid(format!(
                "task {task} already acknowledged checkpoint {checkpoint}"
            ));
        }
        Ok(t.drafts.entry(checkpoint).or_default())
    }

    fn check_new_local(draft: &Draft, local: &str) -> Result<(), Failure> {
        let name = plan_name(local);
        if draft.state.shared.iter().any(|(n, _)| *n == name) {
            return invalid(format!("local file {local} is already in this snapshot"));
        }
        Ok(())
    }

    fn trigger(&mut self, checkpoint: u64) -> Result<(), Failure> {
        if self.highest.is_some_and(|h| checkpoint <= h) {
            return invalid(format!(
                "checkpoint {checkpoint} is not above every earlier checkpoint or savepoint"
            ));
        }
        if self.jm.pending().len() >= self.max_concurrent {
            return invalid(format!(
                "{} checkpoints are pending: max_concurrent_checkpoints is {}",
                self.jm.pending().len(),
                self.max_concurrent
            ));
        }
        self.jm
            .trigger(CheckpointId(checkpoint), self.keys.values().cloned())?;
        self.highest = Some(checkpoint);
        self.triggered.insert(checkpoint);
        Ok(())
    }

    fn upload(
        &mut self,
        checkpoint: u64,
        task: u32,
        local: &str,
        remote: &str,
    ) -> Result<(), Failure> {
        Self::check_new_local(self.draft(checkpoint, task)?, local)?;
        self.create(remote)?;
        let handle = file(remote, Scope::Shared);
        let draft = self.draft(checkpoint, task)?;
        draft.state.shared.push((plan_name(local), handle.clone()));
        draft.record.sst.insert(
            plan_name(local),
            RecordedFile {
                handle,
                uploaded: true,
            },
        );
        draft.uploaded.push(remote.to_owned());
        self.record(checkpoint, task)
    }

    fn reuse(
        &mut self,
        checkpoint: u64,
        task: u32,
        local: &str,
        remote: &str,
    ) -> Result<(), Failure> {
        if !self.written.contains(remote) {
            return invalid(format!("object {remote} was never uploaded"));
        }
        let draft = self.draft(checkpoint, task)?;
        Self::check_new_local(draft, local)?;
        let handle = file(remote, Scope::Shared);
        draft
            .state
            .shared
            .push((plan_name(local), handle.placeholder()));
        draft.record.sst.insert(
            plan_name(local),
            RecordedFile {
                handle,
                uploaded: false,
            },
        );
        self.record(checkpoint, task)
    }

    /// Keeps the task's tracker up to date with what the draft uploaded and reused.
    fn record(&mut self, checkpoint: u64, task: u32) -> Result<(), Failure> {
        let t = self.task(task)?;
        let record = t
            .drafts
            .get(&checkpoint)
            .map(|d| d.record.clone())
            .unwrap_or_default();
        t.tracker.record(CheckpointId(checkpoint), record);
        Ok(())
    }

    fn snapshot(
        &mut self,
        checkpoint: u64,
        task: u32,
        local_files: &[String],
        new_remote: &BTreeMap<String, String>,
    ) -> Result<(), Failure> {
        let draft = self.draft(checkpoint, task)?;
        for local in local_files {
            Self::check_new_local(draft, local)?;
        }
        if let Some(stray) = new_remote.keys().find(|l| !local_files.contains(l)) {
            return invalid(format!(
                "new_remote names {stray}, which is not among local_files"
            ));
        }
        let mut seen = BTreeSet::new();
        if let Some(twice) = local_files.iter().find(|l| !seen.insert(*l)) {
            return invalid(format!("local file {twice} is listed twice"));
        }
        let snapshot = LocalSnapshot {
            files: local_files
                .iter()
                .map(|l| LocalFile {
                    name: plan_name(l),
                    size: 0,
                })
                .collect(),
        };
        let t = self.task(task)?;
        // Without file merging the task reuses every base handle it is offered (the manager's
        // `try_reuse` for whole files).
        let plan = t.tracker.plan(
            CheckpointId(checkpoint),
            &snapshot,
            &UploadPlanConfig::default(),
            |h| Some(h.clone()),
        );
        let mut summary = PlanSummary::default();
        for entry in &plan.entries {
            match entry {
                PlanEntry::Reuse { name, handle } => {
                    let object = object_of(handle).unwrap_or_default();
                    summary.reuse.insert(local_name(name).to_owned(), object);
                }
                PlanEntry::Upload { name, .. } => {
                    let local = local_name(name);
                    if !new_remote.contains_key(local) {
                        return invalid(format!(
                            "the plan uploads {local} but new_remote names no object for it"
                        ));
                    }
                    summary.upload.push(local.to_owned());
                }
                PlanEntry::ManifestRange { name, .. } | PlanEntry::Skip { name } => {
                    return Err(Failure::Refused(CheckpointError::Internal(format!(
                        "script file {name} planned as a non-SST file"
                    ))))
                }
            }
        }
        for local in local_files {
            if let Some(object) = summary.reuse.get(local).cloned() {
                self.reuse(checkpoint, task, local, &object)?;
            } else if let Some(remote) = new_remote.get(local) {
                self.upload(checkpoint, task, local, remote)?;
            }
        }
        self.step.plan = Some(summary);
        Ok(())
    }

    fn upload_fails(&mut self, checkpoint: u64, task: u32) -> Result<(), Failure> {
        if !self.jm.pending().contains(&CheckpointId(checkpoint)) {
            return invalid(format!("checkpoint {checkpoint} is not pending"));
        }
        let t = self.task(task)?;
        t.failed.insert(checkpoint);
        t.tracker.notify_aborted(CheckpointId(checkpoint));
        let why = format!(
            "task {task}'s snapshot of checkpoint {checkpoint} failed: it cleans up its uploads"
        );
        self.clean_draft(task, checkpoint, &why);
        self.abort(checkpoint, &format!("declined by task {task}"))
    }

    /// Deletes what a task uploaded for a checkpoint it never acknowledged.
    fn clean_draft(&mut self, task: u32, checkpoint: u64, why: &str) {
        let draft = self
            .tasks
            .get_mut(&task)
            .and_then(|t| t.drafts.remove(&checkpoint));
        for object in draft.map(|d| d.uploaded).unwrap_or_default() {
            self.delete(&object, why);
        }
    }

    fn ack(&mut self, checkpoint: u64, task: u32) -> Result<(), Failure> {
        self.draft(checkpoint, task)?;
        let key = self.key(task)?;
        let mut state = self
            .tasks
            .get_mut(&task)
            .and_then(|t| t.drafts.remove(&checkpoint))
            .map(|d| d.state)
            .unwrap_or_default();
        let private = private_name(checkpoint);
        let first = !self.written.contains(&private);
        if first {
            state
                .private
                .push((private.clone(), file(&private, Scope::Exclusive)));
        }
        self.jm.acknowledge(CheckpointId(checkpoint), &key, state)?;
        if let Some(t) = self.tasks.get_mut(&task) {
            t.acked.insert(checkpoint);
        }
        if first {
            self.create(&private)?;
        }
        Ok(())
    }

    fn complete(&mut self, checkpoint: u64) -> Result<(), Failure> {
        // The registry forgets what it drops: keep each object's last use for the reasons.
        let last_used: BTreeMap<String, u64> = self
            .exists
            .iter()
            .filter_map(|o| {
                let key = SharedStateKey::Object(o.clone());
                self.jm
                    .registry()
                    .entry(&key)
                    .map(|e| (o.clone(), e.last_used.0))
            })
            .collect();
        let completion = self.jm.complete(CheckpointId(checkpoint))?;
        self.completed.insert(checkpoint);
        self.create(&meta_name(checkpoint))?;
        let watermark = self.jm.watermark();
        let subsumed: BTreeSet<u64> = completion.subsumed.iter().map(|c| c.0).collect();
        let aborted: BTreeSet<u64> = completion.aborted.iter().map(|c| c.0).collect();
        for handle in &completion.discard {
            let Some(object) = object_of(handle) else {
                continue;
            };
            let why = match private_owner(&object) {
                Some(c) if subsumed.contains(&c) => {
                    format!("checkpoint {c} is subsumed by checkpoint {checkpoint}")
                }
                Some(c) if aborted.contains(&c) => {
                    format!("checkpoint {c} is aborted by the completion of checkpoint {checkpoint}")
                }
                _ => match last_used.get(&object) {
                    Some(last) => format!(
                        "registry: last used by checkpoint {last}, below the watermark {}",
                        watermark.map_or_else(|| "-".to_owned(), |w| w.0.to_string())
                    ),
                    None => format!(
                        "a private file of a checkpoint dropped by the completion of checkpoint {checkpoint}"
                    ),
                },
            };
            self.delete(&object, &why);
        }
        for c in &subsumed {
            self.delete(
                &meta_name(*c),
                &format!("checkpoint {c} is subsumed by checkpoint {checkpoint}"),
            );
        }
        Ok(())
    }

    fn abort(&mut self, checkpoint: u64, how: &str) -> Result<(), Failure> {
        let private = self.jm.abort(CheckpointId(checkpoint))?;
        for handle in private {
            if let Some(object) = object_of(&handle) {
                self.delete(&object, &format!("checkpoint {checkpoint} is {how}"));
            }
        }
        Ok(())
    }

    fn savepoint(&mut self, checkpoint: u64, files: &[String]) -> Result<(), Failure> {
        if self.highest.is_some_and(|h| checkpoint <= h) {
            return invalid(format!(
                "savepoint {checkpoint} is not above every earlier checkpoint or savepoint"
            ));
        }
        for f in files {
            self.create(f)?;
        }
        self.highest = Some(checkpoint);
        self.completed.insert(checkpoint);
        self.savepoints.insert(checkpoint, files.to_vec());
        Ok(())
    }

    /// A task's restored state: `shared` as registered handles, plus the snapshot's own files.
    fn restored_state(
        &self,
        checkpoint: u64,
        shared: &BTreeMap<String, String>,
    ) -> Result<SubtaskState, Failure> {
        let mut state = SubtaskState::default();
        for (local, object) in shared {
            if !self.exists.contains(object) {
                return invalid(format!(
                    "object {object} of checkpoint {checkpoint} does not exist"
                ));
            }
            state
                .shared
                .push((plan_name(local), file(object, Scope::Shared)));
        }
        Ok(state)
    }

    /// Every task restarts from `from` (a retained checkpoint): its tracker's base is `from`'s
    /// state; unacknowledged uploads are cleaned up.
    fn restart_tasks(&mut self, from: Option<&CompletedCheckpoint>, why: &str) {
        let ids: Vec<u32> = self.tasks.keys().copied().collect();
        for task in ids {
            let drafts: Vec<u64> = self
                .tasks
                .get(&task)
                .map(|t| t.drafts.keys().copied().collect())
                .unwrap_or_default();
            for c in drafts {
                self.clean_draft(task, c, why);
            }
            let key = self.keys.get(&task).cloned();
            let tracker = match (from, key) {
                (Some(c), Some(key)) => {
                    let state = c.subtasks.get(&key).cloned().unwrap_or_default();
                    IncrementalSnapshotTracker::restored(c.id, record_of(&state))
                }
                _ => IncrementalSnapshotTracker::new(),
            };
            if let Some(t) = self.tasks.get_mut(&task) {
                t.tracker = tracker;
                t.failed.clear();
                t.acked.clear();
            }
        }
    }

    fn restore(
        &mut self,
        checkpoint: u64,
        mode: ScriptRestoreMode,
        task: u32,
        shared: &BTreeMap<String, String>,
    ) -> Result<(), Failure> {
        let key = self.key(task)?;
        let mut state = self.restored_state(checkpoint, shared)?;
        // The snapshot's own files: a savepoint's are its objects, a checkpoint's its private
        // file; they belong to the new run only in claim mode.
        let own: Vec<String> = match self.savepoints.get(&checkpoint) {
            Some(files) => files
                .iter()
                .filter(|f| !shared.values().any(|s| s == *f))
                .cloned()
                .collect(),
            None => vec![private_name(checkpoint)],
        };
        for f in own.iter().filter(|f| self.exists.contains(*f)) {
            state.private.push((f.clone(), file(f, Scope::Exclusive)));
        }
        let snapshot = CompletedCheckpoint {
            id: CheckpointId(checkpoint),
            subtasks: BTreeMap::from([(key, state)]),
        };
        // A new run: a new job manager view, tasks start from the snapshot.
        self.jm = JobCheckpoints::new(self.retained_limit);
        self.jm.restore_initial(&snapshot, mode.into());
        self.highest = Some(self.highest.map_or(checkpoint, |h| h.max(checkpoint)));
        self.unclaimed_start = (mode != ScriptRestoreMode::Claim).then_some(checkpoint);
        let why = format!("the job restarts from snapshot {checkpoint}");
        let base = (mode != ScriptRestoreMode::NoClaim).then_some(&snapshot);
        self.restart_tasks(base, &why);
        Ok(())
    }

    fn jm_failover(&mut self, store: &[StoredCheckpoint]) -> Result<(), Failure> {
        let mut recovered: BTreeMap<u64, CompletedCheckpoint> = BTreeMap::new();
        for s in store {
            let key = self.key(s.task)?;
            let state = self.restored_state(s.checkpoint, &s.shared)?;
            let c = recovered
                .entry(s.checkpoint)
                .or_insert_with(|| CompletedCheckpoint {
                    id: CheckpointId(s.checkpoint),
                    subtasks: BTreeMap::new(),
                });
            if c.subtasks.insert(key, state).is_some() {
                return invalid(format!(
                    "checkpoint {} of task {} is listed twice",
                    s.checkpoint, s.task
                ));
            }
        }
        // The first task's state of each recovered checkpoint carries its private file.
        for c in recovered.values_mut() {
            let private = private_name(c.id.0);
            if let Some(state) = c.subtasks.values_mut().next() {
                state
                    .private
                    .push((private.clone(), file(&private, Scope::Exclusive)));
            }
        }
        let recovered: Vec<CompletedCheckpoint> = recovered.into_values().collect();
        self.jm = JobCheckpoints::recover(recovered, self.retained_limit);
        if let Some(start) = self.unclaimed_start {
            self.jm.protect_restored(CheckpointId(start));
        }
        if let Some(h) = self.jm.latest().map(|c| c.id.0) {
            self.highest = Some(self.highest.map_or(h, |x| x.max(h)));
        }
        let latest = self.jm.latest().cloned();
        self.restart_tasks(
            latest.as_ref(),
            "the job manager fails over: the tasks restart",
        );
        Ok(())
    }

    fn job_failover(&mut self) -> Result<(), Failure> {
        for c in self.jm.pending() {
            self.abort(c.0, "aborted by the job failover")?;
        }
        let latest = self.jm.latest().cloned();
        self.restart_tasks(latest.as_ref(), "the job fails over: the tasks restart");
        Ok(())
    }
}

/// The checkpoint whose private or meta file `object` is.
fn private_owner(object: &str) -> Option<u64> {
    let rest = object.strip_prefix("cp")?;
    let id = rest
        .strip_suffix(".private")
        .or_else(|| rest.strip_suffix(".meta"))?;
    id.parse().ok()
}

/// The tracker record of a restored task state: its shared files, reusable.
fn record_of(state: &SubtaskState) -> SnapshotRecord {
    SnapshotRecord {
        sst: state
            .shared
            .iter()
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
