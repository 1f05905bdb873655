//! `conflux`: the command-line face of Conflux.
//!
//! Exit codes (DESIGN §6): 0 success, 2 invalid input or usage (one line on stderr naming the
//! problem), 1 the work itself failed. With `--format json`, an error also prints
//! `{"error": "..."}` on stdout.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use conflux_graph::load::LoadOptions;
use conflux_graph::{flink_plan, generate, ResultPartitionType};

mod inspect;

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
    /// Expand a job (job graph JSON or Flink plan) and report its execution graph and regions.
    Inspect {
        /// Job graph JSON or Flink JSON plan (`-` for standard input).
        file: PathBuf,
        #[command(flatten)]
        load: LoadArgs,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// List every execution vertex with its region and consumed partition groups (small
        /// graphs only: refused above 1,000,000 listed partitions).
        #[arg(long)]
        detail: bool,
    },
}

#[derive(Subcommand)]
enum GenerateJob {
    /// Vertices `source` and `count`, joined all-to-all: 2 x N tasks, N^2 connections.
    Wordcount {
        /// Parallelism N of both vertices.
        #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
        parallelism: u32,
        /// Result partition type of the edge; pipelined types give a streaming job.
        #[arg(long, default_value = "blocking", value_parser = parse_partition_type)]
        result_partition_type: ResultPartitionType,
        /// Write to this file instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
}

/// Options for reading a job, shared by the commands that take one.
#[derive(clap::Args)]
struct LoadArgs {
    /// Set every vertex whose parallelism is above 1 to N (parallelism-1 vertices stay).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    parallelism: Option<u32>,
    /// Parallelism for Flink plan vertices written as -1 (decided at run time by Flink's
    /// adaptive batch scheduler). Default: 128, that scheduler's default upper bound.
    #[arg(long, default_value_t = flink_plan::DEFAULT_ADAPTIVE_PARALLELISM,
          value_parser = clap::value_parser!(u32).range(1..))]
    default_parallelism: u32,
}

impl LoadArgs {
    fn options(&self) -> LoadOptions {
        LoadOptions {
            parallelism: self.parallelism,
            default_parallelism: self.default_parallelism,
        }
    }
}

/// Report format.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// For people.
    Text,
    /// One JSON document on stdout.
    Json,
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

/// A failure with its exit code.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Invalid input or usage: exit 2.
    Input(anyhow::Error),
    /// The work failed: exit 1.
    #[allow(dead_code)] // used by `conflux run` once the scheduler lands
    Work(anyhow::Error),
}

impl Failure {
    pub(crate) fn input(e: impl Into<anyhow::Error>) -> Failure {
        Failure::Input(e.into())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let format = match &cli.command {
        Command::Inspect { format, .. } => *format,
        Command::Generate { .. } => Format::Text,
    };
    let result = match cli.command {
        Command::Generate { job } => run_generate(job),
        Command::Inspect {
            file,
            load,
            format,
            detail,
        } => inspect::run(&file, &load.options(), format, detail),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            let (code, error) = match failure {
                Failure::Input(e) => (2, e),
                Failure::Work(e) => (1, e),
            };
            // One line: the error and its causes, joined.
            let message = format!("{error:#}");
            eprintln!("error: {message}");
            if format == Format::Json {
                println!("{}", serde_json::json!({ "error": message }));
            }
            ExitCode::from(code)
        }
    }
}

fn run_generate(job: GenerateJob) -> Result<(), Failure> {
    match job {
        GenerateJob::Wordcount {
            parallelism,
            result_partition_type,
            output,
        } => {
            let mut text =
                generate::word_count(parallelism, result_partition_type).to_json_pretty();
            text.push('\n');
            match output {
                Some(path) => std::fs::write(&path, text).map_err(|e| {
                    Failure::input(
                        anyhow::Error::new(e).context(format!("writing {}", path.display())),
                    )
                }),
                None => std::io::stdout()
                    .write_all(text.as_bytes())
                    .map_err(|e| Failure::Work(e.into())),
            }
        }
    }
}

/// Reads a file, or standard input for `-`.
pub(crate) fn read_input(path: &std::path::Path) -> Result<Vec<u8>, Failure> {
    use anyhow::Context;
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
            .context("reading standard input")
            .map_err(Failure::Input)?;
        return Ok(buf);
    }
    std::fs::read(path)
        .with_context(|| format!("reading {}", path.display()))
        .map_err(Failure::Input)
}
