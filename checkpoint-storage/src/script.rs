//! Checkpoint scenario replay: a scripted sequence of events run against the job manager's
//! [`JobCheckpoints`](crate::JobCheckpoints) (shared-state registry and completed-checkpoint
//! store) and each task's [`IncrementalSnapshotTracker`](crate::IncrementalSnapshotTracker)
//! (the incremental upload plan), with no synthetic job and no I/O. After every event it
//! reports which objects exist and which checkpoints are retained,
//! so a retention question ("when is this file deleted, and why?") has an exact answer.
//!
//! The model, as Flink 1.20 (`SharedStateRegistryImpl`, `CompletedCheckpointStore`,
//! `RocksIncrementalSnapshotStrategy`):
//!
//! - a task's state files are named by the script; every local file is shared state (an SST
//!   file, whatever its name), uploaded as a new object or reused from an earlier one;
//! - shared objects are deleted only when the registry drops them (after a completion, below
//!   the watermark of retained and pending checkpoints), never on abort;
//! - checkpoint `n` also owns `cp<n>.private` (written at its first acknowledgement) and
//!   `cp<n>.meta` (written when it completes), deleted when it is subsumed or aborted;
//! - a task deletes its own uploads that were never acknowledged when their checkpoint fails
//!   on it, is aborted, or the job fails over (the cleanup of Flink's `AsyncSnapshotCallable`);
//! - savepoints are self-contained and owned by the user: the job never deletes their files,
//!   unless a job restored from one in CLAIM mode subsumes it.
//!
//! Events are numbered from 0 in script order; an event that cannot apply is a
//! [`ScriptError`] naming it.
//!
//! Map: `events` is the script as deserialised, `output` what a replay reports, `engine` the
//! state the events act on (it imports `events` and `output`, nothing imports it but this
//! module).

mod engine;
mod events;
mod output;

pub use events::{Event, Script, ScriptRestoreMode, StoredCheckpoint};
pub use output::{Deletion, PlanSummary, Replay, ScriptError, Step};

use std::collections::BTreeSet;

use engine::{Engine, StepLog};

/// Replays `script`. Pure: O(events x (objects + registry entries)).
///
/// # Errors
/// [`ScriptError`] for the first event that cannot apply, naming it.
pub fn replay(script: &Script) -> Result<Replay, ScriptError> {
    let mut tasks: BTreeSet<u32> = script.events.iter().flat_map(Event::tasks).collect();
    tasks.insert(0);
    let mut engine = Engine::new(script, &tasks);
    let mut steps = Vec::with_capacity(script.events.len());
    for (i, event) in script.events.iter().enumerate() {
        engine.step = StepLog::default();
        engine.apply(event).map_err(|e| e.at(i, event.op()))?;
        let log = std::mem::take(&mut engine.step);
        steps.push(Step {
            event: i,
            exists: engine.exists.iter().cloned().collect(),
            retained: engine.jm.retained().map(|c| c.id.0).collect(),
            plan: log.plan,
            created: log.created,
            deleted: log.deleted,
        });
    }
    Ok(Replay { steps })
}
