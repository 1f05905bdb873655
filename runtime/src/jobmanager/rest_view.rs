//! The REST API's view of a job, from the JobManager's side: what never changes (ids, names,
//! the plan) built once at submission, and the mapping of the scheduler's states to Flink's
//! names.

use std::sync::Arc;

use conflux_blob_api::JobId;
use conflux_graph::{DistributionPattern, ExecutionGraph, JobGraph, JobVertexIndex};
use conflux_rest::body::{Plan, PlanInput, PlanNode};
use conflux_rest::{
    job_vertex_id, slot_sharing_group_id, HexId, JobInfo, JobSnapshot, JobType, JobView, VertexInfo,
};

/// A vertex's name as the REST API shows it: its name, else its id.
fn vertex_name(job: &JobGraph, j: JobVertexIndex) -> String {
    job.vertex_name(j)
        .unwrap_or_else(|| job.vertex_id(j))
        .to_owned()
}

/// Flink's ship strategy of an edge: as written, else `FORWARD` (pointwise) or `HASH`
/// (all-to-all).
fn ship_strategy(edge: &conflux_graph::JobEdge) -> String {
    match &edge.ship_strategy {
        Some(s) => s.clone(),
        None => match edge.distribution_pattern {
            DistributionPattern::Pointwise => "FORWARD".into(),
            DistributionPattern::AllToAll => "HASH".into(),
        },
    }
}

/// The plan as Flink's `JsonPlanGenerator` writes it, each vertex with its parallelism in
/// `parallelisms` (0: undecided). O(V + E).
fn plan(id: JobId, job: &JobGraph, parallelisms: &[u32]) -> Plan {
    let nodes = job
        .vertex_indices()
        .map(|j| {
            let inputs: Vec<PlanInput> = job
                .inputs(j)
                .iter()
                .enumerate()
                .map(|(num, &e)| {
                    let edge = job.edge(e);
                    PlanInput {
                        num: u32::try_from(num).unwrap_or(u32::MAX),
                        id: job_vertex_id(job.vertex_id(edge.source)).to_string(),
                        ship_strategy: ship_strategy(edge),
                        exchange: edge.result_partition_type.as_str().to_owned(),
                    }
                })
                .collect();
            PlanNode {
                id: job_vertex_id(job.vertex_id(j)).to_string(),
                parallelism: rest_parallelism(parallelisms[j.idx()]),
                operator: String::new(),
                operator_strategy: String::new(),
                description: job
                    .vertex_description(j)
                    .map_or_else(|| vertex_name(job, j), str::to_owned),
                inputs: (!inputs.is_empty()).then_some(inputs),
                optimizer_properties: serde_json::Map::new(),
            }
        })
        .collect();
    Plan {
        jid: HexId::from(id).to_string(),
        name: job.name().to_owned(),
        job_type: rest_job_type(job).as_str().to_owned(),
        nodes,
    }
}

fn rest_job_type(job: &JobGraph) -> JobType {
    match job.job_type() {
        conflux_graph::JobType::Streaming => JobType::Streaming,
        conflux_graph::JobType::Batch => JobType::Batch,
    }
}

/// A vertex's parallelism as the REST API shows it: -1 while undecided (no subtasks yet).
fn rest_parallelism(p: u32) -> i64 {
    match p {
        0 => -1,
        p => i64::from(p),
    }
}

/// The view of a job that starts, submitted at `submitted_ms` (CREATED, every task of an
/// initialised vertex CREATED), from its execution graph. O(V + E).
pub(crate) fn job_view(id: JobId, graph: &ExecutionGraph, submitted_ms: i64) -> Arc<JobView> {
    let job = graph.job_graph();
    let parallelisms: Vec<u32> = job
        .vertex_indices()
        .map(|j| graph.parallelism_of(j))
        .collect();
    view_of(id, job, &parallelisms, submitted_ms)
}

/// The view of a job queued at `now_ms`, from its job graph: each vertex at its parallelism,
/// an undecided one at none (-1) when it is `decided_at_run_time`. O(V + E).
pub(crate) fn queued_view(
    id: JobId,
    job: &JobGraph,
    decided_at_run_time: bool,
    now_ms: i64,
) -> Arc<JobView> {
    let parallelisms: Vec<u32> = job
        .vertex_indices()
        .map(|j| {
            let v = job.vertex(j);
            if decided_at_run_time && v.undecided {
                0
            } else {
                v.parallelism
            }
        })
        .collect();
    view_of(id, job, &parallelisms, now_ms)
}

