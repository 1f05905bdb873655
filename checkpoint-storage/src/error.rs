//! The one error type of `conflux-checkpoint`.

use crate::handle::{CheckpointId, SharedStateKey};

/// Errors of checkpoint storage. Each message names the object, checkpoint or directory involved.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The object store refused or failed a request.
    #[error("object store {operation} of {path}: {source}")]
    Store {
        /// The request: `put`, `get`, `delete`, `list` or `head`.
        operation: &'static str,
        /// The object (or prefix) requested.
        path: String,
        /// What the store said.
        #[source]
        source: object_store::Error,
    },
    /// A state object expected by a handle does not exist (e.g. deleted too early).
    #[error("state object {path} is missing")]
    Missing {
        /// The object.
        path: String,
    },
    /// A handle points outside its object, or bytes read back are not what was written.
    #[error("state handle {handle} is corrupt: {reason}")]
    Corrupt {
        /// The handle, as printed by its `Display`.
        handle: String,
        /// What is wrong.
        reason: String,
    },
    /// Storage configuration is invalid (e.g. an `http://` S3 endpoint without `allow_http`).
    #[error("storage configuration: {0}")]
    Config(String),
    /// The checkpoint was aborted: its uploads are cancelled (FLINK-8871 semantics).
    #[error("checkpoint {checkpoint} was aborted")]
    Aborted {
        /// The aborted checkpoint.
        checkpoint: CheckpointId,
    },
    /// A checkpoint acknowledged a placeholder for state the registry does not know (Flink:
    /// "attempt to reference unknown state"); the acknowledgement is refused.
    #[error("checkpoint {checkpoint} references unknown shared state {key}")]
    UnknownSharedState {
        /// The checkpoint whose acknowledgement carried the placeholder.
        checkpoint: CheckpointId,
        /// The physical identity referenced.
        key: SharedStateKey,
    },
    /// Two different handles claim the same physical identity.
    #[error("shared state {key} registered twice with different handles")]
    ConflictingHandle {
        /// The physical identity.
        key: SharedStateKey,
    },
    /// An event names a checkpoint in a state where it cannot apply (unknown, already completed,
    /// not fully acknowledged, out of order).
    #[error("checkpoint {checkpoint}: {reason}")]
    InvalidCheckpoint {
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// Why the event cannot apply.
        reason: String,
    },
    /// A placeholder cannot be read: it must be resolved by the registry first.
    #[error("placeholder {0} cannot be read; resolve it through the shared-state registry")]
    UnresolvedPlaceholder(SharedStateKey),
    /// A local file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// No configured local directory is usable (missing, not a directory, unwritable or full).
    #[error("no usable local directory among {0}")]
    NoUsableDirectory(String),
    /// An internal invariant broke: this is a bug in `conflux-checkpoint`.
    #[error("internal error (a bug): {0}")]
    Internal(String),
}

impl CheckpointError {
    pub(crate) fn store(
        operation: &'static str,
        path: impl std::fmt::Display,
        source: object_store::Error,
    ) -> CheckpointError {
        match source {
            object_store::Error::NotFound { .. } if operation != "list" => {
                CheckpointError::Missing {
                    path: path.to_string(),
                }
            }
            source => CheckpointError::Store {
                operation,
                path: path.to_string(),
                source,
            },
        }
    }

    pub(crate) fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> CheckpointError {
        CheckpointError::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}

/// Result of this crate.
pub type Result<T, E = CheckpointError> = std::result::Result<T, E>;
