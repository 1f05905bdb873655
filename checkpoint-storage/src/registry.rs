//! Job-manager side: the shared-state registry and the store of completed checkpoints.
//!
//! Semantics are Flink 1.20's (`SharedStateRegistryImpl`, `CompletedCheckpointStore`):
//!
//! - shared state is registered on every acknowledgement (FLINK-24611), keyed by physical
//!   identity ([`SharedStateKey`], FLINK-29913), and each reuse advances the entry's last-used
//!   checkpoint;
//! - after every completed checkpoint, entries whose last-used checkpoint is below the watermark
//!   *L* = min(oldest retained checkpoint, oldest pending checkpoint) are dropped, and only those
//!   are deleted: nothing a retained checkpoint or a pending checkpoint's acknowledged upload can
//!   reach (FLINK-24611's "delete by watermark, not by decrement");
//! - an abort never deletes shared state; it is collected after a later completion;
//! - the registry is rebuilt from the retained checkpoints after a job-manager failover
//!   (FLINK-24086, FLINK-7268);
//! - a snapshot restored in NO_CLAIM mode is never registered nor deleted; CLAIM hands it over.
//!
//! Merged segments are registered like files but their discard is a no-op here: their physical
//! files are deleted by the task-side [`crate::FileMergingSnapshotManager`] (FLIP-306).
//! Everything here is pure: methods return the handles to delete and the caller deletes them
//! (with [`crate::CheckpointStorage::discard`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use crate::error::{CheckpointError, Result};
use crate::handle::{CheckpointId, SharedStateKey, StateHandle, SubtaskKey};

/// How the files of a snapshot a job is started from are treated (Flink's claim mode,
/// `execution.state-recovery.claim-mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum RestoreMode {
    /// The job owns the snapshot: its files are deleted once no retained checkpoint needs them.
    Claim,
    /// The snapshot is never registered nor deleted; the first checkpoint does not reference it
    /// (Flink's default since 1.15, FLIP-193).
    NoClaim,
    /// The snapshot is never deleted, but later checkpoints may reference its files, which are
    /// registered for that (Flink's deprecated `LEGACY` mode): they then depend on files the job
    /// does not own.
    Legacy,
}

/// One registered piece of shared state.
#[derive(Clone, Debug)]
struct Entry {
    handle: StateHandle,
    created_by: CheckpointId,
    last_used: CheckpointId,
    confirmed: bool,
}

/// What the registry knows about one key (for tests and diagnostics).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryInfo {
    /// The registered (real) handle.
    pub handle: StateHandle,
    /// The checkpoint that registered it first.
    pub created_by: CheckpointId,
    /// The newest checkpoint that references it.
    pub last_used: CheckpointId,
    /// Whether a checkpoint whose id equals `last_used` completed.
    pub confirmed: bool,
}

/// The job manager's registry of shared state (Flink's `SharedStateRegistry`).
#[derive(Debug, Default)]
pub struct SharedStateRegistry {
    entries: HashMap<SharedStateKey, Entry>,
    /// Files created by checkpoints up to this id belong to a snapshot restored without claim:
    /// never deleted (FLINK-26985).
    highest_not_claimed: Option<CheckpointId>,
}

impl SharedStateRegistry {
    /// An empty registry.
    pub fn new() -> SharedStateRegistry {
        SharedStateRegistry::default()
    }

    /// Registers a reference of checkpoint `checkpoint` to `handle` and returns the handle the
    /// checkpoint must record (a placeholder is replaced by the registered handle). Advances the
    /// entry's last-used checkpoint. O(1).
    ///
    /// # Errors
    /// [`CheckpointError::UnknownSharedState`] for a placeholder of unregistered state,
    /// [`CheckpointError::ConflictingHandle`] for a different handle under a registered key.
    pub fn register_reference(
        &mut self,
        checkpoint: CheckpointId,
        handle: &StateHandle,
    ) -> Result<StateHandle> {
        let key = handle.key();
        match self.entries.get_mut(&key) {
            None => match handle {
                StateHandle::Placeholder(_) => {
                    Err(CheckpointError::UnknownSharedState { checkpoint, key })
                }
                real => {
                    self.entries.insert(
                        key,
                        Entry {
                            handle: real.clone(),
                            created_by: checkpoint,
                            last_used: checkpoint,
                            confirmed: false,
                        },
                    );
                    Ok(real.clone())
                }
            },
            Some(entry) => {
                if !matches!(handle, StateHandle::Placeholder(_)) && *handle != entry.handle {
                    // Keys are physical identities, so two real handles under one key mean the
                    // same object was written twice: refuse rather than guess which to delete.
                    return Err(CheckpointError::ConflictingHandle { key });
                }
                if checkpoint > entry.last_used {
                    entry.last_used = checkpoint;
                    entry.confirmed = false;
                }
                Ok(entry.handle.clone())
            }
        }
    }

