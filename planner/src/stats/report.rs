//! The statistics report: what [`PlanStats::compute`](super::PlanStats::compute) returns and
//! the service serves as JSON.

use serde::Serialize;

use super::buffers::{BufferModel, Buffers};
use super::descriptors::DescriptorStats;
use crate::edit::Edit;

/// Statistics of one plan. `channels` is the total of logical connections (`U x D` per ALL_TO_ALL edge,
/// `max(U, D)` per POINTWISE edge, see `stats::channels`).
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PlanStats {
    /// The job's name.
    pub name: String,
    /// `streaming` or `batch`.
    pub job_type: String,
    /// Job vertices.
    pub job_vertices: usize,
    /// Job edges.
    pub job_edges: usize,
    /// Execution vertices (subtasks).
    pub execution_vertices: u64,
    /// Total logical connections over all edges.
    pub channels: u64,
    /// Network buffers.
    pub network: NetworkStats,
    /// Pipelined regions.
    pub regions: RegionStats,
    /// Shuffle descriptors and their offload.
    pub descriptors: DescriptorStats,
    /// Heap bytes of the execution graph and its regions (self-accounted).
    pub topology_bytes: usize,
    /// Operators with state, and their states.
    pub stateful_operators: usize,
    /// Per job edge, in the plan's edge order.
    pub edges: Vec<EdgeStats>,
    /// What could be cheaper, with the edit that does it where there is one.
    pub suggestions: Vec<Suggestion>,
    /// Figures no TaskManager can hold (a subtask requiring more network memory than a
    /// TaskManager of Flink's shipped configuration has), each naming the options that change
    /// it; empty when there are none.
    pub flags: Vec<ResourceFlag>,
    /// Ids of the vertices of undecided parallelism (`-1`), counted at their estimate
    /// (`StatsConfig::default_parallelism`); absent
    /// from the JSON when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub undecided_vertices: Vec<String>,
}

/// Network buffers of the whole plan.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct NetworkStats {
    /// The model used.
    pub model: BufferModel,
    /// Input gate buffers.
    pub input: Buffers,
    /// Result partition buffers.
    pub output: Buffers,
    /// Input and output buffers.
    pub total: Buffers,
    /// `total.target` in bytes.
    pub bytes: u64,
    /// `total.required` in bytes.
    pub required_bytes: u64,
}

/// Pipelined regions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct RegionStats {
    /// Scheduling (execution) regions.
    pub count: usize,
    /// Execution vertices of the largest region.
    pub largest: u32,
    /// Logical regions (over job vertices).
    pub logical: usize,
}

/// Statistics of one job edge.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct EdgeStats {
    /// Position in the plan's edge list.
    pub index: usize,
    /// Producing vertex.
    pub source: String,
    /// Consuming vertex.
    pub target: String,
    /// The producing vertex's name (its `name` field, Flink's for an imported plan), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_name: Option<String>,
    /// The consuming vertex's name, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_name: Option<String>,
    /// The partitioner, when the plan names it.
    pub ship_strategy: Option<String>,
    /// `pointwise` or `all_to_all`.
    pub distribution_pattern: String,
    /// The result partition type.
    pub result_partition_type: String,
    /// `U`.
    pub producer_parallelism: u32,
    /// `D`.
    pub consumer_parallelism: u32,
    /// Logical connections.
    pub channels: u64,
    /// Input gate buffers (one gate per consumer subtask).
    pub input_buffers: Buffers,
    /// Result partition buffers (zero when an earlier edge of the same data set counted them).
    pub output_buffers: Buffers,
    /// Target input and output buffers in bytes.
    pub buffer_bytes: u64,
    /// Descriptors of this edge's groups.
    pub descriptors: DescriptorStats,
}

/// A suggestion: what could be cheaper or safer, its effect, and the edit that applies it.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Suggestion {
    /// `rebalance_to_rescale`, `gate_above_required`, `state_without_ttl` or
    /// `stateful_operator_without_uid`.
    pub kind: String,
    /// For people.
    pub message: String,
    /// The effect in numbers, where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<Effect>,
    /// The edit that applies the suggestion, where one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edit: Option<Edit>,
}

/// The effect of a suggested edit on one edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Effect {
    /// Channels now.
    pub channels_before: u64,
    /// Channels after the edit.
    pub channels_after: u64,
    /// Target buffer bytes now.
    pub buffer_bytes_before: u64,
    /// Target buffer bytes after the edit.
    pub buffer_bytes_after: u64,
    /// The difference.
    pub buffer_bytes_saved: u64,
}

/// A figure of the plan that cannot work as it is, with what changes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ResourceFlag {
    /// What is flagged: `subtask_network_memory` (one subtask's required network buffers).
    pub kind: String,
    /// The job vertex, by id, when the figure is one vertex's.
    pub vertex: Option<String>,
    /// The figure, bytes.
    pub bytes: u64,
    /// The limit it exceeds, bytes (a TaskManager's network memory).
    pub limit_bytes: u64,
    /// One sentence: the figure, the limit, and the Flink options that change either.
    pub message: String,
}
