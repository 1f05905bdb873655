//! A synthetic task: it loads its task information and input gates as a real task would (descriptor groups from the
//! TDD or through the blob cache, decoded once per TaskManager), reports RUNNING, runs for its
//! duration and reports FINISHED (or FAILED when a failure is injected or an input cannot be
//! loaded).

use std::sync::Arc;
use std::time::Duration;

use conflux_deploy::TaskDeploymentDescriptor;

use crate::protocol::{SyntheticTask, TaskState, ToJobManager};
use crate::taskmanager::{lock, SessionContext};

pub(crate) fn spawn(ctx: Arc<SessionContext>, tdd: TaskDeploymentDescriptor, task: SyntheticTask) {
    let attempt = tdd.execution_attempt;
    let mut running = lock(&ctx.running);
    let handle = tokio::spawn(run(Arc::clone(&ctx), tdd, task));
    running.insert(attempt, handle.abort_handle());
}

fn report(ctx: &SessionContext, tdd: &TaskDeploymentDescriptor, state: TaskState) {
    ctx.send(&ToJobManager::TaskStateChanged {
        job: tdd.job_id,
        attempt: tdd.execution_attempt,
        state,
        stats: ctx.stats(),
    });
}

async fn run(ctx: Arc<SessionContext>, tdd: TaskDeploymentDescriptor, task: SyntheticTask) {
    let tdd = Arc::new(tdd);
    let loaded = ctx
        .gates
        .load(Arc::clone(&tdd), Arc::clone(&ctx.blob_cache))
        .await;
    match loaded {
        Ok(info) => tracing::debug!(
            vertex = %info.job_vertex_id,
            subtask = tdd.execution_attempt.vertex,
            "task running"
        ),
        Err(reason) => {
            report(
                &ctx,
                &tdd,
                TaskState::Failed {
                    reason,
                    partition_not_found: None,
                },
            );
            lock(&ctx.running).remove(&tdd.execution_attempt);
            return;
        }
    }
    report(&ctx, &tdd, TaskState::Running);
    if task.duration_ms > 0 {
        tokio::time::sleep(Duration::from_millis(task.duration_ms)).await;
    }
    // Removed before the final report: a cancel that comes later finds nothing to abort.
    lock(&ctx.running).remove(&tdd.execution_attempt);
    let state = if task.fail {
        TaskState::Failed {
            reason: "injected failure".into(),
            partition_not_found: None,
        }
    } else {
        TaskState::Finished
    };
    report(&ctx, &tdd, state);
}
