//! Incremental upload plans for a RocksDB-like local snapshot directory.
//!
//! Flink uploads every `.sst` file as shared state (reused when the previous confirmed
//! checkpoint has it) and every other file in full, every checkpoint, as private state. The
//! MANIFEST is append-only and grows until RocksDB rolls it (1 GiB by default), so those "misc"
//! bytes grow with the checkpoint count (a Flink 1.13 production report). Here:
//!
//! - SST files are shared, reused by placeholder only from the **last confirmed** checkpoint
//!   (FLINK-25395), minus files a later pending checkpoint re-uploaded (the pruning of Flink's
//!   `PreviousSnapshot`: a re-upload's completion may delete the earlier copy);
//! - the MANIFEST is uploaded as **appended ranges**: only `[previous length, current length)`
//!   is new, the earlier pieces are reused like SST files; a new MANIFEST number (a roll, or a
//!   reopen after restore) or a chain of [`UploadPlanConfig::max_manifest_pieces`] pieces starts
//!   a new chain with one full upload; [`ManifestPolicy::Full`] uploads it whole instead, bounded
//!   by the roll threshold the DB is configured with ([`DEFAULT_MANIFEST_ROLL_BYTES`]);
//! - small mutable files (CURRENT, OPTIONS, anything unknown) are uploaded in full as private
//!   state;
//! - info LOG files and write-ahead logs (`*.log`, taken after a flush) are never uploaded.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::error::{CheckpointError, Result};
use crate::handle::{CheckpointId, Scope, StateHandle, SubtaskKey};
use crate::merging::FileMergingSnapshotManager;
use crate::registry::SubtaskState;
use crate::storage::CheckpointStorage;

/// Recommended MANIFEST roll threshold (RocksDB's `max_manifest_file_size`) for checkpointed
/// databases: 4 MiB, as RocksDB-Cloud hard-codes, against RocksDB's 1 GiB default. A roll
/// writes a compact MANIFEST, which starts a new chain with a small full upload.
pub const DEFAULT_MANIFEST_ROLL_BYTES: u64 = 4 << 20;

/// Default longest MANIFEST chain before a full upload restarts it: a backstop for databases
/// that roll late. With the recommended roll threshold and appends of at least 1 KiB per
/// checkpoint the roll comes first, so misc bytes stay flat: a restart re-uploads the whole
/// MANIFEST, whose size grows until the roll.
pub const DEFAULT_MAX_MANIFEST_PIECES: usize = 4096;

/// What a local file is, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum FileClass {
    /// `*.sst`: immutable data, shared and reusable.
    Sst,
    /// `MANIFEST-<n>`: append-only metadata.
    Manifest,
    /// `CURRENT`, `OPTIONS-<n>` and unknown files: small and mutable, uploaded in full.
    SmallMutable,
    /// `LOG`, `LOG.old.*`, `*.log`: never uploaded.
    Log,
}

/// Classifies a local file by its name.
pub fn classify(name: &str) -> FileClass {
    if name.ends_with(".sst") {
        FileClass::Sst
    } else if name.starts_with("MANIFEST-") {
        FileClass::Manifest
    } else if name == "LOG" || name.starts_with("LOG.") || name.ends_with(".log") {
        FileClass::Log
    } else {
        FileClass::SmallMutable
    }
}

/// A file of a local snapshot directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalFile {
    /// File name.
    pub name: String,
    /// Size, bytes (for the MANIFEST, its valid length).
    pub size: u64,
}

/// The files of a local (RocksDB native checkpoint) snapshot directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalSnapshot {
    /// The files, by name.
    pub files: Vec<LocalFile>,
}

impl LocalSnapshot {
    /// Lists the regular files of `dir`, sorted by name.
    ///
    /// # Errors
    /// [`CheckpointError::Io`] when the directory cannot be read.
    pub fn scan(dir: &std::path::Path) -> Result<LocalSnapshot> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| CheckpointError::io(dir, e))? {
            let entry = entry.map_err(|e| CheckpointError::io(dir, e))?;
            let meta = entry
                .metadata()
                .map_err(|e| CheckpointError::io(entry.path(), e))?;
            if meta.is_file() {
                files.push(LocalFile {
                    name: entry.file_name().to_string_lossy().into_owned(),
                    size: meta.len(),
                });
            }
        }
        files.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(LocalSnapshot { files })
    }
}

/// How the MANIFEST is uploaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum ManifestPolicy {
    /// Only the bytes appended since the confirmed base (default).
    AppendedRanges,
    /// The whole file, as private state, every checkpoint (Flink's behaviour; bounded only by
    /// the DB's roll threshold).
    Full,
}

