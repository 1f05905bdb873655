//! The deployment descriptors themselves (Flink's `TaskDeploymentDescriptor` and its parts): what
//! the JobManager sends a TaskManager to run one attempt. The factory builds them, the wire
//! format encodes their parts, the TaskManager side reads them.

use std::ops::{Range, RangeInclusive};
use std::sync::Arc;

use conflux_blob_api::JobId;
use conflux_graph::{ConsumedPartitionGroupId, ResultPartitionType};
use serde::{Deserialize, Serialize};

use crate::offload::MaybeOffloaded;
use crate::{AllocationId, ExecutionAttemptId, ResultPartitionId, ShuffleDescriptor};

/// A batch of descriptors of one ConsumedPartitionGroup with their positions in it (Flink's
/// `ShuffleDescriptorGroup`, FLINK-32385). The first group of a cache entry covers every position
/// (`indices` is `None`: positions `0..len`); later groups (hybrid partitions that became known)
/// list their positions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShuffleDescriptorGroup {
    /// The descriptors.
    pub descriptors: Vec<ShuffleDescriptor>,
    /// Their positions in the ConsumedPartitionGroup, or `None` for `0..descriptors.len()`.
    pub indices: Option<Vec<u32>>,
}

impl ShuffleDescriptorGroup {
    /// `(position, descriptor)` pairs.
    pub fn entries(&self) -> impl Iterator<Item = (u32, &ShuffleDescriptor)> + '_ {
        self.descriptors.iter().enumerate().map(|(i, d)| {
            let position = match &self.indices {
                Some(indices) => indices[i],
                // A group holds at most u32::MAX partitions (graph invariant).
                None => u32::try_from(i).unwrap_or(u32::MAX),
            };
            (position, d)
        })
    }
}

/// What a task needs to know of its job (Flink's `JobInformation`), serialised once per job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobInformation {
    /// The job.
    pub job_id: JobId,
    /// Its name.
    pub job_name: String,
    /// `streaming` or `batch`.
    pub job_type: String,
}

/// What a task needs to know of its job vertex (Flink's `TaskInformation`), serialised once per
/// job vertex.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskInformation {
    /// The job vertex id.
    pub job_vertex_id: String,
    /// Number of subtasks.
    pub parallelism: u32,
    /// Max parallelism (key groups).
    pub max_parallelism: u64,
    /// Slot sharing group.
    pub slot_sharing_group: String,
    /// Chained operator names, in chain order.
    pub operators: Vec<String>,
}

/// A partition the task produces (Flink's `ResultPartitionDeploymentDescriptor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResultPartitionDeploymentDescriptor {
    /// The partition and its producing attempt.
    pub partition: ResultPartitionId,
    /// Its type.
    pub partition_type: ResultPartitionType,
    /// Subpartitions to create: the size of the partition's (first) consumer vertex group (D for
    /// all-to-all, the fan-out for pointwise).
    pub number_of_subpartitions: u32,
    /// The producer's max parallelism.
    pub max_parallelism: u64,
}

/// One input of the task: one ConsumedPartitionGroup (Flink's `InputGateDeploymentDescriptor`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputGateDeploymentDescriptor {
    /// The consumed intermediate result (data set index).
    pub result: u32,
    /// The consumed partition group.
    pub group: ConsumedPartitionGroupId,
    /// Type of the consumed partitions.
    pub partition_type: ResultPartitionType,
    /// Subpartitions read from every partition: static graphs read one, `subtask mod
    /// consumers of the partition` (Flink's rule, not the position in the group).
    pub consumed_subpartitions: RangeInclusive<u32>,
    /// Input channels, one per partition of the group.
    pub number_of_channels: u32,
    /// The channels read (positions in the group, `0..number_of_channels` for all): fewer only
    /// where a run-time decision splits a skewed subpartition across subtasks, each reading it
    /// from a range of producers (as the shuffle descriptor ranges of Flink 2.0's gates).
    pub consumed_channels: Range<u32>,
    /// The serialised descriptor groups, shared with every consumer of the group. Loading applies
    /// them in order; a later group may only fill positions that were unknown.
    pub descriptor_groups: Arc<[MaybeOffloaded]>,
}

/// Everything a TaskManager needs to run one attempt (Flink's `TaskDeploymentDescriptor`).
/// O(inputs + outputs) in size: the descriptor bytes are shared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskDeploymentDescriptor {
    /// The job.
    pub job_id: JobId,
    /// The attempt to run.
    pub execution_attempt: ExecutionAttemptId,
    /// The slot it runs in.
    pub allocation: AllocationId,
    /// Serialised [`JobInformation`], shared by all tasks.
    pub job_information: MaybeOffloaded,
    /// Serialised [`TaskInformation`], shared by the tasks of the job vertex.
    pub task_information: MaybeOffloaded,
    /// Produced partitions, one per produced data set.
    pub produced_partitions: Vec<ResultPartitionDeploymentDescriptor>,
    /// Input gates, one per input edge, in input order.
    pub input_gates: Vec<InputGateDeploymentDescriptor>,
}

impl TaskDeploymentDescriptor {
    /// Heap bytes this descriptor holds of its own (not the shared bytes it references).
    pub fn own_heap_bytes(&self) -> usize {
        self.produced_partitions.capacity()
            * std::mem::size_of::<ResultPartitionDeploymentDescriptor>()
            + self.input_gates.capacity() * std::mem::size_of::<InputGateDeploymentDescriptor>()
    }
}