    /// Marks entries last used by `checkpoint` as confirmed (it completed).
    pub fn checkpoint_completed(&mut self, checkpoint: CheckpointId) {
        for entry in self.entries.values_mut() {
            if entry.last_used == checkpoint {
                entry.confirmed = true;
            }
        }
    }

    /// Drops every entry whose last-used checkpoint is below `lowest_in_use` and returns the
    /// handles whose objects must be deleted: whole files created after the highest unclaimed
    /// restored checkpoint. Segments are dropped without deletion (their manager deletes their
    /// physical files). O(entries).
    pub fn unregister_unused(&mut self, lowest_in_use: CheckpointId) -> Vec<StateHandle> {
        let mut discard = Vec::new();
        let not_claimed = self.highest_not_claimed;
        self.entries.retain(|_, entry| {
            if entry.last_used >= lowest_in_use {
                return true;
            }
            let claimed = not_claimed.is_none_or(|n| entry.created_by > n);
            if claimed && matches!(entry.handle, StateHandle::File(_)) {
                discard.push(entry.handle.clone());
            }
            false
        });
        discard.sort_by_key(|h| h.key());
        discard
    }

    /// Registers the shared state of a restored checkpoint. In [`RestoreMode::NoClaim`] nothing
    /// is registered and files created up to the checkpoint are protected from deletion for
    /// good; [`RestoreMode::Legacy`] registers them (later checkpoints may reference them) and
    /// protects them too, as Flink's `SharedStateRegistryImpl.registerAllAfterRestored` does
    /// for every mode but CLAIM.
    pub fn register_all_after_restored(
        &mut self,
        checkpoint: &CompletedCheckpoint,
        mode: RestoreMode,
    ) {
        if mode != RestoreMode::Claim {
            self.highest_not_claimed = Some(
                self.highest_not_claimed
                    .map_or(checkpoint.id, |h| h.max(checkpoint.id)),
            );
        }
        match mode {
            RestoreMode::NoClaim => {}
            RestoreMode::Claim | RestoreMode::Legacy => {
                for handle in checkpoint.shared_handles() {
                    let key = handle.key();
                    let entry = self.entries.entry(key).or_insert_with(|| Entry {
                        handle: handle.clone(),
                        created_by: checkpoint.id,
                        last_used: checkpoint.id,
                        confirmed: true,
                    });
                    if checkpoint.id > entry.last_used {
                        entry.last_used = checkpoint.id;
                    }
                    entry.confirmed = true;
                }
            }
        }
    }

    /// The entry of a key, if registered.
    pub fn entry(&self, key: &SharedStateKey) -> Option<EntryInfo> {
        self.entries.get(key).map(|e| EntryInfo {
            handle: e.handle.clone(),
            created_by: e.created_by,
            last_used: e.last_used,
            confirmed: e.confirmed,
        })
    }

    /// Number of registered entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The highest checkpoint id restored without claim, if any.
    pub fn highest_not_claimed(&self) -> Option<CheckpointId> {
        self.highest_not_claimed
    }
}

/// One subtask's acknowledged state in a checkpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubtaskState {
    /// Shared state: `(local name, handle)`; handles may be placeholders until registered. The
    /// local name is what the task's upload plan reuses by, never the registry's key.
    pub shared: Vec<(String, StateHandle)>,
    /// Private (exclusive) state: `(local name, handle)`.
    pub private: Vec<(String, StateHandle)>,
}