/// Options of upload planning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UploadPlanConfig {
    /// MANIFEST handling.
    pub manifest: ManifestPolicy,
    /// Longest MANIFEST chain kept before a full upload (bounds handles per checkpoint).
    pub max_manifest_pieces: usize,
}

impl Default for UploadPlanConfig {
    fn default() -> UploadPlanConfig {
        UploadPlanConfig {
            manifest: ManifestPolicy::AppendedRanges,
            max_manifest_pieces: DEFAULT_MAX_MANIFEST_PIECES,
        }
    }
}

/// A piece of an uploaded MANIFEST: bytes `range` of the file are in `handle`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestPiece {
    /// Byte range of the MANIFEST.
    pub range: Range<u64>,
    /// Where those bytes are.
    pub handle: StateHandle,
}

/// The pieces of one MANIFEST, contiguous from offset 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestChain {
    /// MANIFEST file name.
    pub name: String,
    /// Pieces in order.
    pub pieces: Vec<ManifestPiece>,
    /// Offset from which the recording checkpoint uploaded bytes itself (the length when it
    /// only reused pieces; 0 for a full upload).
    pub uploaded_from: u64,
}

impl ManifestChain {
    /// Bytes covered.
    pub fn len(&self) -> u64 {
        self.pieces.last().map_or(0, |p| p.range.end)
    }

    /// Whether no byte is covered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One decision of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanEntry {
    /// Reference an earlier upload (the handle to record; already marked used).
    Reuse {
        /// Local file name.
        name: String,
        /// The handle.
        handle: StateHandle,
    },
    /// Upload the whole file.
    Upload {
        /// Local file name.
        name: String,
        /// Its scope: shared for SST files, exclusive for small mutable files.
        scope: Scope,
        /// Its size, bytes.
        size: u64,
    },
    /// Upload bytes `range` of the MANIFEST after the reused pieces `base` (contiguous from 0).
    ManifestRange {
        /// MANIFEST file name.
        name: String,
        /// Reused pieces.
        base: Vec<ManifestPiece>,
        /// New bytes to upload (may be empty).
        range: Range<u64>,
    },
    /// Not uploaded (logs).
    Skip {
        /// Local file name.
        name: String,
    },
}

/// The decisions for one local snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadPlan {
    /// The checkpoint planned.
    pub checkpoint: CheckpointId,
    /// One entry per local file, by name.
    pub entries: Vec<PlanEntry>,
}

impl UploadPlan {
    /// Bytes the plan uploads: `(shared SST bytes, misc bytes)`; misc is everything that is not
    /// an SST file (MANIFEST ranges and small mutable files).
    pub fn upload_bytes(&self) -> (u64, u64) {
        let (mut sst, mut misc) = (0, 0);
        for e in &self.entries {
            match e {
                PlanEntry::Upload { name, size, .. } => {
                    if classify(name) == FileClass::Sst {
                        sst += size;
                    } else {
                        misc += size;
                    }
                }
                PlanEntry::ManifestRange { range, .. } => misc += range.end - range.start,
                PlanEntry::Reuse { .. } | PlanEntry::Skip { .. } => {}
            }
        }
        (sst, misc)
    }
}

/// One file as a checkpoint recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedFile {
    /// Its handle.
    pub handle: StateHandle,
    /// Uploaded by this checkpoint (not reused).
    pub uploaded: bool,
}

/// What one checkpoint uploaded or reused, for planning later ones (Flink's
/// `uploadedSstFiles` entry).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SnapshotRecord {
    /// SST files by local name.
    pub sst: BTreeMap<String, RecordedFile>,
    /// The MANIFEST chain.
    pub manifest: Option<ManifestChain>,
}

/// Per backend instance (subtask): the uploads of recent checkpoints and the last confirmed
/// one, from which alone reuse is allowed.
#[derive(Clone, Debug, Default)]
pub struct IncrementalSnapshotTracker {
    uploaded: BTreeMap<CheckpointId, SnapshotRecord>,
    last_completed: Option<CheckpointId>,
}

impl IncrementalSnapshotTracker {
    /// Nothing uploaded yet: the first plan uploads everything.
    pub fn new() -> IncrementalSnapshotTracker {
        IncrementalSnapshotTracker::default()
    }

    /// After a restore in CLAIM mode (or of the job's own checkpoint): the restored checkpoint
    /// is the confirmed base. After a NO_CLAIM restore use [`Self::new`] instead: nothing of the
    /// snapshot may be referenced.
    pub fn restored(
        checkpoint: CheckpointId,
        record: SnapshotRecord,
    ) -> IncrementalSnapshotTracker {
        let mut t = IncrementalSnapshotTracker::default();
        t.uploaded.insert(checkpoint, record);
        t.last_completed = Some(checkpoint);
        t
    }

    /// The last confirmed checkpoint.
    pub fn last_completed(&self) -> Option<CheckpointId> {
        self.last_completed
    }

