//! Task-side file merging (FLIP-306's `FileMergingSnapshotManager`, Alibaba's production design
//! before it): a subtask's state files of a checkpoint are written as segments (logical files)
//! into shared physical files of at most [`FileMergingConfig::max_file_size`] bytes.
//!
//! Guarantees:
//!
//! - **One writer per physical file.** A file is leased to one checkpoint of one subtask and
//!   scope until that checkpoint's snapshot finishes; in the default *within-boundary* mode it is
//!   then closed for good, so segments of two checkpoints never share a file; in the
//!   *across-boundary* mode an unfilled file goes back to the subtask's pool and a later
//!   checkpoint appends to it, one at a time.
//! - **Durability before acknowledgement.** Object stores cannot append, so a physical file is
//!   buffered while open and PUT when its checkpoint's snapshot finishes (or when it fills up).
//!   In across-boundary mode a re-used file is PUT again with a longer content whose prefix is
//!   unchanged: earlier segment handles read the same bytes (a PUT replaces atomically).
//! - **Deletion.** A logical file dies when a checkpoint at or after its last use is subsumed
//!   (a prefix: a missed notification heals) or when the checkpoint that wrote it aborts (an
//!   exact id). A physical file is deleted only when it is closed, owned, not leased and no live
//!   segment references it. Discards are idempotent (FLINK-36125).
//! - **Reuse.** [`FileMergingSnapshotManager::try_reuse`] advances a segment's last use when a
//!   later checkpoint decides to reference it, before that checkpoint uploads anything, so a
//!   subsume racing with the upload cannot delete it. Unknown handles (non-merged, or restored
//!   without claim) are never reused: the caller re-uploads them (Flink's
//!   `couldReusePreviousStateHandle`).
//! - **Restore.** Restored physical files are closed and never written again (FLINK-35803);
//!   they are owned (deletable) only when restored in CLAIM mode from this manager's own
//!   directories.
//! - **Space.** [`FileMergingSnapshotManager::control_space`] keeps physical bytes / live logical
//!   bytes near [`FileMergingConfig::max_space_amplification`]: by background compaction whose
//!   new handles take effect at the next checkpoint (Alibaba's design) or by excluding wasteful
//!   files from reuse (Flink's FLINK-32088).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use bytes::Bytes;
use object_store::path::Path;

use crate::cancel::Canceller;
use crate::error::{CheckpointError, Result};
use crate::handle::{
    created_by, sanitize, CheckpointId, FileHandle, LogicalFileId, Scope, SegmentHandle,
    StateHandle, SubtaskKey,
};
use crate::registry::RestoreMode;
use crate::storage::CheckpointStorage;

/// Default cap of a physical file: 32 MiB (`execution.checkpointing.file-merging.max-file-size`).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 32 << 20;

/// Default space-amplification limit of Conflux: 1.2 (Alibaba's target; Flink's default
/// `max-space-amplification` is 2.0).
pub const DEFAULT_MAX_SPACE_AMPLIFICATION: f64 = 1.2;

/// What to do with physical files that waste too much space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum SpaceControl {
    /// Rewrite their live segments into new files in the background; the next checkpoint
    /// references the copies and the old files drain (Alibaba's design).
    Compaction,
    /// Stop reusing their segments, so incremental uploads rewrite the live data (Flink 1.20,
    /// FLINK-32088).
    ExcludeFromReuse,
}

/// Options of file merging (FLIP-306's `execution.checkpointing.file-merging.*`).
#[derive(Clone, Debug, PartialEq)]
pub struct FileMergingConfig {
    /// Merge small files (`enabled`; Flink's default is off, Conflux's on). Off, every state
    /// file is its own object, as in Flink without FLIP-306.
    pub enabled: bool,
    /// Target cap of a physical file, bytes. A segment is never split, so a file exceeds it only
    /// when a single segment is larger.
    pub max_file_size: u64,
    /// Let a physical file take segments of later checkpoints (`across-checkpoint-boundary`,
    /// default off).
    pub across_checkpoint_boundary: bool,
    /// Space-amplification limit (physical / live logical bytes); below 1 disables control.
    pub max_space_amplification: f64,
    /// How the limit is enforced.
    pub space_control: SpaceControl,
    /// Name prefix of objects and logical ids; `None` picks a random one. Set it only for
    /// reproducible tests: two managers with one nonce would collide.
    pub nonce: Option<String>,
}

