//! Job graph builders for tests: the few lines every test of a small topology writes.

use std::sync::Arc;

use conflux_graph::json::{JobEdgeJson, JobGraphJson, JobVertexJson};
use conflux_graph::{ExecutionGraph, JobGraph, PipelinedRegions};

/// A vertex `id` of `parallelism` subtasks, in the default slot sharing group.
pub fn vertex(id: &str, parallelism: u32) -> JobVertexJson {
    JobVertexJson::new(
        id,
        i32::try_from(parallelism).expect("parallelism fits in i32"),
    )
}

/// An edge `source -> target` with a pattern (`pointwise` | `all_to_all`) and a result
/// partition type (`blocking`, `pipelined`, ...), as the job graph JSON spells them.
pub fn edge(source: &str, target: &str, pattern: &str, partition_type: &str) -> JobEdgeJson {
    JobEdgeJson {
        source: source.to_owned(),
        target: target.to_owned(),
        distribution_pattern: pattern.to_owned(),
        result_partition_type: partition_type.to_owned(),
        ship_strategy: None,
        data_set: None,
    }
}

/// A job graph of `job_type` (`streaming` | `batch`) named `test`.
pub fn job(job_type: &str, vertices: Vec<JobVertexJson>, edges: Vec<JobEdgeJson>) -> JobGraphJson {
    JobGraphJson {
        name: "test".to_owned(),
        job_type: job_type.to_owned(),
        vertices,
        edges,
    }
}

/// Validates, expands and computes the regions of `json`.
///
/// # Panics
/// If the job graph is invalid: a test's own mistake.
pub fn build(json: &JobGraphJson) -> (Arc<ExecutionGraph>, Arc<PipelinedRegions>) {
    let graph = ExecutionGraph::build(JobGraph::from_json(json).expect("valid job graph"))
        .expect("expandable job graph");
    let regions = PipelinedRegions::compute(&graph).expect("regions");
    (Arc::new(graph), Arc::new(regions))
}
