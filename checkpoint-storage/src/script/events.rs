//! The script: its limits and events, as deserialised from JSON.

use std::collections::BTreeMap;

use crate::registry::RestoreMode;

fn one() -> usize {
    1
}

/// A scripted scenario: `{"retained_checkpoints": 1, "max_concurrent_checkpoints": 1,
/// "events": [...]}` (both limits optional, default 1).
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Completed checkpoints retained (Flink's `state.checkpoints.num-retained`), at least 1.
    #[serde(default = "one")]
    pub retained_checkpoints: usize,
    /// Most checkpoints pending at once (`execution.checkpointing.max-concurrent-checkpoints`);
    /// a trigger beyond it is an error.
    #[serde(default = "one")]
    pub max_concurrent_checkpoints: usize,
    /// The events, in order.
    pub events: Vec<Event>,
}

/// How a restore treats the snapshot's files (Flink's claim modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptRestoreMode {
    /// [`RestoreMode::Claim`].
    Claim,
    /// [`RestoreMode::NoClaim`].
    NoClaim,
    /// [`RestoreMode::Legacy`].
    Legacy,
}

impl From<ScriptRestoreMode> for RestoreMode {
    fn from(mode: ScriptRestoreMode) -> RestoreMode {
        match mode {
            ScriptRestoreMode::Claim => RestoreMode::Claim,
            ScriptRestoreMode::NoClaim => RestoreMode::NoClaim,
            ScriptRestoreMode::Legacy => RestoreMode::Legacy,
        }
    }
}

/// One retained checkpoint of a [`Event::JmFailover`] store: task `task`'s shared state
/// (local name -> object).
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredCheckpoint {
    /// The checkpoint id.
    pub checkpoint: u64,
    /// The task (default 0).
    #[serde(default)]
    pub task: u32,
    /// Its shared state: local name -> object.
    #[serde(default)]
    pub shared: BTreeMap<String, String>,
}

/// One scripted event, tagged by `op`. `task` (default 0) names the task an event concerns;
/// events of the job manager ignore it.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Event {
    /// The job manager triggers checkpoint `checkpoint` on every task of the script.
    Trigger {
        /// The checkpoint.
        checkpoint: u64,
    },
    /// Task `task` uploads local file `local` for `checkpoint` as the new object `remote`.
    Upload {
        /// The checkpoint.
        checkpoint: u64,
        /// The task.
        #[serde(default)]
        task: u32,
        /// Local file name.
        local: String,
        /// New object name.
        remote: String,
    },
    /// Task `task` references `remote`, uploaded before, for local file `local` (a
    /// placeholder the registry resolves at acknowledgement).
    Reuse {
        /// The checkpoint.
        checkpoint: u64,
        /// The task.
        #[serde(default)]
        task: u32,
        /// Local file name.
        local: String,
        /// The object reused.
        remote: String,
    },
    /// Task `task` snapshots `local_files`: the incremental upload plan reuses what the last
    /// confirmed checkpoint has and uploads the rest as the objects `new_remote` names.
    Snapshot {
        /// The checkpoint.
        checkpoint: u64,
        /// The task.
        #[serde(default)]
        task: u32,
        /// The local files of the snapshot.
        local_files: Vec<String>,
        /// Object name for each local file the plan uploads.
        #[serde(default)]
        new_remote: BTreeMap<String, String>,
    },
    /// Task `task`'s snapshot of `checkpoint` fails: it deletes its unacknowledged uploads and
    /// declines, and the job manager aborts the checkpoint.
    UploadFails {
        /// The checkpoint.
        checkpoint: u64,
        /// The task.
        #[serde(default)]
        task: u32,
    },
    /// Task `task` acknowledges `checkpoint` with what it uploaded and reused.
    Ack {
        /// The checkpoint.
        checkpoint: u64,
        /// The task.
        #[serde(default)]
        task: u32,
    },
    /// The job manager completes `checkpoint` (every task acknowledged).
    Complete {
        /// The checkpoint.
        checkpoint: u64,
    },
    /// The job manager aborts pending `checkpoint`.
    Abort {
        /// The checkpoint.
        checkpoint: u64,
    },
    /// Task `task` learns that `checkpoint` completed: it becomes the task's base for reuse.
    NotifyComplete {
        /// The checkpoint.
        checkpoint: u64,
        /// The task.
        #[serde(default)]
        task: u32,
    },
    /// Task `task` learns that `checkpoint` was aborted.
    NotifyAbort {
        /// The checkpoint.
        checkpoint: u64,
        /// The task.
        #[serde(default)]
        task: u32,
    },
    /// A savepoint `checkpoint` is written as the objects `files` (self-contained, owned by the
    /// user).
    Savepoint {
        /// The savepoint's id.
        checkpoint: u64,
        /// Its objects.
        files: Vec<String>,
    },
    /// A new run of the job starts from snapshot `checkpoint` in `mode`; task `task` restores
    /// `shared` (local name -> object), the other tasks nothing.
    Restore {
        /// The snapshot's id.
        checkpoint: u64,
        /// How its files are treated.
        mode: ScriptRestoreMode,
        /// The task.
        #[serde(default)]
        task: u32,
        /// Its shared state.
        #[serde(default)]
        shared: BTreeMap<String, String>,
    },
    /// The job manager fails over: pending checkpoints are lost, the registry is rebuilt from
    /// `store` (the retained checkpoints recovered), and the tasks restart from the latest.
    JmFailover {
        /// The recovered retained checkpoints.
        store: Vec<StoredCheckpoint>,
    },
    /// The job fails over (the job manager stays): pending checkpoints are aborted and the
    /// tasks restart from the latest retained checkpoint.
    JobFailover,
}

impl Event {
    /// The event's `op` name, as in the script.
    pub fn op(&self) -> &'static str {
        match self {
            Event::Trigger { .. } => "trigger",
            Event::Upload { .. } => "upload",
            Event::Reuse { .. } => "reuse",
            Event::Snapshot { .. } => "snapshot",
            Event::UploadFails { .. } => "upload_fails",
            Event::Ack { .. } => "ack",
            Event::Complete { .. } => "complete",
            Event::Abort { .. } => "abort",
            Event::NotifyComplete { .. } => "notify_complete",
            Event::NotifyAbort { .. } => "notify_abort",
            Event::Savepoint { .. } => "savepoint",
            Event::Restore { .. } => "restore",
            Event::JmFailover { .. } => "jm_failover",
            Event::JobFailover => "job_failover",
        }
    }

    /// The tasks the event names (the script's tasks are those named anywhere, and 0).
    pub(super) fn tasks(&self) -> Vec<u32> {
        match self {
            Event::Upload { task, .. }
            | Event::Reuse { task, .. }
            | Event::Snapshot { task, .. }
            | Event::UploadFails { task, .. }
            | Event::Ack { task, .. }
            | Event::NotifyComplete { task, .. }
            | Event::NotifyAbort { task, .. }
            | Event::Restore { task, .. } => vec![*task],
            Event::JmFailover { store } => store.iter().map(|s| s.task).collect(),
            Event::Trigger { .. }
            | Event::Complete { .. }
            | Event::Abort { .. }
            | Event::Savepoint { .. }
            | Event::JobFailover => Vec::new(),
        }
    }
}
