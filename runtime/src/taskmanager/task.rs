//! A task's life on the TaskManager: it loads its task information and input gates as a real
//! task would (descriptor groups from the TDD or through the blob cache, decoded once per
//! TaskManager), reports RUNNING, runs (a synthetic task for its duration; a word count task
//! its operators over real partitions) and reports FINISHED with its metrics, or FAILED (an
//! injected failure, an input that cannot be loaded or read, a partition write that fails).
//! On a slow TaskManager (`slowdown` above 1) every task takes that many times as long.

use std::sync::Arc;
use std::time::Duration;

use conflux_deploy::wire::{self, PayloadKind};
use conflux_deploy::{JobInformation, MaybeOffloaded, TaskDeploymentDescriptor, TaskInformation};

use crate::metrics::{flink_label, TaskLabels};
use crate::protocol::{
    SyntheticOutput, SyntheticTask, TaskMetrics, TaskSpec, TaskState, ToJobManager,
};
use crate::secret::Secret;
use crate::taskmanager::session::SessionContext;
use crate::taskmanager::sync::lock;
use crate::taskmanager::wordcount;

pub(crate) fn spawn(
    ctx: Arc<SessionContext>,
    tdd: TaskDeploymentDescriptor,
    task: TaskSpec,
    job_secret: Secret,
) {
    let attempt = tdd.execution_attempt;
    let mut running = lock(&ctx.running);
    let handle = tokio::spawn(run(Arc::clone(&ctx), tdd, task, job_secret));
    running.insert(attempt, handle.abort_handle());
}

fn report(
    ctx: &SessionContext,
    tdd: &TaskDeploymentDescriptor,
    state: TaskState,
    metrics: TaskMetrics,
) {
    ctx.send(&ToJobManager::TaskStateChanged {
        job: tdd.job_id,
        attempt: tdd.execution_attempt,
        state,
        metrics,
        stats: ctx.stats(),
    });
}

async fn run(
    ctx: Arc<SessionContext>,
    tdd: TaskDeploymentDescriptor,
    task: TaskSpec,
    job_secret: Secret,
) {
    let tdd = Arc::new(tdd);
    let loaded = ctx
        .gates
        .load(Arc::clone(&tdd), Arc::clone(&ctx.blob_cache))
        .await;
    // The subtask index within its job vertex (the attempt names the dense execution index).
    let subtask = match &task {
        TaskSpec::Synthetic(t) => t.subtask,
        TaskSpec::WordCount(t) => t.subtask,
    };
    let loaded = match loaded {
        Ok(loaded) => {
            tracing::debug!(
                job = %tdd.job_id,
                vertex = %loaded.info.job_vertex_id,
                subtask,
                attempt = tdd.execution_attempt.attempt,
                "task switched from DEPLOYING to RUNNING"
            );
            loaded
        }
        Err(reason) => {
            lock(&ctx.running).remove(&tdd.execution_attempt);
            let state = TaskState::Failed {
                reason,
                partition_not_found: None,
                non_recoverable: false,
            };
            report(&ctx, &tdd, state, TaskMetrics::default());
            return;
        }
    };
    report(&ctx, &tdd, TaskState::Running, TaskMetrics::default());
    let io = ctx
        .metrics
        .task_started(tdd.job_id, labels(&ctx, &tdd, &loaded.info, subtask));
    let retries = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let outcome = match task {
        TaskSpec::Synthetic(task) => {
            drop(io);
            synthetic(task, ctx.slowdown).await
        }
        TaskSpec::WordCount(task) => {
            let started = std::time::Instant::now();
            let outcome = wordcount::run(
                &ctx.wordcount,
                Arc::clone(&tdd),
                loaded.gates,
                task,
                job_secret,
                io,
                Arc::clone(&retries),
            )
            .await
            .map_err(|f| TaskState::Failed {
                reason: f.reason,
                partition_not_found: f.partition_not_found,
                non_recoverable: f.non_recoverable,
            });
            if outcome.is_ok() && ctx.slowdown > 1.0 {
                // Cancelled here like any task: a slow attempt that lost its race stops.
                tokio::time::sleep(extra_time(started.elapsed(), ctx.slowdown)).await;
            }
            outcome
        }
    };
    // Removed before the final report: a cancel that comes later finds nothing to abort.
    lock(&ctx.running).remove(&tdd.execution_attempt);
    let retries = retries.load(std::sync::atomic::Ordering::Relaxed);
    match outcome {
        Ok(metrics) => {
            tracing::debug!(
                job = %tdd.job_id,
                vertex = %loaded.info.job_vertex_id,
                subtask,
                attempt = tdd.execution_attempt.attempt,
                "task switched from RUNNING to FINISHED"
            );
            let metrics = TaskMetrics {
                partition_request_retries: retries,
                ..metrics
            };
            report(&ctx, &tdd, TaskState::Finished, metrics);
        }
        Err(state) => {
            if let TaskState::Failed {
                reason,
                non_recoverable,
                ..
            } = &state
            {
                tracing::info!(
                    job = %tdd.job_id,
                    vertex = %loaded.info.job_vertex_id,
                    subtask,
                    attempt = tdd.execution_attempt.attempt,
                    non_recoverable,
                    "task switched from RUNNING to FAILED: {reason}"
                );
            }
            let metrics = TaskMetrics {
                partition_request_retries: retries,
                ..TaskMetrics::default()
            };
            report(&ctx, &tdd, state, metrics);
        }
    }
}

