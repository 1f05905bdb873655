//! `conflux`: the command-line face of Conflux.
//!
//! Exit codes: 0 success, 2 invalid input or usage (one line on stderr naming the problem), 1 the
//! work itself failed (also when standard output cannot be written). With `--format json`, an
//! error also prints `{"error": "..."}` on stdout. Diagnostics go to stderr through `tracing`
//! (`RUST_LOG`, default warnings).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use conflux_graph::load::LoadOptions;
use conflux_graph::{generate, limits, ResultPartitionType};

mod batch;
mod blobs;
mod checkpoint;
mod cluster;
mod descriptors;
mod failure;
mod format;
mod ha;
mod headings;
mod input;
mod inspect;
mod load_args;
mod logging;
mod offload_args;
mod output;
mod plan;
mod progress;
mod restart;
mod run;
mod s3;
mod settings;
mod speculative;
mod token;
mod usage;
mod work_dir;

pub(crate) use failure::Failure;
pub(crate) use format::Format;
pub(crate) use input::read_input;
pub(crate) use load_args::LoadArgs;
pub(crate) use offload_args::OffloadArgs;

// The graph code allocates little, but a runtime embedding the CLI's job wants a fast allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "conflux",
    version,
    about = "Scheduling core of a dataflow engine, after Apache Flink's"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print a synthetic job graph as JSON.
    Generate {
        #[command(subcommand)]
        job: GenerateJob,
    },
    /// Run a job to its end on a simulated cluster with real descriptors and blobs (the main job).
    Run(RunArgs),
    /// Replay a script of task events on a (small) job and list deploys, restarts, releases.
    Simulate {
        /// Job graph JSON or Flink JSON plan.
        file: PathBuf,
        /// The script (see the README): task managers and events.
        #[arg(long)]
        script: PathBuf,
        #[command(flatten)]
        load: LoadArgs,
        /// Restart strategy flags; without any, every failure restarts at once (the replay's
        /// default: a script describes failovers).
        #[command(flatten)]
        restart: restart::RestartArgs,
        /// Output format.
        #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Run a blob server until interrupted.
    BlobServer(BlobServerArgs),
    /// Simulate checkpoints of a synthetic stateful job, with and without file merging.
    CheckpointSim(checkpoint::CheckpointSimArgs),
    /// Demonstrate the local-directory placement strategies across processes.
    LocalDirs(checkpoint::LocalDirsArgs),
    /// Run a JobManager (with its blob server) until interrupted.
    Jobmanager(cluster::JobManagerArgs),
    /// Run a TaskManager that registers with a JobManager, until interrupted.
    Taskmanager(cluster::TaskManagerArgs),
    /// Submit a job to a JobManager; wait for its end and print its report (or, detached, its
    /// id).
    Submit(cluster::SubmitArgs),
    /// List a JobManager's jobs.
    List(cluster::ListArgs),
    /// Cancel a job.
    Cancel(cluster::CancelArgs),
    /// Print a job's state (first word: QUEUED, RUNNING, FINISHED, FAILED or CANCELED) and
    /// what the JobManager knows of it.
    Status(cluster::JobQueryArgs),
    /// Wait for a job's end and print its report, as attached `submit` does.
    Wait(cluster::JobQueryArgs),
    /// Run a job on a local cluster: a JobManager here and TaskManager processes on loopback.
    Cluster(cluster::ClusterArgs),
    /// Inspect, edit, diff and check plans.
    Plan {
        #[command(subcommand)]
        command: plan::PlanCommand,
    },
    /// Run the HTTP planning service.
    Serve(plan::ServeArgs),
    /// Print a shell completion script for conflux to standard output (e.g. `conflux
    /// completions bash > ~/.local/share/bash-completion/completions/conflux`).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print conflux's man page (roff) to standard output, or a subcommand's (`conflux man
    /// cluster`); e.g. `conflux man | man -l -`.
    Man {
        /// The subcommand, e.g. `run` or `plan stats`; none: the page of conflux itself.
        subcommand: Vec<String>,
    },
    /// Expand a job (job graph JSON or Flink plan) and report its execution graph and regions.
    Inspect {
        /// Job graph JSON or Flink JSON plan (`-` for standard input).
        file: PathBuf,
        #[command(flatten)]
        load: LoadArgs,
        /// Output format: a report (`text`, `json`) or a picture of the job graph (`dot`,
        /// `mermaid`, `svg`: vertices with name and parallelism, edges with ship strategy and
        /// partition type, logical pipelined regions as colours and clusters).
        #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = InspectFormat::Text)]
        format: InspectFormat,
        /// List every execution vertex with its region and consumed partition groups (small
        /// graphs only: refused above 1,000,000 execution vertices or listed partitions).
        #[arg(help_heading = crate::headings::OUTPUT, long)]
        detail: bool,
        /// Pictures: label every edge with its channels and target network buffers (Flink
        /// 1.20's buffer model, as `plan stats`).
        #[arg(help_heading = crate::headings::OUTPUT, long)]
        edge_stats: bool,
        #[command(flatten)]
        offload: OffloadArgs,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// Job graph JSON or Flink JSON plan (`-` for standard input).
    file: PathBuf,
    #[command(flatten)]
    load: LoadArgs,
    /// TaskManagers, 1 to 1,000,000 (default: as many as the job's slot demand needs); with
    /// --slots at most 2^26 slots in all.
    #[arg(help_heading = crate::headings::CLUSTER, long, value_parser = clap::value_parser!(u32).range(1..=i64::from(limits::MAX_TASK_MANAGERS)))]
    task_managers: Option<u32>,
    /// Slots per TaskManager, 1 to 65,536.
    #[arg(help_heading = crate::headings::CLUSTER, long, default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(limits::MAX_SLOTS_PER_TASK_MANAGER)))]
    slots: u32,
    /// Seed of task durations and faults.
    #[arg(help_heading = crate::headings::CLUSTER, long, default_value_t = 0)]
    seed: u64,
    /// Task durations, ms: `MIN..MAX` (drawn per attempt from the seed) or one value.
    #[arg(help_heading = crate::headings::CLUSTER, long, default_value = "1000..2000", value_parser = cluster::parse_duration_range)]
    task_duration_ms: (u64, u64),
    #[command(flatten)]
    restart: restart::RestartArgs,
    /// Failover strategy.
    #[arg(help_heading = crate::headings::SCHEDULING, long, value_enum, default_value_t = FailoverArg::Region)]
    failover: FailoverArg,
    #[command(flatten)]
    slot_request: cluster::SlotRequestArgs,
    #[command(flatten)]
    offload: OffloadArgs,
    /// Chance that a deployed task fails while running (0..1).
    #[arg(help_heading = crate::headings::FAULTS, long, default_value_t = 0.0)]
    task_failure_rate: f64,
    /// Chance that a task with blocking inputs fails reading one (partition not found).
    #[arg(help_heading = crate::headings::FAULTS, long, default_value_t = 0.0)]
    partition_not_found_rate: f64,
    /// TaskManagers lost during the run (each replaced after 1 s).
    #[arg(help_heading = crate::headings::FAULTS, long, default_value_t = 0)]
    task_manager_losses: u32,
    /// Blob server restarts during the run.
    #[arg(help_heading = crate::headings::FAULTS, long, default_value_t = 0)]
    blob_server_restarts: u32,
    #[command(flatten)]
    batch: batch::BatchArgs,
    #[command(flatten)]
    speculative: speculative::SpeculativeArgs,
    /// Output format.
    #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// No progress bar.
    #[arg(help_heading = crate::headings::OUTPUT, long)]
    quiet: bool,
    #[command(flatten)]
    settings: settings::ConfigArgs,
}

#[derive(clap::Args)]
struct BlobServerArgs {
    /// Log output.
    #[command(flatten)]
    pub(crate) log: crate::logging::LogArgs,

    /// Storage directory (local files); created if missing.
    #[arg(help_heading = crate::headings::STORAGE, long)]
    storage_dir: PathBuf,
    /// Listen address; port 0 picks a free port.
    #[arg(help_heading = crate::headings::SERVER, long, default_value = "127.0.0.1:6124")]
    address: std::net::SocketAddr,
    /// Durable copy in this local directory (default: `<storage-dir>/durable`).
    #[arg(help_heading = crate::headings::STORAGE, long, conflicts_with = "s3_bucket")]
    durable_dir: Option<PathBuf>,
    /// Durable copy in an S3-compatible bucket instead.
    #[command(flatten)]
    s3: s3::S3Args,
    /// Require `Authorization: Bearer <token>` on blob requests.
    #[arg(help_heading = crate::headings::SERVER, long)]
    auth_token: Option<String>,
    /// Largest upload accepted, bytes.
    #[arg(help_heading = crate::headings::SERVER, long, default_value_t = 1 << 30)]
    max_blob_bytes: u64,
    /// Connections served at once; more wait in the listen backlog.
    #[arg(help_heading = crate::headings::SERVER, long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    max_connections: u64,
    /// A connection must send a request head within this, ms (also bounds idle keep-alive).
    #[arg(help_heading = crate::headings::SERVER, long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    header_read_timeout_ms: u64,
    /// A transfer making no progress for this long is cut (an upload gets 408), ms.
    #[arg(help_heading = crate::headings::SERVER, long, default_value_t = 60_000, value_parser = clap::value_parser!(u64).range(1..))]
    idle_timeout_ms: u64,
    /// The jobs a starting JobManager recovers (32-hex job ids, comma-separated): the blobs of
    /// every other job are deleted at start (Flink's FLINK-25436). Default: keep all.
    #[arg(help_heading = crate::headings::STORAGE, long, value_delimiter = ',')]
    recovered_jobs: Option<Vec<conflux_blob::JobId>>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FailoverArg {
    Region,
    Full,
}

#[derive(Subcommand)]
enum GenerateJob {
    /// Vertices `source` and `count`, joined all-to-all: 2 x N tasks, N^2 connections.
    Wordcount {
        /// Parallelism N of both vertices.
        #[arg(help_heading = crate::headings::JOB, long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
        parallelism: u32,
        /// Result partition type of the edge; pipelined types give a streaming job.
        #[arg(help_heading = crate::headings::JOB, long, default_value = "blocking", value_parser = parse_partition_type)]
        result_partition_type: ResultPartitionType,
        /// Words each source subtask emits: sets the vertices' `invokable` (`wordcount-source`,
        /// `wordcount-count`) and `config`, so that a cluster counts real words. Absent:
        /// synthetic tasks, as before.
        #[arg(help_heading = crate::headings::JOB, long)]
        words_per_source: Option<u64>,
        /// Words in the sources' vocabulary (with --words-per-source).
        #[arg(help_heading = crate::headings::JOB, long, default_value_t = conflux_operators::DEFAULT_VOCABULARY_SIZE,
              value_parser = clap::value_parser!(u32).range(1..=i64::from(conflux_operators::MAX_VOCABULARY_SIZE)),
              requires = "words_per_source")]
        vocabulary: u32,
        /// Write to this file instead of standard output.
        #[arg(help_heading = crate::headings::OUTPUT, long, short)]
        output: Option<PathBuf>,
    },
    /// Many small components of parallelism-1 vertices chained by pointwise edges, written
    /// straight as JSON: a large job file for measuring the loader (6,200,000 vertices in
    /// components of 1 make 216 MB).
    Components {
        /// Number of vertices.
        #[arg(help_heading = crate::headings::JOB, long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u32).range(1..))]
        vertices: u32,
        /// Vertices per component (1: no edges).
        #[arg(help_heading = crate::headings::JOB, long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        component_size: u32,
        /// Write to this file instead of standard output.
        #[arg(help_heading = crate::headings::OUTPUT, long, short)]
        output: Option<PathBuf>,
    },
    /// A layered batch job with fan-in and fan-out (three inputs and three consumers per
    /// vertex, HASH, FORWARD and REBALANCE edges, blocking every fourth layer), named as Flink
    /// names operators: the shape of a large SQL plan, for pictures.
    Layered {
        /// Layers of vertices, 1 to 1,000.
        #[arg(help_heading = crate::headings::JOB, long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1_000))]
        layers: u32,
        /// Vertices per layer, 1 to 1,000.
        #[arg(help_heading = crate::headings::JOB, long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1_000))]
        width: u32,
        /// Parallelism of every vertex.
        #[arg(help_heading = crate::headings::JOB, long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=32_768))]
        parallelism: u32,
        /// Write to this file instead of standard output.
        #[arg(help_heading = crate::headings::OUTPUT, long, short)]
        output: Option<PathBuf>,
    },
}

