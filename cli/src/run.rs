//! `conflux run`: the main job on the embedded defaults. Expands the job, then runs it to its end
//! on a simulated cluster sized to it, with real deployment descriptors shipped through a blob
//! server, and reports phase times, deployment and blob figures, handler stalls and peak RSS.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::anyhow;
use conflux_deploy::OffloadRule;
use conflux_graph::load::{self, LoadOptions};
use conflux_graph::{ExecutionGraph, PipelinedRegions};
use conflux_scheduler::{
    FailoverStrategy, JobStatus, RestartStrategy, SpeculativeExecutionOptions,
};
use conflux_sim::{self as sim, BlobEnvironment, Faults, SimulationConfig, SlowTaskManagers};
use serde_json::{json, Value};

use crate::{read_input, Failure, Format};

/// The options of `conflux run` that shape the simulation.
pub(crate) struct RunOptions {
    pub(crate) task_managers: Option<u32>,
    pub(crate) slots: u32,
    pub(crate) seed: u64,
    pub(crate) faults: Faults,
    pub(crate) offload_rule: OffloadRule,
    /// The restart strategy (`--restart-strategy` and its options).
    pub(crate) restart: RestartStrategy,
    pub(crate) failover: FailoverStrategy,
    pub(crate) progress: bool,
    /// Decide undecided vertices (`-1`) from produced bytes; `false` (`--default-parallelism`
    /// given) fixes them at the estimate.
    pub(crate) decide: bool,
    /// Flink's adaptive batch options (what decides undecided vertices).
    pub(crate) batch: conflux_adaptive::BatchExecutionOptions,
    /// The bytes simulated tasks write (what decides undecided vertices).
    pub(crate) bytes: sim::BytesModel,
    /// Task durations are drawn from this range, ms.
    pub(crate) task_duration_ms: (u64, u64),
    /// Speculative execution (`--speculative` and the `--slow-task-*` flags).
    pub(crate) speculative: SpeculativeExecutionOptions,
    /// Slow TaskManagers of the simulated cluster.
    pub(crate) slow_task_managers: SlowTaskManagers,
}

pub(crate) fn run(
    path: &Path,
    load_options: &LoadOptions,
    options: &RunOptions,
    blobs: &dyn BlobEnvironment,
    blob_report: &dyn Fn() -> Value,
    format: Format,
) -> Result<(), Failure> {
    let start = Instant::now();
    let bytes = read_input(path)?;
    tracing::debug!(file = %path.display(), bytes = bytes.len(), "read the job");
    // Frees the bytes once parsed, before validation.
    let (mut job, _) = load::load_owned(bytes, load_options).map_err(Failure::input)?;
    // Undecided vertices are decided at run time unless `--default-parallelism` fixes them,
    // or the job cannot grow at run time (a pipelined edge or co-location group after the first
    // undecided vertex): those run at the estimate, and the report says why.
    let mut estimate_reason = None;
    if options.decide && job.has_undecided() {
        if let Err(e) = conflux_graph::dynamic::first_dynamic_vertex(&job) {
            estimate_reason = Some(e.to_string());
            tracing::warn!(reason = %e, "undecided vertices run at their estimate");
        }
    }
    let adaptive = options.decide && job.has_undecided() && estimate_reason.is_none();
    if !adaptive {
        job.fix_undecided();
    }
    let parsed = Instant::now();
    tracing::debug!(
        phase = "parse",
        ms = (parsed - start).as_secs_f64() * 1e3,
        job_vertices = job.vertices().len(),
        "parsed the job graph"
    );
    if adaptive {
        return run_adaptive(job, options, blobs, blob_report, format, start, parsed);
    }
    let graph = Arc::new(ExecutionGraph::build(job).map_err(Failure::input)?);
    let built = Instant::now();
    tracing::debug!(
        phase = "execution_graph",
        ms = (built - parsed).as_secs_f64() * 1e3,
        execution_vertices = graph.num_execution_vertices(),
        "built the execution graph"
    );
    let regions = Arc::new(PipelinedRegions::compute(&graph).map_err(Failure::input)?);
    let regions_done = Instant::now();
    tracing::debug!(
        phase = "regions",
        ms = (regions_done - built).as_secs_f64() * 1e3,
        regions = regions.len(),
        "computed the pipelined regions"
    );

    let config = simulation_config(graph.job_graph().job_type(), options);
    let total = u64::from(graph.num_execution_vertices());
    tracing::debug!(
        phase = "run",
        task_managers = ?config.task_managers,
        slots_per_task_manager = config.slots_per_task_manager,
        seed = config.seed,
        "running the job on the simulated cluster"
    );
    let report = with_progress(options, total, |progress| {
        sim::simulate(
            Arc::clone(&graph),
            Arc::clone(&regions),
            &config,
            blobs,
            progress,
        )
    })?;
    let done = Instant::now();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    tracing::debug!(
        phase = "run",
        ms = ms(done - regions_done),
        status = report.status.as_str(),
        restarts = report.restarts,
        "the run ended"
    );
    let phases = Phases {
        start,
        parsed,
        built,
        regions_done,
        done,
    };
    let mut out = report_json(graph.job_graph().name(), total, &report, options, &phases);
    if let Some(reason) = estimate_reason {
        out["undecided_at_estimate"] = Value::from(reason);
    }
    finish(out, report, blob_report, format)
}