/// A completed checkpoint: every subtask's registered state (placeholders resolved).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletedCheckpoint {
    /// Its id.
    pub id: CheckpointId,
    /// Per subtask, its state.
    pub subtasks: BTreeMap<SubtaskKey, SubtaskState>,
}

impl CompletedCheckpoint {
    /// Every shared handle of every subtask.
    pub fn shared_handles(&self) -> impl Iterator<Item = &StateHandle> {
        self.subtasks
            .values()
            .flat_map(|s| s.shared.iter().map(|(_, h)| h))
    }

    /// Every handle, shared and private.
    pub fn handles(&self) -> impl Iterator<Item = &StateHandle> {
        self.subtasks.values().flat_map(|s| {
            s.shared
                .iter()
                .map(|(_, h)| h)
                .chain(s.private.iter().map(|(_, h)| h))
        })
    }

    /// The objects this checkpoint reads from.
    pub fn paths(&self) -> BTreeSet<String> {
        self.handles()
            .filter_map(|h| h.path().map(ToString::to_string))
            .collect()
    }
}

/// A triggered checkpoint collecting acknowledgements.
#[derive(Clone, Debug)]
struct PendingCheckpoint {
    expected: BTreeSet<SubtaskKey>,
    acked: BTreeMap<SubtaskKey, SubtaskState>,
}

/// What completing a checkpoint did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// Retained checkpoints dropped because newer ones are retained (send "subsumed" to tasks).
    pub subsumed: Vec<CheckpointId>,
    /// Pending checkpoints older than the completed one, aborted by its completion (Flink
    /// aborts them as subsumed).
    pub aborted: Vec<CheckpointId>,
    /// Handles whose objects the caller deletes (whole files only).
    pub discard: Vec<StateHandle>,
}

/// The job manager's view of a job's checkpoints: pending ones, retained completed ones, and
/// the shared-state registry (Flink's `CheckpointCoordinator` bookkeeping plus
/// `CompletedCheckpointStore`).
#[derive(Debug)]
pub struct JobCheckpoints {
    registry: SharedStateRegistry,
    retained: VecDeque<CompletedCheckpoint>,
    max_retained: usize,
    pending: BTreeMap<CheckpointId, PendingCheckpoint>,
    highest_triggered: Option<CheckpointId>,
}

impl JobCheckpoints {
    /// No checkpoints yet; keeps the newest `max_retained` completed checkpoints (at least 1;
    /// Flink's `state.checkpoints.num-retained`, default 1).
    pub fn new(max_retained: usize) -> JobCheckpoints {
        JobCheckpoints {
            registry: SharedStateRegistry::new(),
            retained: VecDeque::new(),
            max_retained: max_retained.max(1),
            pending: BTreeMap::new(),
            highest_triggered: None,
        }
    }

    /// After a job-manager failover: the retained checkpoints recovered from the (HA) store and
    /// a registry rebuilt from them. They are the job's own checkpoints, so they are claimed
    /// (recovering them in NO_CLAIM would protect their files forever). Pending checkpoints are lost; their uploads are orphans for the sweep.
    pub fn recover(retained: Vec<CompletedCheckpoint>, max_retained: usize) -> JobCheckpoints {
        let mut jc = JobCheckpoints::new(max_retained);
        let mut retained = retained;
        retained.sort_by_key(|c| c.id);
        for c in &retained {
            jc.registry
                .register_all_after_restored(c, RestoreMode::Claim);
        }
        jc.highest_triggered = retained.last().map(|c| c.id);
        jc.retained = retained.into();
        while jc.retained.len() > jc.max_retained {
            jc.retained.pop_front();
        }
        jc
    }

    /// Starts the job from an external snapshot (a savepoint or another job's checkpoint) in
    /// `mode`. In CLAIM mode the snapshot becomes the first retained checkpoint; in NO_CLAIM it
    /// is only remembered as protected, and later checkpoints must not reference it; in LEGACY
    /// it is protected and registered, so later checkpoints may reference it.
    pub fn restore_initial(&mut self, snapshot: &CompletedCheckpoint, mode: RestoreMode) {
        self.registry.register_all_after_restored(snapshot, mode);
        if mode == RestoreMode::Claim {
            self.retained.push_back(snapshot.clone());
        }
        self.highest_triggered = Some(
            self.highest_triggered
                .map_or(snapshot.id, |h| h.max(snapshot.id)),
        );
    }

