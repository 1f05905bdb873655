//! The endpoints: Flink 1.20's paths under `/v1` and unversioned, each with its OpenAPI
//! description (utoipa), which lists every status it answers.

mod dashboard;
mod handler;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::backend::CancelOutcome;
use crate::body::*;
use crate::error::{ErrorResponse, RestError, JSON};
use crate::ids::HexId;
use crate::render;

pub(crate) use handler::RestState;
use handler::{job_of, json, ok, vertex_of, RestResult, Shared};

/// At most this many answers over subtask tables are built at once (each may copy a table of
/// 10^5 subtasks).
pub(crate) const MAX_HEAVY_ANSWERS: usize = 2;

/// `GET /config`: the web UI's settings.
#[utoipa::path(get, path = "/config", tag = "cluster",
    responses((status = 200, description = "the web UI's settings", body = DashboardConfiguration)))]
async fn config() -> RestResult {
    ok(&render::dashboard_configuration())
}

/// `GET /overview`: TaskManagers, slots and jobs per status.
#[utoipa::path(get, path = "/overview", tag = "cluster",
    responses((status = 200, description = "the cluster's overview", body = ClusterOverview)))]
async fn overview(State(state): Shared) -> RestResult {
    ok(&render::overview(state.backend.as_ref()))
}

/// `GET /jobs`: every job's id and status.
#[utoipa::path(get, path = "/jobs", tag = "jobs",
    responses((status = 200, description = "every job kept, in submission order", body = JobsWithStatus)))]
async fn jobs(State(state): Shared) -> RestResult {
    ok(&render::jobs(state.backend.as_ref()))
}

/// `GET /jobs/overview`: every job with its times and tasks per state.
#[utoipa::path(get, path = "/jobs/overview", tag = "jobs",
    responses((status = 200, description = "every job kept, in submission order", body = JobsOverview)))]
async fn jobs_overview(State(state): Shared) -> RestResult {
    ok(&render::jobs_overview(
        state.backend.as_ref(),
        render::now_ms(),
    ))
}

/// `GET /jobs/:jobid`: a job's details.
#[utoipa::path(get, path = "/jobs/{jobid}", tag = "jobs",
    params(("jobid" = String, Path, description = "32 hex digits: a JobID")),
    responses(
        (status = 200, description = "the job's details", body = JobDetails),
        (status = 400, description = "the JobID does not parse", body = ErrorResponse),
        (status = 404, description = "no such job", body = ErrorResponse)))]
async fn job_details(State(state): Shared, Path(jobid): Path<String>) -> RestResult {
    let job = job_of(&state, &jobid)?;
    ok(&render::job_details(&job, render::now_ms()))
}

/// The query of `PATCH /jobs/:jobid`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct TerminationQuery {
    /// `cancel` (the default; either case). Flink's `stop` (with a savepoint) is refused.
    mode: Option<String>,
}

/// `PATCH /jobs/:jobid?mode=cancel`: cancels a job (202 with `{}`, as Flink).
#[utoipa::path(patch, path = "/jobs/{jobid}", tag = "jobs",
    params(("jobid" = String, Path, description = "32 hex digits: a JobID"), TerminationQuery),
    responses(
        (status = 202, description = "the job is being cancelled: `{}`", body = Object),
        (status = 400, description = "the JobID or the mode does not parse, or the mode is `stop`", body = ErrorResponse),
        (status = 404, description = "no such job", body = ErrorResponse),
        (status = 409, description = "the job had already ended", body = ErrorResponse)))]
async fn cancel_job(
    State(state): Shared,
    Path(jobid): Path<String>,
    Query(query): Query<TerminationQuery>,
) -> RestResult {
    let id = HexId::parse(&jobid).ok_or_else(|| RestError::bad_parameter("jobid", &jobid))?;
    match query.mode.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("cancel") => {}
        Some("stop") => {
            return Err(RestError::new(
                StatusCode::BAD_REQUEST,
                "Termination mode STOP is not supported: Conflux jobs take no savepoints; use mode=cancel.",
            ))
        }
        Some(_) => {
            return Err(RestError::new(
                StatusCode::BAD_REQUEST,
                format!(
                    "Bad request, could not parse parameters: Cannot resolve query parameter (mode) from value \"{}\".",
                    query.mode.unwrap_or_default()
                ),
            ))
        }
    }
    match state.backend.cancel(id.into()) {
        CancelOutcome::Accepted => json(StatusCode::ACCEPTED, &serde_json::json!({})),
        CancelOutcome::Unknown => Err(RestError::new(
            StatusCode::NOT_FOUND,
            "Job could not be found.",
        )),
        CancelOutcome::AlreadyEnded(status) => Err(RestError::new(
            StatusCode::CONFLICT,
            format!(
                "Job cancellation failed because the job has already reached another terminal state ({}).",
                status.as_str()
            ),
        )),
    }
}