/// Output of `conflux inspect`: a report or a picture.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum InspectFormat {
    /// The report for people.
    Text,
    /// The report as one JSON document.
    Json,
    /// The job graph as Graphviz DOT (`dot -Tsvg` draws it).
    Dot,
    /// The job graph as a Mermaid flowchart.
    Mermaid,
    /// The job graph as SVG, laid out here.
    Svg,
}

impl InspectFormat {
    /// The picture format, for `dot`, `mermaid` and `svg`.
    fn picture(self) -> Option<conflux_planner::picture::Format> {
        use conflux_planner::picture::Format as P;
        match self {
            InspectFormat::Text | InspectFormat::Json => None,
            InspectFormat::Dot => Some(P::Dot),
            InspectFormat::Mermaid => Some(P::Mermaid),
            InspectFormat::Svg => Some(P::Svg),
        }
    }

    /// How errors are reported: as JSON for `json`, as text otherwise.
    fn report(self) -> Format {
        match self {
            InspectFormat::Json => Format::Json,
            _ => Format::Text,
        }
    }
}

fn parse_partition_type(s: &str) -> Result<ResultPartitionType, String> {
    ResultPartitionType::parse(s).ok_or_else(|| {
        let names: Vec<&str> = ResultPartitionType::ALL
            .iter()
            .map(|t| t.as_str())
            .collect();
        format!("expected one of: {}", names.join(", "))
    })
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Before anything that may warn (the configuration's unknown keys): daemons say what they
    // do at INFO, as Flink's processes; one-shot commands (and `cluster`, whose report is its
    // output) only warn.
    logging::init_for(&args);
    // `--config` and `-D` become flags first (flag > -D > environment > file > default).
    let applied = match settings::apply(&args, <Cli as clap::CommandFactory>::command) {
        Ok(applied) => applied,
        Err(settings::ApplyError::Usage(e)) => return usage::exit(&e, &args),
        Err(settings::ApplyError::Config(failure)) => return failure.exit(Format::Text),
    };
    let mut cli = match Cli::try_parse_from(&applied.args) {
        Ok(cli) => cli,
        Err(e) => return usage::exit(&e, &args),
    };
    match &mut cli.command {
        Command::Jobmanager(args) => args.settings.effective = applied.effective,
        Command::Cluster(args) => {
            args.settings.effective = applied.effective;
            args.jobmanager_flags =
                cluster::jobmanager_flags(&applied.args, <Cli as clap::CommandFactory>::command);
        }
        _ => {}
    }
    let format = match &cli.command {
        Command::Inspect { format, .. } => format.report(),
        Command::Run(args) => args.format,
        Command::Simulate { format, .. } => *format,
        Command::BlobServer(_) | Command::Serve(_) => Format::Text,
        Command::CheckpointSim(args) => args.format,
        Command::LocalDirs(args) => args.format,
        Command::Plan { command } => command.format(),
        Command::Generate { .. } | Command::Completions { .. } | Command::Man { .. } => {
            Format::Text
        }
        Command::Submit(args) => args.format,
        Command::List(args) => args.format,
        Command::Status(args) => args.format,
        Command::Wait(args) => args.format,
        Command::Cluster(args) => args.format,
        Command::Jobmanager(_) | Command::Taskmanager(_) | Command::Cancel(_) => Format::Text,
    };
    match dispatch_catching_print_panics(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.exit(format),
    }
}

/// Runs the command. Output goes through [`output`]; a `println!` left anywhere (it panics when
/// stdout fails) is caught here and ends as an [`output::print()`] failure would, after unwinding,
/// so temporary directories are still removed.
fn dispatch_catching_print_panics(command: Command) -> Result<(), Failure> {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if output::print_panic_error(info.payload()).is_none() {
            default_hook(info);
        }
    }));
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(command))) {
        Ok(result) => result,
        Err(payload) => match output::print_panic_error(payload.as_ref()) {
            Some(e) => Err(Failure::Output(e)),
            None => std::panic::resume_unwind(payload),
        },
    }
}

