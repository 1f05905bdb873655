//! Shuffle descriptors, and which one a consumer gets (Flink's
//! `TaskDeploymentDescriptorFactory.getConsumedPartitionShuffleDescriptor`).

use serde::{Deserialize, Serialize};

use conflux_graph::ResultPartitionType;

use crate::{ExecutionAttemptId, ResultPartitionId, TaskManagerLocation};

/// Where a consumer finds a partition it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ShuffleDescriptor {
    /// The producer is deployed: connect to its TaskManager (Flink's `NettyShuffleDescriptor`).
    Known {
        /// The partition, with the producing attempt.
        partition: ResultPartitionId,
        /// The producer's TaskManager and data address.
        producer_location: TaskManagerLocation,
        /// Distinguishes connections to one address (Flink's `connectionIndex`, one per result).
        connection_index: u32,
    },
    /// Not deployed yet; the consumer learns the location later through a partition update
    /// (Flink's `UnknownShuffleDescriptor`). Only batch jobs allow it.
    Unknown {
        /// The partition, with the producing attempt.
        partition: ResultPartitionId,
    },
}

impl ShuffleDescriptor {
    /// The partition this describes.
    pub fn partition(&self) -> ResultPartitionId {
        match self {
            ShuffleDescriptor::Known { partition, .. }
            | ShuffleDescriptor::Unknown { partition } => *partition,
        }
    }

    /// Whether the location is still unknown.
    pub fn is_unknown(&self) -> bool {
        matches!(self, ShuffleDescriptor::Unknown { .. })
    }
}

/// The state of an execution attempt (Flink's `ExecutionState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ExecutionState {
    /// Not scheduled yet.
    Created,
    /// Waiting for or holding a slot.
    Scheduled,
    /// Being deployed to its TaskManager.
    Deploying,
    /// Restoring state before running.
    Initializing,
    /// Running.
    Running,
    /// Done, all output produced.
    Finished,
    /// Being cancelled.
    Canceling,
    /// Cancelled.
    Canceled,
    /// Failed.
    Failed,
}

impl ExecutionState {
    /// The upper-case name Flink uses (`RUNNING`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionState::Created => "CREATED",
            ExecutionState::Scheduled => "SCHEDULED",
            ExecutionState::Deploying => "DEPLOYING",
            ExecutionState::Initializing => "INITIALIZING",
            ExecutionState::Running => "RUNNING",
            ExecutionState::Finished => "FINISHED",
            ExecutionState::Canceling => "CANCELING",
            ExecutionState::Canceled => "CANCELED",
            ExecutionState::Failed => "FAILED",
        }
    }

    /// FINISHED, CANCELED and FAILED.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ExecutionState::Finished | ExecutionState::Canceled | ExecutionState::Failed
        )
    }

    /// States in which a producer's registered partition can be consumed: SCHEDULED, DEPLOYING,
    /// INITIALIZING, RUNNING, FINISHED.
    fn has_consumable_partitions(self) -> bool {
        matches!(
            self,
            ExecutionState::Scheduled
                | ExecutionState::Deploying
                | ExecutionState::Initializing
                | ExecutionState::Running
                | ExecutionState::Finished
        )
    }
}

/// Whether a consumer may be deployed with partitions whose location is not known yet (Flink's
/// `PartitionLocationConstraint`): batch jobs may, streaming jobs may not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionLocationConstraint {
    /// Batch: unknown locations are filled in later.
    CanBeUnknown,
    /// Streaming: every producer must be deployed first.
    MustBeKnown,
}

/// What the factory needs to know of a producer's current attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerView {
    /// The current attempt.
    pub attempt: ExecutionAttemptId,
    /// Its state.
    pub state: ExecutionState,
    /// Where it runs, once it has a slot (its partitions are then registered).
    pub location: Option<TaskManagerLocation>,
}

/// How consumers treat partitions whose producer is not ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsumptionPolicy {
    /// Whether unknown locations are allowed (batch) or not (streaming).
    pub constraint: PartitionLocationConstraint,
    /// Hybrid partitions of unfinished producers are handed out as unknown (Flink's
    /// ONLY_FINISHED_PRODUCERS consume constraint of hybrid shuffle); `false` is Flink's default
    /// (UNFINISHED_PRODUCERS: consume while the producer runs).
    pub hybrid_only_finished: bool,
}

impl ConsumptionPolicy {
    /// Flink's policy for a job type: batch may deploy consumers of unknown partitions,
    /// streaming may not; hybrid partitions are consumed while their producer runs.
    pub fn for_job_type(job_type: conflux_graph::JobType) -> ConsumptionPolicy {
        ConsumptionPolicy {
            constraint: match job_type {
                conflux_graph::JobType::Batch => PartitionLocationConstraint::CanBeUnknown,
                conflux_graph::JobType::Streaming => PartitionLocationConstraint::MustBeKnown,
            },
            hybrid_only_finished: false,
        }
    }
}

/// The descriptor a consumer gets for one partition, as Flink 1.20 decides it
/// (`TaskDeploymentDescriptorFactory.getConsumedPartitionShuffleDescriptor`): if (the type can
/// be consumed pipelined, or the partition has all its data) and the producer has registered
/// the partition (has a location) and is SCHEDULED, DEPLOYING, INITIALIZING, RUNNING or
/// FINISHED, the known descriptor (unknown instead for a hybrid partition of an unfinished
/// producer under `hybrid_only_finished`); otherwise unknown where the policy allows it (batch).
///
/// # Errors
/// `Err(state)` with the producer's state when the partition must be known (streaming) but is
/// not; the caller names the partition in its [`DeployError`](crate::DeployError).
pub fn shuffle_descriptor_for(
    partition: (u32, u32),
    partition_type: ResultPartitionType,
    producer: &ProducerView,
    all_data_produced: bool,
    connection_index: u32,
    policy: &ConsumptionPolicy,
) -> Result<ShuffleDescriptor, ExecutionState> {
    let id = ResultPartitionId {
        result: partition.0,
        partition: partition.1,
        producer: producer.attempt,
    };
    let consumable = partition_type.can_be_pipelined_consumed() || all_data_produced;
    if let (true, Some(location), true) = (
        consumable,
        producer.location,
        producer.state.has_consumable_partitions(),
    ) {
        if partition_type.is_hybrid()
            && policy.hybrid_only_finished
            && producer.state != ExecutionState::Finished
        {
            return Ok(ShuffleDescriptor::Unknown { partition: id });
        }
        return Ok(ShuffleDescriptor::Known {
            partition: id,
            producer_location: location,
            connection_index,
        });
    }
    match policy.constraint {
        PartitionLocationConstraint::CanBeUnknown => {
            Ok(ShuffleDescriptor::Unknown { partition: id })
        }
        PartitionLocationConstraint::MustBeKnown => Err(producer.state),
    }
}