/// The labels of a task's metrics, as Flink's: the job (its name when the TDD carries its job
/// information inline), the vertex (`task_id` its JobVertexID, `task_name` its chained
/// operators, else its id), the attempt (`<job>_<vertex>_<subtask>_<attempt>`, as Flink's
/// `<graph>_<vertex>_<subtask>_<attempt>`), this TaskManager.
fn labels(
    ctx: &SessionContext,
    tdd: &TaskDeploymentDescriptor,
    info: &TaskInformation,
    subtask: u32,
) -> TaskLabels {
    let job_name = match &tdd.job_information {
        MaybeOffloaded::Inline(bytes) => {
            wire::decode::<JobInformation>(PayloadKind::JobInformation, bytes)
                .map(|j| j.job_name)
                .unwrap_or_default()
        }
        MaybeOffloaded::Offloaded { .. } => String::new(),
    };
    let task_id = conflux_rest::job_vertex_id(&info.job_vertex_id).to_string();
    let name = if info.operators.is_empty() {
        info.job_vertex_id.clone()
    } else {
        info.operators.join(" -> ")
    };
    let attempt = tdd.execution_attempt.attempt;
    TaskLabels {
        job_id: tdd.job_id.to_string(),
        job_name: flink_label(&job_name),
        task_attempt_id: format!("{}_{task_id}_{subtask}_{attempt}", tdd.job_id),
        task_id,
        task_attempt_num: attempt.to_string(),
        task_name: flink_label(&name),
        subtask_index: subtask.to_string(),
        tm_id: ctx.labels.0.clone(),
        host: ctx.labels.1.clone(),
    }
}

/// What a slow TaskManager adds to a task that took `took`: `took x (slowdown - 1)` (zero at
/// a slowdown of 1; the factor is checked to be at least 1 and finite at start-up).
fn extra_time(took: Duration, slowdown: f64) -> Duration {
    Duration::try_from_secs_f64(took.as_secs_f64() * (slowdown - 1.0)).unwrap_or(Duration::ZERO)
}

async fn synthetic(task: SyntheticTask, slowdown: f64) -> Result<TaskMetrics, TaskState> {
    let duration = Duration::from_millis(task.duration_ms);
    let duration = duration + extra_time(duration, slowdown);
    if !duration.is_zero() {
        tokio::time::sleep(duration).await;
    }
    if task.fail {
        Err(TaskState::Failed {
            reason: "injected failure".into(),
            partition_not_found: None,
            non_recoverable: false,
        })
    } else {
        // A synthetic task writes nothing: it reports the bytes it was told it wrote.
        Ok(TaskMetrics {
            produced_bytes: task
                .produced_bytes
                .iter()
                .map(SyntheticOutput::bytes_per_subpartition)
                .collect(),
            ..TaskMetrics::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_task_manager_adds_the_factor_minus_one() {
        let took = Duration::from_secs(2);
        assert_eq!(extra_time(took, 1.0), Duration::ZERO);
        assert_eq!(extra_time(took, 3.0), Duration::from_secs(4));
        assert_eq!(extra_time(took, 1.5), Duration::from_secs(1));
        assert_eq!(extra_time(Duration::ZERO, 20.0), Duration::ZERO);
    }
}