/// The settings of the simulated cluster from the command line.
fn simulation_config(job_type: conflux_graph::JobType, options: &RunOptions) -> SimulationConfig {
    let mut config = SimulationConfig::for_job_type(job_type);
    config.task_managers = options.task_managers;
    config.slots_per_task_manager = options.slots;
    config.seed = options.seed;
    config.faults = options.faults;
    config.deployment.offload_rule = options.offload_rule;
    config.scheduler.failover = options.failover;
    config.scheduler.restart = options.restart;
    config.scheduler.seed = options.seed;
    config.task_duration_ms = options.task_duration_ms;
    config.scheduler.speculative = options.speculative;
    config.slow_task_managers = options.slow_task_managers;
    config
}

/// Runs a simulation with a progress bar over `total` tasks when asked for, cleared when it
/// ends; its error is the run's failure.
fn with_progress<E>(
    options: &RunOptions,
    total: u64,
    simulate: impl FnOnce(&mut Progress<'_>) -> Result<sim::SimulationReport, E>,
) -> Result<sim::SimulationReport, Failure>
where
    E: std::fmt::Display,
{
    let bar = progress_bar(options, total);
    let report = simulate(&mut Progress(bar.as_ref(), total));
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    report.map_err(|e| Failure::Work(anyhow!("{e}")))
}

/// A progress bar over `total` tasks, when asked for.
fn progress_bar(options: &RunOptions, total: u64) -> Option<indicatif::ProgressBar> {
    options.progress.then(|| {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {bar:40} {pos}/{len} tasks finished ({elapsed})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    })
}

/// Moves the progress bar as tasks finish (the total grows with an adaptive run).
struct Progress<'a>(Option<&'a indicatif::ProgressBar>, u64);

impl sim::Observer for Progress<'_> {
    fn on_progress(&mut self, done: u64, total: u64) {
        if let Some(bar) = self.0 {
            if total != self.1 {
                self.1 = total;
                bar.set_length(total);
            }
            if done.is_multiple_of(256) || done == self.1 {
                bar.set_position(done);
            }
        }
    }
}

/// When each phase of a run ended.
#[derive(Clone, Copy)]
struct Phases {
    start: Instant,
    parsed: Instant,
    built: Instant,
    regions_done: Instant,
    done: Instant,
}