fn dispatch(command: Command) -> Result<(), Failure> {
    match command {
        Command::Generate { job } => run_generate(job),
        Command::Run(args) => run_job(&args),
        Command::Simulate {
            file,
            script,
            load,
            restart,
            format,
        } => simulate(&file, &script, &load.options(), &restart, format),
        Command::BlobServer(args) => blob_server(&args),
        Command::CheckpointSim(args) => checkpoint::run_sim(&args),
        Command::LocalDirs(args) => checkpoint::run_local_dirs(&args),
        Command::Plan { command } => plan::run(&command),
        Command::Serve(args) => plan::serve(&args),
        Command::Jobmanager(args) => cluster::jobmanager(&args),
        Command::Taskmanager(args) => cluster::taskmanager(&args),
        Command::Submit(args) => cluster::submit(&args),
        Command::List(args) => cluster::list(&args),
        Command::Cancel(args) => cluster::cancel(&args),
        Command::Status(args) => cluster::status(&args),
        Command::Wait(args) => cluster::wait(&args),
        Command::Cluster(args) => cluster::cluster(&args),
        Command::Completions { shell } => completions(shell),
        Command::Man { subcommand } => man(&subcommand),
        Command::Inspect {
            file,
            load,
            format,
            detail,
            edge_stats,
            offload,
        } => match format.picture() {
            Some(picture) => {
                if detail {
                    return Err(Failure::Input(anyhow::anyhow!(
                        "--detail lists execution vertices in a report; use it with --format text or json"
                    )));
                }
                inspect::picture(&file, &load.options(), picture, edge_stats)
            }
            None if edge_stats => Err(Failure::Input(anyhow::anyhow!(
                "--edge-stats labels the edges of a picture; use it with --format dot, mermaid or svg"
            ))),
            None => offload
                .rule()
                .and_then(|rule| inspect::run(&file, &load.options(), format.report(), detail, rule)),
        },
    }
}

