//! A task's life on the TaskManager: it loads its task information and input gates as a real
//! task would (descriptor groups from the TDD or through the blob cache, decoded once per
//! TaskManager), reports RUNNING, runs (a synthetic task for its duration; a word count task
//! its operators over real partitions) and reports FINISHED with its metrics, or FAILED (an
//! injected failure, an input that cannot be loaded or read, a partition write that fails).
//! On a slow TaskManager (`slowdown` above 1) every task takes that many times as long.

use std::sync::Arc;
use std::time::Duration;

use conflux_deploy::TaskDeploymentDescriptor;

use crate::protocol::{
    SyntheticOutput, SyntheticTask, TaskMetrics, TaskSpec, TaskState, ToJobManager,
};
use crate::secret::Secret;
use crate::taskmanager::wordcount;
use crate::taskmanager::{lock, SessionContext};

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
    let loaded = match loaded {
        Ok(loaded) => {
            tracing::debug!(
                vertex = %loaded.info.job_vertex_id,
                subtask = tdd.execution_attempt.vertex,
                "task running"
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
    let outcome = match task {
        TaskSpec::Synthetic(task) => synthetic(task, ctx.slowdown).await,
        TaskSpec::WordCount(task) => {
            let started = std::time::Instant::now();
            let outcome = wordcount::run(
                &ctx.wordcount,
                Arc::clone(&tdd),
                loaded.gates,
                task,
                job_secret,
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
    match outcome {
        Ok(metrics) => report(&ctx, &tdd, TaskState::Finished, metrics),
        Err(state) => {
            if let TaskState::Failed {
                reason,
                non_recoverable,
                ..
            } = &state
            {
                tracing::info!(
                    vertex = tdd.execution_attempt.vertex,
                    non_recoverable,
                    "task failed: {reason}"
                );
            }
            report(&ctx, &tdd, state, TaskMetrics::default());
        }
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