/// `run` with undecided vertices decided at run time: the graph is built and grown by the
/// scheduler inside the simulation, so its phases count in `run`.
fn run_adaptive(
    job: conflux_graph::JobGraph,
    options: &RunOptions,
    blobs: &dyn BlobEnvironment,
    blob_report: &dyn Fn() -> Value,
    format: Format,
    start: Instant,
    parsed: Instant,
) -> Result<(), Failure> {
    let config = simulation_config(job.job_type(), options);
    let name = job.name().to_owned();
    let estimate: u64 = job
        .vertices()
        .iter()
        .map(|v| u64::from(v.parallelism))
        .sum();
    let report = with_progress(options, estimate, |progress| {
        sim::simulate_adaptive(
            job,
            options.batch.clone(),
            options.bytes,
            &config,
            blobs,
            progress,
        )
    })?;
    let done = Instant::now();
    let total = report
        .adaptive
        .as_ref()
        .map_or(0, |a| u64::from(a.execution_vertices));
    let phases = Phases {
        start,
        parsed,
        built: parsed,
        regions_done: parsed,
        done,
    };
    let mut out = report_json(&name, total, &report, options, &phases);
    if let Some(adaptive) = &report.adaptive {
        add_adaptive(&mut out, adaptive);
    }
    finish(out, report, blob_report, format)
}

/// The run's report keys of an adaptive run: `decided_parallelism` (vertex id -> parallelism),
/// `bytes_per_task` (vertex id -> {min, median, max} bytes read per subtask) and
/// `skewed_subpartitions` (`count` and the `largest` few, each with its bytes against the
/// average per subtask).
fn add_adaptive(out: &mut Value, adaptive: &sim::AdaptiveReport) {
    let mut decided = serde_json::Map::new();
    for (id, p) in &adaptive.decided_parallelism {
        decided.insert(id.clone(), Value::from(*p));
    }
    let mut per_task = serde_json::Map::new();
    for (id, b) in &adaptive.bytes_per_task {
        // max / median: how far the busiest subtask is above the typical one.
        per_task.insert(
            id.clone(),
            json!({"min": b.min, "median": b.median, "max": b.max,
                   "max_over_median": b.max as f64 / b.median.max(1) as f64}),
        );
    }
    let largest: Vec<Value> = adaptive
        .skewed_subpartitions
        .iter()
        .take(SKEWED_LISTED)
        .map(|s| {
            json!({
                "vertex": s.vertex,
                "producer": s.producer,
                "subpartition": s.subpartition,
                "bytes": s.bytes,
                "average_bytes_per_task": s.average_bytes_per_task,
            })
        })
        .collect();
    out["decided_parallelism"] = Value::Object(decided);
    out["bytes_per_task"] = Value::Object(per_task);
    out["skewed_subpartitions"] = json!({
        "count": adaptive.skewed_subpartitions.len(),
        "largest": largest,
    });
    out["skew_splits"] = adaptive
        .skew_splits
        .iter()
        .map(|s| {
            json!({"vertex": s.vertex, "subpartition": s.subpartition, "bytes": s.bytes,
                   "pieces": s.pieces})
        })
        .collect();
}

/// Skewed subpartitions listed in the report (the largest); all are counted.
const SKEWED_LISTED: usize = 5;

