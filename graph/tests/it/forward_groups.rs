//! Forward groups: Flink's `ForwardGroupComputeUtilTest` (which vertices FORWARD edges join) and
//! what validation does with a group's parallelism and max parallelism.

use conflux_graph::forward_group::ForwardGroups;
use conflux_graph::json::{JobEdgeJson, JobGraphJson, PARALLELISM_UNDECIDED};
use conflux_graph::{GraphError, JobGraph};

use crate::support::{edge, job, vertex};

/// An edge with Flink's FORWARD ship strategy when `forward`, else none.
fn forward(e: JobEdgeJson, forward: bool) -> JobEdgeJson {
    JobEdgeJson {
        ship_strategy: forward.then(|| "FORWARD".to_owned()),
        ..e
    }
}

/// A batch job of vertices `v1..=vn` of parallelism 2 (or undecided) and these edges.
fn batch(n: usize, undecided: bool, edges: Vec<JobEdgeJson>) -> JobGraphJson {
    let mut vertices: Vec<_> = (1..=n).map(|i| vertex(&format!("v{i}"), 2)).collect();
    if undecided {
        for v in &mut vertices {
            v.parallelism = PARALLELISM_UNDECIDED;
        }
    }
    JobGraphJson {
        job_type: "batch".to_owned(),
        ..job(vertices, edges)
    }
}

/// The sizes of the forward groups, largest first.
fn group_sizes(json: &JobGraphJson) -> Vec<usize> {
    let job = JobGraph::from_json(json).expect("valid");
    let groups = ForwardGroups::compute(&job);
    let mut sizes: Vec<usize> = (0..groups.len())
        .map(|g| {
            groups
                .members(conflux_graph::forward_group::ForwardGroupIndex(g as u32))
                .len()
        })
        .collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    sizes
}

/// `testIsolatedVertices`: no edges, no groups.
#[test]
fn isolated_vertices_form_no_group() {
    assert!(group_sizes(&batch(3, true, vec![])).is_empty());
}

/// `testVariousResultPartitionTypesBetweenVertices`: v1 -> v2 -> v3 with either edge FORWARD.
#[test]
fn a_chain_groups_the_vertices_its_forward_edges_join() {
    let chain = |f1, f2| {
        batch(
            3,
            true,
            vec![
                forward(edge("v1", "v2", "all_to_all", "blocking"), f1),
                forward(edge("v2", "v3", "pointwise", "blocking"), f2),
            ],
        )
    };
    assert_eq!(group_sizes(&chain(false, true)), [2]);
    assert!(group_sizes(&chain(false, false)).is_empty());
    assert_eq!(group_sizes(&chain(true, true)), [3]);
}

/// `testTwoInputsMergesIntoOne`: v1 and v2 both FORWARD into v3, v3 -> v4 not.
#[test]
fn two_forward_inputs_merge_into_one_group() {
    let json = batch(
        4,
        true,
        vec![
            forward(edge("v1", "v3", "all_to_all", "blocking"), true),
            forward(edge("v2", "v3", "pointwise", "blocking"), true),
            edge("v3", "v4", "all_to_all", "blocking"),
        ],
    );
    assert_eq!(group_sizes(&json), [3]);
}

/// `testOneInputSplitsIntoTwo`: v1 -> v2, then v2 FORWARD into v3 and v4.
#[test]
fn one_input_split_into_two_forward_outputs_is_one_group() {
    let json = batch(
        4,
        true,
        vec![
            edge("v1", "v2", "all_to_all", "blocking"),
            forward(edge("v2", "v3", "pointwise", "blocking"), true),
            forward(edge("v2", "v4", "pointwise", "blocking"), true),
        ],
    );
    assert_eq!(group_sizes(&json), [3]);
}

/// Only Flink's exact spelling makes a FORWARD edge (`RESCALE`, `forward` do not).
#[test]
fn only_forward_spelled_as_flink_does_joins() {
    let mut json = batch(
        3,
        true,
        vec![
            edge("v1", "v2", "pointwise", "blocking"),
            edge("v2", "v3", "pointwise", "blocking"),
        ],
    );
    json.edges[0].ship_strategy = Some("forward".to_owned());
    json.edges[1].ship_strategy = Some("RESCALE".to_owned());
    assert!(group_sizes(&json).is_empty());
}