    /// Re-applies, after [`Self::recover`], the protection of a snapshot the job was started
    /// from in NO_CLAIM or LEGACY mode: files created up to `snapshot` are never deleted. The
    /// recovered checkpoints themselves stay claimed.
    pub fn protect_restored(&mut self, snapshot: CheckpointId) {
        let marker = CompletedCheckpoint {
            id: snapshot,
            subtasks: BTreeMap::new(),
        };
        self.registry
            .register_all_after_restored(&marker, RestoreMode::NoClaim);
    }

    /// Triggers checkpoint `id`, expecting acknowledgements from `subtasks`.
    ///
    /// # Errors
    /// [`CheckpointError::InvalidCheckpoint`] when `id` is not above every earlier id.
    pub fn trigger(
        &mut self,
        id: CheckpointId,
        subtasks: impl IntoIterator<Item = SubtaskKey>,
    ) -> Result<()> {
        if self.highest_triggered.is_some_and(|h| id <= h) {
            return Err(CheckpointError::InvalidCheckpoint {
                checkpoint: id,
                reason: "id is not above every earlier checkpoint".to_owned(),
            });
        }
        self.highest_triggered = Some(id);
        self.pending.insert(
            id,
            PendingCheckpoint {
                expected: subtasks.into_iter().collect(),
                acked: BTreeMap::new(),
            },
        );
        Ok(())
    }

    /// A subtask acknowledges checkpoint `id` with its state. Shared state is registered now
    /// (FLINK-24611), so an abort later leaves it to the registry's watermark. Returns whether
    /// every expected subtask has acknowledged.
    ///
    /// # Errors
    /// [`CheckpointError::InvalidCheckpoint`] for a checkpoint not pending or a subtask not
    /// expected or acknowledging twice; [`CheckpointError::UnknownSharedState`] for a
    /// placeholder of unknown state (the acknowledgement is refused; nothing is registered).
    pub fn acknowledge(
        &mut self,
        id: CheckpointId,
        subtask: &SubtaskKey,
        state: SubtaskState,
    ) -> Result<bool> {
        let pending = self
            .pending
            .get(&id)
            .ok_or_else(|| CheckpointError::InvalidCheckpoint {
                checkpoint: id,
                reason: "not pending".to_owned(),
            })?;
        if !pending.expected.contains(subtask) || pending.acked.contains_key(subtask) {
            return Err(CheckpointError::InvalidCheckpoint {
                checkpoint: id,
                reason: format!("unexpected acknowledgement of subtask {subtask}"),
            });
        }
        // Check every placeholder first so a refused acknowledgement registers nothing.
        for (_, handle) in &state.shared {
            if let StateHandle::Placeholder(p) = handle {
                if self.registry.entry(&p.key).is_none() {
                    return Err(CheckpointError::UnknownSharedState {
                        checkpoint: id,
                        key: p.key.clone(),
                    });
                }
            }
        }
        let mut resolved = SubtaskState {
            shared: Vec::with_capacity(state.shared.len()),
            private: state.private,
        };
        for (name, handle) in state.shared {
            let real = self.registry.register_reference(id, &handle)?;
            resolved.shared.push((name, real));
        }
        let pending = self
            .pending
            .get_mut(&id)
            .ok_or_else(|| CheckpointError::Internal(format!("{id} vanished")))?;
        pending.acked.insert(subtask.clone(), resolved);
        Ok(pending.acked.len() == pending.expected.len())
    }