/// The report of a run, everything but the blob server's figures.
fn report_json(
    name: &str,
    total: u64,
    report: &sim::SimulationReport,
    options: &RunOptions,
    phases: &Phases,
) -> Value {
    let Phases {
        start,
        parsed,
        built,
        regions_done,
        done,
    } = *phases;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;

    let fetches: u64 = report
        .task_managers
        .iter()
        .map(|(_, s)| s.blob_fetches)
        .sum();
    let hits: u64 = report.task_managers.iter().map(|(_, s)| s.cache_hits).sum();
    let simulation_ms = ms(report.run_wall);
    json!({
        "job": name,
        "status": report.status.as_str(),
        "failure_reason": report.failure_reason,
        "wall_ms": {
            "parse": ms(parsed - start),
            "graph": ms(built - parsed),
            "regions": ms(regions_done - built),
            "descriptors": ms(report.descriptor_wall),
            "deployment": ms(report.task_manager_load_wall),
            "run": (simulation_ms - ms(report.descriptor_wall) - ms(report.task_manager_load_wall)).max(0.0),
            "total": ms(done - start),
        },
        "tasks": total,
        "tasks_deployed": report.tasks_deployed,
        "restarts": report.restarts,
        "scheduler_events": report.events,
        "virtual_ms": report.virtual_ms,
        "max_handler_stall_ms": ms(report.max_handler_stall),
        "peak_rss_bytes": peak_rss_bytes(),
        "trace_digest": format!("{:016x}", report.trace_digest),
        "seed": options.seed,
        "task_managers": report.task_managers.len(),
        "descriptors": {
            "offload_rule": crate::descriptors::describe(options.offload_rule),
            "groups_serialized": report.deployment.groups_serialized,
            "cache_hits": report.deployment.cache_hits,
            "cache_misses": report.deployment.cache_misses,
            "raw_bytes": report.deployment.raw_bytes,
            "inline_bytes": report.deployment.inline_bytes,
            "offloaded_bytes": report.deployment.offloaded_bytes,
            "blobs_uploaded": report.deployment.blobs_uploaded,
            "upload_failures": report.deployment.upload_failures,
            "blobs_deleted": report.deployment.blobs_deleted,
        },
        "blob_fetches": fetches,
        "blob_cache_hits": hits,
        "per_task_manager": report.task_managers.iter().map(|(tm, s)| json!({
            "id": tm.to_string(), "tasks": s.tasks, "blob_fetches": s.blob_fetches, "cache_hits": s.cache_hits,
        })).collect::<Vec<_>>(),
        "faults_injected": {
            "task_failures": report.faults_injected.0,
            "partition_not_found": report.faults_injected.1,
            "task_manager_losses": report.faults_injected.2,
            "blob_server_restarts": report.faults_injected.3,
        },
        "speculative_attempts": {
            "enabled": options.speculative.enabled,
            "started": report.speculative.started,
            "won": report.speculative.won,
            "cancelled": report.speculative.cancelled,
            "failed": report.speculative.failed,
        },
    })
}

/// Adds the blob server's figures, writes the report, and maps the job's end to the exit code.
fn finish(
    mut out: Value,
    report: sim::SimulationReport,
    blob_report: &dyn Fn() -> Value,
    format: Format,
) -> Result<(), Failure> {
    out["blob_server"] = blob_report();
    let text = match format {
        Format::Json => {
            serde_json::to_string_pretty(&out).map_err(|e| Failure::Work(e.into()))? + "\n"
        }
        Format::Text => render(&out),
    };
    tracing::debug!(phase = "report", bytes = text.len(), "writing the report");
    crate::output::print(&text)?;
    match report.status {
        JobStatus::Finished => Ok(()),
        status => Err(Failure::Reported(anyhow!(
            "the job ended {}{}",
            status.as_str(),
            report.failure_reason.map_or_else(
                || {
                    if status.is_terminal() {
                        String::new()
                    } else {
                        ": the simulation stopped with the job unfinished (no event left to \
                         handle, or its limit of 30 days of virtual time)"
                            .to_owned()
                    }
                },
                |r| format!(": {r}")
            )
        ))),
    }
}

/// Peak resident set size of this process (Linux `VmHWM`), bytes; 0 where unknown.
fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|kb| kb.parse::<u64>().ok())
            })
        })
        .map_or(0, |kb| kb * 1024)
}

