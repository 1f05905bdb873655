//! [`TaskFailure`], why a task failed as failure handling sees it; below the scheduler, failure
//! handling and speculative execution, which all pass it.

use conflux_graph::IntermediateResultPartitionId;

use crate::api::FailureCause;

/// Why a task failed, as failure handling sees it: a cause the runtime reported, or a slot
/// request that timed out (Flink fails the bulk's tasks with `NoResourceAvailableException`).
#[derive(Clone, Debug)]
pub(crate) enum TaskFailure {
    /// Reported by the runtime (or a lost TaskManager).
    Reported(FailureCause),
    /// The region's slot request could not be served within `slot.request.timeout`; why.
    NoResourceAvailable(String),
}

impl TaskFailure {
    /// The partition a partition-not-found failure names.
    pub(crate) fn partition(&self) -> Option<IntermediateResultPartitionId> {
        match self {
            TaskFailure::Reported(FailureCause::PartitionNotFound(p)) => Some(*p),
            _ => None,
        }
    }
}