/// The view of `job` with `parallelisms` per vertex, CREATED at `now_ms`. O(V + E).
fn view_of(id: JobId, job: &JobGraph, parallelisms: &[u32], now_ms: i64) -> Arc<JobView> {
    let vertices = job
        .vertex_indices()
        .map(|j| VertexInfo {
            id: job_vertex_id(job.vertex_id(j)),
            name: vertex_name(job, j),
            max_parallelism: i64::try_from(job.vertex(j).max_parallelism).unwrap_or(i64::MAX),
            slot_sharing_group_id: slot_sharing_group_id(id, job.slot_sharing_group(j)),
        })
        .collect();
    let info = JobInfo {
        id,
        name: job.name().to_owned(),
        job_type: rest_job_type(job),
        vertices,
        plan: plan(id, job, parallelisms),
    };
    Arc::new(JobView::new(
        info,
        JobSnapshot::submitted(now_ms, parallelisms),
        parallelisms,
    ))
}

/// The scheduler's task state under Flink's name.
pub(crate) fn execution_state(s: conflux_deploy::ExecutionState) -> conflux_rest::ExecutionState {
    use conflux_deploy::ExecutionState as C;
    use conflux_rest::ExecutionState as F;
    match s {
        C::Created => F::Created,
        C::Scheduled => F::Scheduled,
        C::Deploying => F::Deploying,
        C::Initializing => F::Initializing,
        C::Running => F::Running,
        C::Finished => F::Finished,
        C::Canceling => F::Canceling,
        C::Canceled => F::Canceled,
        C::Failed => F::Failed,
    }
}

/// The scheduler's job status under Flink's name.
pub(crate) fn job_status(s: conflux_scheduler::JobStatus) -> conflux_rest::JobStatus {
    use conflux_rest::JobStatus as F;
    use conflux_scheduler::JobStatus as C;
    match s {
        C::Created => F::Created,
        C::Running => F::Running,
        C::Finished => F::Finished,
        C::Failing => F::Failing,
        C::Failed => F::Failed,
        C::Canceled => F::Canceled,
    }
}

/// Logs a job's status change at INFO in the words of Flink's `DefaultExecutionGraph`
/// ("Job NAME (ID) switched from state RUNNING to FINISHED.").
pub(crate) fn log_job_state(
    view: &JobView,
    from: conflux_rest::JobStatus,
    to: conflux_rest::JobStatus,
) {
    let info = view.info();
    tracing::info!(
        job = %info.id,
        from = from.as_str(),
        to = to.as_str(),
        "Job {} ({}) switched from state {} to {}.",
        info.name,
        info.id,
        from.as_str(),
        to.as_str()
    );
}

/// Records the end of a job whose event loop did not record it (cancelled while queued, or
/// failed before it started): every task that did not end takes the job's end, the job its
/// status (`CANCELED` or `FAILED`, with `reason`). O(N) once.
pub(crate) fn ended_outside_the_loop(view: &Arc<JobView>, status: &str, reason: Option<&str>) {
    let mut recorder = conflux_rest::JobRecorder::new(Arc::clone(view));
    if recorder.status().is_globally_terminal() {
        return;
    }
    let now = conflux_rest::now_ms();
    let (job_status, task_state) = match status {
        "FAILED" => (
            conflux_rest::JobStatus::Failed,
            conflux_rest::ExecutionState::Failed,
        ),
        "FINISHED" => (
            conflux_rest::JobStatus::Finished,
            conflux_rest::ExecutionState::Finished,
        ),
        _ => (
            conflux_rest::JobStatus::Canceled,
            conflux_rest::ExecutionState::Canceled,
        ),
    };
    let before = recorder.status();
    if job_status == conflux_rest::JobStatus::Canceled {
        recorder.cancelling(now);
    }
    for j in 0..view.info().vertices.len() {
        let Some(table) = view.subtasks(j).map(|t| t.records.clone()) else {
            continue;
        };
        if let Some(mut update) = recorder.vertex(j) {
            for (i, r) in table.iter().enumerate() {
                if !conflux_rest::ExecutionState::from(r.state).is_terminal() {
                    let i = u32::try_from(i).unwrap_or(u32::MAX);
                    update.set_state(i, task_state, r.attempt, r.task_manager, now);
                }
            }
        }
    }
    if job_status == conflux_rest::JobStatus::Failed {
        recorder.job_failed(reason.unwrap_or("the job failed"), now);
    }
    recorder.set_status(job_status, now);
    log_job_state(view, before, job_status);
    recorder.publish(0, Vec::new());
}
