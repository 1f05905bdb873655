//! Job graph JSON parsing and validation: every bad input is an error naming the item, and no
//! input panics.

use conflux_graph::load::{self, LoadOptions};
use conflux_graph::{GraphError, JobGraph, JobGraphJson, JobVertexIndex};
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
            r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":-3}]}"#,
            &["vertex 'a'", "at least 1, or -1 (undecided), not -3"],
        ),
        (
            r#"{"job_type":"streaming","vertices":[{"id":"a","parallelism":1},{"id":"b","parallelism":-1}]}"#,
            &["vertex 'b'", "-1 (undecided) is only valid in a batch job"],
        ),
        (
            r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2},{"id":"b","parallelism":4},{"id":"c","parallelism":-1}],
               "edges":[{"source":"a","target":"b","distribution_pattern":"all_to_all","result_partition_type":"blocking","data_set":"x"},
                        {"source":"a","target":"c","distribution_pattern":"all_to_all","result_partition_type":"blocking","data_set":"x"}]}"#,
            &[
                "data set 'x'",
                "consumer 'c' has undecided parallelism",
                "consumer 'b' a fixed one",
            ],
        ),
        (
            r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2,"source_bytes":-5}]}"#,
            &["invalid value", "-5"],
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
    let (a, b) = (JobVertexIndex(0), JobVertexIndex(1));
    assert_eq!(g.vertex_id(a), "a");
    assert_eq!(g.vertices()[1].max_parallelism, 256); // 100 + 50 -> 256
    assert_eq!(g.vertices()[0].max_parallelism, 7);
    assert_eq!(g.slot_sharing_group(b), "default");
    assert_eq!(g.slot_sharing_group(a), "s");
    // Two parallel edges get two data sets with distinct generated names.
    let names: Vec<&str> = g.data_sets().iter().map(|d| d.id.as_str()).collect();
    assert_eq!(names, ["a->b", "a->b.2"]);
    assert_eq!(g.produced_data_sets(a).len(), 2);
    assert_eq!(g.inputs(b).len(), 2);
    let again = JobGraph::from_json(&g.to_json()).expect("round trip is valid");
    assert_eq!(again, g);
}

