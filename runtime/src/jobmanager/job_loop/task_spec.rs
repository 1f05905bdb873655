//! What each deployed attempt runs: its vertex's word count task, or a synthetic task whose
//! duration (and, where a run-time decision reads them, written bytes) come from the job's seed.

use conflux_common::SplitMix64;
use conflux_deploy::ExecutionAttemptId;
use conflux_graph::ExecutionVertexIndex;
use conflux_scheduler::Scheduler;
use conflux_sim::{weights_seed, ProducedBytes};

use crate::protocol::{
    JobOptions, SyntheticOutput, SyntheticTask, TaskSpec, WordCountRole, WordCountTask,
};

/// What an attempt runs: its vertex's word count task (with its subtask index), or a
/// synthetic task. Where a run-time decision reads what the task writes, it reports its bytes
/// per subpartition: a word count source measures them, a synthetic task is told them
/// (`synthetic_bytes`).
pub(super) fn task_spec(
    tasks: &[Option<WordCountTask>],
    scheduler: &Scheduler,
    synthetic_bytes: Option<&ProducedBytes>,
    options: &JobOptions,
    attempt: ExecutionAttemptId,
) -> TaskSpec {
    let graph = scheduler.graph();
    let job = graph.job_graph();
    let id = graph.execution_vertex_id(ExecutionVertexIndex(attempt.vertex));
    let produced = job.produced_data_sets(id.job_vertex);
    let decided_later = produced
        .iter()
        .find_map(|&d| scheduler.subpartitions_of(d).map(|n| (d, n)));
    match tasks.get(id.job_vertex.idx()).and_then(Option::as_ref) {
        Some(task) => {
            let mut role = task.role;
            if let (WordCountRole::Source { .. }, Some((d, n))) = (role, decided_later) {
                // A consumer decided at run time reads ranges of as many subpartitions as it
                // may have subtasks, one per key group (Flink's adaptive batch scheduler):
                // routing uses that many key groups.
                let undecided = job.data_set(d).consumers.iter().any(|&e| {
                    let target = job.edge(e).target;
                    job.vertex(target).undecided
                });
                if undecided {
                    role = WordCountRole::Source {
                        consumer_max_parallelism: n,
                    };
                }
            }
            TaskSpec::WordCount(WordCountTask {
                role,
                subtask: id.subtask,
                report_produced_bytes: decided_later.is_some(),
                ..task.clone()
            })
        }
        None => {
            let mut task = synthetic_task(options, attempt, id.subtask);
            if let (Some(bytes), Some(_)) = (synthetic_bytes, decided_later) {
                // It passes on what it read; the TaskManager spreads it.
                let read = bytes.read(scheduler, id.job_vertex, id.subtask);
                task.produced_bytes = produced
                    .iter()
                    .map(|&d| SyntheticOutput {
                        subpartitions: scheduler.subpartitions_of(d).unwrap_or(0),
                        bytes: read,
                        skew: options.skew,
                        seed: weights_seed(options.seed, d),
                    })
                    .collect();
            }
            TaskSpec::Synthetic(task)
        }
    }
}

/// The synthetic behaviour of an attempt: a duration drawn from the job's seed and the attempt,
/// so that a run is reproducible whatever the order of messages.
fn synthetic_task(
    options: &JobOptions,
    attempt: ExecutionAttemptId,
    subtask: u32,
) -> SyntheticTask {
    let salt = (u64::from(attempt.vertex) << 32) | u64::from(attempt.attempt);
    let mut rng = SplitMix64::new(options.seed ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let (lo, hi) = options.task_duration_ms;
    SyntheticTask {
        duration_ms: rng.between(lo, hi.max(lo)),
        fail: false,
        subtask,
        produced_bytes: Vec::new(),
    }
}
