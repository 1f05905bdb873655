//! Worked examples of pipelined regions with hand-checked answers, after Flink's
//! `PipelinedRegionComputeUtilTest`, `SchedulingPipelinedRegionComputeUtilTest` and
//! `LogicalPipelinedRegionComputeUtilTest`, plus Conflux's merge of cycles between logical
//! regions.

use conflux_graph::json::JobEdgeJson;
use conflux_graph::{ExecutionVertexIndex, PipelinedRegionIndex};

use crate::support::{build, edge, job, vertex};

/// Builds the job and compares its regions, in region order, with `expected` (execution vertex
/// names in index order).
fn check(vertices: &[(&str, u32)], edges: Vec<JobEdgeJson>, expected: &[&[&str]]) {
    let json = job(
        vertices.iter().map(|&(id, p)| vertex(id, p)).collect(),
        edges,
    );
    let (graph, regions) = build(&json);
    let actual: Vec<Vec<String>> = (0..regions.len())
        .map(|r| {
            regions
                .members(PipelinedRegionIndex(r as u32))
                .map(|v| graph.execution_vertex_name(v))
                .collect()
        })
        .collect();
    let expected: Vec<Vec<String>> = expected
        .iter()
        .map(|r| r.iter().map(|s| (*s).to_owned()).collect())
        .collect();
    assert_eq!(actual, expected, "regions of {vertices:?}");
    for (r, members) in expected.iter().enumerate() {
        for name in members {
            let (id, subtask) = name.split_once('#').expect("name");
            let j = graph.job_graph().vertex_index(id).expect("vertex");
            let v = ExecutionVertexIndex(
                graph.execution_vertices_of(j).start + subtask.parse::<u32>().expect("subtask"),
            );
            assert_eq!(
                regions.region_of(v),
                PipelinedRegionIndex(r as u32),
                "{name}"
            );
        }
    }
}

#[test]
fn pipelined_pointwise_chain_is_one_region_per_lane() {
    check(
        &[("A", 2), ("B", 2)],
        vec![edge("A", "B", "pointwise", "pipelined")],
        &[&["A#0", "B#0"], &["A#1", "B#1"]],
    );
}

#[test]
fn blocking_pointwise_separates_every_subtask() {
    check(
        &[("A", 2), ("B", 2)],
        vec![edge("A", "B", "pointwise", "blocking")],
        &[&["A#0"], &["A#1"], &["B#0"], &["B#1"]],
    );
}

#[test]
fn pipelined_all_to_all_is_one_region() {
    check(
        &[("A", 2), ("B", 3)],
        vec![edge("A", "B", "all_to_all", "pipelined_bounded")],
        &[&["A#0", "A#1", "B#0", "B#1", "B#2"]],
    );
}

#[test]
fn hybrid_and_approximate_edges_are_region_boundaries() {
    for t in [
        "hybrid_full",
        "hybrid_selective",
        "pipelined_approximate",
        "blocking_persistent",
    ] {
        check(
            &[("A", 2), ("B", 2)],
            vec![edge("A", "B", "all_to_all", t)],
            &[&["A#0"], &["A#1"], &["B#0"], &["B#1"]],
        );
    }
}

#[test]
fn fan_in_and_fan_out_pipelined_pointwise() {
    check(
        &[("A", 4), ("B", 2)],
        vec![edge("A", "B", "pointwise", "pipelined")],
        &[&["A#0", "A#1", "B#0"], &["A#2", "A#3", "B#1"]],
    );
    check(
        &[("A", 2), ("B", 4)],
        vec![edge("A", "B", "pointwise", "pipelined")],
        &[&["A#0", "B#0", "B#1"], &["A#1", "B#2", "B#3"]],
    );
    // 3 -> 5: partition 0 feeds B0, B1; 1 feeds B2, B3; 2 feeds B4.
    check(
        &[("A", 3), ("B", 5)],
        vec![edge("A", "B", "pointwise", "pipelined")],
        &[
            &["A#0", "B#0", "B#1"],
            &["A#1", "B#2", "B#3"],
            &["A#2", "B#4"],
        ],
    );
}

#[test]
fn intra_region_blocking_all_to_all_makes_the_logical_region_one_region() {
    // A -> B and B -> C pipelined pointwise join A, B, C logically; the blocking all-to-all
    // A -> C inside would make every lane depend on every other (FLINK-17330): one region.
    check(
        &[("A", 2), ("B", 2), ("C", 2)],
        vec![
            edge("A", "B", "pointwise", "pipelined"),
            edge("B", "C", "pointwise", "pipelined"),
            edge("A", "C", "all_to_all", "blocking"),
        ],
        &[&["A#0", "A#1", "B#0", "B#1", "C#0", "C#1"]],
    );
}