/// `GET /jobs/:jobid/plan`: a job's plan.
#[utoipa::path(get, path = "/jobs/{jobid}/plan", tag = "jobs",
    params(("jobid" = String, Path, description = "32 hex digits: a JobID")),
    responses(
        (status = 200, description = "the job's plan", body = JobPlan),
        (status = 400, description = "the JobID does not parse", body = ErrorResponse),
        (status = 404, description = "no such job", body = ErrorResponse)))]
async fn job_plan(State(state): Shared, Path(jobid): Path<String>) -> RestResult {
    let job = job_of(&state, &jobid)?;
    ok(&render::plan(&job))
}

/// `GET /jobs/:jobid/exceptions`: a job's failures.
#[utoipa::path(get, path = "/jobs/{jobid}/exceptions", tag = "jobs",
    params(("jobid" = String, Path, description = "32 hex digits: a JobID")),
    responses(
        (status = 200, description = "the job's failures, latest first", body = JobExceptions),
        (status = 400, description = "the JobID does not parse", body = ErrorResponse),
        (status = 404, description = "no such job", body = ErrorResponse)))]
async fn job_exceptions(State(state): Shared, Path(jobid): Path<String>) -> RestResult {
    let job = job_of(&state, &jobid)?;
    ok(&render::exceptions(&job))
}

/// `GET /jobs/:jobid/execution-result`: `IN_PROGRESS`, or the ended job's result.
#[utoipa::path(get, path = "/jobs/{jobid}/execution-result", tag = "jobs",
    params(("jobid" = String, Path, description = "32 hex digits: a JobID")),
    responses(
        (status = 200, description = "the job's result, once it ended", body = JobExecutionResult),
        (status = 400, description = "the JobID does not parse", body = ErrorResponse),
        (status = 404, description = "no such job", body = ErrorResponse)))]
async fn job_execution_result(State(state): Shared, Path(jobid): Path<String>) -> RestResult {
    let job = job_of(&state, &jobid)?;
    ok(&render::execution_result(&job))
}

/// Builds an answer over a subtask table on a blocking thread, at most
/// [`MAX_HEAVY_ANSWERS`] at once.
async fn heavy<T: Serialize + Send + 'static>(
    state: &RestState,
    build: impl FnOnce() -> Option<T> + Send + 'static,
) -> RestResult {
    let _permit = state
        .heavy
        .acquire()
        .await
        .map_err(|_| RestError::bug("bug: the answer semaphore is closed"))?;
    let built =
        tokio::task::spawn_blocking(move || build().map(|value| serde_json::to_vec(&value)))
            .await
            .map_err(|e| RestError::bug(format!("bug: building an answer: {e}")))?;
    match built {
        Some(Ok(body)) => Ok((
            StatusCode::OK,
            [(header::CONTENT_TYPE, JSON)],
            Bytes::from(body),
        )
            .into_response()),
        Some(Err(e)) => Err(RestError::bug(format!(
            "bug: an answer does not serialise: {e}"
        ))),
        None => Err(RestError::new(StatusCode::NOT_FOUND, "JobVertex not found")),
    }
}

/// `GET /jobs/:jobid/vertices/:vertexid`: a vertex's subtasks.
#[utoipa::path(get, path = "/jobs/{jobid}/vertices/{vertexid}", tag = "jobs",
    params(("jobid" = String, Path, description = "32 hex digits: a JobID"),
        ("vertexid" = String, Path, description = "32 hex digits: a JobVertexID")),
    responses(
        (status = 200, description = "the vertex's subtasks and their statistics", body = VertexDetails),
        (status = 400, description = "an id does not parse", body = ErrorResponse),
        (status = 404, description = "no such job or vertex", body = ErrorResponse)))]
async fn vertex_details(
    State(state): Shared,
    Path((jobid, vertexid)): Path<(String, String)>,
) -> RestResult {
    let job = job_of(&state, &jobid)?;
    let position = vertex_of(&job, &vertexid)?;
    heavy(&state, move || {
        render::vertex_details(&job, position, render::now_ms())
    })
    .await
}

