//! What Flink's web dashboard reads beyond the core API, answered Flink's way for what Conflux
//! does not have: a job's configuration; metric queries (empty lists: no metric store, as Flink
//! answers for metrics it does not know); a vertex's watermarks (none) and accumulators (none);
//! checkpoint statistics (404 `Checkpointing has not been enabled.`, Flink's answer for a job
//! without checkpointing). With these the dashboard's overview, job, completed-jobs and
//! TaskManager pages draw without errors.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::handler::{job_of, ok, vertex_of, RestResult, RestState, Shared};
use crate::body::{ExecutionConfig, JobConfig, MetricValue, VertexAccumulators};
use crate::error::{ErrorResponse, RestError};

/// `GET /jobs/:jobid/config`: the job's execution settings.
#[utoipa::path(get, path = "/jobs/{jobid}/config", tag = "jobs",
    params(("jobid" = String, Path, description = "32 hex digits: a JobID")),
    responses(
        (status = 200, description = "the job's execution settings", body = JobConfig),
        (status = 400, description = "the JobID does not parse", body = ErrorResponse),
        (status = 404, description = "no such job", body = ErrorResponse)))]
async fn job_config(State(state): Shared, Path(jobid): Path<String>) -> RestResult {
    let job = job_of(&state, &jobid)?;
    let info = job.info();
    ok(&JobConfig {
        jid: info.id.to_string(),
        name: info.name.clone(),
        execution_config: ExecutionConfig {
            execution_mode: "PIPELINED".to_owned(),
            restart_strategy: "Cluster level default restart strategy".to_owned(),
            job_parallelism: -1,
            object_reuse_mode: false,
            user_config: Default::default(),
        },
    })
}

/// `GET /jobs/:jobid/checkpoints`: Flink's 404 for a job without checkpointing.
#[utoipa::path(get, path = "/jobs/{jobid}/checkpoints", tag = "jobs",
    params(("jobid" = String, Path, description = "32 hex digits: a JobID")),
    responses(
        (status = 400, description = "the JobID does not parse", body = ErrorResponse),
        (status = 404, description = "no such job, or (always) checkpointing is not enabled", body = ErrorResponse)))]
async fn checkpoints(State(state): Shared, Path(jobid): Path<String>) -> RestResult {
    job_of(&state, &jobid)?;
    Err(RestError::new(
        StatusCode::NOT_FOUND,
        "Checkpointing has not been enabled.",
    ))
}

/// `GET /jobs/:jobid/checkpoints/config`: Flink's 404 for a job without checkpointing.
#[utoipa::path(get, path = "/jobs/{jobid}/checkpoints/config", tag = "jobs",
    params(("jobid" = String, Path, description = "32 hex digits: a JobID")),
    responses(
        (status = 400, description = "the JobID does not parse", body = ErrorResponse),
        (status = 404, description = "no such job, or (always) checkpointing is not enabled", body = ErrorResponse)))]
async fn checkpoint_config(State(state): Shared, Path(jobid): Path<String>) -> RestResult {
    let job = job_of(&state, &jobid)?;
    Err(RestError::new(
        StatusCode::NOT_FOUND,
        format!(
            "Checkpointing is not enabled for this job ({}).",
            job.info().id
        ),
    ))
}

/// `GET /jobs/:jobid/vertices/:vertexid/metrics`: a vertex's metrics: none.
#[utoipa::path(get, path = "/jobs/{jobid}/vertices/{vertexid}/metrics", tag = "metrics",
    params(("jobid" = String, Path, description = "32 hex digits: a JobID"),
        ("vertexid" = String, Path, description = "32 hex digits: a JobVertexID"), ("get" = Option<String>, Query, description = "comma-separated metric names; without it, the names of the available metrics")),
    responses(
        (status = 200, description = "the metrics asked for that exist: none (Conflux keeps no metric store)", body = Vec<MetricValue>),
        (status = 400, description = "an id does not parse", body = ErrorResponse),
        (status = 404, description = "no such job or vertex", body = ErrorResponse)))]
async fn vertex_metrics(
    State(state): Shared,
    Path((jobid, vertexid)): Path<(String, String)>,
) -> RestResult {
    none_of_vertex(&state, &jobid, &vertexid)
}

/// `GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics`: the subtasks' aggregated metrics:
/// none.
#[utoipa::path(get, path = "/jobs/{jobid}/vertices/{vertexid}/subtasks/metrics", tag = "metrics",
    params(("jobid" = String, Path, description = "32 hex digits: a JobID"),
        ("vertexid" = String, Path, description = "32 hex digits: a JobVertexID"), ("get" = Option<String>, Query, description = "comma-separated metric names; without it, the names of the available metrics")),
    responses(
        (status = 200, description = "the aggregated metrics asked for that exist: none", body = Vec<MetricValue>),
        (status = 400, description = "an id does not parse", body = ErrorResponse),
        (status = 404, description = "no such job or vertex", body = ErrorResponse)))]
