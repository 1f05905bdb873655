//! `conflux inspect`: expand a job and report its execution graph, groups and regions. The
//! summary is a `serde_json::Value`; the per-item lists are written straight from the graph
//! ([`lists`]), in JSON or as text ([`text`]). Pictures of the job graph ([`picture()`]) come
//! from `conflux_planner::picture`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::anyhow;
use conflux_deploy::OffloadRule;
use conflux_graph::load::{self, InputFormat, LoadOptions};
use conflux_graph::{ExecutionGraph, PipelinedRegions};
use conflux_planner::picture;
use serde_json::{json, Value};

use crate::{read_input, Failure, Format};

mod lists;
mod text;

use lists::{JsonReport, Lists};
pub(crate) use text::group_digits;

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
    // Frees the bytes once parsed, before validation.
    let (job, input_format) = load::load_owned(bytes, options).map_err(Failure::input)?;
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
    let mut descriptors =
        crate::descriptors::report(&graph, offload_rule).map_err(Failure::Work)?;
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

    let mut summary = summary(&graph, &regions, input_format, &wall, detail);
    summary["descriptors"] = std::mem::take(&mut descriptors.summary);
    let lists = Lists {
        graph: &graph,
        regions: &regions,
        descriptors: &descriptors,
    };
    tracing::debug!(phase = "report", "writing the report");
    crate::output::write_with(|w| match format {
        Format::Json => {
            let report = JsonReport {
                summary: &summary,
                lists,
            };
            serde_json::to_writer_pretty(&mut *w, &report)?;
            w.write_all(b"\n")
        }
        Format::Text => text::render(&summary, lists, w),
    })
}

/// Runs `conflux inspect --format dot|mermaid|svg`: the job graph drawn by
/// [`conflux_planner::picture`], on stdout. O(V + E) for DOT and Mermaid; SVG adds the layout.
pub(crate) fn picture(
    path: &Path,
    options: &LoadOptions,
    format: picture::Format,
    edge_stats: bool,
) -> Result<(), Failure> {
    let start = Instant::now();
    let bytes = read_input(path)?;
    let (job, _) = load::load_owned(bytes, options).map_err(Failure::input)?;
    let options = picture::Options {
        edge_stats,
        ..picture::Options::default()
    };
    let text = picture::render(&job, format, &options).map_err(|e| Failure::Input(e.into()))?;
    tracing::debug!(
        %format,
        ms = start.elapsed().as_secs_f64() * 1e3,
        bytes = text.len(),
        "drew the job graph"
    );
    crate::output::print(&text)
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

/// The report as JSON but for its lists (see [`lists`]); the text form is rendered from the
/// same, so both say the same.
fn summary(
    graph: &ExecutionGraph,
    regions: &PipelinedRegions,
    input_format: InputFormat,
    wall: &Wall,
    detail: bool,
) -> Value {
    let job = graph.job_graph();
    // Counted in runs of equal sizes (two million regions of one vertex are one run).
    let mut histogram: BTreeMap<u32, u64> = BTreeMap::new();
    let mut run: Option<(u32, u64)> = None;
    for size in regions.sizes() {
        match &mut run {
            Some((s, n)) if *s == size => *n += 1,
            _ => {
                if let Some((s, n)) = run.replace((size, 1)) {
                    *histogram.entry(s).or_default() += n;
                }
            }
        }
    }
    if let Some((s, n)) = run {
        *histogram.entry(s).or_default() += n;
    }
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
        // Placeholders: the lists are serialised from the graph as the report is written.
        "job_graph": { "vertices": [], "edges": [] },
    });
    if detail {
        report["vertices"] = Value::Array(Vec::new());
    }
    report
}
