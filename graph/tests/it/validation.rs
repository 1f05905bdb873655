//! Job graph JSON parsing and validation: every bad input is an error naming the item, and no
//! input panics.

use conflux_graph::load::{self, LoadOptions};
use conflux_graph::{GraphError, JobGraph, JobGraphJson};
use proptest::prelude::*;

use crate::support::{edge, job, vertex};

/// Loads JSON text and returns the error message, failing the test if it loads.
fn error_of(text: &str) -> String {
    match load::load(text.as_bytes(), &LoadOptions::default()) {
        Ok(_) => panic!("expected an error for {text}"),
        Err(e) => e.to_string(),
    }
}

/// Each case: input, and fragments the error message must contain.
#[test]
fn bad_job_graphs_are_rejected_naming_the_item() {
    let cases: &[(&str, &[&str])] = &[
        (
            r#"{"job_type":"streaming","vertices":[]}"#,
            &["no vertices"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a","parallelism":1},{"id":"a","parallelism":2}]}"#,
            &["duplicate vertex id 'a'"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a#1","parallelism":1}]}"#,
            &["vertex 0", "a#1", "'#'"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"","parallelism":1}]}"#,
            &["vertex 0", "empty"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a","parallelism":0}]}"#,
            &["vertex 'a'", "parallelism must be at least 1"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a","parallelism":200,"max_parallelism":128}]}"#,
            &["vertex 'a'", "parallelism 200", "max parallelism 128"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a","parallelism":1}],
                "edges":[{"source":"a","target":"b","distribution_pattern":"pointwise","result_partition_type":"blocking"}]}"#,
            &["edge 0 (a -> b)", "unknown target vertex 'b'"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a","parallelism":1},{"id":"b","parallelism":1}],
                "edges":[{"source":"a","target":"b","distribution_pattern":"sideways","result_partition_type":"blocking"}]}"#,
            &["edge 0 (a -> b)", "distribution_pattern 'sideways'"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a","parallelism":1},{"id":"b","parallelism":1}],
                "edges":[{"source":"a","target":"b","distribution_pattern":"pointwise","result_partition_type":"eventually"}]}"#,
            &["edge 0 (a -> b)", "result_partition_type 'eventually'"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a","parallelism":1},{"id":"b","parallelism":1},{"id":"c","parallelism":1}],
                "edges":[{"source":"a","target":"b","distribution_pattern":"pointwise","result_partition_type":"blocking"},
                         {"source":"b","target":"c","distribution_pattern":"pointwise","result_partition_type":"blocking"},
                         {"source":"c","target":"b","distribution_pattern":"pointwise","result_partition_type":"blocking"}]}"#,
            &["cycle", "b -> c -> b"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a","parallelism":1}],
                "edges":[{"source":"a","target":"a","distribution_pattern":"pointwise","result_partition_type":"blocking"}]}"#,
            &["cycle", "a -> a"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a","parallelism":1,"colour":"red"}]}"#,
            &["unknown field `colour`", "line 1"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a","parallelism":1}],"extra":1}"#,
            &["unknown field `extra`"],
        ),
        (
            r#"{"job_type":"interactive","vertices":[{"id":"a","parallelism":1}]}"#,
            &["job_type 'interactive'"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a","parallelism":-3}]}"#,
            &["invalid value", "-3"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a"}]}"#,
            &["missing field `parallelism`"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a","parallelism":1}"#,
            &["EOF", "line 1"],
        ),
        ("[1, 2, 3]", &["invalid"]),
        ("", &["EOF"]),
        (
            r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":1},{"id":"b","parallelism":1},{"id":"c","parallelism":1}],
                "edges":[{"source":"a","target":"c","distribution_pattern":"pointwise","result_partition_type":"blocking","data_set":"x"},
                         {"source":"b","target":"c","distribution_pattern":"pointwise","result_partition_type":"blocking","data_set":"x"}]}"#,
            &["data set 'x'", "edge 1", "source 'b'", "'a'"],
        ),
        (
            r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":1},{"id":"b","parallelism":1},{"id":"c","parallelism":1}],
                "edges":[{"source":"a","target":"b","distribution_pattern":"pointwise","result_partition_type":"blocking","data_set":"x"},
                         {"source":"a","target":"c","distribution_pattern":"pointwise","result_partition_type":"pipelined","data_set":"x"}]}"#,
            &[
                "data set 'x'",
                "result_partition_type 'pipelined'",
                "'blocking'",
            ],
        ),
        (
            r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":1},{"id":"b","parallelism":2},{"id":"c","parallelism":3}],
                "edges":[{"source":"a","target":"b","distribution_pattern":"all_to_all","result_partition_type":"blocking","data_set":"x"},
                         {"source":"a","target":"c","distribution_pattern":"all_to_all","result_partition_type":"blocking","data_set":"x"}]}"#,
            &["data set 'x'", "'b' (parallelism 2)", "'c' (parallelism 3)"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a","parallelism":40000000},{"id":"b","parallelism":40000000}]}"#,
            &["80000000 execution vertices", "limit"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"h","parallelism":2,"co_location_group":"it"},{"id":"t","parallelism":3,"co_location_group":"it"}]}"#,
            &["co-location group 'it'", "'h'", "'t'"],
        ),
    ];
    for (input, fragments) in cases {
        let message = error_of(input);
        for fragment in *fragments {
            assert!(
                message.contains(fragment),
                "error for {input}\n  was: {message}\n  lacks: {fragment}"
            );
        }
    }
}

#[test]
fn co_located_tasks_in_different_regions_are_an_error() {
    // Head and tail of an iteration are co-located, but a blocking edge puts them in separate
    // regions: Flink refuses this too.
    let mut json = job(
        vec![vertex("head", 2), vertex("tail", 2)],
        vec![edge("head", "tail", "pointwise", "blocking")],
    );
    for v in &mut json.vertices {
        v.co_location_group = Some("iteration".to_owned());
    }
    let graph = conflux_graph::ExecutionGraph::build(JobGraph::from_json(&json).expect("valid"))
        .expect("expands");
    let error = conflux_graph::PipelinedRegions::compute(&graph).expect_err("must fail");
    assert_eq!(
        error,
        GraphError::CoLocationAcrossRegions {
            group: "iteration".to_owned(),
            first: "head#0".to_owned(),
            second: "tail#0".to_owned(),
        }
    );
    json.edges[0].result_partition_type = "pipelined".to_owned();
    let (_, regions) = crate::support::build(&json);
    assert_eq!(regions.len(), 2);
}

#[test]
fn defaults_and_round_trip() {
    let json = JobGraphJson::parse(
        br#"{"name":"j","job_type":"batch","vertices":[
            {"id":"b","parallelism":100},{"id":"a","parallelism":7,"max_parallelism":7,"slot_sharing_group":"s"}],
            "edges":[{"source":"a","target":"b","distribution_pattern":"pointwise","result_partition_type":"blocking"},
                     {"source":"a","target":"b","distribution_pattern":"pointwise","result_partition_type":"blocking"}]}"#,
    )
    .expect("parses");
    let g = JobGraph::from_json(&json).expect("valid");
    // Topological order puts `a` first although it is listed second.
    assert_eq!(g.vertices()[0].id, "a");
    assert_eq!(g.vertices()[1].max_parallelism, 256); // 100 + 50 -> 256
    assert_eq!(g.vertices()[0].max_parallelism, 7);
    assert_eq!(g.vertices()[1].slot_sharing_group, "default");
    // Two parallel edges get two data sets with distinct generated names.
    let names: Vec<&str> = g.data_sets().iter().map(|d| d.id.as_str()).collect();
    assert_eq!(names, ["a->b", "a->b.2"]);
    assert_eq!(g.vertices()[0].produced_data_sets.len(), 2);
    assert_eq!(g.vertices()[1].inputs.len(), 2);
    let again = JobGraph::from_json(&g.to_json()).expect("round trip is valid");
    assert_eq!(again, g);
}

#[test]
fn default_max_parallelism_follows_flink_without_its_cap() {
    use conflux_graph::default_max_parallelism as m;
    assert_eq!(m(1), 128);
    assert_eq!(m(85), 128); // 85 + 42 = 127
    assert_eq!(m(86), 256); // 86 + 43 = 129
    assert_eq!(m(10_000), 16_384);
    assert_eq!(m(30_000), 65_536); // Flink would cap at 32,768
    assert_eq!(m(100_000), 262_144);
}

fn json_fragment() -> impl Strategy<Value = String> {
    // Pieces of valid job graph JSON, so that random sequences get past the first byte often.
    prop_oneof![
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just(",".to_owned()),
        Just(":".to_owned()),
        Just(r#""job_type""#.to_owned()),
        Just(r#""streaming""#.to_owned()),
        Just(r#""vertices""#.to_owned()),
        Just(r#""edges""#.to_owned()),
        Just(r#""id""#.to_owned()),
        Just(r#""a""#.to_owned()),
        Just(r#""b""#.to_owned()),
        Just(r#""parallelism""#.to_owned()),
        Just(r#""source""#.to_owned()),
        Just(r#""target""#.to_owned()),
        Just(r#""nodes""#.to_owned()),
        Just(r#""inputs""#.to_owned()),
        (0u64..5_000_000_000).prop_map(|n| n.to_string()),
        Just("-1".to_owned()),
        "[a-z#@]{0,4}".prop_map(|s| format!("\"{s}\"")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Arbitrary bytes never panic the loader.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = load::load(&bytes, &LoadOptions::default());
    }

    /// Token soup close to valid JSON never panics the loader, and whatever loads also expands
    /// and gets regions (or a typed error).
    #[test]
    fn near_json_never_panics(tokens in proptest::collection::vec(json_fragment(), 0..40)) {
        let text = tokens.concat();
        if let Ok(job) = load::load(text.as_bytes(), &LoadOptions::default()) {
            if let Ok(graph) = conflux_graph::ExecutionGraph::build(job) {
                let _ = conflux_graph::PipelinedRegions::compute(&graph);
            }
        }
    }

    /// Structurally valid JSON with random values: edges between random (possibly unknown) ids,
    /// random patterns and types, parallelism including 0: an error or a graph, never a panic.
    #[test]
    fn random_job_graphs_never_panic(
        vertices in proptest::collection::vec(("[abc]", 0u32..4, proptest::option::of(0u32..4)), 0..5),
        edges in proptest::collection::vec(("[abcd]", "[abcd]", 0usize..3, 0usize..8, proptest::option::of("[xy]")), 0..6),
    ) {
        let patterns = ["pointwise", "all_to_all", "diagonal"];
        let types = ["pipelined", "pipelined_bounded", "blocking", "hybrid_full", "hybrid_selective",
                     "blocking_persistent", "pipelined_approximate", "lazy"];
        let json = job(
            vertices.iter().map(|(id, p, max)| {
                let mut v = vertex(id, *p);
                v.max_parallelism = *max;
                v
            }).collect(),
            edges.iter().map(|(s, t, p, ty, ds)| {
                let mut e = edge(s, t, patterns[*p], types[*ty]);
                e.data_set = ds.clone();
                e
            }).collect(),
        );
        if let Ok(job) = JobGraph::from_json(&json) {
            let graph = conflux_graph::ExecutionGraph::build(job).expect("a valid job graph expands");
            let _ = conflux_graph::PipelinedRegions::compute(&graph);
        }
    }
}
