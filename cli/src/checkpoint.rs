//! `conflux checkpoint-sim` and `conflux local-dirs`: the checkpoint-storage crate
//! (`conflux-checkpoint`) seen from the command line.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{anyhow, Context};
use conflux_checkpoint::sim::{self, ModeReport, SimConfig, SimReport};
use conflux_checkpoint::{
    CheckpointError, FileMergingConfig, InstanceName, LocalDirAllocator, LocalDirConfig,
    ManifestPolicy, PlacementStrategy, S3Config, SpaceControl, StorageConfig,
};
use serde_json::{json, Value};

use crate::output;
use crate::{Failure, Format};

mod script;

/// Options of `conflux checkpoint-sim`. The defaults are the small-file case file merging
/// targets: 1,000 small state files per checkpoint x 100 checkpoints.
#[derive(clap::Args)]
pub(crate) struct CheckpointSimArgs {
    /// Subtasks of the stateful operator (each with its own database and manager).
    #[arg(help_heading = crate::headings::CHECKPOINTS, long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=4096))]
    subtasks: u32,
    /// Checkpoints triggered.
    #[arg(help_heading = crate::headings::CHECKPOINTS, long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    checkpoints: u64,
    /// New small state (SST) files per checkpoint, over all subtasks.
    #[arg(help_heading = crate::headings::CHECKPOINTS, long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(0..=10_000_000))]
    files_per_checkpoint: u32,
    /// Smallest state file, bytes.
    #[arg(help_heading = crate::headings::CHECKPOINTS, long, default_value_t = 256)]
    min_file_bytes: u64,
    /// Largest state file, bytes.
    #[arg(help_heading = crate::headings::CHECKPOINTS, long, default_value_t = 2048)]
    max_file_bytes: u64,
    /// Most checkpoints pending at once.
    #[arg(help_heading = crate::headings::CHECKPOINTS, long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    max_concurrent: u32,
    /// Chance that a checkpoint is still pending when the next is triggered (0..1).
    #[arg(help_heading = crate::headings::CHECKPOINTS, long, default_value_t = 0.2)]
    overlap_rate: f64,
    /// Chance that a checkpoint aborts (0..1).
    #[arg(help_heading = crate::headings::CHECKPOINTS, long, default_value_t = 0.05)]
    abort_rate: f64,
    /// Job-manager failovers, evenly spaced, each in the middle of a checkpoint.
    #[arg(help_heading = crate::headings::CHECKPOINTS, long, default_value_t = 2)]
    failovers: u32,
    /// Completed checkpoints retained.
    #[arg(help_heading = crate::headings::CHECKPOINTS, long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    retained: u64,
    /// Cap of a merged physical file, bytes.
    #[arg(help_heading = crate::headings::MERGING, long, default_value_t = conflux_checkpoint::merging::DEFAULT_MAX_FILE_SIZE,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_file_size: u64,
    /// Let merged files take segments of later checkpoints (FLIP-306 across-boundary mode).
    #[arg(help_heading = crate::headings::MERGING, long)]
    across_checkpoint_boundary: bool,
    /// Space-amplification limit of merged files (below 1 disables space control).
    #[arg(help_heading = crate::headings::MERGING, long, default_value_t = conflux_checkpoint::merging::DEFAULT_MAX_SPACE_AMPLIFICATION)]
    max_space_amplification: f64,
    /// `compaction` rewrites wasteful files (Alibaba); `exclude` stops reusing them (Flink).
    #[arg(help_heading = crate::headings::MERGING, long, value_enum, default_value_t = SpaceControlArg::Compaction)]
    space_control: SpaceControlArg,
    /// `appended` uploads only new MANIFEST bytes; `full` uploads it whole (Flink).
    #[arg(help_heading = crate::headings::CHECKPOINTS, long, value_enum, default_value_t = ManifestArg::Appended)]
    manifest: ManifestArg,
    /// MANIFEST roll threshold of the synthetic databases, bytes.
    #[arg(help_heading = crate::headings::CHECKPOINTS, long, default_value_t = conflux_checkpoint::upload_plan::DEFAULT_MANIFEST_ROLL_BYTES,
          value_parser = clap::value_parser!(u64).range(1..))]
    manifest_roll_bytes: u64,
    /// Seed of every random choice.
    #[arg(help_heading = crate::headings::CHECKPOINTS, long, default_value_t = 42)]
    seed: u64,
    /// Keep objects in this local directory (`merged/` and `unmerged/` in it). Default: a
    /// temporary directory, removed at the end.
    #[arg(help_heading = crate::headings::STORAGE, long, conflicts_with_all = ["memory", "s3_bucket"])]
    storage_dir: Option<PathBuf>,
    /// Keep objects in memory instead of a local directory.
    #[arg(help_heading = crate::headings::STORAGE, long, conflicts_with = "s3_bucket")]
    memory: bool,
    #[command(flatten)]
    s3: crate::s3::S3Args,
    /// Replay this scripted scenario (JSON) against the job manager's registry, completed
    /// checkpoint store and upload plan instead of simulating a job; prints the objects alive
    /// after each event. The simulation options are then ignored.
    #[arg(help_heading = crate::headings::CHECKPOINTS, long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// Output format.
    #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SpaceControlArg {
    Compaction,
    Exclude,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ManifestArg {
    Appended,
    Full,
}

