//! What deployment must know of a graph decided at run time (adaptive batch): how many
//! subpartitions a producer writes for a consumer decided later, and which subpartitions of
//! which partitions each consumer subtask reads. A graph built whole answers neither: its
//! count-based rules ([`TaskDeploymentDescriptorFactory::create`](crate::TaskDeploymentDescriptorFactory::create)) apply.

use conflux_adaptive::ExecutionVertexInputInfo;
use conflux_graph::{IntermediateDataSetIndex, JobVertexIndex};

/// The run-time decisions a deployment descriptor follows, as Flink's `VertexInputInfoStore`
/// with the subpartition counts of Flink's dynamic `IntermediateResultPartition`s. Implemented
/// by the adaptive scheduler; [`StaticGraph`] for a graph built whole.
pub trait VertexInputInfoStore: Sync {
    /// Subpartitions per partition of `result` when its consumer is decided at run time (as
    /// many as the consumer may ever have subtasks, for ALL_TO_ALL; Flink's
    /// `IntermediateResultPartition.computeNumberOfSubpartitions` for dynamic graphs); `None`:
    /// the static rule (the consumer vertex group's size).
    fn number_of_subpartitions(&self, result: IntermediateDataSetIndex) -> Option<u32>;

    /// What subtask `subtask` of `job_vertex` reads from its input number `input` (in input
    /// order), when the vertex was decided at run time; `None`: the static rule (one
    /// subpartition, `subtask mod consumers`, of every partition of its group).
    fn execution_vertex_input_info(
        &self,
        job_vertex: JobVertexIndex,
        input: usize,
        subtask: u32,
    ) -> Option<ExecutionVertexInputInfo>;
}

/// A graph built whole: nothing was decided at run time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StaticGraph;

impl VertexInputInfoStore for StaticGraph {
    fn number_of_subpartitions(&self, _: IntermediateDataSetIndex) -> Option<u32> {
        None
    }

    fn execution_vertex_input_info(
        &self,
        _: JobVertexIndex,
        _: usize,
        _: u32,
    ) -> Option<ExecutionVertexInputInfo> {
        None
    }
}