#[test]
fn intra_region_blocking_pointwise_keeps_lanes_apart() {
    // The same with a pointwise blocking edge: lane i depends only on itself.
    check(
        &[("A", 2), ("B", 2), ("C", 2)],
        vec![
            edge("A", "B", "pointwise", "pipelined"),
            edge("B", "C", "pointwise", "pipelined"),
            edge("A", "C", "pointwise", "blocking"),
        ],
        &[&["A#0", "B#0", "C#0"], &["A#1", "B#1", "C#1"]],
    );
}

#[test]
fn cycle_across_logical_regions_is_merged_unlike_flink() {
    // The example: Flink 1.14-1.20 gives {A,C,D} and {B}, which wait on each other.
    check(
        &[("A", 1), ("B", 1), ("C", 1), ("D", 1)],
        vec![
            edge("A", "B", "pointwise", "blocking"),
            edge("A", "C", "pointwise", "pipelined"),
            edge("B", "D", "pointwise", "blocking"),
            edge("C", "D", "pointwise", "pipelined"),
        ],
        &[&["A#0", "B#0", "C#0", "D#0"]],
    );
    // The same with hybrid edges.
    check(
        &[("A", 1), ("B", 1), ("C", 1), ("D", 1)],
        vec![
            edge("A", "B", "pointwise", "hybrid_full"),
            edge("A", "C", "pointwise", "pipelined"),
            edge("B", "D", "pointwise", "hybrid_selective"),
            edge("C", "D", "pointwise", "pipelined"),
        ],
        &[&["A#0", "B#0", "C#0", "D#0"]],
    );
}

#[test]
fn merged_logical_cycle_with_pointwise_edges_merges_per_lane() {
    // Logical regions {A, D} and {B, C} depend on each other (A -> B, C -> D blocking); at
    // parallelism 2 with pointwise edges, only lane i of each depends on lane i of the other.
    check(
        &[("A", 2), ("B", 2), ("C", 2), ("D", 2)],
        vec![
            edge("A", "B", "pointwise", "blocking"),
            edge("B", "C", "pointwise", "pipelined"),
            edge("C", "D", "pointwise", "blocking"),
            edge("A", "D", "pointwise", "pipelined"),
        ],
        &[&["A#0", "B#0", "C#0", "D#0"], &["A#1", "B#1", "C#1", "D#1"]],
    );
    // With an all-to-all blocking edge in the cycle, everything depends on everything.
    check(
        &[("A", 2), ("B", 2), ("C", 2), ("D", 2)],
        vec![
            edge("A", "B", "all_to_all", "blocking"),
            edge("B", "C", "pointwise", "pipelined"),
            edge("C", "D", "pointwise", "blocking"),
            edge("A", "D", "pointwise", "pipelined"),
        ],
        &[&["A#0", "A#1", "B#0", "B#1", "C#0", "C#1", "D#0", "D#1"]],
    );
}

#[test]
fn regions_are_numbered_by_first_vertex_in_topological_order() {
    // Listed as C, B, A. A and B are sources and C consumes both, so the topological order is
    // B, A, C: ties go by listing order, which puts B before A.
    let json = job(
        vec![vertex("C", 1), vertex("B", 1), vertex("A", 1)],
        vec![
            edge("A", "C", "pointwise", "blocking"),
            edge("B", "C", "pointwise", "pipelined"),
        ],
    );
    let (graph, regions) = build(&json);
    let job = graph.job_graph();
    let names: Vec<&str> = job.vertex_indices().map(|j| job.vertex_id(j)).collect();
    assert_eq!(names, ["B", "A", "C"]);
    let region_of = |name: &str| {
        let j = graph.job_graph().vertex_index(name).expect("vertex");
        regions
            .region_of(ExecutionVertexIndex(graph.execution_vertices_of(j).start))
            .0
    };
    assert_eq!((region_of("B"), region_of("C"), region_of("A")), (0, 0, 1));
}

#[test]
fn logical_regions_of_a_mixed_job() {
    let json = job(
        vec![
            vertex("A", 2),
            vertex("B", 2),
            vertex("C", 2),
            vertex("D", 2),
        ],
        vec![
            edge("A", "B", "all_to_all", "pipelined"),
            edge("B", "C", "all_to_all", "blocking"),
            edge("C", "D", "pointwise", "pipelined"),
        ],
    );
    let (graph, regions) = build(&json);
    let logical = regions.logical();
    assert_eq!(logical.len(), 2);
    let job = graph.job_graph();
    let idx = |n: &str| job.vertex_index(n).expect("vertex");
    assert_eq!(logical.region_of(idx("A")), logical.region_of(idx("B")));
    assert_eq!(logical.region_of(idx("C")), logical.region_of(idx("D")));
    assert_ne!(logical.region_of(idx("A")), logical.region_of(idx("C")));
    assert!(logical.has_internal_all_to_all(logical.region_of(idx("A"))));
    assert!(!logical.has_internal_all_to_all(logical.region_of(idx("C"))));
    // {A, B} is one region; C -> D pointwise gives two lanes.
    assert_eq!(regions.len(), 3);
    assert_eq!(regions.sizes().collect::<Vec<_>>(), [4, 2, 2]);
}