impl Default for FileMergingConfig {
    fn default() -> FileMergingConfig {
        FileMergingConfig {
            enabled: true,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            across_checkpoint_boundary: false,
            max_space_amplification: DEFAULT_MAX_SPACE_AMPLIFICATION,
            space_control: SpaceControl::Compaction,
            nonce: None,
        }
    }
}

type PoolKey = (SubtaskKey, Scope);

#[derive(Debug)]
struct PhysicalFile {
    pool: PoolKey,
    /// Content while the file is open (it may still take segments).
    buffer: Option<Vec<u8>>,
    /// Bytes written to the file.
    size: u64,
    /// Bytes known durable in the store.
    synced: u64,
    /// A PUT was attempted (it may have happened even if it was cancelled).
    put_attempted: bool,
    live_segments: u32,
    live_bytes: u64,
    closed: bool,
    owned: bool,
    /// Segments may be referenced by later checkpoints (space control may clear it).
    reuse_allowed: bool,
    /// Its live segments were copied by compaction.
    compacted: bool,
    /// The checkpoint writing it now.
    lease: Option<CheckpointId>,
}

#[derive(Debug)]
struct LogicalFile {
    path: Path,
    offset: u64,
    length: u64,
    subtask: SubtaskKey,
    scope: Scope,
    last_used: CheckpointId,
    /// Written by compaction, not by the checkpoint it is recorded under.
    copy: bool,
}

/// Space statistics of the files a manager owns (FLINK-32087's `SpaceStat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SpaceStats {
    /// Physical files not yet deleted.
    pub physical_files: u64,
    /// Their bytes.
    pub physical_bytes: u64,
    /// Live logical files (segments) in them.
    pub logical_files: u64,
    /// Their bytes.
    pub logical_bytes: u64,
}

impl SpaceStats {
    /// Physical bytes / live logical bytes: 1.0 when both are 0, infinite when only the
    /// logical bytes are.
    pub fn amplification(&self) -> f64 {
        amplification(self.physical_bytes, self.logical_bytes)
    }
}

/// `physical / logical`, with 0 / 0 = 1.
pub fn amplification(physical: u64, logical: u64) -> f64 {
    if logical == 0 {
        if physical == 0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        physical as f64 / logical as f64
    }
}

/// One physical file's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct PhysicalFileStats {
    /// The object.
    pub path: Path,
    /// Bytes in the file.
    pub size: u64,
    /// Bytes of live segments.
    pub live_bytes: u64,
    /// Live segments.
    pub live_segments: u32,
    /// Closed (no more segments).
    pub closed: bool,
    /// Deletable by this manager.
    pub owned: bool,
    /// `size / live_bytes`.
    pub amplification: f64,
}

/// What one [`FileMergingSnapshotManager::control_space`] run did.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct SpaceControlReport {
    /// Amplification before the run.
    pub amplification_before: f64,
    /// Files rewritten (compaction) or excluded from reuse.
    pub files_selected: u64,
    /// Segments copied by compaction.
    pub segments_copied: u64,
    /// Bytes copied by compaction.
    pub bytes_copied: u64,
}

/// The task-side manager of merged checkpoint files for one job on one TaskManager (FLIP-306:
/// one per (job, TaskManager)). Shared-scope segments merge per subtask under
/// `<root>/shared/<subtask dir>/`; exclusive-scope segments merge per subtask under
/// `<root>/taskowned/<manager id>/` (Flink merges the latter per TaskManager).
///
/// Cost: every method is O(segments or files touched) except [`Self::space_stats`],
/// [`Self::control_space`] and [`Self::protected_paths`], O(files).
#[derive(Debug)]
pub struct FileMergingSnapshotManager {
    id: String,
    storage: CheckpointStorage,
    root: Path,
    config: FileMergingConfig,
    nonce: String,
    seq: u64,
    files: BTreeMap<Path, PhysicalFile>,
    logical: HashMap<LogicalFileId, LogicalFile>,
    /// Per subtask, per checkpoint: the logical files it created (or restored).
    uploaded: BTreeMap<SubtaskKey, BTreeMap<CheckpointId, Vec<LogicalFileId>>>,
    leases: BTreeMap<(CheckpointId, PoolKey), Path>,
    /// Across-boundary mode: open files waiting for a later checkpoint.
    idle: BTreeMap<PoolKey, Vec<Path>>,
    /// Without merging: objects of snapshots not yet finished (deleted here on abort).
    unfinished: BTreeMap<(SubtaskKey, CheckpointId), Vec<Path>>,
    canceller: Canceller,
    /// Compaction: old logical file -> its copy.
    remap: HashMap<LogicalFileId, LogicalFileId>,
    last_confirmed: HashMap<SubtaskKey, CheckpointId>,
    max_seen: CheckpointId,
    /// Whole files restored without claim: never referenced by a new checkpoint.
    not_reusable: HashSet<Path>,
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
            unfinished: BTreeMap::new(),
            canceller: Canceller::new(),
            remap: HashMap::new(),
            last_confirmed: HashMap::new(),
            max_seen: CheckpointId(0),
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