/// `conflux completions SHELL`: the completion script, generated from the parser itself.
fn completions(shell: clap_complete::Shell) -> Result<(), Failure> {
    use clap::CommandFactory;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "conflux", &mut script);
    output::print(&String::from_utf8_lossy(&script))
}

/// `conflux man [SUBCOMMAND...]`: the man page of conflux or of one of its subcommands.
fn man(path: &[String]) -> Result<(), Failure> {
    use clap::CommandFactory;
    let mut command = Cli::command();
    command.build();
    let mut name = "conflux".to_owned();
    for part in path {
        command = command
            .find_subcommand(part)
            .cloned()
            .ok_or_else(|| Failure::Input(anyhow::anyhow!("{name} has no subcommand {part:?}")))?;
        name = format!("{name}-{part}");
    }
    let mut page = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut page)
        .map_err(|e| Failure::Work(anyhow::anyhow!("rendering the man page: {e}")))?;
    output::print(&String::from_utf8_lossy(&page))
}

fn run_job(args: &RunArgs) -> Result<(), Failure> {
    // Clap bounds each flag; the product is checked here, before anything is allocated.
    limits::check_cluster(args.task_managers, args.slots).map_err(Failure::input)?;
    for (name, rate) in [
        ("--task-failure-rate", args.task_failure_rate),
        ("--partition-not-found-rate", args.partition_not_found_rate),
    ] {
        if !(0.0..=1.0).contains(&rate) {
            return Err(Failure::Input(anyhow::anyhow!(
                "{name} {rate} is not between 0 and 1"
            )));
        }
    }
    let options = run::RunOptions {
        task_managers: args.task_managers,
        slots: args.slots,
        seed: args.seed,
        faults: conflux_sim::Faults {
            task_failure: args.task_failure_rate,
            partition_not_found: args.partition_not_found_rate,
            task_manager_losses: args.task_manager_losses,
            blob_server_restarts: args.blob_server_restarts,
        },
        offload_rule: args.offload.rule()?,
        restart: args.restart.strategy()?,
        failover: match args.failover {
            FailoverArg::Region => conflux_scheduler::FailoverStrategy::Region,
            FailoverArg::Full => conflux_scheduler::FailoverStrategy::Full,
        },
        slot_request_timeout_ms: args.slot_request.slot_request_timeout_ms,
        progress: !args.quiet && progress::on_terminal(),
        decide: !args.load.default_parallelism_given(),
        batch: args.batch.options()?,
        bytes: args.batch.bytes()?,
        task_duration_ms: args.task_duration_ms,
        speculative: args.speculative.options()?,
        slow_task_managers: {
            let slow = args.speculative.slow_task_managers()?;
            if let Some(n) = args.task_managers.filter(|&n| slow.count > n) {
                return Err(Failure::input(anyhow::anyhow!(
                    "--slow-task-managers {} is more than --task-managers {n}",
                    slow.count
                )));
            }
            slow
        },
    };
    let blobs = blobs::EmbeddedBlobs::start().map_err(Failure::Work)?;
    tracing::debug!(url = %blobs.url(), "started the embedded blob server");
    let blob_report = || {
        let (server, durable, hits) = blobs.cache_totals();
        conflux_report::BlobServerReport {
            url: blobs.url(),
            server_fetches: server,
            durable_fetches: durable,
            local_hits: hits,
        }
    };
    let result = run::run(
        &args.file,
        &args.load.options(),
        &options,
        &blobs,
        &blob_report,
        args.format,
    );
    // The server, the caches and their temporary directory go before the exit code does.
    drop(blobs);
    result
}

