//! `conflux inspect`: expand a job and report its execution graph, groups and regions.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::anyhow;
use conflux_deploy::OffloadRule;
use conflux_graph::load::{self, InputFormat, LoadOptions};
use conflux_graph::{ExecutionGraph, ExecutionVertexIndex, JobGraph, PipelinedRegions};
use serde_json::{json, Value};

use crate::{read_input, Failure, Format};

/// The most consumed partitions `--detail` lists, so that it is not run by mistake on a graph
/// with 10^8 connections.
const DETAIL_LIMIT: u64 = 1_000_000;

/// The most execution vertices `--detail` lists: each is a JSON object of a few hundred bytes,
/// so 67 million of them (one vertex of the largest parallelism) would need about 24 GB.
/// Checked on the job graph, before the execution graph is built.
const DETAIL_VERTEX_LIMIT: u64 = 1_000_000;

/// Runs `conflux inspect`.
pub(crate) fn run(
    path: &Path,
    options: &LoadOptions,
    format: Format,
    detail: bool,
    offload_rule: OffloadRule,
) -> Result<(), Failure> {
    let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
    let start = Instant::now();
    let bytes = read_input(path)?;
    tracing::debug!(file = %path.display(), bytes = bytes.len(), "read the job");
    let (json, input_format) = load::parse(&bytes, options).map_err(Failure::input)?;
    drop(bytes);
    let job = JobGraph::from_json(&json).map_err(Failure::input)?;
    drop(json);
    let parsed = Instant::now();
    tracing::debug!(
        phase = "parse",
        ms = ms(start, parsed),
        format = ?input_format,
        job_vertices = job.vertices().len(),
        "parsed the job graph"
    );
    if detail && job.num_execution_vertices() > DETAIL_VERTEX_LIMIT {
        return Err(Failure::Input(anyhow!(
            "--detail would list {} execution vertices (limit {}); use it on smaller graphs",
            group_digits(job.num_execution_vertices()),
            group_digits(DETAIL_VERTEX_LIMIT)
        )));
    }
    let graph = ExecutionGraph::build(job).map_err(Failure::input)?;
    let built = Instant::now();
    tracing::debug!(
        phase = "execution_graph",
        ms = ms(parsed, built),
        execution_vertices = graph.num_execution_vertices(),
        partitions = graph.num_partitions(),
        "built the execution graph"
    );
    if detail {
        let listed = listed_partitions(&graph);
        if listed > DETAIL_LIMIT {
            return Err(Failure::Input(anyhow!(
                "--detail would list {listed} consumed partitions (limit {DETAIL_LIMIT}); use it on smaller graphs"
            )));
        }
    }
    let regions = PipelinedRegions::compute(&graph).map_err(Failure::input)?;
    let regions_done = Instant::now();
    tracing::debug!(
        phase = "regions",
        ms = ms(built, regions_done),
        regions = regions.len(),
        "computed the pipelined regions"
    );
    let descriptors = crate::descriptors::report(&graph, offload_rule).map_err(Failure::Work)?;
    let done = Instant::now();
    tracing::debug!(
        phase = "descriptors",
        ms = ms(regions_done, done),
        "sized the shuffle descriptors"
    );
    let wall = Wall {
        parse: ms(start, parsed),
        execution_graph: ms(parsed, built),
        regions: ms(built, regions_done),
        descriptors: ms(regions_done, done),
        total: ms(start, done),
    };

    let mut report = report(&graph, &regions, input_format, &wall, detail);
    report["descriptors"] = descriptors;
    let out = match format {
        Format::Json => {
            serde_json::to_string_pretty(&report).map_err(|e| Failure::Work(e.into()))? + "\n"
        }
        Format::Text => text(&report),
    };
    tracing::debug!(phase = "report", bytes = out.len(), "writing the report");
    crate::output::print(&out)
}

struct Wall {
    parse: f64,
    execution_graph: f64,
    regions: f64,
    descriptors: f64,
    total: f64,
}

/// How many partitions `--detail` would print: per vertex, the partitions of its groups.
fn listed_partitions(graph: &ExecutionGraph) -> u64 {
    graph
        .connections()
        .iter()
        .map(|c| {
            (0..c.num_groups)
                .map(|k| {
                    let p = c.partitions_of_local_group(k);
                    let s = c.consumers_of_local_group(k);
                    u64::from(p.end - p.start) * u64::from(s.end - s.start)
                })
                .sum::<u64>()
        })
        .sum()
}

