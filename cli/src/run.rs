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
use conflux_report::{
    BlobServerReport, DescriptorsReport, FaultsInjected, JobReport, SpeculativeAttemptsReport,
    TaskManagerReport, WallMs,
};
use conflux_scheduler::{
    FailoverStrategy, JobStatus, RestartStrategy, SpeculativeExecutionOptions,
};
use conflux_sim::{self as sim, BlobEnvironment, Faults, SimulationConfig, SlowTaskManagers};

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
    /// Flink's `slot.request.timeout`, ms.
    pub(crate) slot_request_timeout_ms: u64,
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
    blob_report: &dyn Fn() -> BlobServerReport,
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
    let mut out = job_report(graph.job_graph().name(), total, &report, options, &phases);
    if let Some(reason) = estimate_reason {
        out.adaptive = conflux_report::AdaptiveReport::at_estimate(reason);
    }
    finish(out, &report, blob_report, format)
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
    config.scheduler.slot_request_timeout_ms = options.slot_request_timeout_ms;
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
    blob_report: &dyn Fn() -> BlobServerReport,
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
    let mut out = job_report(&name, total, &report, options, &phases);
    if let Some(adaptive) = &report.adaptive {
        out.adaptive = adaptive.keys.clone();
    }
    finish(out, &report, blob_report, format)
}

/// The report of a run, everything but the blob server's figures.
fn job_report(
    name: &str,
    total: u64,
    report: &sim::SimulationReport,
    options: &RunOptions,
    phases: &Phases,
) -> JobReport {
    use conflux_report::round::ms;
    let Phases {
        start,
        parsed,
        built,
        regions_done,
        done,
    } = *phases;
    let d = &report.deployment;
    let task_managers: Vec<TaskManagerReport> = report
        .task_managers
        .iter()
        .map(|(tm, s)| TaskManagerReport {
            id: tm.to_string(),
            slots: options.slots,
            tasks: s.tasks,
            // Simulated TaskManagers share this process: no RSS of their own.
            peak_rss_bytes: None,
            tdd_bytes_received: None,
            blob_fetches: s.blob_fetches,
            cache_hits: Some(s.cache_hits),
            lost: s.lost,
        })
        .collect();
    let run = report
        .run_wall
        .saturating_sub(report.descriptor_wall + report.task_manager_load_wall);
    JobReport {
        job_id: sim::job_id_of(options.seed).to_string(),
        job: name.to_owned(),
        status: report.status.as_str().to_owned(),
        failure_reason: report.failure_reason.clone(),
        wall_ms: WallMs {
            parse: Some(ms(parsed - start)),
            graph: Some(ms(built - parsed)),
            regions: Some(ms(regions_done - built)),
            descriptors: Some(ms(report.descriptor_wall)),
            deployment: Some(ms(report.task_manager_load_wall)),
            deploy: None,
            run: Some(ms(run)),
            total: ms(done - start),
        },
        tasks: total,
        tasks_deployed: report.tasks_deployed,
        restarts: report.restarts,
        scheduler_events: Some(report.events),
        virtual_ms: Some(report.virtual_ms),
        max_handler_stall_ms: ms(report.max_handler_stall),
        max_handler_cpu_ms: report.max_handler_cpu.map(ms),
        peak_rss_bytes: conflux_runtime::peak_rss_bytes(),
        jobmanager_peak_rss_bytes: None,
        trace_digest: format!("{:016x}", report.trace_digest),
        seed: options.seed,
        task_manager_count: u64::from(report.task_managers_registered),
        task_managers_lost: report.faults_injected.2,
        heartbeat_timeouts: None,
        rpc_timeouts: None,
        re_registrations: None,
        partition_request_retries: None,
        max_heartbeat_rtt_ms: None,
        max_loss_to_redeploy_ms: None,
        descriptors: DescriptorsReport {
            offload_rule: options.offload_rule.to_string(),
            groups_serialized: d.groups_serialized,
            cache_hits: d.cache_hits,
            cache_misses: d.cache_misses,
            raw_bytes: d.raw_bytes,
            inline_bytes: d.inline_bytes,
            offloaded_bytes: d.offloaded_bytes,
            blobs_uploaded: d.blobs_uploaded,
            upload_failures: d.upload_failures,
            blobs_deleted: d.blobs_deleted,
        },
        blob_fetches: task_managers.iter().map(|t| t.blob_fetches).sum(),
        blob_cache_hits: Some(report.task_managers.iter().map(|(_, s)| s.cache_hits).sum()),
        task_managers,
        blob_server: None,
        faults_injected: Some(FaultsInjected {
            task_failures: report.faults_injected.0,
            partition_not_found: report.faults_injected.1,
            task_manager_losses: report.faults_injected.2,
            blob_server_restarts: report.faults_injected.3,
        }),
        killed_task_manager: None,
        kill_skipped: None,
        speculative_attempts: SpeculativeAttemptsReport {
            enabled: options.speculative.enabled,
            started: report.speculative.started,
            won: report.speculative.won,
            cancelled: report.speculative.cancelled,
            failed: report.speculative.failed,
        },
        adaptive: conflux_report::AdaptiveReport::default(),
        data: None,
        tasks_recovered: None,
        recovery_replay_ms: None,
        leader_changes: None,
        recovery_ms: None,
    }
}

