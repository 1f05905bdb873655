//! Reading a job from bytes in either accepted format: job graph JSON ([`crate::json`]) or Flink's
//! JSON plan, told apart by their top-level keys (`vertices`; `nodes`, `plan` or `jid`).

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::json::{JobGraphJson, PARALLELISM_UNDECIDED};
use crate::{flink_plan, GraphError, JobGraph};

/// The largest job file, in either format, that [`parse`] and [`load`] accept: 256 MiB
/// (268,435,456 bytes), checked before anything is parsed. [`load`] reads job graph JSON without
/// building a [`JobGraphJson`]: vertices and edges go one by one into a compact form (one string
/// buffer for the ids, interned group names), and the validated [`JobGraph`] stores each id once.
/// `conflux inspect` of a 216 MB file of 6.2 million vertices peaks at 2.7 times the file in
/// RSS, the file itself included (README, "Limits"), so a file at this limit needs about 0.7 GiB.
/// Flink plans are read field by field into the fields they use (unknown fields skipped as
/// they are read, never built), then into a [`JobGraphJson`]: within 4 times the file too
/// (`graph/tests/load_memory.rs`).
pub const MAX_JOB_FILE_BYTES: u64 = 256 << 20;

/// How to read a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadOptions {
    /// `--parallelism N`: set every vertex whose parallelism is above 1, or undecided (`-1`),
    /// to `N`; vertices of parallelism 1 (global sinks, sorts) stay at 1. Applies to both
    /// formats. The synthetic word count's generated name, which states its parallelism, is
    /// retitled to `N` ([`generate::retitle_word_count`](crate::generate::retitle_word_count)).
    pub parallelism: Option<u32>,
    /// `--parallelism auto`: make every vertex whose parallelism is above 1 undecided (`-1`,
    /// decided at run time; an error for a streaming job). Applied after `parallelism`.
    pub auto_parallelism: bool,
    /// `--default-parallelism`: the estimate of undecided vertices (`-1`): the parallelism that
    /// planning uses, and a run that does not decide.
    pub default_parallelism: u32,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            parallelism: None,
            auto_parallelism: false,
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

/// Parses either format into job graph JSON, applying `parallelism` and `auto_parallelism`,
/// without validating. Undecided vertices stay `-1` in the result (Flink plans' `-1` included):
/// validate with [`JobGraph::from_json_estimating`] and `default_parallelism` for their estimate.
///
/// # Errors
/// [`GraphError::TooLarge`] above [`MAX_JOB_FILE_BYTES`]; [`GraphError::Json`] with line and
/// column for malformed input, [`GraphError::FlinkPlan`] for a plan that is well-formed JSON but
/// not a valid plan.
pub fn parse(
    bytes: &[u8],
    options: &LoadOptions,
) -> Result<(JobGraphJson, InputFormat), GraphError> {
    check_size(bytes)?;
    let (json, format) = if is_flink_plan(bytes) {
        (flink_plan::import(bytes)?, InputFormat::FlinkPlan)
    } else {
        (JobGraphJson::parse(bytes)?, InputFormat::JobGraph)
    };
    Ok((with_overrides(json, options), format))
}

/// `json` with `--parallelism` and `--parallelism auto` applied.
fn with_overrides(mut json: JobGraphJson, options: &LoadOptions) -> JobGraphJson {
    if let Some(n) = options.parallelism {
        let p = i32::try_from(n).unwrap_or(i32::MAX);
        for v in &mut json.vertices {
            if v.parallelism > 1 || v.parallelism == PARALLELISM_UNDECIDED {
                v.parallelism = p;
            }
        }
        if let Some(name) = crate::generate::retitle_word_count(&json.name, n) {
            json.name = name;
        }
    }
    if options.auto_parallelism {
        for v in &mut json.vertices {
            if v.parallelism > 1 {
                v.parallelism = PARALLELISM_UNDECIDED;
            }
        }
    }
    json
}

/// The top-level keys that tell the formats apart. Values are skipped, not built: a
/// `serde_json::Value` of a 200 MB job graph takes gigabytes.
#[derive(Deserialize)]
struct Probe {
    vertices: Option<IgnoredAny>,
    nodes: Option<IgnoredAny>,
    plan: Option<IgnoredAny>,
    jid: Option<IgnoredAny>,
}

/// Whether the bytes are a Flink plan: an object without the job graph's `vertices` but with a
/// plan's `nodes`, REST's `plan` wrapper or Flink's `jid` (so that a plan lacking `nodes` is
/// reported as a plan missing it). Anything else, malformed JSON included, is read as a job
/// graph, whose parser reports the error with line and column.
fn is_flink_plan(bytes: &[u8]) -> bool {
    serde_json::from_slice::<Probe>(bytes).is_ok_and(|p| {
        p.vertices.is_none() && (p.nodes.is_some() || p.plan.is_some() || p.jid.is_some())
    })
}