/// The report as JSON; the text form is rendered from it, so both say the same.
fn report(
    graph: &ExecutionGraph,
    regions: &PipelinedRegions,
    input_format: InputFormat,
    wall: &Wall,
    detail: bool,
) -> Value {
    let job = graph.job_graph();
    let mut histogram: BTreeMap<u32, u64> = BTreeMap::new();
    for size in regions.sizes() {
        *histogram.entry(size).or_default() += 1;
    }
    let vertices: Vec<Value> = job
        .vertices()
        .iter()
        .map(|v| {
            json!({
                "id": v.id,
                "parallelism": v.parallelism,
                "max_parallelism": v.max_parallelism,
                "slot_sharing_group": v.slot_sharing_group,
            })
        })
        .collect();
    let edges: Vec<Value> = graph
        .connections()
        .iter()
        .map(|c| {
            let e = job.edge(c.edge);
            json!({
                "source": job.vertex(e.source).id,
                "target": job.vertex(e.target).id,
                "data_set": job.data_set(e.data_set).id,
                "distribution_pattern": e.distribution_pattern.as_str(),
                "result_partition_type": e.result_partition_type.as_str(),
                "ship_strategy": e.ship_strategy,
                "connections": c.logical_connections(),
                "groups": c.num_groups,
            })
        })
        .collect();
    let topology_bytes = graph.heap_bytes() + regions.heap_bytes();
    let mut report = json!({
        "name": job.name(),
        "job_type": job.job_type().as_str(),
        "input_format": match input_format {
            InputFormat::JobGraph => "job_graph",
            InputFormat::FlinkPlan => "flink_plan",
        },
        "job_vertices": job.vertices().len(),
        "execution_vertices": graph.num_execution_vertices(),
        "job_edges": job.edges().len(),
        "logical_connections": graph.logical_connections(),
        "intermediate_results": job.data_sets().len(),
        "partitions": graph.num_partitions(),
        "consumed_partition_groups": graph.num_groups(),
        "consumer_vertex_groups": graph.num_groups(),
        "logical_regions": regions.logical().len(),
        "regions": regions.len(),
        "region_sizes": {
            "min": histogram.keys().next(),
            "max": histogram.keys().next_back(),
            "histogram": histogram.iter().map(|(size, count)| json!({"size": size, "count": count})).collect::<Vec<_>>(),
        },
        "topology_bytes": topology_bytes,
        "wall_ms": {
            "parse": wall.parse,
            "execution_graph": wall.execution_graph,
            "regions": wall.regions,
            "descriptors": wall.descriptors,
            "total": wall.total,
        },
        "job_graph": { "vertices": vertices, "edges": edges },
    });
    if detail {
        report["vertices"] = Value::Array(detail_vertices(graph, regions));
    }
    report
}

/// Every execution vertex with its region and consumed partition groups: a partition
/// is named by its producer subtask, plus `@<data set>` when the producer has several data sets.
fn detail_vertices(graph: &ExecutionGraph, regions: &PipelinedRegions) -> Vec<Value> {
    let job = graph.job_graph();
    (0..graph.num_execution_vertices())
        .map(ExecutionVertexIndex)
        .map(|v| {
            let groups: Vec<Value> = graph
                .consumed_partition_groups(v)
                .map(|g| {
                    let group = graph.consumed_partition_group(g);
                    let data_set = job.data_set(group.result);
                    let producer = job.vertex(data_set.producer);
                    let suffix = if producer.produced_data_sets.len() > 1 {
                        format!("@{}", data_set.id)
                    } else {
                        String::new()
                    };
                    group
                        .partitions
                        .map(|p| Value::String(format!("{}#{p}{suffix}", producer.id)))
                        .collect()
                })
                .collect();
            json!({
                "id": graph.execution_vertex_name(v),
                "region": regions.region_of(v).0,
                "consumed_partition_groups": groups,
            })
        })
        .collect()
}

