//! The data plane's numbers of a running job, from its tasks' states and metrics: words,
//! shuffle bytes and throughput, producers' buffered bytes, re-runs per vertex.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use conflux_deploy::ExecutionAttemptId;
use conflux_graph::{ExecutionGraph, ExecutionVertexIndex};

use crate::protocol::{TaskMetrics, TaskState, WordCountRole, WordCountTask};
use crate::report::DataReport;
use crate::shuffle::partition_file::MAX_BUFFER_BYTES;

/// Accumulates as task states arrive.
#[derive(Debug, Default)]
pub(crate) struct DataStats {
    any: bool,
    /// Count tasks' words, by execution vertex (the last finished attempt's).
    words: HashMap<u32, u64>,
    shuffle_bytes: u64,
    first_source_running: Option<Instant>,
    last_count_finished: Option<Instant>,
    peak_buffered_bytes: u64,
    /// Attempts that reported RUNNING, per job vertex.
    started: HashMap<u32, u64>,
}

impl DataStats {
    /// Takes in one task state (already known to come from the attempt's owner).
    pub(crate) fn on_state(
        &mut self,
        tasks: &[Option<WordCountTask>],
        graph: &ExecutionGraph,
        attempt: ExecutionAttemptId,
        state: &TaskState,
        metrics: &TaskMetrics,
    ) {
        if attempt.vertex >= graph.num_execution_vertices() {
            return;
        }
        let id = graph.execution_vertex_id(ExecutionVertexIndex(attempt.vertex));
        let Some(task) = tasks.get(id.job_vertex.idx()).and_then(Option::as_ref) else {
            return;
        };
        self.any = true;
        let source = matches!(task.role, WordCountRole::Source { .. });
        match state {
            TaskState::Running => {
                *self.started.entry(id.job_vertex.0).or_default() += 1;
                if source && self.first_source_running.is_none() {
                    self.first_source_running = Some(Instant::now());
                }
            }
            TaskState::Finished => {
                self.shuffle_bytes += metrics.bytes_out;
                self.peak_buffered_bytes =
                    self.peak_buffered_bytes.max(metrics.peak_buffered_bytes);
                if !source {
                    self.words.insert(attempt.vertex, metrics.records_in);
                    self.last_count_finished = Some(Instant::now());
                }
            }
            TaskState::Failed { .. } => {}
        }
    }

    /// The report, or `None` for a job without data-moving tasks.
    pub(crate) fn report(
        &self,
        tasks: &[Option<WordCountTask>],
        graph: &ExecutionGraph,
    ) -> Option<DataReport> {
        if !self.any {
            return None;
        }
        let job_graph = graph.job_graph();
        let shuffle_ms = match (self.first_source_running, self.last_count_finished) {
            (Some(first), Some(last)) if last > first => (last - first).as_secs_f64() * 1e3,
            _ => 0.0,
        };
        let mut reruns = BTreeMap::new();
        let mut bound = 0u64;
        for j in job_graph.vertex_indices() {
            let Some(task) = tasks.get(j.idx()).and_then(Option::as_ref) else {
                continue;
            };
            let parallelism = u64::from(graph.parallelism_of(j));
            let started = self.started.get(&j.0).copied().unwrap_or(0);
            reruns.insert(
                job_graph.vertex_id(j).to_owned(),
                started.saturating_sub(parallelism),
            );
            if matches!(task.role, WordCountRole::Source { .. }) {
                let subpartitions: u64 = job_graph
                    .produced_data_sets(j)
                    .iter()
                    .flat_map(|&d| job_graph.data_set(d).consumers.iter())
                    .map(|&e| u64::from(graph.parallelism_of(job_graph.edge(e).target)))
                    .sum();
                bound = bound.max(subpartitions * u64::from(task.credit) * MAX_BUFFER_BYTES as u64);
            }
        }
        Some(DataReport {
            words: self.words.values().sum(),
            shuffle_bytes: self.shuffle_bytes,
            shuffle_mb_per_s: if shuffle_ms > 0.0 {
                self.shuffle_bytes as f64 / 1e6 / (shuffle_ms / 1e3)
            } else {
                0.0
            },
            shuffle_ms,
            peak_buffered_bytes: self.peak_buffered_bytes,
            buffered_bytes_bound: bound,
            reruns,
            output_verified: None,
            first_difference: None,
        })
    }
}
