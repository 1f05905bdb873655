//! Import of the real Flink 1.20.3 job plans in `fixtures/flink-plans/` (see its README.md),
//! checked against the `JobGraph` dumps written by the same Flink run (`NAME.jobgraph.json`):
//! vertices, parallelisms, and every input of every vertex with its producer, distribution
//! pattern, result partition type and ship strategy. Then expansion and pipelined regions of every
//! fixture, region counts derived by hand for a few, `--parallelism` scaling, the `-1` default,
//! and REST's `{"plan": ...}` wrapper.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use conflux_graph::load::{load, LoadOptions};
use conflux_graph::{ExecutionGraph, JobGraph, JobType, PipelinedRegions};
use serde_json::Value;

/// How many plans the fixture directory holds; fewer means the copy is incomplete.
const EXPECTED_PLANS: usize = 57;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/flink-plans")
}

/// Names `NAME` of every `NAME.plan.json`, sorted; fails if there are fewer than 57.
fn plan_names() -> Vec<String> {
    let dir = fixtures_dir();
    let entries = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read fixture directory {}: {e}", dir.display()));
    let mut names: Vec<String> = entries
        .map(|entry| {
            entry
                .expect("readable directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter_map(|file| file.strip_suffix(".plan.json").map(str::to_owned))
        .collect();
    names.sort();
    assert!(
        names.len() >= EXPECTED_PLANS,
        "expected at least {EXPECTED_PLANS} *.plan.json in {}, found {}: {names:?}",
        dir.display(),
        names.len()
    );
    names
}

fn read_fixture(file: &str) -> Vec<u8> {
    let path = fixtures_dir().join(file);
    fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn plan_bytes(name: &str) -> Vec<u8> {
    read_fixture(&format!("{name}.plan.json"))
}

fn ground_truth(name: &str) -> Value {
    serde_json::from_slice(&read_fixture(&format!("{name}.jobgraph.json")))
        .unwrap_or_else(|e| panic!("{name}.jobgraph.json is not JSON: {e}"))
}

fn import(name: &str, options: &LoadOptions) -> JobGraph {
    load(&plan_bytes(name), options)
        .unwrap_or_else(|e| panic!("{name}.plan.json does not import: {e}"))
}

fn build(name: &str, options: &LoadOptions) -> (ExecutionGraph, PipelinedRegions) {
    let graph = ExecutionGraph::build(import(name, options))
        .unwrap_or_else(|e| panic!("{name}: execution graph: {e}"));
    let regions =
        PipelinedRegions::compute(&graph).unwrap_or_else(|e| panic!("{name}: regions: {e}"));
    (graph, regions)
}

// Ground-truth accessors: a malformed dump is a broken fixture, so they panic with its name.

fn gt_str<'a>(name: &str, v: &'a Value, key: &str) -> &'a str {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{name}.jobgraph.json: '{key}' is not a string in {v}"))
}

fn gt_i64(name: &str, v: &Value, key: &str) -> i64 {
    v.get(key)
        .and_then(Value::as_i64)
        .unwrap_or_else(|| panic!("{name}.jobgraph.json: '{key}' is not an integer in {v}"))
}

fn gt_array<'a>(name: &str, v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("{name}.jobgraph.json: '{key}' is not an array"))
}

/// The parallelism the importer must give a ground-truth vertex: `-1` becomes the default.
fn expected_parallelism(name: &str, gt_vertex: &Value, default_parallelism: u32) -> u32 {
    match gt_i64(name, gt_vertex, "parallelism") {
        -1 => default_parallelism,
        p => u32::try_from(p)
            .unwrap_or_else(|_| panic!("{name}.jobgraph.json: parallelism {p} out of range")),
    }
}

/// `HASH[o_orderkey]` -> `HASH`, as in the dump's `exchangeKinds`.
fn strategy_kind(ship_strategy: &str) -> &str {
    ship_strategy
        .split_once('[')
        .map_or(ship_strategy, |(kind, _)| kind)
}

/// Every difference between the imported `graph` and the dump `gt` of fixture `name`.
fn mismatches(name: &str, graph: &JobGraph, gt: &Value, default_parallelism: u32) -> Vec<String> {
    let mut out = Vec::new();
    let job = gt.get("job").expect("ground truth has 'job'");
    let gt_vertices = gt_array(name, gt, "vertices");

    // Job-level facts.
    let expected_type = match gt_str(name, job, "type") {
        "STREAMING" => JobType::Streaming,
        "BATCH" => JobType::Batch,
        other => panic!("{name}.jobgraph.json: job type {other}"),
    };
    if graph.job_type() != expected_type {
        out.push(format!(
            "{name}: job type {} (expected {expected_type})",
            graph.job_type()
        ));
    }
    let num_vertices = gt_i64(name, job, "numVertices");
    if i64::try_from(graph.vertices().len()) != Ok(num_vertices) {
        out.push(format!(
            "{name}: {} vertices (expected numVertices {num_vertices})",
            graph.vertices().len()
        ));
    }
    let num_edges = gt_i64(name, job, "numEdges");
    if i64::try_from(graph.edges().len()) != Ok(num_edges) {
        out.push(format!(
            "{name}: {} edges (expected numEdges {num_edges})",
            graph.edges().len()
        ));
    }

    // Exchange kinds: RESULT_PARTITION_TYPE/DISTRIBUTION_PATTERN/SHIP_STRATEGY -> count.
    let expected_kinds: BTreeMap<String, i64> = job
        .get("exchangeKinds")
        .and_then(Value::as_object)
        .expect("ground truth job has 'exchangeKinds'")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_i64().expect("exchange kind count")))
        .collect();
    let mut kinds: BTreeMap<String, i64> = BTreeMap::new();
    for e in graph.edges() {
        let kind = format!(
            "{}/{}/{}",
            e.result_partition_type.as_str().to_uppercase(),
            e.distribution_pattern.as_str().to_uppercase(),
            strategy_kind(e.ship_strategy.as_deref().unwrap_or("<none>"))
        );
        *kinds.entry(kind).or_default() += 1;
    }
    if kinds != expected_kinds {
        out.push(format!(
            "{name}: exchange kinds {kinds:?} (expected {expected_kinds:?})"
        ));
    }

    // Vertex ids.
    let ours: BTreeSet<&str> = graph.vertex_indices().map(|j| graph.vertex_id(j)).collect();
    let theirs: BTreeSet<&str> = gt_vertices.iter().map(|v| gt_str(name, v, "id")).collect();
    for missing in theirs.difference(&ours) {
        out.push(format!("{name}: vertex {missing} missing"));
    }
    for extra in ours.difference(&theirs) {
        out.push(format!("{name}: vertex {extra} not in the JobGraph"));
    }

    // Per vertex: parallelism and inputs in input order.
    for gt_vertex in gt_vertices {
        let id = gt_str(name, gt_vertex, "id");
        let Some(index) = graph.vertex_index(id) else {
            continue; // reported above
        };
        let vertex = graph.vertex(index);
        let at = format!("{name}: vertex {id} ({})", gt_str(name, gt_vertex, "name"));

        let parallelism = expected_parallelism(name, gt_vertex, default_parallelism);
        if vertex.parallelism != parallelism {
            out.push(format!(
                "{at}: parallelism {} (expected {parallelism}, plan value {})",
                vertex.parallelism,
                gt_i64(name, gt_vertex, "parallelism")
            ));
        }

        let mut gt_inputs: Vec<&Value> = gt_array(name, gt_vertex, "inputs").iter().collect();
        gt_inputs.sort_by_key(|i| gt_i64(name, i, "inputIndex"));
        if graph.inputs(index).len() != gt_inputs.len() {
            out.push(format!(
                "{at}: {} inputs (expected {})",
                graph.inputs(index).len(),
                gt_inputs.len()
            ));
        }
        for (n, (&edge_index, gt_input)) in graph.inputs(index).iter().zip(&gt_inputs).enumerate() {
            let edge = graph.edge(edge_index);
            let at = format!("{at} input {n}");
            if edge.target != index {
                out.push(format!(
                    "{at}: edge target is {} (expected this vertex)",
                    graph.vertex_id(edge.target)
                ));
            }
            let source = graph.vertex_id(edge.source);
            let gt_source = gt_str(name, gt_input, "sourceVertexId");
            if source != gt_source {
                out.push(format!("{at}: producer {source} (expected {gt_source})"));
            }
            let pattern = edge.distribution_pattern.as_str().to_uppercase();
            let gt_pattern = gt_str(name, gt_input, "distributionPattern");
            if pattern != gt_pattern {
                out.push(format!(
                    "{at}: distribution pattern {pattern} (expected {gt_pattern})"
                ));
            }
            let partition_type = edge.result_partition_type.as_str().to_uppercase();
            let gt_type = gt_str(name, gt_input, "resultPartitionType");
            if partition_type != gt_type {
                out.push(format!(
                    "{at}: result partition type {partition_type} (expected {gt_type})"
                ));
            }
            let gt_strategy = gt_str(name, gt_input, "shipStrategy");
            if edge.ship_strategy.as_deref() != Some(gt_strategy) {
                out.push(format!(
                    "{at}: ship strategy {:?} (expected {gt_strategy:?})",
                    edge.ship_strategy
                ));
            }
        }
    }
    out
}