async fn subtasks_metrics(
    State(state): Shared,
    Path((jobid, vertexid)): Path<(String, String)>,
) -> RestResult {
    none_of_vertex(&state, &jobid, &vertexid)
}

/// `GET /jobs/:jobid/vertices/:vertexid/watermarks`: the subtasks' input watermarks: none
/// (Conflux's tasks have no event time).
#[utoipa::path(get, path = "/jobs/{jobid}/vertices/{vertexid}/watermarks", tag = "jobs",
    params(("jobid" = String, Path, description = "32 hex digits: a JobID"),
        ("vertexid" = String, Path, description = "32 hex digits: a JobVertexID")),
    responses(
        (status = 200, description = "the watermarks: none", body = Vec<MetricValue>),
        (status = 400, description = "an id does not parse", body = ErrorResponse),
        (status = 404, description = "no such job or vertex", body = ErrorResponse)))]
async fn watermarks(
    State(state): Shared,
    Path((jobid, vertexid)): Path<(String, String)>,
) -> RestResult {
    none_of_vertex(&state, &jobid, &vertexid)
}

/// `GET /jobs/:jobid/vertices/:vertexid/accumulators`: a vertex's user accumulators: none.
#[utoipa::path(get, path = "/jobs/{jobid}/vertices/{vertexid}/accumulators", tag = "jobs",
    params(("jobid" = String, Path, description = "32 hex digits: a JobID"),
        ("vertexid" = String, Path, description = "32 hex digits: a JobVertexID")),
    responses(
        (status = 200, description = "the vertex's accumulators: none", body = VertexAccumulators),
        (status = 400, description = "an id does not parse", body = ErrorResponse),
        (status = 404, description = "no such job or vertex", body = ErrorResponse)))]
async fn vertex_accumulators(
    State(state): Shared,
    Path((jobid, vertexid)): Path<(String, String)>,
) -> RestResult {
    let job = job_of(&state, &jobid)?;
    let position = vertex_of(&job, &vertexid)?;
    ok(&VertexAccumulators {
        id: job.info().vertices[position].id.to_string(),
        user_accumulators: Vec::new(),
    })
}

/// `GET /taskmanagers/:taskmanagerid/metrics`: a TaskManager's metrics: none (404 for an
/// unknown TaskManager).
#[utoipa::path(get, path = "/taskmanagers/{taskmanagerid}/metrics", tag = "metrics",
    params(("taskmanagerid" = String, Path, description = "a TaskManager's id, `tm<n>`"), ("get" = Option<String>, Query, description = "comma-separated metric names; without it, the names of the available metrics")),
    responses(
        (status = 200, description = "the metrics asked for that exist: none", body = Vec<MetricValue>),
        (status = 404, description = "no such TaskManager registered", body = ErrorResponse)))]
async fn task_manager_metrics(State(state): Shared, Path(tmid): Path<String>) -> RestResult {
    if !state
        .backend
        .task_managers()
        .iter()
        .any(|t| format!("tm{}", t.id) == tmid)
    {
        return Err(RestError::new(
            StatusCode::NOT_FOUND,
            format!("Could not find TaskExecutor {tmid}."),
        ));
    }
    ok(&Vec::<MetricValue>::new())
}

/// `GET /jobmanager/metrics`: the JobManager's metrics as Flink's metric query: none (they
/// are at `/metrics`, in Prometheus' format).
#[utoipa::path(get, path = "/jobmanager/metrics", tag = "metrics",
    params(("get" = Option<String>, Query, description = "comma-separated metric names; without it, the names of the available metrics")),
    responses((status = 200, description = "the metrics asked for that exist: none", body = Vec<MetricValue>)))]
async fn jobmanager_metrics() -> RestResult {
    ok(&Vec::<MetricValue>::new())
}

/// The dashboard's endpoints, without prefix, with their OpenAPI descriptions.
pub(super) fn routes() -> OpenApiRouter<Arc<RestState>> {
    OpenApiRouter::new()
        .routes(routes!(job_config))
        .routes(routes!(checkpoints))
        .routes(routes!(checkpoint_config))
        .routes(routes!(vertex_metrics))
        .routes(routes!(subtasks_metrics))
        .routes(routes!(watermarks))
        .routes(routes!(vertex_accumulators))
        .routes(routes!(task_manager_metrics))
        .routes(routes!(jobmanager_metrics))
}

/// The empty list Flink answers for a vertex's metrics or watermarks where there are none,
/// once the job and vertex ids are known (400 / 404 otherwise): shared by the endpoints above,
/// which differ only in their paths and documentation.
fn none_of_vertex(state: &RestState, jobid: &str, vertexid: &str) -> RestResult {
    let job = job_of(state, jobid)?;
    vertex_of(&job, vertexid)?;
    ok(&Vec::<MetricValue>::new())
}
