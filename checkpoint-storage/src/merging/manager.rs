//! The [`FileMergingSnapshotManager`] itself: its state, construction, naming and the PUT that
//! races a checkpoint's abort. The operations live in the sibling modules.

use std::collections::{BTreeMap, HashMap, HashSet};

use bytes::Bytes;
use object_store::path::Path;

use super::config::FileMergingConfig;
use super::files::{LogicalFile, PhysicalFile, PoolKey};
use crate::cancel::Canceller;
use crate::error::{CheckpointError, Result};
use crate::handle::{sanitize, CheckpointId, LogicalFileId, Scope, SubtaskKey};
use crate::storage::CheckpointStorage;

/// The task-side manager of merged checkpoint files for one job on one TaskManager (FLIP-306:
/// one per (job, TaskManager)). Shared-scope segments merge per subtask under
/// `<root>/shared/<subtask dir>/`; exclusive-scope segments merge per subtask under
/// `<root>/taskowned/<manager id>/` (Flink merges the latter per TaskManager).
///
/// Cost: every method is O(segments or files touched) except [`Self::space_stats`] and
/// [`Self::protected_paths`], O(files), and [`Self::control_space`], O(segments).
#[derive(Debug)]
pub struct FileMergingSnapshotManager {
    pub(super) id: String,
    pub(super) storage: CheckpointStorage,
    pub(super) root: Path,
    pub(super) config: FileMergingConfig,
    pub(super) nonce: String,
    pub(super) seq: u64,
    pub(super) files: BTreeMap<Path, PhysicalFile>,
    pub(super) logical: HashMap<LogicalFileId, LogicalFile>,
    /// Per subtask, per checkpoint: the logical files it created (or restored).
    pub(super) uploaded: BTreeMap<SubtaskKey, BTreeMap<CheckpointId, Vec<LogicalFileId>>>,
    pub(super) leases: BTreeMap<(CheckpointId, PoolKey), Path>,
    /// Across-boundary mode: open files waiting for a later checkpoint.
    pub(super) idle: BTreeMap<PoolKey, Vec<Path>>,
    /// Across-boundary mode: open files whose snapshot finished, waiting for that checkpoint's
    /// completion before they join the pool.
    pub(super) parked: BTreeMap<(CheckpointId, PoolKey), Path>,
    /// Without merging: objects of snapshots not yet finished (deleted here on abort).
    pub(super) unfinished: BTreeMap<(SubtaskKey, CheckpointId), Vec<Path>>,
    pub(super) canceller: Canceller,
    /// Compaction: old logical file -> its copy.
    pub(super) remap: HashMap<LogicalFileId, LogicalFileId>,
    pub(super) last_confirmed: HashMap<SubtaskKey, CheckpointId>,
    pub(super) max_seen: CheckpointId,
    /// Per subtask, the newest checkpoint that reused a segment: its reuses tell which older
    /// segments later checkpoints still need (space control's projection).
    pub(super) newest_reuse: HashMap<SubtaskKey, CheckpointId>,
    /// Whole files restored without claim: never referenced by a new checkpoint.
    pub(super) not_reusable: HashSet<Path>,
}

impl FileMergingSnapshotManager {
    /// A manager `id` (e.g. `job_<job>_tm_<tm>`) writing under `root` of `storage`.
    pub fn new(
        id: &str,
        storage: CheckpointStorage,
        root: Path,
        config: FileMergingConfig,
    ) -> FileMergingSnapshotManager {
        let nonce = config.nonce.clone().unwrap_or_else(random_nonce);
        FileMergingSnapshotManager {
            id: id.to_owned(),
            storage,
            root,
            config,
            nonce,
            seq: 0,
            files: BTreeMap::new(),
            logical: HashMap::new(),
            uploaded: BTreeMap::new(),
            leases: BTreeMap::new(),
            idle: BTreeMap::new(),
            parked: BTreeMap::new(),
            unfinished: BTreeMap::new(),
            canceller: Canceller::new(),
            remap: HashMap::new(),
            last_confirmed: HashMap::new(),
            max_seen: CheckpointId(0),
            newest_reuse: HashMap::new(),
            not_reusable: HashSet::new(),
        }
    }

    /// The manager's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its configuration.
    pub fn config(&self) -> &FileMergingConfig {
        &self.config
    }

    /// The storage it writes to.
    pub fn storage(&self) -> &CheckpointStorage {
        &self.storage
    }

    /// The board on which aborts cancel in-flight uploads; clone it to another task.
    pub fn canceller(&self) -> Canceller {
        self.canceller.clone()
    }

    /// The shared-scope directory of a subtask.
    pub fn shared_dir(&self, subtask: &SubtaskKey) -> Path {
        self.root
            .clone()
            .join("shared")
            .join(subtask.managed_dir_name())
    }

    /// The exclusive-scope directory of this manager.
    pub fn exclusive_dir(&self) -> Path {
        self.root.clone().join("taskowned").join(sanitize(&self.id))
    }

    pub(super) fn new_path(
        &mut self,
        subtask: &SubtaskKey,
        scope: Scope,
        checkpoint: CheckpointId,
    ) -> Path {
        self.seq += 1;
        let dir = match scope {
            Scope::Shared => self.shared_dir(subtask),
            Scope::Exclusive => self.exclusive_dir(),
        };
        dir.join(format!("cp{}-{}-{}", checkpoint.0, self.nonce, self.seq))
    }

    pub(super) fn new_logical_id(&mut self) -> LogicalFileId {
        self.seq += 1;
        LogicalFileId(format!("{}-{}", self.nonce, self.seq))
    }

    pub(super) fn check_live(&self, checkpoint: CheckpointId) -> Result<()> {
        if self.canceller.is_aborted(checkpoint) {
            return Err(CheckpointError::Aborted { checkpoint });
        }
        Ok(())
    }

    /// PUTs `bytes`, racing the checkpoint's abort: an abort cancels the request.
    pub(super) async fn put(
        &self,
        checkpoint: Option<CheckpointId>,
        path: &Path,
        bytes: Bytes,
        create: bool,
    ) -> Result<()> {
        let put = async {
            if create {
                self.storage.create(path, bytes).await
            } else {
                self.storage.overwrite(path, bytes).await
            }
        };
        match checkpoint {
            None => put.await,
            Some(checkpoint) => {
                tokio::select! {
                    biased;
                    () = self.canceller.cancelled(checkpoint) => {
                        Err(CheckpointError::Aborted { checkpoint })
                    }
                    result = put => result,
                }
            }
        }
    }
}

/// A random name prefix: the process id and the clock, mixed by the standard library's random
/// hasher keys (no extra dependency for randomness).
fn random_nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(d.as_nanos());
    }
    format!("{:012x}", h.finish() & 0xffff_ffff_ffff)
}
