//! What each job vertex runs: its `invokable` (as Flink's JobVertex names its invokable class),
//! checked once when the job is submitted, so that a bad name or config fails the submission
//! naming the vertex instead of failing tasks.

use conflux_graph::{JobGraph, JobVertexIndex};
use conflux_operators::{WordCountConfig, WordCountJob, INVOKABLE_COUNT, INVOKABLE_SOURCE};

use crate::protocol::{JobOptions, WordCountRole, WordCountTask};

/// Per job vertex (by index), the word count task it runs, `None` for a synthetic task.
///
/// # Errors
/// Naming the vertex: an unknown invokable, a config the word count cannot read, a source
/// without exactly one consumer vertex.
pub(crate) fn resolve(
    graph: &JobGraph,
    options: &JobOptions,
) -> Result<Vec<Option<WordCountTask>>, String> {
    graph
        .vertex_indices()
        .map(|j| {
            let Some(name) = graph.vertex_invokable(j) else {
                return Ok(None);
            };
            let id = graph.vertex_id(j);
            let config: Vec<(String, String)> = graph
                .vertex_config(j)
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let role = match name {
                INVOKABLE_SOURCE => {
                    WordCountConfig::from_config(config.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                        .map_err(|e| format!("vertex {id}: {e}"))?;
                    let consumer = single_consumer(graph, j)?;
                    let max = graph.vertex(consumer).max_parallelism;
                    WordCountRole::Source {
                        consumer_max_parallelism: u32::try_from(max).map_err(|_| {
                            format!("vertex {id}: consumer max parallelism {max} above 2^32")
                        })?,
                    }
                }
                INVOKABLE_COUNT => {
                    // A keyed count reads each key group whole: a key group split across
                    // subtasks would be counted in pieces, with no merge after.
                    if graph.vertex(j).skew_splittable {
                        return Err(format!(
                            "vertex {id}: a {INVOKABLE_COUNT} vertex cannot be skew_splittable \
                             (a key's words would be counted by several subtasks)"
                        ));
                    }
                    WordCountRole::Count
                }
                other => {
                    return Err(format!(
                        "vertex {id}: unknown invokable {other:?} (known: {INVOKABLE_SOURCE}, {INVOKABLE_COUNT})"
                    ))
                }
            };
            Ok(Some(WordCountTask {
                role,
                // Set per attempt when it is deployed.
                subtask: 0,
                config,
                output_dir: options.output_dir.clone(),
                sink_delay_us: options.sink_delay_us,
                credit: options.credit,
                // Set per attempt when it is deployed.
                report_produced_bytes: false,
            }))
        })
        .collect()
}

fn single_consumer(graph: &JobGraph, j: JobVertexIndex) -> Result<JobVertexIndex, String> {
    let mut consumers = graph
        .produced_data_sets(j)
        .iter()
        .flat_map(|&d| graph.data_set(d).consumers.iter())
        .map(|&e| graph.edge(e).target);
    match (consumers.next(), consumers.next()) {
        (Some(c), None) => Ok(c),
        _ => Err(format!(
            "vertex {}: a word count source needs exactly one consumer edge",
            graph.vertex_id(j)
        )),
    }
}

/// The word count a job graph describes, for verifying its output: its source's config and
/// the parallelisms of source and count vertices; `None` when no vertex runs
/// `wordcount-source`.
///
/// # Errors
/// Naming the vertex (a config the word count cannot read, a source without exactly one
/// consumer edge), or when the source does not feed a count vertex.
pub fn word_count_job(graph: &JobGraph) -> Result<Option<WordCountJob>, String> {
    let Some(source) = graph
        .vertex_indices()
        .find(|&j| graph.vertex_invokable(j) == Some(INVOKABLE_SOURCE))
    else {
        return Ok(None);
    };
    let id = graph.vertex_id(source);
    let config = WordCountConfig::from_config(
        graph
            .vertex_config(source)
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .map_err(|e| format!("vertex {id}: {e}"))?;
    let count = single_consumer(graph, source)?;
    if graph.vertex_invokable(count) != Some(INVOKABLE_COUNT) {
        return Err(format!(
            "vertex {id} feeds {}, which does not run {INVOKABLE_COUNT}",
            graph.vertex_id(count)
        ));
    }
    let max = graph.vertex(count).max_parallelism;
    Ok(Some(WordCountJob {
        config,
        sources: graph.vertex(source).parallelism,
        counters: graph.vertex(count).parallelism,
        max_parallelism: u32::try_from(max)
            .map_err(|_| format!("vertex {id}: consumer max parallelism {max} above 2^32"))?,
        key_group_ranges: None,
    }))
}

/// [`word_count_job`] as a run decided it: where the report says the source's or the count's
/// parallelism was decided at run time, the decided parallelism, and the count's key groups
/// are the subpartition ranges its subtasks read (one subpartition per key group).
///
/// # Errors
/// As [`word_count_job`], and when the report decided the count vertex without saying what
/// its subtasks read.
pub fn word_count_job_as_run(
    graph: &JobGraph,
    report: &crate::JobReport,
) -> Result<Option<WordCountJob>, String> {
    let Some(mut job) = word_count_job(graph)? else {
        return Ok(None);
    };
    let Some(decided) = &report.adaptive.decided_parallelism else {
        return Ok(Some(job));
    };
    let Some(source) = graph
        .vertex_indices()
        .find(|&j| graph.vertex_invokable(j) == Some(INVOKABLE_SOURCE))
    else {
        return Ok(Some(job));
    };
    let count = single_consumer(graph, source)?;
    if let Some(&p) = decided.get(graph.vertex_id(source)) {
        job.sources = p;
    }
    let count_id = graph.vertex_id(count);
    if let Some(&p) = decided.get(count_id) {
        let ranges = report
            .adaptive
            .consumed_subpartitions
            .as_ref()
            .and_then(|c| c.get(count_id))
            .ok_or_else(|| {
                format!("the report decided {count_id} but does not say what its subtasks read")
            })?;
        job.counters = p;
        job.max_parallelism = ranges.last().map_or(0, |r| r[1] + 1);
        job.key_group_ranges = Some(ranges.iter().map(|r| (r[0], r[1])).collect());
    }
    Ok(Some(job))
}