fn simulate(
    file: &std::path::Path,
    script: &std::path::Path,
    options: &LoadOptions,
    restart: &restart::RestartArgs,
    format: Format,
) -> Result<(), Failure> {
    use std::sync::Arc;
    let strategy = if restart.given() {
        restart.strategy()?
    } else {
        conflux_sim::script::RESTART_AT_ONCE
    };
    let bytes = read_input(file)?;
    let (job, _) = conflux_graph::load::load_owned(bytes, options).map_err(Failure::input)?;
    tracing::debug!(
        phase = "parse",
        job_vertices = job.vertices().len(),
        "parsed the job graph"
    );
    let graph = Arc::new(conflux_graph::ExecutionGraph::build(job).map_err(Failure::input)?);
    tracing::debug!(
        phase = "execution_graph",
        execution_vertices = graph.num_execution_vertices(),
        "built the execution graph"
    );
    let regions =
        Arc::new(conflux_graph::PipelinedRegions::compute(&graph).map_err(Failure::input)?);
    tracing::debug!(
        phase = "regions",
        regions = regions.len(),
        "computed the pipelined regions"
    );
    let script_bytes = read_input(script)?;
    let script = conflux_sim::script::Script::parse(&script_bytes).map_err(Failure::input)?;
    tracing::debug!(phase = "script", "parsed the script");
    let spinner = progress::spinner(format!("replaying {} events", script.events.len()));
    let out = conflux_sim::script::replay_with(graph, regions, &script, strategy)
        .map_err(Failure::input)?;
    drop(spinner);
    tracing::debug!(entries = out.timeline.len(), status = %out.status, "replayed the script");
    match format {
        Format::Json => output::print_json(&out),
        Format::Text => {
            let mut s = String::new();
            for entry in &out.timeline {
                let at = if entry.event < 0 {
                    "start".to_owned()
                } else {
                    format!("event {}", entry.event)
                };
                let (what, names) = match &entry.what {
                    conflux_sim::script::TimelineKind::Deploy(v) => ("deploy", v),
                    conflux_sim::script::TimelineKind::Restart(v) => ("restart", v),
                    conflux_sim::script::TimelineKind::Release(v) => ("release", v),
                };
                let _ = writeln!(s, "{at:>9}  {what:<7} {}", names.join(" "));
            }
            let _ = writeln!(s, "status {}", out.status);
            output::print(&s)
        }
    }
}