/// A group with a fixed member gives its parallelism to its undecided members (Flink sets it at
/// compile time, so they are decided); the parallelism of a vertex outside stays undecided.
#[test]
fn a_fixed_member_gives_the_group_its_parallelism() {
    let mut json = batch(
        4,
        true,
        vec![
            edge("v1", "v2", "all_to_all", "blocking"),
            forward(edge("v2", "v3", "pointwise", "blocking"), true),
            edge("v3", "v4", "all_to_all", "blocking"),
        ],
    );
    json.vertices[2].parallelism = 7;
    let job = JobGraph::from_json(&json).expect("valid");
    let v = |id| job.vertex(job.vertex_index(id).expect("vertex"));
    assert_eq!((v("v2").parallelism, v("v2").undecided), (7, false));
    assert_eq!((v("v3").parallelism, v("v3").undecided), (7, false));
    assert!(v("v1").undecided && v("v4").undecided);
}

/// Every member gets the group's max parallelism, the least configured one; an undecided
/// member's estimate is capped by it. Vertices outside keep theirs.
#[test]
fn members_share_the_least_configured_max_parallelism() {
    let mut json = batch(
        3,
        true,
        vec![
            edge("v1", "v2", "all_to_all", "blocking"),
            forward(edge("v2", "v3", "pointwise", "blocking"), true),
        ],
    );
    json.vertices[1].max_parallelism = Some(300);
    json.vertices[2].max_parallelism = Some(40);
    let job = JobGraph::from_json(&json).expect("valid");
    let v = |id| job.vertex(job.vertex_index(id).expect("vertex"));
    assert_eq!((v("v2").max_parallelism, v("v3").max_parallelism), (40, 40));
    assert_eq!((v("v2").parallelism, v("v3").parallelism), (40, 40));
    assert!(v("v2").max_parallelism_configured);
    assert!(!v("v1").max_parallelism_configured);
}

/// Two fixed, different parallelisms across a FORWARD edge: Flink's "Forward partitioning does
/// not allow change of parallelism", naming the edge; also when an undecided vertex lies
/// between them, and in a streaming job.
#[test]
fn different_fixed_parallelisms_in_one_group_are_refused() {
    let direct = JobGraphJson {
        vertices: vec![vertex("map", 4), vertex("sink", 5)],
        ..job(
            vec![],
            vec![forward(edge("map", "sink", "pointwise", "pipelined"), true)],
        )
    };
    assert_eq!(
        JobGraph::from_json(&direct).unwrap_err(),
        GraphError::ForwardParallelism {
            edge: 0,
            source_id: "map".to_owned(),
            target_id: "sink".to_owned(),
            source_parallelism: 4,
            target_parallelism: 5,
        }
    );
    let message = JobGraph::from_json(&direct).unwrap_err().to_string();
    assert!(
        message.starts_with(
            "edge 0 (map -> sink): Forward partitioning does not allow change of parallelism"
        ),
        "{message}"
    );
    // v1 (4) -F-> v2 (-1) -F-> v3 (5): the edge that joins them is named.
    let mut through = batch(
        3,
        true,
        vec![
            forward(edge("v1", "v2", "pointwise", "blocking"), true),
            forward(edge("v2", "v3", "pointwise", "blocking"), true),
        ],
    );
    through.vertices[0].parallelism = 4;
    through.vertices[2].parallelism = 5;
    assert!(matches!(
        JobGraph::from_json(&through).unwrap_err(),
        GraphError::ForwardParallelism {
            edge: 1,
            source_parallelism: 4,
            target_parallelism: 5,
            ..
        }
    ));
    // Equal parallelisms are fine, and a non-FORWARD pointwise edge may rescale.
    let mut equal = direct.clone();
    equal.vertices[1].parallelism = 4;
    assert!(JobGraph::from_json(&equal).is_ok());
    let mut rescale = direct.clone();
    rescale.edges[0].ship_strategy = Some("RESCALE".to_owned());
    assert!(JobGraph::from_json(&rescale).is_ok());
}

/// A configured max parallelism below the group's fixed parallelism is refused, naming its
/// vertex (Flink's `ForwardGroup` check).
#[test]
fn a_max_parallelism_below_the_groups_parallelism_is_refused() {
    let mut json = batch(
        2,
        true,
        vec![forward(edge("v1", "v2", "pointwise", "blocking"), true)],
    );
    json.vertices[0].parallelism = 100;
    json.vertices[1].max_parallelism = Some(50);
    assert_eq!(
        JobGraph::from_json(&json).unwrap_err(),
        GraphError::ForwardGroupMaxParallelism {
            vertex: "v2".to_owned(),
            max_parallelism: 50,
            group_parallelism: 100,
        }
    );
}