/// Adds the blob server's figures, writes the report, and maps the job's end to the exit code.
fn finish(
    mut out: JobReport,
    report: &sim::SimulationReport,
    blob_report: &dyn Fn() -> BlobServerReport,
    format: Format,
) -> Result<(), Failure> {
    out.blob_server = Some(blob_report());
    let text = match format {
        Format::Json => {
            conflux_report::to_json_pretty(&out).map_err(|e| Failure::Work(anyhow!(e)))? + "\n"
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
            report.failure_reason.as_ref().map_or_else(
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

/// The report for people: one line per aspect.
fn render(r: &JobReport) -> String {
    let n = crate::inspect::group_digits;
    let opt = |v: Option<f64>| v.unwrap_or(0.0);
    let w = &r.wall_ms;
    let d = &r.descriptors;
    let mut s = String::new();
    // The name as JSON writes it (quoted, escaped), so that control characters cannot reach
    // the terminal.
    let name = serde_json::to_string(&r.job).unwrap_or_default();
    let _ = writeln!(s, "job {name} {}", r.status);
    if let Some(reason) = &r.failure_reason {
        let _ = writeln!(s, "  reason: {reason}");
    }
    let _ = writeln!(
        s,
        "  wall time            parse {:.1} ms, graph {:.1} ms, regions {:.1} ms, descriptors {:.1} ms, deployment {:.1} ms, run {:.1} ms, total {:.1} ms",
        opt(w.parse), opt(w.graph), opt(w.regions), opt(w.descriptors), opt(w.deployment), opt(w.run), w.total
    );
    let _ = writeln!(s, "  tasks                {} deployed for {} tasks, {} restart(s), {} scheduler events, {} virtual ms", n(r.tasks_deployed), n(r.tasks), n(u64::from(r.restarts)), n(r.scheduler_events.unwrap_or(0)), n(r.virtual_ms.unwrap_or(0)));
    let _ = writeln!(s, "  descriptors          {} group(s) serialised, {} bytes raw, {} inline, {} offloaded in {} blob(s) [offload when {}]", n(d.groups_serialized), n(d.raw_bytes), n(d.inline_bytes), n(d.offloaded_bytes), n(d.blobs_uploaded), d.offload_rule);
    let _ = writeln!(
        s,
        "  blobs                {} fetch(es) and {} cache hit(s) over {} TaskManager(s)",
        n(r.blob_fetches),
        n(r.blob_cache_hits.unwrap_or(0)),
        n(r.task_managers.len() as u64)
    );
    if let Some(b) = &r.blob_server {
        let _ = writeln!(s, "  blob server          {}: caches fetched {} blob(s) from the durable store, {} from the server, {} local hit(s)", b.url, n(b.durable_fetches), n(b.server_fetches), n(b.local_hits));
    }
    let _ = writeln!(s, "  longest handler call {:.3} ms", r.max_handler_stall_ms);
    let _ = writeln!(
        s,
        "  peak RSS             {}",
        r.peak_rss_bytes.map_or_else(
            || "n/a".to_owned(),
            |b| format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
        )
    );
    let _ = writeln!(
        s,
        "  trace digest         {} (seed {})",
        r.trace_digest, r.seed
    );
    let a = &r.adaptive;
    if let Some(reason) = &a.undecided_at_estimate {
        let _ = writeln!(s, "  undecided vertices   run at the estimate: {reason}");
    }
    if let Some(decided) = &a.decided_parallelism {
        let list: Vec<String> = decided.iter().map(|(id, p)| format!("{id} {p}")).collect();
        let _ = writeln!(s, "  decided parallelism  {}", list.join(", "));
        for (id, b) in a.bytes_per_task.iter().flatten() {
            let _ = writeln!(
                s,
                "  bytes per task       {id}: min {}, median {}, max {} (max / median {:.2})",
                n(b.min),
                n(b.median),
                n(b.max),
                b.max_over_median
            );
        }
        for k in a.skew_splits.iter().flatten() {
            let _ = writeln!(
                s,
                "  skew split           {} #{}: {} bytes read by {} subtasks",
                k.vertex,
                k.subpartition,
                n(k.bytes),
                k.pieces
            );
        }
        if let Some(skewed) = &a.skewed_subpartitions {
            let _ = writeln!(s, "  skewed subpartitions {}", n(skewed.count));
            for k in &skewed.largest {
                let _ = writeln!(
                    s,
                    "                       {} <- {} #{}: {} bytes, {:.1} x the average per task",
                    k.vertex,
                    k.producer,
                    k.subpartition,
                    n(k.bytes),
                    k.bytes as f64 / (k.average_bytes_per_task.max(1)) as f64
                );
            }
        }
    }
    // Shown only when speculation is on, so that runs without it print as before.
    let sa = &r.speculative_attempts;
    if sa.enabled {
        let _ = writeln!(
            s,
            "  speculative attempts {} started, {} won, {} cancelled, {} failed",
            n(sa.started),
            n(sa.won),
            n(sa.cancelled),
            n(sa.failed)
        );
    }
    if let Some(fi) = &r.faults_injected {
        let _ = writeln!(s, "  faults injected      {} task failure(s), {} partition-not-found, {} TaskManager loss(es), {} blob server restart(s)", n(fi.task_failures), n(fi.partition_not_found), n(fi.task_manager_losses), n(fi.blob_server_restarts));
    }
    s
}