fn blob_server(args: &BlobServerArgs) -> Result<(), Failure> {
    use conflux_blob::{BlobServer, BlobServerConfig, DurableStoreConfig, S3Config};
    let mut config = BlobServerConfig::new(&args.storage_dir);
    config.address = args.address;
    config.auth_token.clone_from(&args.auth_token);
    config.max_blob_bytes = args.max_blob_bytes;
    config.max_connections = usize::try_from(args.max_connections).unwrap_or(65_536);
    config.header_read_timeout_ms = args.header_read_timeout_ms;
    config.idle_timeout_ms = args.idle_timeout_ms;
    config.recovered_jobs.clone_from(&args.recovered_jobs);
    if let Some(dir) = &args.durable_dir {
        config.durable = DurableStoreConfig::Local { dir: dir.clone() };
    }
    if let Some((bucket, key, secret)) = args.s3.credentials() {
        let mut s3 = S3Config::new(bucket.to_owned(), key.to_owned(), secret.to_owned());
        s3.endpoint.clone_from(&args.s3.s3_endpoint);
        s3.region.clone_from(&args.s3.s3_region);
        s3.prefix.clone_from(&args.s3.s3_prefix);
        s3.allow_http = args.s3.allow_http();
        config.durable = DurableStoreConfig::S3(s3);
    }
    tracing::debug!(
        phase = "start",
        address = %config.address,
        storage = %args.storage_dir.display(),
        s3 = args.s3.credentials().is_some(),
        "starting the blob server"
    );
    let server = BlobServer::start_blocking(config).map_err(Failure::input)?;
    let line = format!(
        "blob server listening on {} (storage {})",
        server.url(),
        args.storage_dir.display()
    );
    if tracing::enabled!(tracing::Level::INFO) {
        tracing::info!(url = %server.url(), storage = %args.storage_dir.display(), "{line}");
    } else {
        eprintln!("{line}; Ctrl-C stops it");
    }
    loop {
        std::thread::park();
    }
}

