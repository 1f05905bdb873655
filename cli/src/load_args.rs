//! `LoadArgs`: the flags of reading a job (`--parallelism`, `--default-parallelism`), shared by
//! the commands that take one, and the load options they give.

use conflux_graph::flink_plan;
use conflux_graph::load::LoadOptions;

/// Options for reading a job, shared by the commands that take one.
#[derive(clap::Args)]
#[command(next_help_heading = crate::headings::JOB)]
pub(crate) struct LoadArgs {
    /// Set every vertex whose parallelism is above 1 (or undecided) to N (parallelism-1
    /// vertices stay); `auto`: make every vertex above 1 undecided (-1, batch jobs only).
    #[arg(long, value_parser = parse_parallelism)]
    pub(crate) parallelism: Option<ParallelismArg>,
    /// The estimate of vertices of undecided parallelism (-1, as Flink plans of the adaptive
    /// batch scheduler write): what `inspect` and `plan` use; `run` fixes them at it when given,
    /// and decides them otherwise. Default: 128, that scheduler's default upper bound.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) default_parallelism: Option<u32>,
}

/// The value of `--parallelism`: a number, or `auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParallelismArg {
    /// Every vertex above 1 gets this parallelism.
    Fixed(u32),
    /// Every vertex above 1 becomes undecided.
    Auto,
}

fn parse_parallelism(text: &str) -> Result<ParallelismArg, String> {
    if text == "auto" {
        return Ok(ParallelismArg::Auto);
    }
    match text.parse::<u32>() {
        Ok(p) if p >= 1 => Ok(ParallelismArg::Fixed(p)),
        _ => Err(format!(
            "'{text}' is neither auto nor a whole number of at least 1"
        )),
    }
}

impl LoadArgs {
    pub(crate) fn options(&self) -> LoadOptions {
        LoadOptions {
            parallelism: match self.parallelism {
                Some(ParallelismArg::Fixed(p)) => Some(p),
                _ => None,
            },
            auto_parallelism: self.parallelism == Some(ParallelismArg::Auto),
            default_parallelism: self
                .default_parallelism
                .unwrap_or(flink_plan::DEFAULT_ADAPTIVE_PARALLELISM),
        }
    }

    /// Whether `--default-parallelism` was given: a run then fixes undecided vertices at it
    /// instead of deciding them.
    pub(crate) fn default_parallelism_given(&self) -> bool {
        self.default_parallelism.is_some()
    }
}