    /// Records what `checkpoint` uploaded and reused, after its uploads succeeded.
    pub fn record(&mut self, checkpoint: CheckpointId, record: SnapshotRecord) {
        self.uploaded.insert(checkpoint, record);
    }

    /// `checkpoint` completed: it becomes the base if it is newer and was recorded here (a
    /// savepoint's completion does not move the base, FLINK-23949); older records go.
    pub fn notify_complete(&mut self, checkpoint: CheckpointId) {
        if self.last_completed.is_some_and(|l| checkpoint <= l)
            || !self.uploaded.contains_key(&checkpoint)
        {
            return;
        }
        self.uploaded = self.uploaded.split_off(&checkpoint);
        self.last_completed = Some(checkpoint);
    }

    /// `checkpoint` aborted: its record goes.
    pub fn notify_aborted(&mut self, checkpoint: CheckpointId) {
        if Some(checkpoint) != self.last_completed {
            self.uploaded.remove(&checkpoint);
        }
    }

    /// The reusable base: the last confirmed checkpoint's files, minus SST files a later
    /// pending checkpoint uploaded again, minus the MANIFEST pieces covering bytes a later
    /// pending checkpoint uploaded itself. (A reuse that compaction redirected to a copy is a reuse: the
    /// manager redirects this base's handles the same way.)
    pub fn base(&self) -> SnapshotRecord {
        let Some(last) = self.last_completed else {
            return SnapshotRecord::default();
        };
        let Some(base) = self.uploaded.get(&last) else {
            return SnapshotRecord::default();
        };
        let mut base = base.clone();
        for (_, later) in self
            .uploaded
            .range(CheckpointId(last.0.saturating_add(1))..)
        {
            base.sst
                .retain(|name, _| later.sst.get(name).is_none_or(|f| !f.uploaded));
            // A later checkpoint that uploaded bytes the base chain covers did not reuse those
            // pieces (it planned from an older base): its completion may delete them. Keep only
            // the prefix it reused.
            if let (Some(b), Some(l)) = (&mut base.manifest, &later.manifest) {
                if l.name == b.name && l.uploaded_from < b.len() {
                    b.pieces.retain(|p| p.range.end <= l.uploaded_from);
                }
            }
        }
        base
    }

    /// Plans `checkpoint` for the files of `snapshot`. `reuse` is asked for every handle of the
    /// base the snapshot still has (normally [`FileMergingSnapshotManager::try_reuse`]): it
    /// returns the handle to record, or `None` to upload again. O(files).
    pub fn plan(
        &self,
        checkpoint: CheckpointId,
        snapshot: &LocalSnapshot,
        config: &UploadPlanConfig,
        mut reuse: impl FnMut(&StateHandle) -> Option<StateHandle>,
    ) -> UploadPlan {
        let base = self.base();
        let mut entries = Vec::with_capacity(snapshot.files.len());
        for file in &snapshot.files {
            let name = file.name.clone();
            let entry = match classify(&file.name) {
                FileClass::Log => PlanEntry::Skip { name },
                FileClass::SmallMutable => PlanEntry::Upload {
                    name,
                    scope: Scope::Exclusive,
                    size: file.size,
                },
                FileClass::Sst => match base.sst.get(&file.name).and_then(|f| reuse(&f.handle)) {
                    Some(handle) => PlanEntry::Reuse { name, handle },
                    None => PlanEntry::Upload {
                        name,
                        scope: Scope::Shared,
                        size: file.size,
                    },
                },
                FileClass::Manifest => match config.manifest {
                    ManifestPolicy::Full => PlanEntry::Upload {
                        name,
                        scope: Scope::Exclusive,
                        size: file.size,
                    },
                    ManifestPolicy::AppendedRanges => {
                        let reused = base
                            .manifest
                            .as_ref()
                            .filter(|c| {
                                c.name == file.name
                                    && c.len() <= file.size
                                    && c.pieces.len() < config.max_manifest_pieces
                            })
                            .map(|c| {
                                // The longest reusable prefix: every piece asked is used (asking
                                // marks it used), and the rest is uploaded again.
                                let mut prefix = Vec::new();
                                for p in &c.pieces {
                                    match reuse(&p.handle) {
                                        Some(handle) => prefix.push(ManifestPiece {
                                            range: p.range.clone(),
                                            handle,
                                        }),
                                        None => break,
                                    }
                                }
                                prefix
                            })
                            .unwrap_or_default();
                        let start = reused.last().map_or(0, |p| p.range.end);
                        PlanEntry::ManifestRange {
                            name,
                            base: reused,
                            range: start..file.size,
                        }
                    }
                },
            };
            entries.push(entry);
        }
        UploadPlan {
            checkpoint,
            entries,
        }
    }
}

