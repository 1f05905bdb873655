//! The dynamic execution graph: a graph grown vertex by vertex (adaptive batch) equals the one
//! built whole, and the dynamic suffix is where the first undecided consumer starts.

use conflux_graph::dynamic::first_dynamic_vertex;
use conflux_graph::json::JobGraphJson;
use conflux_graph::{
    ConsumedPartitionGroupId, ExecutionGraph, ExecutionVertexIndex, IntermediateDataSetIndex,
    IntermediateResultPartitionId, JobGraph, JobVertexIndex, PipelinedRegionIndex,
    PipelinedRegions,
};
use proptest::prelude::*;

use crate::support::{edge, job, vertex};

/// Everything the scheduler reads from a graph and its regions, listed: vertex ranges, each
/// vertex's groups and partitions' consumer groups, each group, and the regions.
fn listing(graph: &ExecutionGraph, regions: &PipelinedRegions) -> Vec<String> {
    let job = graph.job_graph();
    let mut out = vec![format!(
        "n={} partitions={} groups={} regions={}",
        graph.num_execution_vertices(),
        graph.num_partitions(),
        graph.num_groups(),
        regions.len()
    )];
    for j in job.vertex_indices() {
        out.push(format!("{:?} {:?}", j, graph.execution_vertices_of(j)));
    }
    for v in 0..graph.num_execution_vertices() {
        let v = ExecutionVertexIndex(v);
        let groups: Vec<_> = graph.consumed_partition_groups(v).collect();
        let produced: Vec<_> = graph
            .produced_partitions(v)
            .map(|p| {
                let consumers: Vec<_> = graph.consumer_vertex_groups(p).collect();
                (p, consumers)
            })
            .collect();
        out.push(format!(
            "{v:?} {:?} {groups:?} {produced:?} {:?}",
            graph.execution_vertex_id(v),
            regions.region_of(v)
        ));
    }
    // Partition indices are a numbering of every partition (a grown graph numbers late
    // producers' partitions after the others).
    let mut seen = vec![false; graph.num_partitions() as usize];
    for (r, ds) in job.data_sets().iter().enumerate() {
        for partition in 0..graph.parallelism_of(ds.producer) {
            let id = IntermediateResultPartitionId {
                result: IntermediateDataSetIndex(r as u32),
                partition,
            };
            let index = graph.partition_index(id);
            assert!(
                !std::mem::replace(&mut seen[index.idx()], true),
                "{id:?} twice"
            );
            assert_eq!(
                graph.producer_of(id),
                graph.execution_vertex_index(conflux_graph::ExecutionVertexId {
                    job_vertex: ds.producer,
                    subtask: partition
                })
            );
        }
    }
    assert!(seen.iter().all(|&s| s), "every partition numbered");
    for g in 0..graph.num_groups() {
        let id = ConsumedPartitionGroupId(g);
        out.push(format!(
            "{:?} {:?}",
            graph.consumed_partition_group(id),
            graph.consumer_vertex_group(id.consumer_vertex_group())
        ));
    }
    for r in regions.indices() {
        out.push(format!("{r:?} {:?}", regions.member_indices(r)));
    }
    out
}

/// Builds `json` whole, and again with only its first `prefix` vertices, growing the rest one
/// by one (graph and regions); both must list the same.
fn check_grown_equals_built(json: &JobGraphJson, prefix: usize) {
    let job = JobGraph::from_json(json).expect("valid");
    let parallelisms: Vec<u32> = job.vertices().iter().map(|v| v.parallelism).collect();
    let whole = ExecutionGraph::build(job.clone()).expect("built");
    let whole_regions = PipelinedRegions::compute(&whole).expect("regions");

    let mut grown = ExecutionGraph::build_partial(job, &parallelisms[..prefix]).expect("partial");
    let mut regions = PipelinedRegions::compute(&grown).expect("regions of the prefix");
    // Uninitialised vertices have nothing yet.
    for j in prefix..parallelisms.len() {
        let j = JobVertexIndex(j as u32);
        assert!(!grown.is_initialized(j));
        assert!(grown.execution_vertices_of(j).is_empty());
        for &d in grown.job_graph().produced_data_sets(j) {
            let p = IntermediateResultPartitionId {
                result: d,
                partition: 0,
            };
            assert_eq!(grown.checked_partition_index(p), None);
        }
    }
    while let Some(next) = grown.next_uninitialized() {
        let j = grown
            .initialize_next(parallelisms[next.idx()])
            .expect("initialised");
        assert_eq!(j, next);
        regions.extend(&grown, j).expect("extended");
    }
    assert!(grown.initialize_next(1).is_err(), "nothing left");
    assert_eq!(listing(&grown, &regions), listing(&whole, &whole_regions));
}