fn render(r: &Value) -> String {
    let f = |v: &Value| v.as_f64().unwrap_or(0.0);
    let n = |v: &Value| crate::inspect::group_digits(v.as_u64().unwrap_or(0));
    let w = &r["wall_ms"];
    let d = &r["descriptors"];
    let mut s = String::new();
    let _ = writeln!(s, "job {} {}", r["job"], r["status"].as_str().unwrap_or(""));
    if let Some(reason) = r["failure_reason"].as_str() {
        let _ = writeln!(s, "  reason: {reason}");
    }
    let _ = writeln!(
        s,
        "  wall time            parse {:.1} ms, graph {:.1} ms, regions {:.1} ms, descriptors {:.1} ms, deployment {:.1} ms, run {:.1} ms, total {:.1} ms",
        f(&w["parse"]), f(&w["graph"]), f(&w["regions"]), f(&w["descriptors"]), f(&w["deployment"]), f(&w["run"]), f(&w["total"])
    );
    let _ = writeln!(s, "  tasks                {} deployed for {} tasks, {} restart(s), {} scheduler events, {} virtual ms", n(&r["tasks_deployed"]), n(&r["tasks"]), n(&r["restarts"]), n(&r["scheduler_events"]), n(&r["virtual_ms"]));
    let _ = writeln!(s, "  descriptors          {} group(s) serialised, {} bytes raw, {} inline, {} offloaded in {} blob(s) [offload when {}]", n(&d["groups_serialized"]), n(&d["raw_bytes"]), n(&d["inline_bytes"]), n(&d["offloaded_bytes"]), n(&d["blobs_uploaded"]), d["offload_rule"].as_str().unwrap_or(""));
    let per_tm = r["per_task_manager"].as_array().map_or(0, Vec::len);
    let _ = writeln!(
        s,
        "  blobs                {} fetch(es) and {} cache hit(s) over {} TaskManager(s)",
        n(&r["blob_fetches"]),
        n(&r["blob_cache_hits"]),
        per_tm
    );
    let b = &r["blob_server"];
    if let Some(url) = b["url"].as_str() {
        let _ = writeln!(s, "  blob server          {url}: caches fetched {} blob(s) from the durable store, {} from the server, {} local hit(s)", n(&b["durable_fetches"]), n(&b["server_fetches"]), n(&b["local_hits"]));
    }
    let _ = writeln!(
        s,
        "  longest handler call {:.3} ms",
        f(&r["max_handler_stall_ms"])
    );
    let _ = writeln!(
        s,
        "  peak RSS             {:.1} MiB",
        f(&r["peak_rss_bytes"]) / (1024.0 * 1024.0)
    );
    let _ = writeln!(
        s,
        "  trace digest         {} (seed {})",
        r["trace_digest"].as_str().unwrap_or(""),
        r["seed"]
    );
    if let Some(reason) = r["undecided_at_estimate"].as_str() {
        let _ = writeln!(s, "  undecided vertices   run at the estimate: {reason}");
    }
    if let Some(decided) = r["decided_parallelism"].as_object() {
        let list: Vec<String> = decided.iter().map(|(id, p)| format!("{id} {p}")).collect();
        let _ = writeln!(s, "  decided parallelism  {}", list.join(", "));
        if let Some(per_task) = r["bytes_per_task"].as_object() {
            for (id, b) in per_task {
                let _ = writeln!(
                    s,
                    "  bytes per task       {id}: min {}, median {}, max {} (max / median {:.2})",
                    n(&b["min"]),
                    n(&b["median"]),
                    n(&b["max"]),
                    f(&b["max_over_median"])
                );
            }
        }
        for k in r["skew_splits"].as_array().into_iter().flatten() {
            let _ = writeln!(
                s,
                "  skew split           {} #{}: {} bytes read by {} subtasks",
                k["vertex"].as_str().unwrap_or(""),
                k["subpartition"],
                n(&k["bytes"]),
                k["pieces"]
            );
        }
        let skewed = &r["skewed_subpartitions"];
        let _ = writeln!(s, "  skewed subpartitions {}", n(&skewed["count"]));
        for k in skewed["largest"].as_array().into_iter().flatten() {
            let _ = writeln!(
                s,
                "                       {} <- {} #{}: {} bytes, {:.1} x the average per task",
                k["vertex"].as_str().unwrap_or(""),
                k["producer"].as_str().unwrap_or(""),
                k["subpartition"],
                n(&k["bytes"]),
                f(&k["bytes"]) / f(&k["average_bytes_per_task"]).max(1.0)
            );
        }
    }
    // Shown only when speculation is on, so that runs without it print as before.
    let sa = &r["speculative_attempts"];
    if sa["enabled"].as_bool() == Some(true) {
        let _ = writeln!(
            s,
            "  speculative attempts {} started, {} won, {} cancelled, {} failed",
            n(&sa["started"]),
            n(&sa["won"]),
            n(&sa["cancelled"]),
            n(&sa["failed"])
        );
    }
    let fi = &r["faults_injected"];
    let _ = writeln!(s, "  faults injected      {} task failure(s), {} partition-not-found, {} TaskManager loss(es), {} blob server restart(s)", n(&fi["task_failures"]), n(&fi["partition_not_found"]), n(&fi["task_manager_losses"]), n(&fi["blob_server_restarts"]));
    s
}