/// The shared-state name of a MANIFEST piece: `<name>@<start>-<end>`.
pub fn manifest_piece_name(name: &str, range: &Range<u64>) -> String {
    format!("{name}@{}-{}", range.start, range.end)
}

fn parse_piece_name(name: &str) -> Option<(&str, Range<u64>)> {
    let (file, range) = name.rsplit_once('@')?;
    let (a, b) = range.split_once('-')?;
    Some((file, a.parse().ok()?..b.parse().ok()?))
}

/// Executes `plan` for `subtask` through `manager`: uploads what it says, reading local bytes
/// with `read(name, range)`, and returns the state to acknowledge and the record for the
/// tracker. Call [`FileMergingSnapshotManager::finish_snapshot`] before acknowledging.
///
/// # Errors
/// What `read` or the manager's writes return ([`CheckpointError::Aborted`] included).
pub async fn execute_plan(
    plan: &UploadPlan,
    subtask: &SubtaskKey,
    manager: &mut FileMergingSnapshotManager,
    mut read: impl FnMut(&str, Range<u64>) -> Result<Vec<u8>>,
) -> Result<(SubtaskState, SnapshotRecord)> {
    let cp = plan.checkpoint;
    let mut state = SubtaskState::default();
    let mut record = SnapshotRecord::default();
    for entry in &plan.entries {
        match entry {
            PlanEntry::Skip { .. } => {}
            PlanEntry::Reuse { name, handle } => {
                // The real handle, not a placeholder: a compaction copy is new to the registry,
                // and a known key is registered as a reuse either way.
                state.shared.push((name.clone(), handle.clone()));
                record.sst.insert(
                    name.clone(),
                    RecordedFile {
                        handle: handle.clone(),
                        uploaded: false,
                    },
                );
            }
            PlanEntry::Upload { name, scope, size } => {
                let data = read(name, 0..*size)?;
                let handle = manager.write_state(subtask, cp, *scope, &data).await?;
                match scope {
                    Scope::Shared => {
                        state.shared.push((name.clone(), handle.clone()));
                        record.sst.insert(
                            name.clone(),
                            RecordedFile {
                                handle,
                                uploaded: true,
                            },
                        );
                    }
                    Scope::Exclusive => state.private.push((name.clone(), handle)),
                }
            }
            PlanEntry::ManifestRange { name, base, range } => {
                let mut pieces = base.clone();
                for p in base {
                    state
                        .shared
                        .push((manifest_piece_name(name, &p.range), p.handle.clone()));
                }
                if range.end > range.start {
                    let data = read(name, range.clone())?;
                    let handle = manager
                        .write_state(subtask, cp, Scope::Shared, &data)
                        .await?;
                    state
                        .shared
                        .push((manifest_piece_name(name, range), handle.clone()));
                    pieces.push(ManifestPiece {
                        range: range.clone(),
                        handle,
                    });
                }
                record.manifest = Some(ManifestChain {
                    name: name.clone(),
                    pieces,
                    uploaded_from: range.start,
                });
            }
        }
    }
    Ok((state, record))
}

/// Reads back every local file of a subtask's acknowledged (registered) state: SST and small
/// files whole, the MANIFEST reassembled from its pieces. Returns name -> bytes.
///
/// # Errors
/// [`CheckpointError::Missing`] or [`CheckpointError::Corrupt`] when a handle cannot be read,
/// [`CheckpointError::Corrupt`] when MANIFEST pieces are not contiguous.
pub async fn restore_files(
    storage: &CheckpointStorage,
    state: &SubtaskState,
) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut out = BTreeMap::new();
    type Pieces = Vec<(Range<u64>, Vec<u8>)>;
    let mut manifests: BTreeMap<String, Pieces> = BTreeMap::new();
    for (name, handle) in state.shared.iter().chain(state.private.iter()) {
        let bytes = storage.read_handle(handle).await?;
        match parse_piece_name(name) {
            Some((file, range)) if classify(file) == FileClass::Manifest => {
                manifests
                    .entry(file.to_owned())
                    .or_default()
                    .push((range, bytes.to_vec()));
            }
            _ => {
                out.insert(name.clone(), bytes.to_vec());
            }
        }
    }
    for (name, mut pieces) in manifests {
        pieces.sort_by_key(|(r, _)| r.start);
        let mut content = Vec::new();
        for (range, bytes) in pieces {
            if range.start != content.len() as u64 || range.end - range.start != bytes.len() as u64
            {
                return Err(CheckpointError::Corrupt {
                    handle: manifest_piece_name(&name, &range),
                    reason: format!("piece does not continue at byte {}", content.len()),
                });
            }
            content.extend_from_slice(&bytes);
        }
        out.insert(name, content);
    }
    Ok(out)
}
