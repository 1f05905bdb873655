//! Identities and state handles: what a checkpoint records about its files.
//!
//! Shared state is identified by its *physical* identity ([`SharedStateKey`]): the object path of
//! a whole file, or the logical-file id of a segment in a merged file. It is never identified by
//! the local (RocksDB) file name: that key collided under concurrent checkpoints and deleted a
//! completed checkpoint's file (FLINK-29913).

use std::fmt;

use object_store::path::Path;

/// A checkpoint id. Ids grow with trigger time (Flink's checkpoint ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct CheckpointId(pub u64);

impl fmt::Display for CheckpointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "chk-{}", self.0)
    }
}

/// A subtask's identity for file merging: (job, operator, subtask index, parallelism), as
/// FLIP-306's `SubtaskKey`. Stable across attempts; a rescale (new parallelism) gives a new key
/// and so a new managed directory.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubtaskKey {
    /// Job id.
    pub job: String,
    /// Operator id.
    pub operator: String,
    /// Subtask index, `0..parallelism`.
    pub subtask: u32,
    /// Parallelism of the operator.
    pub parallelism: u32,
}

impl SubtaskKey {
    /// A key.
    pub fn new(job: &str, operator: &str, subtask: u32, parallelism: u32) -> SubtaskKey {
        SubtaskKey {
            job: job.to_owned(),
            operator: operator.to_owned(),
            subtask,
            parallelism,
        }
    }

    /// The name of the subtask's shared managed directory,
    /// `job_<job>_op_<operator>_<subtask>_<parallelism>`, with every character outside
    /// `[a-zA-Z0-9-]` replaced by `_` (FLIP-306's layout).
    pub fn managed_dir_name(&self) -> String {
        sanitize(&format!(
            "job_{}_op_{}_{}_{}",
            self.job, self.operator, self.subtask, self.parallelism
        ))
    }
}

impl fmt::Display for SubtaskKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}#{}/{}",
            self.job, self.operator, self.subtask, self.parallelism
        )
    }
}

/// Replaces every character outside `[a-zA-Z0-9-]` with `_`, so ids are safe path segments.
pub(crate) fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Who may reference a state file: later checkpoints (shared, e.g. SST files of incremental
/// checkpoints) or only the checkpoint that wrote it (exclusive / private, e.g. CURRENT).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// May be reused by later checkpoints; deleted through the shared-state registry's
    /// watermark (or, when merged, the file-merging manager's logical-file tracking).
    Shared,
    /// Belongs to one checkpoint; discarded when that checkpoint is subsumed or aborted.
    Exclusive,
}

/// The id of a logical file (a segment of a merged physical file). Unique per manager
/// instance: `<manager nonce>-<sequence>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LogicalFileId(pub String);

impl fmt::Display for LogicalFileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A segment of a merged physical file (FLIP-306's `SegmentFileStateHandle`): the bytes
/// `[offset, offset + length)` of the object at `path`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SegmentHandle {
    /// The physical file.
    pub path: Path,
    /// Start of the segment in the physical file, bytes.
    pub offset: u64,
    /// Length of the segment, bytes.
    pub length: u64,
    /// The logical file's id: the segment's physical identity in the registry.
    pub logical_id: LogicalFileId,
    /// Scope of the segment.
    pub scope: Scope,
}

/// A whole object holding one state file (a checkpoint written without file merging).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FileHandle {
    /// The object.
    pub path: Path,
    /// Its size, bytes.
    pub size: u64,
    /// Scope of the file.
    pub scope: Scope,
}

/// A reference to shared state that an earlier checkpoint uploaded (Flink's
/// `PlaceholderStreamStateHandle`): the acknowledging task does not re-upload, and the registry
/// replaces it with the registered handle.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlaceholderHandle {
    /// Physical identity of the referenced state.
    pub key: SharedStateKey,
    /// Size of the referenced state, bytes.
    pub size: u64,
}

/// What a checkpoint records for one state file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StateHandle {
    /// A whole object.
    File(FileHandle),
    /// A segment of a merged object.
    Segment(SegmentHandle),
    /// Reuse of registered shared state; resolved by the registry on acknowledgement.
    Placeholder(PlaceholderHandle),
}

/// The physical identity of shared state: the registry's key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SharedStateKey {
    /// A whole object, by path.
    Object(String),
    /// A segment of a merged object, by logical-file id.
    Segment(LogicalFileId),
}

impl fmt::Display for SharedStateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SharedStateKey::Object(p) => write!(f, "object {p}"),
            SharedStateKey::Segment(id) => write!(f, "segment {id}"),
        }
    }
}

impl StateHandle {
    /// The physical identity of this handle (a placeholder's is the state it stands for).
    pub fn key(&self) -> SharedStateKey {
        match self {
            StateHandle::File(f) => SharedStateKey::Object(f.path.to_string()),
            StateHandle::Segment(s) => SharedStateKey::Segment(s.logical_id.clone()),
            StateHandle::Placeholder(p) => p.key.clone(),
        }
    }

    /// The object this handle reads from; `None` for a placeholder.
    pub fn path(&self) -> Option<&Path> {
        match self {
            StateHandle::File(f) => Some(&f.path),
            StateHandle::Segment(s) => Some(&s.path),
            StateHandle::Placeholder(_) => None,
        }
    }

    /// Logical size of the state, bytes.
    pub fn size(&self) -> u64 {
        match self {
            StateHandle::File(f) => f.size,
            StateHandle::Segment(s) => s.length,
            StateHandle::Placeholder(p) => p.size,
        }
    }

    /// A placeholder standing for this handle (for reuse by a later checkpoint).
    pub fn placeholder(&self) -> StateHandle {
        StateHandle::Placeholder(PlaceholderHandle {
            key: self.key(),
            size: self.size(),
        })
    }
}

impl fmt::Display for StateHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateHandle::File(h) => write!(f, "{} ({} bytes)", h.path, h.size),
            StateHandle::Segment(s) => write!(
                f,
                "{}[{}..{}] (segment {})",
                s.path,
                s.offset,
                s.offset + s.length,
                s.logical_id
            ),
            StateHandle::Placeholder(p) => write!(f, "placeholder for {}", p.key),
        }
    }
}

/// The checkpoint id that created an object, parsed from its name (`cp<id>-...`), which every
/// object this crate writes starts with. Used by the orphan sweep's in-flight watermark.
pub fn created_by(path: &Path) -> Option<CheckpointId> {
    let name = path.filename()?;
    let rest = name.strip_prefix("cp")?;
    let digits = rest.split('-').next()?;
    digits.parse().ok().map(CheckpointId)
}
