//! What a batch job's event log holds: Flink 1.20's FLIP-383 job events
//! (`ExecutionVertexFinishedEvent`, `ExecutionJobVertexInitializedEvent`,
//! `ExecutionVertexResetEvent`), reduced to what Conflux's scheduler needs to rebuild the same
//! execution graph and keep finished work.

use serde::{Deserialize, Serialize};

/// A finished execution: one subtask's attempt that finished, and where its partitions are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinishedExecution {
    /// Its execution vertex index (dense, topological; the scheduler's `ExecutionVertexIndex`).
    pub vertex: u32,
    /// The attempt number that finished.
    pub attempt: u32,
    /// The data server address (`host:port`) of the TaskManager that holds its produced
    /// partitions: stable across that TaskManager's registrations, unlike its id.
    pub data_address: String,
    /// The bytes it wrote per produced data set and subpartition (adaptive batch decisions read
    /// them); empty when no run-time decision reads them.
    pub produced_bytes: Vec<Vec<u64>>,
}

/// One event of a job's event log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobEvent {
    /// An execution finished (Flink's `ExecutionVertexFinishedEvent`).
    TaskFinished(FinishedExecution),
    /// A job vertex of undecided parallelism was initialised at run time with this many
    /// subtasks (Flink's `ExecutionJobVertexInitializedEvent`): a recovered graph grows the same.
    VertexInitialized {
        /// The job vertex (topological index).
        job_vertex: u32,
        /// Its decided parallelism.
        parallelism: u32,
    },
    /// A failover reset these execution vertices for new attempts (Flink's
    /// `ExecutionVertexResetEvent`): their earlier finishes no longer count.
    VerticesReset {
        /// The execution vertex indices.
        vertices: Vec<u32>,
    },
}
