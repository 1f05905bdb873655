//! Identifiers of the runtime: TaskManagers, execution attempts, result partitions, slots.

use std::fmt;
use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

/// A TaskManager (Flink's `ResourceID`), written `tm<n>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TaskManagerId(pub u32);

impl fmt::Display for TaskManagerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tm{}", self.0)
    }
}

/// Where a TaskManager serves partition data (Flink's `TaskManagerLocation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TaskManagerLocation {
    /// The TaskManager.
    pub id: TaskManagerId,
    /// Its data port.
    pub data_address: SocketAddr,
}

/// One attempt to run an execution vertex (Flink's `ExecutionAttemptID`, which since FLINK-17295
/// is the execution vertex plus an attempt number). `vertex` is the dense
/// [`ExecutionVertexIndex`](conflux_graph::ExecutionVertexIndex).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ExecutionAttemptId {
    /// Dense execution vertex index.
    pub vertex: u32,
    /// Attempt number, from 0; a restart increments it.
    pub attempt: u32,
}

/// A partition as the runtime knows it (Flink's `ResultPartitionID`): the intermediate result
/// partition plus the attempt that produces it, so a restarted producer's partition is a new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ResultPartitionId {
    /// Index of the intermediate result (data set).
    pub result: u32,
    /// Partition number (the producer's subtask index).
    pub partition: u32,
    /// The producing attempt.
    pub producer: ExecutionAttemptId,
}

/// A slot a task is deployed into (Flink's `AllocationID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AllocationId {
    /// The TaskManager offering the slot.
    pub task_manager: TaskManagerId,
    /// The slot's index on that TaskManager.
    pub slot: u32,
}