/// The fixture set is complete and self-contained: `index.json` lists exactly the plans present,
/// and every file it names is in the directory (so a clone works without the shared copy).
#[test]
fn flink_fixture_index_matches_the_files() {
    let names = plan_names();
    let index: Value = serde_json::from_slice(&read_fixture("index.json")).expect("index.json");
    let jobs = index
        .get("jobs")
        .and_then(Value::as_array)
        .expect("index.json has 'jobs'");
    let listed: BTreeSet<String> = jobs
        .iter()
        .map(|j| gt_str("index", j, "name").to_owned())
        .collect();
    let present: BTreeSet<String> = names.iter().cloned().collect();
    assert_eq!(listed, present, "index.json jobs vs *.plan.json files");
    let mut missing = Vec::new();
    for job in jobs {
        for file in gt_array("index", job, "files") {
            let file = file.as_str().expect("file name");
            if !fixtures_dir().join(file).is_file() {
                missing.push(file.to_owned());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "files listed in index.json but absent: {missing:?}"
    );
    assert!(fixtures_dir().join("README.md").is_file(), "README.md");
}

/// Every plan imports into exactly the JobGraph Flink built: the same vertices with the same
/// parallelism, and per vertex the same inputs in the same order with the same producer,
/// distribution pattern, result partition type and ship strategy; the same counts.
#[test]
fn flink_plans_import_as_the_ground_truth_job_graphs() {
    let options = LoadOptions::default();
    let mut all = Vec::new();
    let mut checked = 0usize;
    for name in plan_names() {
        let graph = match load(&plan_bytes(&name), &options) {
            Ok(graph) => graph,
            Err(e) => {
                all.push(format!("{name}: import failed: {e}"));
                continue;
            }
        };
        all.extend(mismatches(
            &name,
            &graph,
            &ground_truth(&name),
            options.default_parallelism,
        ));
        checked += 1;
    }
    assert!(
        all.is_empty(),
        "{} mismatches over {checked} plans:\n{}",
        all.len(),
        all.join("\n")
    );
    assert!(checked >= EXPECTED_PLANS);
}

/// Every fixture expands into an execution graph with the subtasks and logical connections the
/// ground truth implies (all-to-all `U x D`, pointwise `max(U, D)`), and its pipelined regions
/// partition those subtasks.
#[test]
fn flink_plans_expand_and_split_into_regions() {
    let options = LoadOptions::default();
    let mut problems = Vec::new();
    for name in plan_names() {
        let gt = ground_truth(&name);
        let parallelism_of: BTreeMap<&str, u64> = gt_array(&name, &gt, "vertices")
            .iter()
            .map(|v| {
                (
                    gt_str(&name, v, "id"),
                    u64::from(expected_parallelism(&name, v, options.default_parallelism)),
                )
            })
            .collect();
        let subtasks: u64 = parallelism_of.values().sum();
        let mut connections = 0u64;
        for v in gt_array(&name, &gt, "vertices") {
            let d = parallelism_of[gt_str(&name, v, "id")];
            for input in gt_array(&name, v, "inputs") {
                let u = parallelism_of[gt_str(&name, input, "sourceVertexId")];
                connections += match gt_str(&name, input, "distributionPattern") {
                    "POINTWISE" => u.max(d),
                    _ => u * d,
                };
            }
        }

        let (graph, regions) = build(&name, &options);
        if u64::from(graph.num_execution_vertices()) != subtasks {
            problems.push(format!(
                "{name}: {} execution vertices (expected {subtasks})",
                graph.num_execution_vertices()
            ));
        }
        if graph.logical_connections() != connections {
            problems.push(format!(
                "{name}: {} logical connections (expected {connections})",
                graph.logical_connections()
            ));
        }
        let covered: u64 = regions.sizes().map(u64::from).sum();
        if regions.is_empty() || covered != subtasks {
            problems.push(format!(
                "{name}: {} regions covering {covered} of {subtasks} subtasks",
                regions.len()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Region counts and sizes worked out by hand from the ground truth (vertex parallelisms and
/// exchanges, listed in the fixtures README): PIPELINED_BOUNDED edges join producer and consumer
/// subtasks (all of them when all-to-all, pairwise when pointwise); BLOCKING and HYBRID_* edges
/// are region boundaries.
#[test]
fn flink_plan_region_counts_derived_by_hand() {
    // (fixture, default parallelism for -1, [(region size, how many regions)])
    type Case = (&'static str, u32, &'static [(u32, usize)]);
    let cases: &[Case] = &[
        // 4 + 4 subtasks, one pipelined all-to-all (HASH) edge: one region.
        ("wordcount-streaming-p4", 128, &[(8, 1)]),
        ("wordcount-streaming-p128", 128, &[(256, 1)]),
        // The same edge BLOCKING: every subtask alone.
        ("wordcount-batch-p4", 128, &[(1, 8)]),
        ("wordcount-batch-p128", 128, &[(1, 256)]),
        // -1 x 2 vertices at default parallelism 7, BLOCKING.
        ("wordcount-batch-p4-adaptive", 7, &[(1, 14)]),
        // 1 -> 4 REBALANCE -> 4 HASH, all pipelined all-to-all: 9 subtasks in one region.
        ("wordcount-fromelements-streaming-p4", 128, &[(9, 1)]),
        // FORWARD, HASH, FORWARD: the HASH edge joins everything, 16 subtasks.
        ("wordcount-streaming-p4-nochain", 128, &[(16, 1)]),
        // Source 2000 -RESCALE (pointwise, pipelined)-> map+sink 1000 (chained, 2 vertices):
        // each map subtask with its 2 source subtasks.
        ("rescale-2000-1000", 128, &[(3, 1000)]),
        // The same BLOCKING: 3000 single-subtask regions.
        ("rescale-2000-1000-batch", 128, &[(1, 3000)]),
        // REBALANCE is all-to-all: one region of 3000.
        ("rebalance-2000-1000", 128, &[(3000, 1)]),
        ("rebalance-2000-1000-batch", 128, &[(1, 3000)]),
        // Two sources FORWARD into the head, head FORWARD to the tail, all at 4: subtask i of
        // the four vertices forms region i.
        ("datastream-iteration", 128, &[(4, 4)]),
        // Every edge pipelined, several all-to-all: 4+2+1+4+4+4+2+1+3 = 25 subtasks, one region.
        ("datastream-mixed-streaming", 128, &[(25, 1)]),
        ("datastream-mixed-batch", 128, &[(1, 25)]),
        // Legacy source FORWARD to the sink writer, both at 8.
        ("nexmark-q0", 128, &[(2, 8)]),
        // One shared source at 8, FORWARD to two sinks and HASH to a third: one region of 32.
        ("nexmark-multi-insert-q1-q2-q17", 128, &[(32, 1)]),
        // 8 + 8 + 1 + 1 joined by HASH/GLOBAL pipelined edges.
        ("nexmark-q5", 128, &[(18, 1)]),
        // 5 vertices at 8 and the parallelism-1 sink, all BLOCKING: 41 regions.
        ("tpch-q3", 128, &[(1, 41)]),
        // HYBRID_FULL is a region boundary too.
        ("tpch-q3-hybrid-full", 128, &[(1, 41)]),
        // HYBRID_SELECTIVE and HYBRID_FULL (broadcasts), the RESCALE edge included: 10 x 8 + 1.
        ("tpch-q9-hybrid-selective", 128, &[(1, 81)]),
        // ALL_EXCHANGES_PIPELINED: pipelined all-to-all edges join all 5 x 8 + 1 subtasks; the
        // one BLOCKING edge (vertex 0 -> 4) lies inside that region.
        ("tpch-q18-pipelined", 128, &[(41, 1)]),
        // 5 x -1 at default 7 plus the parallelism-1 sink, BLOCKING: 36 regions.
        ("tpch-q3-auto-parallelism", 7, &[(1, 36)]),
    ];
    let mut problems = Vec::new();
    for &(name, default_parallelism, expected) in cases {
        let options = LoadOptions {
            default_parallelism,
            ..LoadOptions::default()
        };
        let (_, regions) = build(name, &options);
        let mut sizes: BTreeMap<u32, usize> = BTreeMap::new();
        for size in regions.sizes() {
            *sizes.entry(size).or_default() += 1;
        }
        let expected_sizes: BTreeMap<u32, usize> = expected.iter().copied().collect();
        let expected_count: usize = expected.iter().map(|&(_, n)| n).sum();
        if regions.len() != expected_count || sizes != expected_sizes {
            problems.push(format!(
                "{name}: {} regions, size -> count {sizes:?} (expected {expected_count}, \
                 {expected_sizes:?})",
                regions.len()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `--parallelism 16` on tpch-q3 sets the five parallelism-8 vertices to 16 and leaves the
/// parallelism-1 sink alone; nothing else changes.
#[test]
fn flink_plan_parallelism_override_scales_tpch_q3() {
    let name = "tpch-q3";
    let gt = ground_truth(name);
    let options = LoadOptions {
        parallelism: Some(16),
        ..LoadOptions::default()
    };
    let graph = import(name, &options);
    let mut ones = 0;
    for v in gt_array(name, &gt, "vertices") {
        let id = gt_str(name, v, "id");
        let plan_parallelism = gt_i64(name, v, "parallelism");
        let expected = if plan_parallelism == 1 { 1 } else { 16 };
        ones += usize::from(expected == 1);
        let index = graph.vertex_index(id).expect("vertex imported");
        assert_eq!(
            graph.vertex(index).parallelism,
            expected,
            "{id} (plan parallelism {plan_parallelism})"
        );
    }
    assert_eq!(ones, 1, "tpch-q3 has one parallelism-1 vertex");

    // Everything but the parallelisms is as without the option.
    let rescaled: Vec<String> = mismatches(name, &graph, &gt, 128)
        .into_iter()
        .filter(|m| !m.contains("parallelism 16 (expected 8"))
        .collect();
    assert!(rescaled.is_empty(), "{}", rescaled.join("\n"));
    let (execution, regions) = build(name, &options);
    assert_eq!(execution.num_execution_vertices(), 5 * 16 + 1);
    assert_eq!(regions.len(), 5 * 16 + 1);
}

/// Plan parallelism `-1` (the adaptive batch scheduler decides) imports as
/// `default_parallelism`; parallelism-1 vertices stay 1; `--parallelism` then applies to the
/// defaulted vertices like to any other.
#[test]
fn flink_plan_minus_one_parallelism_takes_the_default() {
    assert_eq!(
        LoadOptions::default().default_parallelism,
        conflux_graph::flink_plan::DEFAULT_ADAPTIVE_PARALLELISM
    );
    let seven = LoadOptions {
        default_parallelism: 7,
        ..LoadOptions::default()
    };
    for (name, adaptive_vertices) in [
        ("tpch-q3-auto-parallelism", 5usize),
        ("wordcount-batch-p4-adaptive", 2),
    ] {
        let gt = ground_truth(name);
        let graph = import(name, &seven);
        let mut defaulted = 0;
        for v in gt_array(name, &gt, "vertices") {
            let id = gt_str(name, v, "id");
            let index = graph.vertex_index(id).expect("vertex imported");
            let expected = match gt_i64(name, v, "parallelism") {
                -1 => {
                    defaulted += 1;
                    7
                }
                1 => 1,
                p => panic!("{name}: unexpected plan parallelism {p}"),
            };
            assert_eq!(graph.vertex(index).parallelism, expected, "{name} {id}");
            assert_eq!(
                graph.vertex(index).undecided,
                expected == 7,
                "{name} {id}: -1 stays undecided, the estimate aside"
            );
        }
        assert_eq!(defaulted, adaptive_vertices, "{name}: vertices with -1");
        let m = mismatches(name, &graph, &gt, 7);
        assert!(m.is_empty(), "{}", m.join("\n"));

        // Without options: Flink's adaptive maximum, 128.
        let graph = import(name, &LoadOptions::default());
        let at_128 = graph
            .vertices()
            .iter()
            .filter(|v| v.parallelism == 128)
            .count();
        assert_eq!(at_128, adaptive_vertices, "{name} at the default 128");

        // Defaulted to 7, then scaled to 16; the parallelism-1 sink stays.
        let graph = import(
            name,
            &LoadOptions {
                parallelism: Some(16),
                default_parallelism: 7,
                ..LoadOptions::default()
            },
        );
        let at_16 = graph
            .vertices()
            .iter()
            .filter(|v| v.parallelism == 16)
            .count();
        assert_eq!(at_16, adaptive_vertices, "{name} with --parallelism 16");
        assert_eq!(
            graph.vertices().len() - at_16,
            graph
                .vertices()
                .iter()
                .filter(|v| v.parallelism == 1)
                .count(),
            "{name}: the others stay at 1"
        );
    }
}

/// REST serves the plan as `{"plan": <plan>}`; every fixture imports identically wrapped.
#[test]
fn flink_plans_import_identically_in_the_rest_wrapper() {
    let options = LoadOptions::default();
    for name in plan_names() {
        let bare = plan_bytes(&name);
        let mut wrapped = b"{\"plan\": ".to_vec();
        wrapped.extend_from_slice(&bare);
        wrapped.push(b'}');
        let a = load(&bare, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
        let b = load(&wrapped, &options).unwrap_or_else(|e| panic!("{name} wrapped: {e}"));
        assert_eq!(a, b, "{name}: wrapped plan imports differently");
    }
}

/// Flink's dashboard escaping undone by hand, for the references the fixtures use: line breaks,
/// then each entity, `&amp;` last so that nothing is decoded twice.
fn decoded(escaped: &str) -> String {
    escaped
        .replace("<br/>", "\n")
        .replace("&gt;", ">")
        .replace("&lt;", "<")
        .replace("&#39;", "'")
        .replace("&#92;", "\\")
        .replace("&infin;", "\u{221e}")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// Every imported vertex keeps its node's `description`, decoded once from Flink's dashboard
/// escaping, and is named by the head operator (the description's first line); in TPC-H q5 the
/// sort resolves by that name as well as by its id, and nexmark q5's join condition reads
/// `num >= maxn`.
#[test]
fn flink_plans_keep_descriptions_and_name_vertices() {
    let options = LoadOptions::default();
    let mut problems = Vec::new();
    let mut entities = 0;
    for name in plan_names() {
        let plan: Value = serde_json::from_slice(&plan_bytes(&name)).unwrap();
        let graph = import(&name, &options);
        for node in gt_array(&name, &plan, "nodes") {
            let id = gt_str(&name, node, "id");
            let description = decoded(gt_str(&name, node, "description"));
            entities += usize::from(description != gt_str(&name, node, "description"));
            let j = graph.vertex_index(id).unwrap();
            let first_line = description.split('\n').next().unwrap();
            if graph.vertex_description(j) != Some(description.as_str())
                || graph.vertex_name(j) != Some(first_line)
            {
                problems.push(format!("{name} {id}: {:?}", graph.vertex_name(j)));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        entities > 50,
        "the fixtures escape: {entities} descriptions decoded"
    );
    let q5 = import("tpch-q5", &options);
    let sort = q5
        .resolve_vertex("[35]:Sort(orderBy=[revenue DESC])")
        .expect("the sort resolves by name");
    assert_eq!(
        q5.vertex_description(sort),
        Some("[35]:Sort(orderBy=[revenue DESC])\n+- tpch_q5[36]: Writer\n")
    );
    assert_eq!(q5.resolve_vertex(q5.vertex_id(sort)), Ok(sort));
    let nexmark = import("nexmark-q5", &options);
    assert!(nexmark.vertex_indices().any(|j| nexmark
        .vertex_description(j)
        .is_some_and(|d| d.contains("where=[(num >= maxn)]"))));
}