/// Options of `conflux local-dirs`.
#[derive(clap::Args)]
pub(crate) struct LocalDirsArgs {
    /// Candidate directories (default: `--disks` temporary directories, on one device, so
    /// device de-duplication is off for them).
    #[arg(help_heading = crate::headings::STORAGE, long, value_delimiter = ',')]
    dirs: Vec<PathBuf>,
    /// Temporary "disks" to create when `--dirs` is not given.
    #[arg(help_heading = crate::headings::STORAGE, long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    disks: u32,
    /// Processes allocating at once.
    #[arg(help_heading = crate::headings::PLACEMENT, long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    processes: u32,
    /// Instances each process allocates (and holds until all processes are done).
    #[arg(help_heading = crate::headings::PLACEMENT, long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    instances_per_process: u32,
    /// Strategies to demonstrate (default: all): random, round-robin, host-round-robin,
    /// least-loaded, weighted.
    #[arg(help_heading = crate::headings::PLACEMENT, long, value_delimiter = ',', value_parser = parse_strategy)]
    strategy: Vec<PlacementStrategy>,
    /// Weights of the weighted strategy, one per directory (default: free bytes).
    #[arg(help_heading = crate::headings::PLACEMENT, long, value_delimiter = ',')]
    weights: Vec<u64>,
    /// Count directories on one device separately (always so for the temporary disks).
    #[arg(help_heading = crate::headings::STORAGE, long)]
    no_device_dedupe: bool,
    /// Skip directories with fewer free bytes.
    #[arg(help_heading = crate::headings::STORAGE, long, default_value_t = 0)]
    min_free_bytes: u64,
    /// Internal: run as one allocating child process.
    #[arg(long, hide = true)]
    child: bool,
    /// Output format.
    #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

fn parse_strategy(s: &str) -> Result<PlacementStrategy, String> {
    PlacementStrategy::parse(s).ok_or_else(|| {
        let names: Vec<&str> = PlacementStrategy::ALL.iter().map(|p| p.as_str()).collect();
        format!("expected one of: {}", names.join(", "))
    })
}

fn check_rate(name: &str, rate: f64) -> Result<(), Failure> {
    if (0.0..=1.0).contains(&rate) {
        Ok(())
    } else {
        Err(Failure::Input(anyhow!(
            "{name} {rate} is not between 0 and 1"
        )))
    }
}

pub(crate) fn run_sim(args: &CheckpointSimArgs) -> Result<(), Failure> {
    if let Some(path) = &args.script {
        return script::run(path, args.format);
    }
    check_rate("--overlap-rate", args.overlap_rate)?;
    check_rate("--abort-rate", args.abort_rate)?;
    if args.min_file_bytes > args.max_file_bytes {
        return Err(Failure::Input(anyhow!(
            "--min-file-bytes {} is above --max-file-bytes {}",
            args.min_file_bytes,
            args.max_file_bytes
        )));
    }
    if !args.max_space_amplification.is_finite() {
        return Err(Failure::Input(anyhow!(
            "--max-space-amplification {} is not a number",
            args.max_space_amplification
        )));
    }
    if u64::from(args.failovers) >= args.checkpoints {
        return Err(Failure::Input(anyhow!(
            "--failovers {} needs more than that many --checkpoints ({})",
            args.failovers,
            args.checkpoints
        )));
    }
    let temp;
    let storage = if args.memory {
        StorageConfig::Memory
    } else if let Some((bucket, key, secret)) = args.s3.credentials() {
        let mut s3 = S3Config::new(bucket, key, secret);
        s3.endpoint.clone_from(&args.s3.s3_endpoint);
        s3.region.clone_from(&args.s3.s3_region);
        s3.allow_http = args.s3.allow_http();
        s3.prefix.clone_from(&args.s3.s3_prefix);
        StorageConfig::S3(s3)
    } else if let Some(dir) = &args.storage_dir {
        StorageConfig::Local { dir: dir.clone() }
    } else {
        temp = tempfile::Builder::new()
            .prefix("conflux-checkpoint-sim-")
            .tempdir()
            .context("creating a temporary storage directory")
            .map_err(Failure::Work)?;
        StorageConfig::Local {
            dir: temp.path().to_path_buf(),
        }
    };
    let config = SimConfig {
        subtasks: args.subtasks,
        checkpoints: args.checkpoints,
        files_per_checkpoint: args.files_per_checkpoint,
        min_file_bytes: args.min_file_bytes,
        max_file_bytes: args.max_file_bytes,
        live_files_per_subtask: None,
        max_concurrent: args.max_concurrent,
        overlap_rate: args.overlap_rate,
        abort_rate: args.abort_rate,
        failovers: args.failovers,
        retained: usize::try_from(args.retained).unwrap_or(1),
        merging: FileMergingConfig {
            max_file_size: args.max_file_size,
            across_checkpoint_boundary: args.across_checkpoint_boundary,
            max_space_amplification: args.max_space_amplification,
            space_control: match args.space_control {
                SpaceControlArg::Compaction => SpaceControl::Compaction,
                SpaceControlArg::Exclude => SpaceControl::ExcludeFromReuse,
            },
            ..FileMergingConfig::default()
        },
        manifest: match args.manifest {
            ManifestArg::Appended => ManifestPolicy::AppendedRanges,
            ManifestArg::Full => ManifestPolicy::Full,
        },
        manifest_roll_bytes: args.manifest_roll_bytes,
        seed: args.seed,
        storage: storage.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
        .map_err(Failure::Work)?;
    let start = std::time::Instant::now();
    let bars = SimBars::on_terminal(config.checkpoints);
    let progress: std::sync::Arc<dyn sim::SimProgress> = match &bars {
        Some(bars) => std::sync::Arc::new(bars.clone()),
        None => std::sync::Arc::new(sim::NoProgress),
    };
    let report = runtime.block_on(sim::run_observed(&config, progress));
    if let Some(bars) = bars {
        bars.clear();
    }
    let report = report.map_err(|e| match e {
        // A storage place that is not empty or S3 settings the client refuses: the user's input.
        CheckpointError::Config(_) => Failure::Input(e.into()),
        e => Failure::Work(e.into()),
    })?;
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let storage_name = match &storage {
        StorageConfig::Memory => "memory".to_owned(),
        StorageConfig::Local { dir } => format!("file://{}", dir.display()),
        StorageConfig::S3(s3) => format!("s3://{}", s3.bucket),
    };
    match args.format {
        Format::Json => {
            let out = json!({
                "merged": mode_json(&report.merged),
                "unmerged": mode_json(&report.unmerged),
                "objects_ratio": report.objects_ratio,
                "config": {
                    "subtasks": config.subtasks,
                    "checkpoints": config.checkpoints,
                    "files_per_checkpoint": config.files_per_checkpoint,
                    "file_bytes": [config.min_file_bytes, config.max_file_bytes],
                    "max_concurrent": config.max_concurrent,
                    "overlap_rate": config.overlap_rate,
                    "abort_rate": config.abort_rate,
                    "failovers": config.failovers,
                    "retained": config.retained,
                    "max_file_size": config.merging.max_file_size,
                    "across_checkpoint_boundary": config.merging.across_checkpoint_boundary,
                    "max_space_amplification": config.merging.max_space_amplification,
                    "space_control": config.merging.space_control,
                    "manifest": config.manifest,
                    "manifest_roll_bytes": config.manifest_roll_bytes,
                    "seed": config.seed,
                    "storage": storage_name,
                },
                "wall_ms": wall_ms,
            });
            output::print_json(&out)?;
        }
        Format::Text => {
            output::write_with(|out| write_sim_text(out, &report, &config, &storage_name, wall_ms))?
        }
    }
    let failures = report.merged.restore_failures + report.unmerged.restore_failures;
    if failures > 0 {
        let first = report
            .merged
            .first_failure
            .as_ref()
            .or(report.unmerged.first_failure.as_ref())
            .cloned()
            .unwrap_or_default();
        return Err(Failure::Reported(anyhow!(
            "{failures} restored files did not match (first: {first})"
        )));
    }
    Ok(())
}

/// One progress bar per mode on stderr, drawn only when stderr is a terminal (so piped and
/// captured outputs stay as they were).
#[derive(Clone)]
struct SimBars {
    merged: indicatif::ProgressBar,
    unmerged: indicatif::ProgressBar,
}

impl SimBars {
    fn on_terminal(checkpoints: u64) -> Option<SimBars> {
        if !crate::progress::on_terminal() {
            return None;
        }
        let multi = indicatif::MultiProgress::new();
        let bar = |mode: &'static str| {
            let bar = multi.add(indicatif::ProgressBar::new(checkpoints));
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{prefix:>8} {bar:40} {pos}/{len} checkpoints ({elapsed})",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar.set_prefix(mode);
            // Redrawn by itself, so the elapsed time moves while a long checkpoint runs.
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
            bar
        };
        Some(SimBars {
            merged: bar("merged"),
            unmerged: bar("unmerged"),
        })
    }

    fn clear(&self) {
        self.merged.finish_and_clear();
        self.unmerged.finish_and_clear();
    }
}

impl sim::SimProgress for SimBars {
    fn step(&self, merged: bool, done: u64, _total: u64) {
        let bar = if merged { &self.merged } else { &self.unmerged };
        bar.set_position(done);
    }
}

fn mode_json(r: &ModeReport) -> Value {
    serde_json::to_value(r).unwrap_or_else(|e| json!({ "error": e.to_string() }))
}

/// A count with its digits grouped (`545,259,990`).
fn n(value: impl Into<u64>) -> String {
    conflux_common::format::group_digits(value.into())
}

/// A non-negative figure rounded to a whole number, digits grouped.
fn n_f64(value: f64) -> String {
    // Rounded and clamped first: the cast cannot truncate a value that matters.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let whole = value.round().clamp(0.0, u64::MAX as f64) as u64;
    n(whole)
}

fn write_sim_text(
    out: &mut dyn Write,
    report: &SimReport,
    config: &SimConfig,
    storage: &str,
    wall_ms: f64,
) -> std::io::Result<()> {
    writeln!(
        out,
        "checkpoint-sim: {} subtasks, {} checkpoints x {} files ({}..{} bytes), storage {storage}",
        n(config.subtasks),
        n(config.checkpoints),
        n(config.files_per_checkpoint),
        n(config.min_file_bytes),
        n(config.max_file_bytes)
    )?;
    type Cell = Box<dyn Fn(&ModeReport) -> String>;
    let rows: [(&str, Cell); 17] = [
        ("objects created", Box::new(|r| n(r.objects_created))),
        ("PUT requests", Box::new(|r| n(r.put_requests))),
        ("DELETE requests", Box::new(|r| n(r.delete_requests))),
        ("LIST requests", Box::new(|r| n(r.list_requests))),
        ("GET requests", Box::new(|r| n(r.get_requests))),
        ("bytes written", Box::new(|r| n(r.bytes_written))),
        ("live objects", Box::new(|r| n(r.live_objects))),
        ("live bytes", Box::new(|r| n(r.live_bytes))),
        ("logical bytes", Box::new(|r| n(r.logical_bytes))),
        (
            "space amplification",
            Box::new(|r| format!("{:.3}", r.space_amplification)),
        ),
        (
            "steady amplification median/p95/max",
            Box::new(|r| {
                let d = &r.steady_space_amplification;
                format!("{:.2}/{:.2}/{:.2}", d.median, d.p95, d.max)
            }),
        ),
        (
            "misc bytes/checkpoint (first..last)",
            Box::new(|r| {
                format!(
                    "{}..{}",
                    n_f64(r.misc_bytes_per_checkpoint.first),
                    n_f64(r.misc_bytes_per_checkpoint.last)
                )
            }),
        ),
        (
            "checkpoints completed/aborted",
            Box::new(|r| {
                format!(
                    "{}/{}",
                    n(r.checkpoints_completed),
                    n(r.checkpoints_aborted)
                )
            }),
        ),
        ("failovers", Box::new(|r| n(r.failovers))),
        ("orphans swept", Box::new(|r| n(r.orphans_swept))),
        ("compaction bytes", Box::new(|r| n(r.compaction_bytes))),
        (
            "restore failures / files checked",
            Box::new(|r| {
                format!(
                    "{} / {}",
                    n(r.restore_failures),
                    n(r.restored_files_checked)
                )
            }),
        ),
    ];
    writeln!(out, "{:<36} {:>16} {:>16}", "", "merged", "unmerged")?;
    for (name, f) in &rows {
        writeln!(
            out,
            "{name:<36} {:>16} {:>16}",
            f(&report.merged),
            f(&report.unmerged)
        )?;
    }
    writeln!(
        out,
        "objects ratio (unmerged / merged): {:.1}x; {} ms",
        report.objects_ratio,
        n_f64(wall_ms)
    )?;
    Ok(())
}

/// What one child process reports: the disk index of each instance it allocated.
#[derive(serde::Serialize, serde::Deserialize)]
struct ChildReport {
    disks: Vec<usize>,
    fallbacks: u32,
}

pub(crate) fn run_local_dirs(args: &LocalDirsArgs) -> Result<(), Failure> {
    if args.child {
        return run_child(args);
    }
    let strategies = if args.strategy.is_empty() {
        PlacementStrategy::ALL.to_vec()
    } else {
        args.strategy.clone()
    };
    let temp = tempfile::Builder::new()
        .prefix("conflux-local-dirs-")
        .tempdir()
        .context("creating temporary directories")
        .map_err(Failure::Work)?;
    let mut results = Vec::new();
    for (round, strategy) in strategies.iter().enumerate() {
        // Fresh directories per strategy, so instances of one do not load the next.
        let (dirs, dedupe) = if args.dirs.is_empty() {
            let dirs: Vec<PathBuf> = (0..args.disks)
                .map(|d| {
                    temp.path()
                        .join(format!("round{round}"))
                        .join(format!("disk{d}"))
                })
                .collect();
            for d in &dirs {
                std::fs::create_dir_all(d)
                    .with_context(|| format!("creating {}", d.display()))
                    .map_err(Failure::Work)?;
            }
            (dirs, false)
        } else {
            (args.dirs.clone(), !args.no_device_dedupe)
        };
        let lock_file = temp.path().join(format!("round{round}.lock"));
        // The allocator the children build, to name the disks in the report.
        let allocator =
            LocalDirAllocator::new(&child_config(args, &dirs, *strategy, dedupe, &lock_file))
                .map_err(Failure::input)?;
        let counts = spawn_children(
            args,
            &dirs,
            *strategy,
            dedupe,
            &lock_file,
            allocator.disks().len(),
        )?;
        results.push((*strategy, allocator.disks().to_vec(), counts));
    }
    match args.format {
        Format::Json => {
            let out: Vec<Value> = results
                .iter()
                .map(|(s, disks, (counts, fallbacks))| {
                    json!({
                        "strategy": s.as_str(),
                        "disks": disks.iter().map(|d| d.display().to_string()).collect::<Vec<_>>(),
                        "counts": counts,
                        "spread": spread(counts),
                        "fallbacks": fallbacks,
                    })
                })
                .collect();
            let doc = json!({
                "processes": args.processes,
                "instances_per_process": args.instances_per_process,
                "strategies": out,
            });
            output::print_json(&doc)?;
        }
        Format::Text => output::write_with(|out| {
            writeln!(
                out,
                "{} processes x {} instances over {} directories (instances per directory; spread = max - min)",
                args.processes,
                args.instances_per_process,
                results.first().map_or(0, |r| r.1.len())
            )?;
            for (s, _, (counts, fallbacks)) in &results {
                let cells: Vec<String> = counts.iter().map(|c| format!("{c:>4}")).collect();
                writeln!(
                    out,
                    "{:<18} {}   spread {}{}",
                    s.as_str(),
                    cells.join(""),
                    spread(counts),
                    if *fallbacks > 0 {
                        format!(" ({fallbacks} random fallbacks)")
                    } else {
                        String::new()
                    }
                )?;
            }
            Ok(())
        })?,
    }
    Ok(())
}

fn spread(counts: &[u64]) -> u64 {
    let max = counts.iter().copied().max().unwrap_or(0);
    let min = counts.iter().copied().min().unwrap_or(0);
    max - min
}

fn child_config(
    args: &LocalDirsArgs,
    dirs: &[PathBuf],
    strategy: PlacementStrategy,
    dedupe: bool,
    lock_file: &std::path::Path,
) -> LocalDirConfig {
    let mut config = LocalDirConfig::new(dirs.to_vec(), strategy);
    config.lock_file = Some(lock_file.to_path_buf());
    config.dedupe_devices = dedupe;
    config.min_free_bytes = args.min_free_bytes;
    if !args.weights.is_empty() {
        config.weights = Some(args.weights.clone());
    } else if strategy == PlacementStrategy::Weighted && args.dirs.is_empty() {
        // Temporary disks share one filesystem, so free bytes would weigh them equally: show
        // the strategy with weights 1, 2, 3, ...
        config.weights = Some((1..=dirs.len() as u64).collect());
    }
    config
}

/// Spawns the children, waits until each has allocated, then lets them all go at once (so
/// least-loaded sees every live instance), and sums their counts per disk.
fn spawn_children(
    args: &LocalDirsArgs,
    dirs: &[PathBuf],
    strategy: PlacementStrategy,
    dedupe: bool,
    lock_file: &std::path::Path,
    disks: usize,
) -> Result<(Vec<u64>, u32), Failure> {
    let exe = std::env::current_exe()
        .context("locating the conflux binary")
        .map_err(Failure::Work)?;
    let dir_list = dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(",");
    let mut children = Vec::new();
    for _ in 0..args.processes {
        let mut cmd = Command::new(&exe);
        cmd.args(["local-dirs", "--child", "--format", "json"])
            .args(["--dirs", &dir_list])
            .args(["--strategy", strategy.as_str()])
            .args([
                "--instances-per-process",
                &args.instances_per_process.to_string(),
            ])
            .args(["--min-free-bytes", &args.min_free_bytes.to_string()])
            .env("CONFLUX_LOCAL_DIRS_LOCK", lock_file)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if !dedupe {
            cmd.arg("--no-device-dedupe");
        }
        let weights = child_config(args, dirs, strategy, dedupe, lock_file).weights;
        if let Some(w) = weights {
            let w: Vec<String> = w.iter().map(ToString::to_string).collect();
            cmd.args(["--weights", &w.join(",")]);
        }
        children.push(
            cmd.spawn()
                .context("starting a child process")
                .map_err(Failure::Work)?,
        );
    }
    let mut counts = vec![0u64; disks];
    let mut fallbacks = 0;
    let mut outcome = Ok(());
    for child in &mut children {
        let Some(stdout) = child.stdout.take() else {
            outcome = Err(anyhow!("child has no stdout"));
            continue;
        };
        let mut line = String::new();
        if let Err(e) = BufReader::new(stdout).read_line(&mut line) {
            outcome = Err(anyhow!("reading a child's report: {e}"));
            continue;
        }
        match serde_json::from_str::<ChildReport>(&line) {
            Ok(r) => {
                fallbacks += r.fallbacks;
                for d in r.disks {
                    if let Some(c) = counts.get_mut(d) {
                        *c += 1;
                    }
                }
            }
            Err(e) => outcome = Err(anyhow!("a child reported {line:?}: {e}")),
        }
    }
    for child in &mut children {
        // Closing stdin releases the child's instances.
        drop(child.stdin.take());
        let status = child
            .wait()
            .context("waiting for a child")
            .map_err(Failure::Work)?;
        if !status.success() && outcome.is_ok() {
            outcome = Err(anyhow!("a child process failed: {status}"));
        }
    }
    outcome.map_err(Failure::Work)?;
    Ok((counts, fallbacks))
}

/// One child: allocates its instances, reports their disks on one line, holds them until its
/// standard input closes, then removes them.
fn run_child(args: &LocalDirsArgs) -> Result<(), Failure> {
    let strategy = args
        .strategy
        .first()
        .copied()
        .unwrap_or(PlacementStrategy::Random);
    let lock_file = std::env::var_os("CONFLUX_LOCAL_DIRS_LOCK").map(PathBuf::from);
    let mut config = LocalDirConfig::new(args.dirs.clone(), strategy);
    config.lock_file = lock_file;
    config.dedupe_devices = !args.no_device_dedupe;
    config.min_free_bytes = args.min_free_bytes;
    if !args.weights.is_empty() {
        config.weights = Some(args.weights.clone());
    }
    let allocator = LocalDirAllocator::new(&config).map_err(Failure::input)?;
    let mut held = Vec::new();
    for i in 0..args.instances_per_process {
        let name = InstanceName {
            job: "demo".to_owned(),
            vertex: "stateful".to_owned(),
            subtask: std::process::id().wrapping_mul(1000).wrapping_add(i),
            operator: "op".to_owned(),
        };
        held.push(
            allocator
                .allocate(&name)
                .map_err(|e| Failure::Work(e.into()))?,
        );
    }
    let report = ChildReport {
        disks: held.iter().map(|d| d.disk()).collect(),
        fallbacks: u32::try_from(held.iter().filter(|d| d.used_fallback()).count())
            .unwrap_or(u32::MAX),
    };
    let mut stdout = std::io::stdout();
    writeln!(
        stdout,
        "{}",
        serde_json::to_string(&report).map_err(|e| Failure::Work(e.into()))?
    )
    .and_then(|()| stdout.flush())
    .map_err(|e| Failure::Work(e.into()))?;
    let mut rest = String::new();
    // Hold the instances until the parent closes our input (or dies).
    let _ = std::io::stdin().read_line(&mut rest);
    for dir in held {
        dir.remove().map_err(|e| Failure::Work(e.into()))?;
    }
    Ok(())
}