/// A worked example: a word count whose counting vertex is initialised late gets the same
/// single ALL_TO_ALL group and one region per subtask.
#[test]
fn word_count_grows_as_built() {
    let json = JobGraphJson {
        job_type: "batch".to_owned(),
        ..job(
            vec![vertex("source", 3), vertex("count", 4)],
            vec![edge("source", "count", "all_to_all", "blocking")],
        )
    };
    let job = JobGraph::from_json(&json).expect("valid");
    let mut graph = ExecutionGraph::build_partial(job, &[3]).expect("partial");
    let mut regions = PipelinedRegions::compute(&graph).expect("regions");
    assert_eq!(
        (
            graph.num_execution_vertices(),
            graph.num_groups(),
            regions.len()
        ),
        (3, 0, 3)
    );
    // The source's partitions exist, with no consumer groups yet.
    let p0 = IntermediateResultPartitionId {
        result: IntermediateDataSetIndex(0),
        partition: 0,
    };
    assert_eq!(graph.consumer_vertex_groups(p0).count(), 0);
    let count = graph.initialize_next(64).expect("initialised");
    regions.extend(&graph, count).expect("extended");
    assert_eq!(graph.execution_vertices_of(count), 3..67);
    assert_eq!(graph.num_groups(), 1);
    assert_eq!(
        graph
            .connection_of_group(ConsumedPartitionGroupId(0))
            .consumer_parallelism,
        64
    );
    assert_eq!(regions.len(), 67);
    assert_eq!(
        regions.region_of(ExecutionVertexIndex(66)),
        PipelinedRegionIndex(66)
    );
    check_grown_equals_built(&json, 1);
}

/// The suffix starts at the first undecided vertex with inputs; undecided sources do not start
/// it; a pipelined edge or a co-location group in the suffix is refused naming the vertex.
#[test]
fn the_dynamic_suffix_starts_at_the_first_undecided_consumer() {
    let graph =
        |text: &str| JobGraph::from_json(&JobGraphJson::parse(text.as_bytes()).unwrap()).unwrap();
    let g = graph(
        r#"{"job_type":"batch","vertices":[{"id":"s","parallelism":-1},{"id":"m","parallelism":4},{"id":"c","parallelism":-1},{"id":"k","parallelism":1}],
            "edges":[{"source":"s","target":"m","distribution_pattern":"pointwise","result_partition_type":"pipelined"},
                     {"source":"m","target":"c","distribution_pattern":"all_to_all","result_partition_type":"blocking"},
                     {"source":"c","target":"k","distribution_pattern":"all_to_all","result_partition_type":"blocking"}]}"#,
    );
    assert_eq!(first_dynamic_vertex(&g).unwrap(), Some(JobVertexIndex(2)));
    let sources_only = graph(
        r#"{"job_type":"batch","vertices":[{"id":"s","parallelism":-1},{"id":"k","parallelism":1}],
            "edges":[{"source":"s","target":"k","distribution_pattern":"all_to_all","result_partition_type":"pipelined"}]}"#,
    );
    assert_eq!(first_dynamic_vertex(&sources_only).unwrap(), None);
    let pipelined_after = graph(
        r#"{"job_type":"batch","vertices":[{"id":"s","parallelism":2},{"id":"c","parallelism":-1},{"id":"k","parallelism":1}],
            "edges":[{"source":"s","target":"c","distribution_pattern":"all_to_all","result_partition_type":"blocking"},
                     {"source":"c","target":"k","distribution_pattern":"all_to_all","result_partition_type":"pipelined_bounded"}]}"#,
    );
    assert_eq!(
        first_dynamic_vertex(&pipelined_after).unwrap_err().to_string(),
        "vertex 'c' cannot be initialised when its producers finish: it has a pipelined input or output"
    );
}

fn arbitrary_batch_job() -> impl Strategy<Value = (JobGraphJson, usize)> {
    (2usize..7)
        .prop_flat_map(|n| {
            (
                proptest::collection::vec(1u32..7, n),
                proptest::collection::vec((0usize..n, 0usize..n, 0u8..2, 0u8..3), 0..2 * n),
                0..n,
            )
        })
        .prop_map(|(parallelisms, raw_edges, prefix)| {
            let vertices = parallelisms
                .iter()
                .enumerate()
                .map(|(i, &p)| vertex(&format!("v{i}"), p))
                .collect();
            let mut edges = Vec::new();
            for (a, b, pattern, kind) in raw_edges {
                if a >= b {
                    continue;
                }
                let pattern = ["pointwise", "all_to_all"][pattern as usize];
                let kind = ["blocking", "hybrid_full", "blocking_persistent"][kind as usize];
                edges.push(edge(&format!("v{a}"), &format!("v{b}"), pattern, kind));
            }
            let json = JobGraphJson {
                job_type: "batch".to_owned(),
                ..job(vertices, edges)
            };
            (json, prefix)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Random batch jobs without pipelined edges, grown from a random prefix: the same graph
    /// and regions as built whole.
    #[test]
    fn grown_graphs_equal_built_ones((json, prefix) in arbitrary_batch_job()) {
        check_grown_equals_built(&json, prefix);
    }
}