    fn new_path(&mut self, subtask: &SubtaskKey, scope: Scope, checkpoint: CheckpointId) -> Path {
        self.seq += 1;
        let dir = match scope {
            Scope::Shared => self.shared_dir(subtask),
            Scope::Exclusive => self.exclusive_dir(),
        };
        dir.join(format!("cp{}-{}-{}", checkpoint.0, self.nonce, self.seq))
    }

    fn new_logical_id(&mut self) -> LogicalFileId {
        self.seq += 1;
        LogicalFileId(format!("{}-{}", self.nonce, self.seq))
    }

    fn check_live(&self, checkpoint: CheckpointId) -> Result<()> {
        if self.canceller.is_aborted(checkpoint) {
            return Err(CheckpointError::Aborted { checkpoint });
        }
        Ok(())
    }

    /// PUTs `bytes`, racing the checkpoint's abort: an abort cancels the request.
    async fn put(
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

    /// Writes one state file of `subtask` for `checkpoint` and returns its handle: a segment of
    /// a merged file, or (merging disabled) a whole object. The bytes are durable once
    /// [`Self::finish_snapshot`] returns.
    ///
    /// # Errors
    /// [`CheckpointError::Aborted`] when the checkpoint was aborted (also mid-upload),
    /// [`CheckpointError::Store`] when a PUT fails.
    pub async fn write_state(
        &mut self,
        subtask: &SubtaskKey,
        checkpoint: CheckpointId,
        scope: Scope,
        data: &[u8],
    ) -> Result<StateHandle> {
        self.check_live(checkpoint)?;
        self.max_seen = self.max_seen.max(checkpoint);
        let len = data.len() as u64;
        if !self.config.enabled {
            let path = self.new_path(subtask, scope, checkpoint);
            self.unfinished
                .entry((subtask.clone(), checkpoint))
                .or_default()
                .push(path.clone());
            self.put(Some(checkpoint), &path, Bytes::copy_from_slice(data), true)
                .await?;
            return Ok(StateHandle::File(FileHandle {
                path,
                size: len,
                scope,
            }));
        }
        let pool = (subtask.clone(), scope);
        let mut path = match self.leases.get(&(checkpoint, pool.clone())) {
            Some(p) => p.clone(),
            None => self.take_file(checkpoint, &pool),
        };
        let full = self
            .files
            .get(&path)
            .is_some_and(|f| f.size > 0 && f.size.saturating_add(len) > self.config.max_file_size);
        if full {
            // Seal the full file now: it frees its buffer and never takes another segment.
            self.sync_file(checkpoint, &path, true).await?;
            self.leases.remove(&(checkpoint, pool.clone()));
            // Across-boundary: all its segments may have died while it waited in the pool.
            self.delete_unused(BTreeSet::from([path.clone()])).await?;
            path = self.take_file(checkpoint, &pool);
        }
        let id = self.new_logical_id();
        let file = self
            .files
            .get_mut(&path)
            .ok_or_else(|| CheckpointError::Internal(format!("leased file {path} unknown")))?;
        let buffer = file
            .buffer
            .as_mut()
            .ok_or_else(|| CheckpointError::Internal(format!("leased file {path} is closed")))?;
        let offset = file.size;
        buffer.extend_from_slice(data);
        file.size += len;
        file.live_segments += 1;
        file.live_bytes += len;
        self.logical.insert(
            id.clone(),
            LogicalFile {
                path: path.clone(),
                offset,
                length: len,
                subtask: subtask.clone(),
                scope,
                last_used: checkpoint,
                copy: false,
            },
        );
        self.uploaded
            .entry(subtask.clone())
            .or_default()
            .entry(checkpoint)
            .or_default()
            .push(id.clone());
        Ok(StateHandle::Segment(SegmentHandle {
            path,
            offset,
            length: len,
            logical_id: id,
            scope,
        }))
    }

    /// Leases a file of `pool` to `checkpoint`: an idle open file (across-boundary mode) or a
    /// new one.
    fn take_file(&mut self, checkpoint: CheckpointId, pool: &PoolKey) -> Path {
        let reused = if self.config.across_checkpoint_boundary {
            self.idle.get_mut(pool).and_then(Vec::pop)
        } else {
            None
        };
        let path = match reused {
            Some(path) => path,
            None => {
                let path = self.new_path(&pool.0, pool.1, checkpoint);
                self.files.insert(
                    path.clone(),
                    PhysicalFile {
                        pool: pool.clone(),
                        buffer: Some(Vec::new()),
                        size: 0,
                        synced: 0,
                        put_attempted: false,
                        live_segments: 0,
                        live_bytes: 0,
                        closed: false,
                        owned: true,
                        reuse_allowed: true,
                        compacted: false,
                        lease: None,
                    },
                );
                path
            }
        };
        if let Some(file) = self.files.get_mut(&path) {
            file.lease = Some(checkpoint);
        }
        self.leases.insert((checkpoint, pool.clone()), path.clone());
        path
    }

    /// Makes a file's content durable; with `close`, closes it too.
    async fn sync_file(
        &mut self,
        checkpoint: CheckpointId,
        path: &Path,
        close: bool,
    ) -> Result<()> {
        let (bytes, create) = {
            let file = self
                .files
                .get_mut(path)
                .ok_or_else(|| CheckpointError::Internal(format!("file {path} unknown")))?;
            let Some(buffer) = file.buffer.as_ref() else {
                return Ok(());
            };
            if file.synced == file.size && file.put_attempted {
                (None, false)
            } else {
                let create = !file.put_attempted;
                file.put_attempted = true;
                (Some(Bytes::copy_from_slice(buffer)), create)
            }
        };
        if let Some(bytes) = bytes {
            if bytes.is_empty() {
                // Nothing was ever written: no object to create.
                if let Some(file) = self.files.get_mut(path) {
                    file.put_attempted = false;
                }
            } else {
                self.put(Some(checkpoint), path, bytes, create).await?;
            }
        }
        if let Some(file) = self.files.get_mut(path) {
            file.synced = file.size;
            if close {
                file.buffer = None;
                file.closed = true;
                file.lease = None;
            }
        }
        Ok(())
    }

    /// Finishes `subtask`'s snapshot of `checkpoint`: every file it wrote is made durable, then
    /// closed (within-boundary, or full) or returned to the pool (across-boundary). After this
    /// the handles may be acknowledged. Returns the files closed.
    ///
    /// # Errors
    /// [`CheckpointError::Aborted`] when the checkpoint was aborted,
    /// [`CheckpointError::Store`] when a PUT fails.
    pub async fn finish_snapshot(
        &mut self,
        subtask: &SubtaskKey,
        checkpoint: CheckpointId,
    ) -> Result<Vec<Path>> {
        self.check_live(checkpoint)?;
        let mut closed = Vec::new();
        for scope in [Scope::Shared, Scope::Exclusive] {
            let pool = (subtask.clone(), scope);
            let Some(path) = self.leases.get(&(checkpoint, pool.clone())).cloned() else {
                continue;
            };
            let close = !self.config.across_checkpoint_boundary
                || self
                    .files
                    .get(&path)
                    .is_some_and(|f| f.size >= self.config.max_file_size);
            self.sync_file(checkpoint, &path, close).await?;
            self.leases.remove(&(checkpoint, pool.clone()));
            if close {
                closed.push(path.clone());
            } else if let Some(file) = self.files.get_mut(&path) {
                file.lease = None;
                self.idle.entry(pool).or_default().push(path.clone());
            }
        }
        self.unfinished.remove(&(subtask.clone(), checkpoint));
        self.delete_unused(closed.iter().cloned().collect()).await?;
        Ok(closed)
    }

    /// `subtask` learned that `checkpoint` completed: its handles are the base of the next
    /// incremental snapshot (and of compaction's choice of segments to copy).
    pub fn notify_checkpoint_complete(&mut self, subtask: &SubtaskKey, checkpoint: CheckpointId) {
        let c = self
            .last_confirmed
            .entry(subtask.clone())
            .or_insert(checkpoint);
        *c = (*c).max(checkpoint);
        self.max_seen = self.max_seen.max(checkpoint);
    }

    /// `checkpoint` was aborted: its in-flight uploads are cancelled, files it was writing are
    /// closed, and the logical files it created (and no later checkpoint reused) are discarded.
    /// Without merging, its not-yet-finished objects are deleted here: the job manager never
    /// learned of them.
    ///
    /// # Errors
    /// [`CheckpointError::Store`] when a DELETE fails.
    pub async fn notify_checkpoint_aborted(
        &mut self,
        subtask: &SubtaskKey,
        checkpoint: CheckpointId,
    ) -> Result<()> {
        self.canceller.abort(checkpoint);
        let mut touched = BTreeSet::new();
        for scope in [Scope::Shared, Scope::Exclusive] {
            if let Some(path) = self.leases.remove(&(checkpoint, (subtask.clone(), scope))) {
                if let Some(file) = self.files.get_mut(&path) {
                    // Bytes never synced were never durable: the object holds the synced prefix.
                    file.buffer = None;
                    file.size = file.synced;
                    file.closed = true;
                    file.lease = None;
                }
                touched.insert(path);
            }
        }
        if let Some(paths) = self.unfinished.remove(&(subtask.clone(), checkpoint)) {
            for path in paths {
                self.storage.delete(&path).await?;
            }
        }
        touched.extend(self.discard(subtask, checkpoint, false, |c| c == checkpoint));
        self.delete_unused(touched).await
    }

    /// Checkpoints up to `checkpoint` are subsumed: every logical file of `subtask` created up
    /// to it and last used at or before it is discarded (a prefix, so a missed notification
    /// heals), and files left without live segments are deleted.
    ///
    /// # Errors
    /// [`CheckpointError::Store`] when a DELETE fails.
    pub async fn notify_checkpoint_subsumed(
        &mut self,
        subtask: &SubtaskKey,
        checkpoint: CheckpointId,
    ) -> Result<()> {
        self.canceller.finish_up_to(checkpoint);
        let touched = self.discard(subtask, checkpoint, true, |c| c <= checkpoint);
        self.delete_unused(touched).await
    }

    /// Discards `subtask`'s logical files of the checkpoints `which` selects whose last use is
    /// at or before `up_to` (compaction copies only with `copies`). Idempotent. Returns the
    /// physical files touched.
    fn discard(
        &mut self,
        subtask: &SubtaskKey,
        up_to: CheckpointId,
        copies: bool,
        which: impl Fn(CheckpointId) -> bool,
    ) -> BTreeSet<Path> {
        let mut touched = BTreeSet::new();
        let Some(per_checkpoint) = self.uploaded.get_mut(subtask) else {
            return touched;
        };
        for (c, ids) in per_checkpoint.iter_mut() {
            if !which(*c) {
                continue;
            }
            ids.retain(|id| {
                let Some(l) = self.logical.get(id) else {
                    return false;
                };
                if l.last_used > up_to || (l.copy && !copies) {
                    return true;
                }
                if let Some(file) = self.files.get_mut(&l.path) {
                    file.live_segments = file.live_segments.saturating_sub(1);
                    file.live_bytes = file.live_bytes.saturating_sub(l.length);
                    touched.insert(l.path.clone());
                }
                self.logical.remove(id);
                false
            });
        }
        per_checkpoint.retain(|_, ids| !ids.is_empty());
        let logical = &self.logical;
        self.remap.retain(|_, new| logical.contains_key(new));
        touched
    }

    /// Deletes those of `paths` that are closed, owned, not leased and without live segments;
    /// forgets the unowned ones without deleting them.
    async fn delete_unused(&mut self, paths: BTreeSet<Path>) -> Result<()> {
        for path in paths {
            let Some(file) = self.files.get(&path) else {
                continue;
            };
            if !file.closed || file.lease.is_some() || file.live_segments > 0 {
                continue;
            }
            if file.owned && file.put_attempted {
                self.storage.delete(&path).await?;
            }
            self.files.remove(&path);
        }
        Ok(())
    }

    /// Decides whether a later checkpoint may reference `handle` instead of re-uploading, and if
    /// so returns the handle to record (a compaction copy replaces a rewritten segment) after
    /// advancing its last use to `checkpoint`. `None`: upload the file again (unknown or
    /// discarded segment, a file excluded by space control, a snapshot restored without claim,
    /// or a whole-file handle while merging is on).
    pub fn try_reuse(
        &mut self,
        checkpoint: CheckpointId,
        handle: &StateHandle,
    ) -> Option<StateHandle> {
        if self.canceller.is_aborted(checkpoint) {
            return None;
        }
        match handle {
            StateHandle::File(f) => (!self.config.enabled && !self.not_reusable.contains(&f.path))
                .then(|| handle.clone()),
            StateHandle::Placeholder(_) => None,
            StateHandle::Segment(s) => {
                if !self.config.enabled {
                    return None;
                }
                // Follow compaction copies (a copy may itself have been compacted again).
                let mut id = s.logical_id.clone();
                while let Some(next) = self.remap.get(&id) {
                    id = next.clone();
                }
                let l = self.logical.get_mut(&id)?;
                let file = self.files.get(&l.path)?;
                if !file.reuse_allowed || file.compacted {
                    return None;
                }
                l.last_used = l.last_used.max(checkpoint);
                self.max_seen = self.max_seen.max(checkpoint);
                Some(StateHandle::Segment(SegmentHandle {
                    path: l.path.clone(),
                    offset: l.offset,
                    length: l.length,
                    logical_id: id,
                    scope: l.scope,
                }))
            }
        }
    }

    /// Rebuilds the manager's view of `subtask`'s segments from a restored checkpoint
    /// (FLIP-306's restore operation). Each distinct physical file becomes a closed file whose
    /// size is read from the store; it is owned only in CLAIM mode and under this manager's
    /// directories. Segments keep their logical ids, last used by `checkpoint`. Whole-file
    /// handles are owned by the job manager's registry; restored in NO_CLAIM mode they are
    /// never handed out for reuse.
    ///
    /// # Errors
    /// [`CheckpointError::Missing`] when a physical file is gone, [`CheckpointError::Corrupt`]
    /// when a segment lies outside its file.
    pub async fn restore(
        &mut self,
        subtask: &SubtaskKey,
        checkpoint: CheckpointId,
        handles: &[StateHandle],
        mode: RestoreMode,
    ) -> Result<()> {
        self.max_seen = self.max_seen.max(checkpoint);
        if mode == RestoreMode::Claim {
            let c = self
                .last_confirmed
                .entry(subtask.clone())
                .or_insert(checkpoint);
            *c = (*c).max(checkpoint);
        }
        for handle in handles {
            let s = match handle {
                StateHandle::Segment(s) => s,
                StateHandle::File(f) => {
                    if mode == RestoreMode::NoClaim {
                        self.not_reusable.insert(f.path.clone());
                    }
                    continue;
                }
                StateHandle::Placeholder(p) => {
                    return Err(CheckpointError::UnresolvedPlaceholder(p.key.clone()))
                }
            };
            if !self.files.contains_key(&s.path) {
                let meta =
                    self.storage
                        .head(&s.path)
                        .await?
                        .ok_or_else(|| CheckpointError::Missing {
                            path: s.path.to_string(),
                        })?;
                let managed = s.path.prefix_matches(&self.shared_dir(subtask))
                    || s.path.prefix_matches(&self.exclusive_dir());
                self.files.insert(
                    s.path.clone(),
                    PhysicalFile {
                        pool: (subtask.clone(), s.scope),
                        buffer: None,
                        size: meta.size,
                        synced: meta.size,
                        put_attempted: true,
                        live_segments: 0,
                        live_bytes: 0,
                        // Restored files are never written again (FLINK-35803).
                        closed: true,
                        owned: mode == RestoreMode::Claim && managed,
                        // NO_CLAIM: the first checkpoint must not reference the snapshot.
                        reuse_allowed: mode == RestoreMode::Claim,
                        compacted: false,
                        lease: None,
                    },
                );
            }
            let size = self.files.get(&s.path).map_or(0, |f| f.size);
            if s.offset.saturating_add(s.length) > size {
                return Err(CheckpointError::Corrupt {
                    handle: handle.to_string(),
                    reason: format!("segment ends after the file's {size} bytes"),
                });
            }
            if let Some(l) = self.logical.get_mut(&s.logical_id) {
                l.last_used = l.last_used.max(checkpoint);
                continue;
            }
            self.logical.insert(
                s.logical_id.clone(),
                LogicalFile {
                    path: s.path.clone(),
                    offset: s.offset,
                    length: s.length,
                    subtask: subtask.clone(),
                    scope: s.scope,
                    last_used: checkpoint,
                    copy: false,
                },
            );
            if let Some(file) = self.files.get_mut(&s.path) {
                file.live_segments += 1;
                file.live_bytes += s.length;
            }
            self.uploaded
                .entry(subtask.clone())
                .or_default()
                .entry(checkpoint)
                .or_default()
                .push(s.logical_id.clone());
        }
        Ok(())
    }

    /// Closes the idle files of the across-boundary pool (e.g. when the job stops) and deletes
    /// those without live segments.
    ///
    /// # Errors
    /// [`CheckpointError::Store`] when a DELETE fails.
    pub async fn close_idle_files(&mut self) -> Result<()> {
        let idle = std::mem::take(&mut self.idle);
        let mut touched = BTreeSet::new();
        for path in idle.into_values().flatten() {
            if let Some(file) = self.files.get_mut(&path) {
                file.buffer = None;
                file.closed = true;
                touched.insert(path);
            }
        }
        self.delete_unused(touched).await
    }

    /// Space statistics over the owned files not yet deleted. O(files).
    pub fn space_stats(&self) -> SpaceStats {
        let mut s = SpaceStats::default();
        for f in self.files.values().filter(|f| f.owned) {
            s.physical_files += 1;
            s.physical_bytes += f.size;
            s.logical_files += u64::from(f.live_segments);
            s.logical_bytes += f.live_bytes;
        }
        s
    }

    /// Per-file figures of every known file, by path. O(files).
    pub fn file_stats(&self) -> Vec<PhysicalFileStats> {
        self.files
            .iter()
            .map(|(path, f)| PhysicalFileStats {
                path: path.clone(),
                size: f.size,
                live_bytes: f.live_bytes,
                live_segments: f.live_segments,
                closed: f.closed,
                owned: f.owned,
                amplification: amplification(f.size, f.live_bytes),
            })
            .collect()
    }

    /// Every object this manager may still write or reference: files not yet deleted and
    /// unfinished uploads. The orphan sweep must spare them.
    pub fn protected_paths(&self) -> HashSet<String> {
        self.files
            .keys()
            .map(ToString::to_string)
            .chain(self.unfinished.values().flatten().map(ToString::to_string))
            .collect()
    }

    /// Enforces the space-amplification limit. When physical bytes exceed
    /// `limit x live logical bytes`, closed owned files whose own amplification exceeds the
    /// limit are taken by most waste first, until the projected total is within the limit; they
    /// are compacted (their segments that the latest confirmed or a pending checkpoint uses are
    /// copied to new files, and [`Self::try_reuse`] hands out the copies from the next
    /// checkpoint on) or excluded from reuse, per [`FileMergingConfig::space_control`]. O(files +
    /// bytes copied). Meant to run in the background between checkpoints.
    ///
    /// # Errors
    /// [`CheckpointError::Store`] when reading a file or writing a copy fails; the copies made
    /// so far stay usable.
    pub async fn control_space(&mut self) -> Result<SpaceControlReport> {
        let stats = self.space_stats();
        let limit = self.config.max_space_amplification;
        let mut report = SpaceControlReport {
            amplification_before: stats.amplification(),
            ..SpaceControlReport::default()
        };
        // Compaction aims at half the allowed overhead: the waste one checkpoint's churn adds
        // before the next run then stays within the limit. Exclusion acts at the limit, as
        // Flink's space control does.
        let target = match self.config.space_control {
            SpaceControl::Compaction => 1.0 + (limit - 1.0) / 2.0,
            SpaceControl::ExcludeFromReuse => limit,
        };
        if !self.config.enabled
            || limit < 1.0
            || (stats.physical_bytes as f64) <= stats.logical_bytes as f64 * target
        {
            return Ok(report);
        }
        let goal = stats.logical_bytes as f64 * target;
        let mut candidates: Vec<(u64, Path)> = self
            .files
            .iter()
            .filter(|(_, f)| {
                f.closed
                    && f.owned
                    && f.lease.is_none()
                    && f.reuse_allowed
                    && !f.compacted
                    && f.pool.1 == Scope::Shared
                    && f.size as f64 > f.live_bytes as f64 * target
            })
            .map(|(p, f)| (f.size - f.live_bytes.min(f.size), p.clone()))
            .collect();
        candidates.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let mut projected = stats.physical_bytes as f64;
        let mut chosen = Vec::new();
        for (waste, path) in candidates {
            if projected <= goal {
                break;
            }
            projected -= waste as f64;
            chosen.push(path);
        }
        report.files_selected = chosen.len() as u64;
        match self.config.space_control {
            SpaceControl::ExcludeFromReuse => {
                for path in &chosen {
                    if let Some(f) = self.files.get_mut(path) {
                        f.reuse_allowed = false;
                    }
                }
            }
            SpaceControl::Compaction => {
                let (segments, bytes) = self.compact(&chosen).await?;
                report.segments_copied = segments;
                report.bytes_copied = bytes;
            }
        }
        Ok(report)
    }

    /// Copies the reusable live segments of `paths` into new files, one output stream per
    /// subtask, and records the old -> new mapping.
    async fn compact(&mut self, paths: &[Path]) -> Result<(u64, u64)> {
        // The copies are "last used" by the newest checkpoint seen, pending ones included, so
        // they survive until a checkpoint after it is subsumed (a pending checkpoint planned
        // before the copies existed may complete first); an abort of that checkpoint does not
        // discard them (they are not its uploads). The next checkpoint's reuse advances them.
        let stamp = self.max_seen;
        let mut by_file: BTreeMap<Path, Vec<LogicalFileId>> = BTreeMap::new();
        for (id, l) in &self.logical {
            if !paths.contains(&l.path) || self.remap.contains_key(id) {
                continue;
            }
            let base = self.last_confirmed.get(&l.subtask).copied();
            // Segments last used before the latest confirmed checkpoint are only referenced by
            // older retained checkpoints: they die without a copy.
            if base.is_none_or(|b| l.last_used >= b) {
                by_file.entry(l.path.clone()).or_default().push(id.clone());
            }
        }
        let mut outputs: BTreeMap<SubtaskKey, (Path, Vec<u8>)> = BTreeMap::new();
        let mut copies: Vec<(LogicalFileId, LogicalFileId, LogicalFile)> = Vec::new();
        let mut sealed: Vec<(Path, Vec<u8>, SubtaskKey)> = Vec::new();
        let (mut segments, mut bytes_copied) = (0u64, 0u64);
        for (path, mut ids) in by_file {
            ids.sort_by_key(|id| self.logical.get(id).map_or(0, |l| l.offset));
            let content = self.storage.read(&path).await?;
            for id in ids {
                let Some(l) = self.logical.get(&id) else {
                    continue;
                };
                let (start, end) = (l.offset, l.offset + l.length);
                let data = usize::try_from(start)
                    .ok()
                    .zip(usize::try_from(end).ok())
                    .and_then(|(s, e)| content.get(s..e))
                    .ok_or_else(|| CheckpointError::Corrupt {
                        handle: format!("{path}[{start}..{end}]"),
                        reason: format!("file has {} bytes", content.len()),
                    })?
                    .to_vec();
                let subtask = l.subtask.clone();
                let length = l.length;
                let new_id = self.new_logical_id();
                let out_full = outputs.get(&subtask).is_some_and(|(_, b)| {
                    !b.is_empty()
                        && (b.len() as u64).saturating_add(length) > self.config.max_file_size
                });
                if out_full {
                    if let Some((p, b)) = outputs.remove(&subtask) {
                        sealed.push((p, b, subtask.clone()));
                    }
                }
                if !outputs.contains_key(&subtask) {
                    let p = self.new_path(&subtask, Scope::Shared, stamp);
                    outputs.insert(subtask.clone(), (p, Vec::new()));
                }
                let Some((out_path, buffer)) = outputs.get_mut(&subtask) else {
                    continue;
                };
                let offset = buffer.len() as u64;
                buffer.extend_from_slice(&data);
                copies.push((
                    id,
                    new_id,
                    LogicalFile {
                        path: out_path.clone(),
                        offset,
                        length,
                        subtask,
                        scope: Scope::Shared,
                        last_used: stamp,
                        copy: true,
                    },
                ));
                segments += 1;
                bytes_copied += length;
            }
            if let Some(f) = self.files.get_mut(&path) {
                f.compacted = true;
            }
        }
        sealed.extend(outputs.into_iter().map(|(s, (p, b))| (p, b, s)));
        for (path, buffer, subtask) in sealed {
            let size = buffer.len() as u64;
            self.put(None, &path, Bytes::from(buffer), true).await?;
            self.files.insert(
                path,
                PhysicalFile {
                    pool: (subtask, Scope::Shared),
                    buffer: None,
                    size,
                    synced: size,
                    put_attempted: true,
                    live_segments: 0,
                    live_bytes: 0,
                    closed: true,
                    owned: true,
                    reuse_allowed: true,
                    compacted: false,
                    lease: None,
                },
            );
        }
        for (old, new, l) in copies {
            if let Some(f) = self.files.get_mut(&l.path) {
                f.live_segments += 1;
                f.live_bytes += l.length;
            }
            self.uploaded
                .entry(l.subtask.clone())
                .or_default()
                .entry(stamp)
                .or_default()
                .push(new.clone());
            self.logical.insert(new.clone(), l);
            self.remap.insert(old, new);
        }
        Ok((segments, bytes_copied))
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

/// Whether `path` was created by a checkpoint at or after `watermark` (by its name).
pub(crate) fn created_at_or_after(path: &Path, watermark: CheckpointId) -> bool {
    created_by(path).is_some_and(|c| c >= watermark)
}