/// Parses and validates a job in either format. Job graph JSON is read straight into the compact
/// form [`JobGraph`] is built from, never as a [`JobGraphJson`] (see [`MAX_JOB_FILE_BYTES`]);
/// the result and every error are those of [`parse`] followed by [`JobGraph::from_json`].
///
/// # Errors
/// As [`parse`] and [`JobGraph::from_json`].
pub fn load(bytes: &[u8], options: &LoadOptions) -> Result<JobGraph, GraphError> {
    Ok(load_detected(Input::Borrowed(bytes), options)?.0)
}

/// As [`load`], and says which format the input was in. Takes the bytes by value and frees them
/// as soon as they are parsed, before validation, so that the file and the validated graph are
/// never in memory together.
///
/// # Errors
/// As [`load`].
pub fn load_owned(
    bytes: Vec<u8>,
    options: &LoadOptions,
) -> Result<(JobGraph, InputFormat), GraphError> {
    load_detected(Input::Owned(bytes), options)
}

/// The bytes of a job, owned (freed once parsed) or borrowed.
enum Input<'a> {
    Owned(Vec<u8>),
    Borrowed(&'a [u8]),
}

fn load_detected(
    input: Input<'_>,
    options: &LoadOptions,
) -> Result<(JobGraph, InputFormat), GraphError> {
    let bytes = match &input {
        Input::Owned(bytes) => bytes.as_slice(),
        Input::Borrowed(bytes) => bytes,
    };
    check_size(bytes)?;
    // Either format is read straight into the compact form, and the bytes are freed then.
    let (mut raw, format) = if is_flink_plan(bytes) {
        (flink_plan::import_raw(bytes)?, InputFormat::FlinkPlan)
    } else {
        (crate::stream::parse(bytes)?, InputFormat::JobGraph)
    };
    drop(input);
    if let Some(p) = options.parallelism {
        raw.override_parallelism(Some(p));
    }
    if options.auto_parallelism {
        raw.override_parallelism(None);
    }
    raw.estimate = options.default_parallelism;
    Ok((JobGraph::from_raw(raw)?, format))
}

/// [`GraphError::TooLarge`] above [`MAX_JOB_FILE_BYTES`].
fn check_size(bytes: &[u8]) -> Result<(), GraphError> {
    let size = bytes.len() as u64;
    if size > MAX_JOB_FILE_BYTES {
        return Err(GraphError::TooLarge {
            what: "bytes of JSON",
            count: size,
            limit: MAX_JOB_FILE_BYTES,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: `run --parallelism 100000` of the 10k word count was titled "10000 x 10000".
    #[test]
    fn parallelism_override_retitles_the_generated_word_count_in_both_readers() {
        let text = crate::generate::word_count(10_000, crate::ResultPartitionType::Blocking)
            .to_json_pretty();
        let options = LoadOptions {
            parallelism: Some(100_000),
            ..LoadOptions::default()
        };
        let expected = "word count 100000 x 100000 (blocking)";
        assert_eq!(parse(text.as_bytes(), &options).unwrap().0.name, expected);
        assert_eq!(load(text.as_bytes(), &options).unwrap().name(), expected);
        // Without the override, or for another name, the name stays.
        let kept = load(text.as_bytes(), &LoadOptions::default()).unwrap();
        assert_eq!(kept.name(), "word count 10000 x 10000 (blocking)");
        let other = text.replace("word count", "my count");
        assert!(load(other.as_bytes(), &options)
            .unwrap()
            .name()
            .starts_with("my count 10000 x 10000"));
    }

    #[test]
    fn formats_are_told_apart_by_top_level_keys() {
        let options = LoadOptions::default();
        let job = br#"{"job_type": "batch", "vertices": [{"id": "a", "parallelism": 2}]}"#;
        let (json, format) = parse(job, &options).unwrap();
        assert_eq!((format, json.vertices.len()), (InputFormat::JobGraph, 1));
        let plan = br#"{"jid": "x", "nodes": [{"id": "a", "parallelism": 3}]}"#;
        let (json, format) = parse(plan, &options).unwrap();
        assert_eq!(
            (format, json.vertices[0].parallelism),
            (InputFormat::FlinkPlan, 3)
        );
        // A plan without nodes is a plan missing them, not a job graph with an unknown `jid`.
        let e = parse(br#"{"jid": "x", "name": "j"}"#, &options).unwrap_err();
        assert_eq!(
            e,
            GraphError::FlinkPlan("missing field `nodes` (the list of job vertices)".to_owned())
        );
        let e = parse(br#"{"plan": {"nodes": [{"id": "n1"}]}}"#, &options).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Flink plan: node \"n1\": missing field `parallelism`"
        );
        // Malformed input keeps serde_json's position.
        let e = parse(b"{\"vertices\": [", &options)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("invalid job graph JSON") && e.contains("line 1"),
            "{e}"
        );
    }
}