/// Makes the generated word count count words: `source` runs `wordcount-source`, `count`
/// runs `wordcount-count`, both configured with the seed, vocabulary and words per source.
fn word_count_tasks(
    job: &mut conflux_graph::json::JobGraphJson,
    words_per_source: u64,
    vocabulary: u32,
) {
    use conflux_operators::{WordCountConfig, DEFAULT_SEED, INVOKABLE_COUNT, INVOKABLE_SOURCE};
    let config = WordCountConfig {
        seed: DEFAULT_SEED,
        vocabulary,
        words_per_source,
    };
    for v in &mut job.vertices {
        let invokable = if v.id == "source" {
            INVOKABLE_SOURCE
        } else {
            INVOKABLE_COUNT
        };
        v.invokable = Some(invokable.to_owned());
        v.config = config
            .to_config()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
    }
}

fn run_generate(job: GenerateJob) -> Result<(), Failure> {
    let (text, output) = match job {
        GenerateJob::Wordcount {
            parallelism,
            result_partition_type,
            words_per_source,
            vocabulary,
            output,
        } => {
            let mut job = generate::word_count(parallelism, result_partition_type);
            if let Some(words_per_source) = words_per_source {
                word_count_tasks(&mut job, words_per_source, vocabulary);
            }
            let mut text = job.to_json_pretty();
            text.push('\n');
            tracing::debug!(parallelism, bytes = text.len(), "generated the word count");
            (text, output)
        }
        GenerateJob::Components {
            vertices,
            component_size,
            output,
        } => {
            let text = generate::components_json(vertices, component_size);
            tracing::debug!(vertices, bytes = text.len(), "generated the components");
            (text, output)
        }
        GenerateJob::Layered {
            layers,
            width,
            parallelism,
            output,
        } => {
            let mut text = generate::layered(layers, width, parallelism).to_json_pretty();
            text.push('\n');
            tracing::debug!(
                layers,
                width,
                bytes = text.len(),
                "generated the layered job"
            );
            (text, output)
        }
    };
    match output {
        Some(path) => std::fs::write(&path, text).map_err(|e| {
            Failure::input(anyhow::Error::new(e).context(format!("writing {}", path.display())))
        }),
        None => output::print(&text),
    }
}
