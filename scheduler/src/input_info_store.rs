//! The scheduler as the [`VertexInputInfoStore`] its deployment descriptors follow: what the
//! adaptive batch scheduler decided at run time (Flink keeps it in the `VertexInputInfoStore`
//! of its execution graph).

use conflux_adaptive::ExecutionVertexInputInfo;
use conflux_deploy::VertexInputInfoStore;
use conflux_graph::{IntermediateDataSetIndex, JobVertexIndex};

use crate::adaptive::VertexDecision;
use crate::scheduler::Scheduler;

impl Scheduler {
    /// The run-time decision of `job_vertex`, if any. O(log decisions): decisions are made in
    /// job vertex order (undecided sources first, then the dynamic suffix in order).
    pub fn decision_of(&self, job_vertex: JobVertexIndex) -> Option<&VertexDecision> {
        let decisions = self.decisions();
        let at = decisions.partition_point(|d| d.job_vertex < job_vertex);
        decisions.get(at).filter(|d| d.job_vertex == job_vertex)
    }
}

impl VertexInputInfoStore for Scheduler {
    fn number_of_subpartitions(&self, result: IntermediateDataSetIndex) -> Option<u32> {
        self.subpartitions_of(result)
    }

    fn execution_vertex_input_info(
        &self,
        job_vertex: JobVertexIndex,
        input: usize,
        subtask: u32,
    ) -> Option<ExecutionVertexInputInfo> {
        let info = *self
            .decision_of(job_vertex)?
            .input_infos
            .get(input)?
            .get(subtask as usize)?;
        debug_assert_eq!(
            info.subtask_index, subtask,
            "input infos are in subtask order"
        );
        Some(info)
    }
}