    /// Completes checkpoint `id`: it becomes retained; the oldest retained ones beyond the limit
    /// are subsumed (their private files discarded), older pending checkpoints are aborted, and
    /// the registry drops what nothing retained or pending can reach.
    ///
    /// # Errors
    /// [`CheckpointError::InvalidCheckpoint`] when `id` is not pending or not fully
    /// acknowledged.
    pub fn complete(&mut self, id: CheckpointId) -> Result<Completion> {
        let fully = self
            .pending
            .get(&id)
            .map(|p| p.acked.len() == p.expected.len());
        match fully {
            None => {
                return Err(CheckpointError::InvalidCheckpoint {
                    checkpoint: id,
                    reason: "not pending".to_owned(),
                })
            }
            Some(false) => {
                return Err(CheckpointError::InvalidCheckpoint {
                    checkpoint: id,
                    reason: "not acknowledged by every subtask".to_owned(),
                })
            }
            Some(true) => {}
        }
        let pending = self
            .pending
            .remove(&id)
            .ok_or_else(|| CheckpointError::Internal(format!("{id} vanished")))?;
        let mut out = Completion::default();
        // Older pending checkpoints can never complete now (Flink aborts them as subsumed).
        let older: Vec<CheckpointId> = self.pending.range(..id).map(|(k, _)| *k).collect();
        for old in older {
            out.discard.extend(self.abort(old)?);
            out.aborted.push(old);
        }
        self.registry.checkpoint_completed(id);
        self.retained.push_back(CompletedCheckpoint {
            id,
            subtasks: pending.acked,
        });
        while self.retained.len() > self.max_retained {
            if let Some(old) = self.retained.pop_front() {
                out.discard.extend(
                    old.subtasks
                        .values()
                        .flat_map(|s| private_files(&s.private)),
                );
                out.subsumed.push(old.id);
            }
        }
        let watermark = self.watermark();
        if let Some(l) = watermark {
            out.discard.extend(self.registry.unregister_unused(l));
        }
        Ok(out)
    }

    /// Aborts pending checkpoint `id`. Returns the private files of the subtasks that had
    /// acknowledged; shared state is never deleted on abort (FLINK-24611): the registry
    /// collects it after a later completion.
    ///
    /// # Errors
    /// [`CheckpointError::InvalidCheckpoint`] when `id` is not pending.
    pub fn abort(&mut self, id: CheckpointId) -> Result<Vec<StateHandle>> {
        let pending =
            self.pending
                .remove(&id)
                .ok_or_else(|| CheckpointError::InvalidCheckpoint {
                    checkpoint: id,
                    reason: "not pending".to_owned(),
                })?;
        Ok(pending
            .acked
            .values()
            .flat_map(|s| private_files(&s.private))
            .collect())
    }

    /// The lowest checkpoint id still in use: the oldest retained or pending one.
    pub fn watermark(&self) -> Option<CheckpointId> {
        let retained = self.retained.front().map(|c| c.id);
        let pending = self.pending.keys().next().copied();
        match (retained, pending) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The retained completed checkpoints, oldest first.
    pub fn retained(&self) -> impl Iterator<Item = &CompletedCheckpoint> {
        self.retained.iter()
    }

    /// The newest retained checkpoint.
    pub fn latest(&self) -> Option<&CompletedCheckpoint> {
        self.retained.back()
    }

    /// The pending checkpoint ids, oldest first.
    pub fn pending(&self) -> Vec<CheckpointId> {
        self.pending.keys().copied().collect()
    }

    /// The shared-state registry.
    pub fn registry(&self) -> &SharedStateRegistry {
        &self.registry
    }

    /// Every object reachable from a retained checkpoint or an acknowledged upload of a pending
    /// one: what must never be deleted.
    pub fn reachable_paths(&self) -> HashSet<String> {
        let mut out: HashSet<String> = self.retained.iter().flat_map(|c| c.paths()).collect();
        for p in self.pending.values() {
            for s in p.acked.values() {
                for (_, h) in s.shared.iter().chain(s.private.iter()) {
                    if let Some(path) = h.path() {
                        out.insert(path.to_string());
                    }
                }
            }
        }
        out
    }
}

fn private_files(private: &[(String, StateHandle)]) -> impl Iterator<Item = StateHandle> + '_ {
    private
        .iter()
        .filter(|(_, h)| matches!(h, StateHandle::File(_)))
        .map(|(_, h)| h.clone())
}
