//! `conflux-graph`: the job graph, its expansion into an execution graph with grouped edges, and
//! pipelined regions, with Apache Flink 1.20's semantics.
//!
//! The flow is [`JobGraphJson`] (or a Flink plan, [`flink_plan`]) -> [`JobGraph`] (validated)
//! -> [`ExecutionGraph`] (O(V + E) memory, whatever the parallelism) -> [`PipelinedRegions`].
//! [`load::load`] reads job graph JSON into the [`JobGraph`] without the [`JobGraphJson`] step,
//! for files of millions of vertices.
//!
//! ```
//! use conflux_graph::{generate, ExecutionGraph, JobGraph, PipelinedRegions, ResultPartitionType};
//!
//! let json = generate::word_count(10_000, ResultPartitionType::Blocking);
//! let graph = ExecutionGraph::build(JobGraph::from_json(&json)?)?;
//! let regions = PipelinedRegions::compute(&graph)?;
//! assert_eq!(graph.num_execution_vertices(), 20_000);
//! assert_eq!(graph.logical_connections(), 100_000_000);
//! assert_eq!(graph.num_groups(), 1); // one ConsumedPartitionGroup for the all-to-all edge
//! assert_eq!(regions.len(), 20_000); // blocking: every subtask is a region
//! # Ok::<(), conflux_graph::GraphError>(())
//! ```
//!
//! Nothing in this crate does I/O; it is pure and deterministic.

pub mod dynamic;
mod error;
mod execution_graph;
mod expansion_estimate;
pub mod flink_plan;
pub mod forward_group;
pub mod generate;
mod index_vec;
mod job_graph;
pub mod json;
pub mod limits;
pub mod load;
mod partition_type;
mod regions;
mod ship_strategy;
mod stream;
mod strings;

pub use error::GraphError;
pub use execution_graph::{
    ConsumedPartitionGroup, ConsumedPartitionGroupId, ConsumerVertexGroup, ConsumerVertexGroupId,
    EdgeConnection, ExecutionGraph, ExecutionVertexId, ExecutionVertexIndex,
    IntermediateResultPartitionId, PartitionIndex,
};
pub use expansion_estimate::ExpansionEstimate;
pub use index_vec::{index_u32, Idx, IndexVec};
pub use job_graph::{
    default_max_parallelism, IntermediateDataSet, IntermediateDataSetIndex, JobEdge, JobEdgeIndex,
    JobGraph, JobType, JobVertex, JobVertexIndex, MAX_EXECUTION_VERTICES,
};
pub use json::JobGraphJson;
pub use partition_type::{
    ConsumingConstraint, DistributionPattern, ReleaseBy, ResultPartitionType,
};
pub use regions::{
    LogicalPipelinedRegions, LogicalRegionIndex, PipelinedRegionIndex, PipelinedRegions,
};
pub use ship_strategy::ShipStrategy;