/// `GET /jobs/:jobid/vertices/:vertexid/subtasktimes`: when each subtask entered each state.
#[utoipa::path(get, path = "/jobs/{jobid}/vertices/{vertexid}/subtasktimes", tag = "jobs",
    params(("jobid" = String, Path, description = "32 hex digits: a JobID"),
        ("vertexid" = String, Path, description = "32 hex digits: a JobVertexID")),
    responses(
        (status = 200, description = "the subtasks' state timestamps", body = SubtasksTimes),
        (status = 400, description = "an id does not parse", body = ErrorResponse),
        (status = 404, description = "no such job or vertex", body = ErrorResponse)))]
async fn subtask_times(
    State(state): Shared,
    Path((jobid, vertexid)): Path<(String, String)>,
) -> RestResult {
    let job = job_of(&state, &jobid)?;
    let position = vertex_of(&job, &vertexid)?;
    heavy(&state, move || {
        render::subtask_times(&job, position, render::now_ms())
    })
    .await
}

/// `GET /taskmanagers`: the registered TaskManagers.
#[utoipa::path(get, path = "/taskmanagers", tag = "cluster",
    responses((status = 200, description = "the registered TaskManagers", body = TaskManagers)))]
async fn task_managers(State(state): Shared) -> RestResult {
    ok(&TaskManagers {
        taskmanagers: state
            .backend
            .task_managers()
            .iter()
            .map(render::task_manager_info)
            .collect(),
    })
}

/// `GET /taskmanagers/:taskmanagerid`: one TaskManager.
#[utoipa::path(get, path = "/taskmanagers/{taskmanagerid}", tag = "cluster",
    params(("taskmanagerid" = String, Path, description = "a TaskManager's id, `tm<n>`")),
    responses(
        (status = 200, description = "the TaskManager", body = TaskManagerDetails),
        (status = 404, description = "no such TaskManager registered", body = ErrorResponse)))]
async fn task_manager(State(state): Shared, Path(tmid): Path<String>) -> RestResult {
    let tm = state
        .backend
        .task_managers()
        .into_iter()
        .find(|t| format!("tm{}", t.id) == tmid)
        .ok_or_else(|| {
            RestError::new(
                StatusCode::NOT_FOUND,
                format!("Could not find TaskExecutor {tmid}."),
            )
        })?;
    ok(&render::task_manager_details(&tm))
}

/// `GET /jobmanager/config`: the JobManager's settings under Flink's keys.
#[utoipa::path(get, path = "/jobmanager/config", tag = "cluster",
    responses((status = 200, description = "the settings", body = Vec<ClusterConfigEntry>)))]
async fn jobmanager_config(State(state): Shared) -> RestResult {
    let entries: Vec<ClusterConfigEntry> = state
        .backend
        .configuration()
        .into_iter()
        .map(|(key, value)| ClusterConfigEntry { key, value })
        .collect();
    ok(&entries)
}

/// The content type of `/metrics`.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `GET /metrics`: the JobManager's metrics in Prometheus' text format (OpenMetrics), Flink's
/// names and labels where Flink has the metric, `conflux_*` for Conflux's own.
#[utoipa::path(get, path = "/metrics", tag = "metrics",
    responses((status = 200, description = "the metrics", content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8", body = String)))]
async fn metrics(State(state): Shared) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, OPENMETRICS)],
        state.backend.metrics(),
    )
        .into_response()
}

/// `GET /v1/openapi.json`: this document.
#[utoipa::path(get, path = "/openapi.json", tag = "service",
    responses((status = 200, description = "the OpenAPI 3.1 document of this API", body = Object)))]
async fn openapi_json(State(state): Shared) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, JSON)],
        state.openapi.clone(),
    )
        .into_response()
}

/// The API's endpoints, without prefix, with their OpenAPI descriptions.
pub(crate) fn api() -> OpenApiRouter<Arc<RestState>> {
    OpenApiRouter::new()
        .routes(routes!(config))
        .routes(routes!(overview))
        .routes(routes!(jobs))
        .routes(routes!(jobs_overview))
        .routes(routes!(job_details, cancel_job))
        .routes(routes!(job_plan))
        .routes(routes!(job_exceptions))
        .routes(routes!(job_execution_result))
        .routes(routes!(vertex_details))
        .routes(routes!(subtask_times))
        .routes(routes!(task_managers))
        .routes(routes!(task_manager))
        .routes(routes!(jobmanager_config))
        .routes(routes!(openapi_json))
        .merge(dashboard::routes())
}

/// `/metrics`, served at the root only (where Prometheus looks).
pub(crate) fn metrics_route() -> OpenApiRouter<Arc<RestState>> {
    OpenApiRouter::new().routes(routes!(metrics))
}