/// Renders the report for people.
fn text(r: &Value) -> String {
    let n = |v: &Value| group_digits(v.as_u64().unwrap_or(0));
    let mut s = String::new();
    let _ = writeln!(
        s,
        "job {} ({}, {})",
        r["name"],
        r["job_type"].as_str().unwrap_or(""),
        r["input_format"].as_str().unwrap_or("")
    );
    let rows = [
        ("job vertices", n(&r["job_vertices"])),
        ("execution vertices", n(&r["execution_vertices"])),
        ("job edges", n(&r["job_edges"])),
        ("logical connections", n(&r["logical_connections"])),
        ("intermediate results", n(&r["intermediate_results"])),
        ("partitions", n(&r["partitions"])),
        (
            "partition groups",
            format!(
                "{} consumed, {} consumer",
                n(&r["consumed_partition_groups"]),
                n(&r["consumer_vertex_groups"])
            ),
        ),
        ("logical regions", n(&r["logical_regions"])),
        ("pipelined regions", n(&r["regions"])),
        (
            "topology",
            format!(
                "{} bytes ({:.1} KiB)",
                n(&r["topology_bytes"]),
                r["topology_bytes"].as_f64().unwrap_or(0.0) / 1024.0
            ),
        ),
    ];
    for (label, value) in rows {
        let _ = writeln!(s, "  {label:<22}{value}");
    }
    let sizes: Vec<String> = r["region_sizes"]["histogram"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| format!("{} x size {}", n(&h["count"]), n(&h["size"])))
        .collect();
    let _ = writeln!(s, "  {:<22}{}", "region sizes", sizes.join(", "));
    let w = &r["wall_ms"];
    let _ = writeln!(
        s,
        "  {:<22}parse {:.3} ms, execution graph {:.3} ms, regions {:.3} ms, descriptors {:.3} ms, total {:.3} ms",
        "wall time",
        w["parse"].as_f64().unwrap_or(0.0),
        w["execution_graph"].as_f64().unwrap_or(0.0),
        w["regions"].as_f64().unwrap_or(0.0),
        w["descriptors"].as_f64().unwrap_or(0.0),
        w["total"].as_f64().unwrap_or(0.0)
    );
    let d = &r["descriptors"];
    let _ = writeln!(
        s,
        "  {:<22}{} groups, {} descriptors: {} bytes raw, {} compressed; {} group(s) offloaded ({} bytes), {} bytes inline [offload when {}]",
        "shuffle descriptors",
        n(&d["groups"]),
        n(&d["descriptors"]),
        n(&d["raw_bytes"]),
        n(&d["compressed_bytes"]),
        n(&d["offloaded_groups"]),
        n(&d["offloaded_bytes"]),
        n(&d["inline_bytes"]),
        d["offload_rule"].as_str().unwrap_or("")
    );
    let _ = writeln!(s, "job vertices");
    for v in r["job_graph"]["vertices"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "  {}  parallelism {}, max parallelism {}, slot sharing group {}",
            v["id"].as_str().unwrap_or(""),
            n(&v["parallelism"]),
            n(&v["max_parallelism"]),
            v["slot_sharing_group"].as_str().unwrap_or("")
        );
    }
    let _ = writeln!(s, "edges");
    for e in r["job_graph"]["edges"].as_array().into_iter().flatten() {
        let ship = e["ship_strategy"]
            .as_str()
            .map(|x| format!(" {x}"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  {} -> {}  {} {}{}: {} connections in {} group(s)",
            e["source"].as_str().unwrap_or(""),
            e["target"].as_str().unwrap_or(""),
            e["distribution_pattern"].as_str().unwrap_or(""),
            e["result_partition_type"].as_str().unwrap_or(""),
            ship,
            n(&e["connections"]),
            n(&e["groups"])
        );
    }
    let _ = writeln!(s, "shuffle descriptor groups (first {} per edge)", 16);
    for e in r["descriptors"]["edges"].as_array().into_iter().flatten() {
        for g in e["listed_groups"].as_array().into_iter().flatten() {
            let _ = writeln!(
                s,
                "  {} -> {} group {}: {} descriptors for {} consumers, {} bytes raw, {} compressed, {}",
                e["source"].as_str().unwrap_or(""),
                e["target"].as_str().unwrap_or(""),
                g["group"],
                n(&g["descriptors"]),
                n(&g["consumers"]),
                n(&g["raw_bytes"]),
                n(&g["compressed_bytes"]),
                if g["offloaded"].as_bool().unwrap_or(false) { "offloaded" } else { "inline" }
            );
        }
    }
    if let Some(vertices) = r["vertices"].as_array() {
        let _ = writeln!(s, "execution vertices");
        for v in vertices {
            let groups: Vec<String> = v["consumed_partition_groups"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|g| {
                    let names: Vec<&str> = g
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    format!("[{}]", names.join(" "))
                })
                .collect();
            let _ = writeln!(
                s,
                "  {}  region {}  consumes {}",
                v["id"].as_str().unwrap_or(""),
                v["region"],
                if groups.is_empty() {
                    "nothing".to_owned()
                } else {
                    groups.join(" ")
                }
            );
        }
    }
    s
}

/// `1234567` -> `1,234,567`.
pub(crate) fn group_digits(x: u64) -> String {
    let digits = x.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