/// Names and descriptions are kept by both readers, written back, and resolve a vertex as well
/// as its id: an id wins, a unique name works, a shared name is an error naming both ids.
#[test]
fn names_and_descriptions_are_kept_and_resolve_vertices() {
    let text = br#"{"job_type":"streaming","vertices":[
        {"id":"s","name":"Source: bids","description":"Source: bids<br/>+- Map<br/>","parallelism":2},
        {"id":"m1","name":"Map","parallelism":2},
        {"id":"m2","name":"Map","parallelism":2},
        {"id":"k","name":"s","parallelism":1}],
        "edges":[{"source":"s","target":"m1","distribution_pattern":"pointwise","result_partition_type":"pipelined"},
                 {"source":"s","target":"m2","distribution_pattern":"pointwise","result_partition_type":"pipelined"},
                 {"source":"m1","target":"k","distribution_pattern":"all_to_all","result_partition_type":"pipelined"}]}"#;
    let g = load::load(text, &LoadOptions::default()).expect("valid");
    assert_loads_as_reference(text, &LoadOptions::default());
    let s = g.vertex_index("s").unwrap();
    assert_eq!(g.vertex_name(s), Some("Source: bids"));
    assert_eq!(
        g.vertex_description(s),
        Some("Source: bids<br/>+- Map<br/>")
    );
    let k = g.vertex_index("k").unwrap();
    assert_eq!(
        (g.vertex_name(k), g.vertex_description(k)),
        (Some("s"), None)
    );
    assert_eq!(g.resolve_vertex("Source: bids"), Ok(s));
    assert_eq!(g.resolve_vertex("s"), Ok(s), "an id wins over a name");
    assert_eq!(g.resolve_vertex("k"), Ok(k));
    let ambiguous = GraphError::AmbiguousVertexName {
        name: "Map".to_owned(),
        candidates: vec!["m1".to_owned(), "m2".to_owned()],
    };
    assert_eq!(g.resolve_vertex("Map"), Err(ambiguous.clone()));
    assert_eq!(
        ambiguous.to_string(),
        "vertex name 'Map' is ambiguous: vertices m1, m2 have it; name one by id"
    );
    assert_eq!(
        g.resolve_vertex("map"),
        Err(GraphError::UnknownVertexRef("map".to_owned()))
    );
    let json = g.to_json();
    assert_eq!(json.vertices[0].name.as_deref(), Some("Source: bids"));
    assert_eq!(json.resolve_vertex("Source: bids"), Ok(0));
    assert_eq!(json.resolve_vertex("Map"), Err(ambiguous));
    assert_eq!(JobGraph::from_json(&json).expect("round trip"), g);
    let written = json.to_json_pretty();
    assert!(
        written.contains(r#""description": "Source: bids<br/>+- Map<br/>""#),
        "{written}"
    );
    assert!(!written.contains(r#""description": null"#), "{written}");
}

/// A vertex's task (`invokable`) and task config are kept by both readers, sparsely, in
/// topological order, and written back only where given.
#[test]
fn invokables_and_configs_are_kept() {
    let text = br#"{"job_type":"batch","vertices":[
        {"id":"count","parallelism":2,"invokable":"wordcount-count","config":{"words-per-source":"5","seed":"1"}},
        {"id":"source","parallelism":2,"invokable":"wordcount-source"},
        {"id":"other","parallelism":1,"config":{"k":"v"}},
        {"id":"plain","parallelism":1}],
        "edges":[{"source":"source","target":"count","distribution_pattern":"all_to_all","result_partition_type":"blocking"}]}"#;
    let g = load::load(text, &LoadOptions::default()).expect("valid");
    assert_loads_as_reference(text, &LoadOptions::default());
    let at = |id: &str| g.vertex_index(id).unwrap();
    // `source` comes first in topological order: the sparse table follows the vertices.
    assert_eq!(at("source").0, 0);
    assert_eq!(g.vertex_invokable(at("source")), Some("wordcount-source"));
    assert!(g.vertex_config(at("source")).is_empty());
    assert_eq!(g.vertex_invokable(at("count")), Some("wordcount-count"));
    let config: Vec<(&str, &str)> = g
        .vertex_config(at("count"))
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(config, [("seed", "1"), ("words-per-source", "5")]);
    assert_eq!(g.vertex_invokable(at("other")), None);
    assert_eq!(
        g.vertex_config(at("other")).get("k").map(String::as_str),
        Some("v")
    );
    assert_eq!(g.vertex_invokable(at("plain")), None);
    assert!(g.vertex_config(at("plain")).is_empty());
    let json = g.to_json();
    assert_eq!(JobGraph::from_json(&json).expect("round trip"), g);
    let written = json.to_json_pretty();
    assert!(
        written.contains(r#""invokable": "wordcount-count""#),
        "{written}"
    );
    assert!(written.contains(r#""words-per-source": "5""#), "{written}");
    assert_eq!(written.matches("invokable").count(), 2, "{written}");
    assert_eq!(written.matches("config").count(), 2, "{written}");
    // A different invokable or config is a different job.
    let mut other = json.clone();
    other.vertices[0]
        .config
        .insert("seed".to_owned(), "2".to_owned());
    assert_ne!(JobGraph::from_json(&other).expect("valid"), g);
    let mut other = json.clone();
    other.vertices[0].invokable = None;
    assert_ne!(JobGraph::from_json(&other).expect("valid"), g);
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

/// Loads through `load` (which reads job graph JSON straight into the compact graph) and through
/// the reference path (a whole `JobGraphJson`, then `JobGraph::from_json`), and requires the same
/// graph or the same error.
fn assert_loads_as_reference(bytes: &[u8], options: &LoadOptions) {
    let streamed = load::load(bytes, options);
    let reference = load::parse(bytes, options)
        .and_then(|(json, _)| JobGraph::from_json_estimating(&json, options.default_parallelism));
    assert_eq!(
        streamed,
        reference,
        "input: {}",
        String::from_utf8_lossy(bytes)
    );
    let owned = load::load_owned(bytes.to_vec(), options).map(|(graph, _)| graph);
    assert_eq!(owned, reference);
}

/// The streaming reader gives the derived reader's graph and errors, shape errors included
/// (unknown, missing and duplicate fields, arrays for objects, wrong types, escapes, trailing
/// input), at the same line and column.
#[test]
fn streaming_reader_matches_the_reference_reader() {
    let v = r#"{"id":"a","parallelism":2}"#;
    let cases = [
        format!(r#"{{"job_type":"batch","vertices":[{v}],"name":"n","edges":[]}}"#),
        format!(r#"{{"edges":[],"vertices":[{v}],"job_type":"batch"}}"#),
        format!(r#"{{"job_type":"batch","vertices":[{v}],"job_type":"streaming"}}"#),
        format!(r#"{{"job_type":"batch","vertices":[{v}],"vertices":[{v}]}}"#),
        format!(r#"{{"job_type":"batch","vertices":[{v}],"edges":[],"edges":[]}}"#),
        format!(r#"{{"name":"x","name":"y","job_type":"batch","vertices":[{v}]}}"#),
        format!(r#"{{"vertices":[{v}]}}"#),
        r#"{"job_type":"batch"}"#.to_owned(),
        r#"{}"#.to_owned(),
        format!(r#"["n","batch",[{v}]]"#),
        format!(r#"["n","batch",[{v}],[]]"#),
        format!(r#"["n","batch",[{v}],[],1]"#),
        r#"["n","batch"]"#.to_owned(),
        r#"["n"]"#.to_owned(),
        r#"[]"#.to_owned(),
        r#"{"job_type":"batch","vertices":[["a",2]]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[["a"]]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2,"id":"b"}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a
","parallelism":2}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"ab","parallelism":2}],"edges":[{"source":"ab","target":"ab","distribution_pattern":"pointwise","result_partition_type":"blocking"}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":{}}"#.to_owned(),
        r#"{"job_type":"batch","vertices":null}"#.to_owned(),
        format!(r#"{{"job_type":"batch","vertices":[{v}],"edges":null}}"#),
        format!(r#"{{"job_type":"batch","vertices":[{v}],"edges":[{{}}]}}"#),
        format!(r#"{{"job_type":"batch","vertices":[{v}],"edges":[{{"source":"a","target":"a","distribution_pattern":"pointwise","result_partition_type":"blocking","colour":1}}]}}"#),
        format!(r#"{{"job_type":"batch","vertices":[{v}],"edges":[["a","a","pointwise","blocking"]]}}"#),
        format!(r#"{{"job_type":1,"vertices":[{v}]}}"#),
        format!(r#"{{"job_type":"batch","name":null,"vertices":[{v}]}}"#),
        format!(r#"{{"job_type":"batch","vertices":[{v}]}} x"#),
        format!(r#"{{"job_type":"batch","vertices":[{v},]}}"#),
        format!(r#"{{"job_type":"batch","vertices":[{v}],}}"#),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2,"slot_sharing_group":null,"co_location_group":"c","operators":[{"name":"o"}]}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2,"operators":[{"name":"o","colour":1}]}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","name":"Map \u00e9","description":"x<br/>y","parallelism":2},{"id":"b","name":null,"parallelism":1}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2,"name":"n","name":"m"}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2,"description":3}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[["a","n","d",2]]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2,"invokable":"wordcount-source","config":{"seed":"1","vocabulary":"10"}}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2,"config":{"k":"1","k":"2"}}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2,"config":{}, "invokable":null}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2,"config":{"k":1}}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2,"config":null}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2,"invokable":"x","invokable":"y"}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2,"invokable":3}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":-1,"source_bytes":1073741824},{"id":"b","parallelism":-1,"max_parallelism":16,"skew_splittable":true}],"edges":[{"source":"a","target":"b","distribution_pattern":"all_to_all","result_partition_type":"blocking"}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2,"skew_splittable":1}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2,"source_bytes":1,"source_bytes":2}]}"#.to_owned(),
        r#"{"job_type":"streaming","vertices":[{"id":"a","parallelism":-1}]}"#.to_owned(),
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":-2}]}"#.to_owned(),
        "17".to_owned(),
        "null".to_owned(),
    ];
    for text in &cases {
        assert_loads_as_reference(text.as_bytes(), &LoadOptions::default());
    }
    let options = LoadOptions {
        parallelism: Some(5),
        ..LoadOptions::default()
    };
    let text = r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2},{"id":"b","parallelism":1},{"id":"c","parallelism":3,"max_parallelism":4}]}"#;
    assert_loads_as_reference(text.as_bytes(), &options);
    let with_undecided = r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2},{"id":"b","parallelism":1},{"id":"c","parallelism":-1,"max_parallelism":4}]}"#;
    for options in [
        options,
        LoadOptions {
            auto_parallelism: true,
            default_parallelism: 3,
            ..LoadOptions::default()
        },
    ] {
        assert_loads_as_reference(with_undecided.as_bytes(), &options);
    }
}

/// `-1` is undecided (batch only): the graph holds the estimate (`--default-parallelism`,
/// capped by an explicit max parallelism) and the flag; `--parallelism auto` makes every vertex
/// above 1 undecided, `--parallelism N` fixes undecided ones at `N`; `source_bytes` and
/// `skew_splittable` survive the round trip.
#[test]
fn undecided_parallelism_is_an_estimate_and_a_flag() {
    let text = br#"{"job_type":"batch","vertices":[
        {"id":"s","parallelism":-1,"source_bytes":1073741824},
        {"id":"c","parallelism":-1,"max_parallelism":16,"skew_splittable":true},
        {"id":"k","parallelism":1},{"id":"f","parallelism":4}],
        "edges":[{"source":"s","target":"c","distribution_pattern":"all_to_all","result_partition_type":"blocking"},
                 {"source":"c","target":"k","distribution_pattern":"all_to_all","result_partition_type":"blocking"},
                 {"source":"k","target":"f","distribution_pattern":"all_to_all","result_partition_type":"blocking"}]}"#;
    let estimated = LoadOptions {
        default_parallelism: 32,
        ..LoadOptions::default()
    };
    let g = load::load(text, &estimated).unwrap();
    let at = |g: &JobGraph, id: &str| {
        let j = g.vertex_index(id).unwrap();
        let v = g.vertex(j);
        (
            v.parallelism,
            v.undecided,
            v.skew_splittable,
            g.source_bytes(j),
        )
    };
    assert_eq!(at(&g, "s"), (32, true, false, Some(1 << 30)));
    assert_eq!(at(&g, "c"), (16, true, true, None), "capped by max 16");
    assert_eq!(at(&g, "k"), (1, false, false, None));
    assert_eq!(at(&g, "f"), (4, false, false, None));
    assert_eq!(g.num_execution_vertices(), 32 + 16 + 1 + 4);
    assert!(g.has_undecided());
    // Round trip: -1 written back, the fields kept.
    let json = g.to_json();
    assert_eq!(json.vertices[0].parallelism, -1);
    assert_eq!(json.vertices[0].source_bytes, Some(1 << 30));
    assert!(json.vertices[1].skew_splittable);
    let again = JobGraph::from_json_estimating(&json, 32).unwrap();
    assert_eq!(again, g);
    let text_json = json.to_json_pretty();
    assert!(text_json.contains("\"parallelism\": -1"), "{text_json}");
    assert!(
        !text_json.contains("skew_splittable\": false"),
        "{text_json}"
    );

    let auto = LoadOptions {
        auto_parallelism: true,
        ..estimated
    };
    let g = load::load(text, &auto).unwrap();
    assert_eq!(at(&g, "f"), (32, true, false, None), "above 1: undecided");
    assert_eq!(at(&g, "k"), (1, false, false, None), "1 stays");
    let fixed = LoadOptions {
        parallelism: Some(8),
        ..estimated
    };
    let g = load::load(text, &fixed).unwrap();
    assert_eq!(at(&g, "s"), (8, false, false, Some(1 << 30)));
    assert!(!g.has_undecided());
    let mut g = load::load(text, &estimated).unwrap();
    g.fix_undecided();
    assert_eq!(at(&g, "s"), (32, false, false, Some(1 << 30)));

    // --parallelism auto on a streaming job names the first vertex it makes undecided.
    let streaming = br#"{"job_type":"streaming","vertices":[{"id":"one","parallelism":1},{"id":"many","parallelism":4}]}"#;
    let e = load::load(streaming, &auto).unwrap_err().to_string();
    assert_eq!(
        e,
        "vertex 'many': parallelism -1 (undecided) is only valid in a batch job"
    );
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
        Just(r#""name""#.to_owned()),
        Just(r#""description""#.to_owned()),
        Just(r#""invokable""#.to_owned()),
        Just(r#""config""#.to_owned()),
        Just(r#""a""#.to_owned()),
        Just(r#""b""#.to_owned()),
        Just(r#""parallelism""#.to_owned()),
        Just(r#""source""#.to_owned()),
        Just(r#""target""#.to_owned()),
        Just(r#""nodes""#.to_owned()),
        Just(r#""inputs""#.to_owned()),
        Just(r#""source_bytes""#.to_owned()),
        Just(r#""skew_splittable""#.to_owned()),
        Just("true".to_owned()),
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
        assert_loads_as_reference(&bytes, &LoadOptions::default());
    }

    /// Token soup close to valid job graph JSON loads as the reference reader loads it.
    #[test]
    fn near_json_loads_as_the_reference(
        tokens in proptest::collection::vec(prop_oneof![
            json_fragment(),
            Just(r#""name""#.to_owned()),
            Just(r#""data_set""#.to_owned()),
            Just(r#""distribution_pattern""#.to_owned()),
            Just(r#""result_partition_type""#.to_owned()),
            Just(r#""pointwise""#.to_owned()),
            Just(r#""blocking""#.to_owned()),
            Just(r#""batch""#.to_owned()),
            Just("null".to_owned()),
            Just(r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":1}"#.to_owned()),
            Just(r#"{"source":"a","target":"b","distribution_pattern":"pointwise","result_partition_type":"blocking""#.to_owned()),
        ], 0..40),
    ) {
        assert_loads_as_reference(tokens.concat().as_bytes(), &LoadOptions::default());
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
        assert_loads_as_reference(json.to_json_pretty().as_bytes(), &LoadOptions::default());
        if let Ok(job) = JobGraph::from_json(&json) {
            assert_eq!(JobGraph::from_json(&job.to_json()).as_ref(), Ok(&job));
            let graph = conflux_graph::ExecutionGraph::build(job).expect("a valid job graph expands");
            let _ = conflux_graph::PipelinedRegions::compute(&graph);
        }
    }
}
