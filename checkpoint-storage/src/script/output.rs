//! What a replay reports: a step per event, and the error of an event that cannot apply.

use std::collections::BTreeMap;

use crate::error::CheckpointError;

/// An event that cannot apply.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The job manager refused the event (unknown or not pending checkpoint, missing
    /// acknowledgement, reference to state the registry dropped, ...).
    #[error("event {event} ({op}): {source}")]
    Refused {
        /// The event's index, from 0.
        event: usize,
        /// Its `op`.
        op: &'static str,
        /// What the job manager said (boxed: object-store errors are large).
        #[source]
        source: Box<CheckpointError>,
    },
    /// The event contradicts the scenario so far (e.g. reusing an object never uploaded, a
    /// snapshot without a name for a file it uploads).
    #[error("event {event} ({op}): {reason}")]
    Invalid {
        /// The event's index, from 0.
        event: usize,
        /// Its `op`.
        op: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// What a snapshot event's upload plan decided, by local name.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PlanSummary {
    /// Local files reused: local name -> object referenced.
    pub reuse: BTreeMap<String, String>,
    /// Local files uploaded.
    pub upload: Vec<String>,
}

/// An object deleted by an event, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Deletion {
    /// The object.
    pub object: String,
    /// Why (e.g. "registry: last used by chk-1, below the watermark chk-2").
    pub why: String,
}

/// The state after one event.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Step {
    /// The event's index, from 0.
    pub event: usize,
    /// The objects that exist, sorted.
    pub exists: Vec<String>,
    /// The retained checkpoints' ids, oldest first.
    pub retained: Vec<u64>,
    /// The upload plan (snapshot events only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanSummary>,
    /// Objects the event created (not in the JSON contract: for text output).
    #[serde(skip)]
    pub created: Vec<String>,
    /// Objects the event deleted, with the reason (not in the JSON contract).
    #[serde(skip)]
    pub deleted: Vec<Deletion>,
}

/// The replay of a whole script: `{"steps": [...]}`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Replay {
    /// One step per event.
    pub steps: Vec<Step>,
}
