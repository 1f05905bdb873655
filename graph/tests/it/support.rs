//! Small builders shared by the test modules.

use conflux_graph::json::{JobEdgeJson, JobGraphJson, JobVertexJson};
use conflux_graph::{ExecutionGraph, JobGraph, PipelinedRegions};

/// A vertex `(id, parallelism)`.
pub(crate) fn vertex(id: &str, parallelism: u32) -> JobVertexJson {
    JobVertexJson::new(
        id,
        i32::try_from(parallelism).expect("parallelism fits in i32"),
    )
}

/// An edge `source -> target` with a pattern (`pointwise`/`all_to_all`) and a partition type.
pub(crate) fn edge(source: &str, target: &str, pattern: &str, partition_type: &str) -> JobEdgeJson {
    JobEdgeJson {
        source: source.to_owned(),
        target: target.to_owned(),
        distribution_pattern: pattern.to_owned(),
        result_partition_type: partition_type.to_owned(),
        ship_strategy: None,
        data_set: None,
    }
}

/// A streaming job graph of these vertices and edges.
pub(crate) fn job(vertices: Vec<JobVertexJson>, edges: Vec<JobEdgeJson>) -> JobGraphJson {
    JobGraphJson {
        name: "test".to_owned(),
        job_type: "streaming".to_owned(),
        vertices,
        edges,
    }
}

/// Validates, expands and computes regions, panicking on error.
pub(crate) fn build(json: &JobGraphJson) -> (ExecutionGraph, PipelinedRegions) {
    let graph = ExecutionGraph::build(JobGraph::from_json(json).expect("valid job graph"))
        .expect("expandable");
    let regions = PipelinedRegions::compute(&graph).expect("regions");
    (graph, regions)
}
