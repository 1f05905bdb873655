//! Reading a job from bytes in either accepted format: job graph JSON ([`crate::json`]) or Flink's
//! JSON plan, told apart by the plan's `nodes` key.

use crate::json::JobGraphJson;
use crate::{flink_plan, GraphError, JobGraph};

/// How to read a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadOptions {
    /// `--parallelism N`: set every vertex whose parallelism is above 1 to `N`; vertices of
    /// parallelism 1 (global sinks, sorts) stay at 1. Applies to both formats.
    pub parallelism: Option<u32>,
    /// `--default-parallelism`: the parallelism of Flink plan vertices written as `-1`.
    pub default_parallelism: u32,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            parallelism: None,
            default_parallelism: flink_plan::DEFAULT_ADAPTIVE_PARALLELISM,
        }
    }
}

/// Which format the input was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// Conflux's job graph JSON.
    JobGraph,
    /// Flink's JSON plan.
    FlinkPlan,
}

/// Parses either format into job graph JSON, applying the options, without validating.
///
/// # Errors
/// [`GraphError::Json`] with line and column for malformed input, [`GraphError::FlinkPlan`] for a
/// plan that is well-formed JSON but not a valid plan.
pub fn parse(
    bytes: &[u8],
    options: &LoadOptions,
) -> Result<(JobGraphJson, InputFormat), GraphError> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| GraphError::Json {
        format: "job graph",
        message: e.to_string(),
    })?;
    let (mut json, format) = if flink_plan::looks_like_flink_plan(&value) {
        drop(value);
        (
            flink_plan::import(bytes, options.default_parallelism)?,
            InputFormat::FlinkPlan,
        )
    } else {
        drop(value);
        (JobGraphJson::parse(bytes)?, InputFormat::JobGraph)
    };
    if let Some(p) = options.parallelism {
        for v in &mut json.vertices {
            if v.parallelism > 1 {
                v.parallelism = p;
            }
        }
    }
    Ok((json, format))
}

/// Parses and validates a job in either format.
///
/// # Errors
/// As [`parse`] and [`JobGraph::from_json`].
pub fn load(bytes: &[u8], options: &LoadOptions) -> Result<JobGraph, GraphError> {
    let (json, _) = parse(bytes, options)?;
    JobGraph::from_json(&json)
}
