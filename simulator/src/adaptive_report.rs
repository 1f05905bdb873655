//! What an adaptive batch run decided, as the report's adaptive keys
//! ([`conflux_report::AdaptiveReport`]): collected from the scheduler's decisions here, for
//! `conflux run` and for the runtime's JobManager alike.

use std::collections::BTreeMap;

use conflux_report::{BytesPerTask, SkewSplit, SkewedSubpartition, SkewedSubpartitions};
use conflux_scheduler::Scheduler;

use crate::produced_bytes::ProducedBytes;

/// What the run decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AdaptiveReport {
    /// Execution vertices of the grown graph at the end.
    pub execution_vertices: u32,
    /// The report's adaptive keys (bytes per task of every initialised job vertex, from the
    /// seeded byte model).
    pub keys: conflux_report::AdaptiveReport,
}

impl AdaptiveReport {
    /// Collects the report from the scheduler at the end of a simulated run. O(N log N) for the
    /// medians.
    pub(crate) fn collect(scheduler: &Scheduler, bytes: &ProducedBytes) -> AdaptiveReport {
        let graph = scheduler.graph();
        let job = graph.job_graph();
        let mut bytes_per_task = BTreeMap::new();
        for j in job.vertex_indices() {
            let p = graph.parallelism_of(j);
            let read: Vec<u64> = (0..p).map(|k| bytes.read(scheduler, j, k)).collect();
            if let Some(stats) = BytesPerTask::of(read) {
                bytes_per_task.insert(job.vertex_id(j).to_owned(), stats);
            }
        }
        AdaptiveReport {
            execution_vertices: graph.num_execution_vertices(),
            keys: decided_keys(scheduler, bytes_per_task),
        }
    }
}

/// The adaptive keys of a job whose `scheduler` decided vertices at run time, with
/// `bytes_per_task` as the caller measured it: decided parallelisms, skewed subpartitions,
/// consumed subpartition ranges (vertices decided from one input) and skew splits, from the
/// scheduler's decisions. O(decided subtasks + skewed subpartitions log).
pub fn decided_keys(
    scheduler: &Scheduler,
    bytes_per_task: BTreeMap<String, BytesPerTask>,
) -> conflux_report::AdaptiveReport {
    let job = scheduler.graph().job_graph();
    let mut decided_parallelism = BTreeMap::new();
    let mut consumed_subpartitions = BTreeMap::new();
    let mut skewed = Vec::new();
    let mut skew_splits = Vec::new();
    for d in scheduler.decisions() {
        let id = job.vertex_id(d.job_vertex);
        if d.undecided {
            decided_parallelism.insert(id.to_owned(), d.parallelism);
        }
        if let [infos] = d.input_infos.as_slice() {
            consumed_subpartitions.insert(
                id.to_owned(),
                infos
                    .iter()
                    .map(|i| [i.subpartition_range.start, i.subpartition_range.end])
                    .collect(),
            );
        }
        for s in &d.skewed_subpartitions {
            let edge = job.edge(job.inputs(d.job_vertex)[s.input]);
            skewed.push(SkewedSubpartition {
                vertex: id.to_owned(),
                producer: job.vertex_id(edge.source).to_owned(),
                subpartition: s.subpartition,
                bytes: s.bytes,
                average_bytes_per_task: s.average_bytes_per_task,
            });
        }
        skew_splits.extend(d.split_subpartitions.iter().map(|s| SkewSplit {
            vertex: id.to_owned(),
            subpartition: s.subpartition,
            bytes: s.bytes,
            pieces: s.pieces,
        }));
    }
    conflux_report::AdaptiveReport {
        decided_parallelism: Some(decided_parallelism),
        bytes_per_task: Some(bytes_per_task),
        skewed_subpartitions: Some(SkewedSubpartitions::of(skewed)),
        consumed_subpartitions: Some(consumed_subpartitions),
        skew_splits: Some(skew_splits),
        undecided_at_estimate: None,
    }
}
