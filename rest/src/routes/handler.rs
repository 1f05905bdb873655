//! What every handler reads and answers with: the shared state, the result type, a JSON answer
//! and the job and vertex a path names. Below both the core endpoints and the dashboard's.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use tokio::sync::Semaphore;

use crate::backend::RestBackend;
use crate::error::{RestError, JSON};
use crate::ids::HexId;
use crate::view::JobView;

/// What every handler reads.
pub(crate) struct RestState {
    pub(crate) backend: Arc<dyn RestBackend>,
    /// The OpenAPI document, serialised once.
    pub(crate) openapi: Bytes,
    /// Bounds the answers built on blocking threads (subtask tables of large vertices).
    pub(crate) heavy: Semaphore,
}

pub(crate) type Shared = State<Arc<RestState>>;
pub(crate) type RestResult = Result<Response, RestError>;

pub(crate) fn json(status: StatusCode, value: &impl Serialize) -> RestResult {
    let body = serde_json::to_vec(value)
        .map_err(|e| RestError::bug(format!("bug: an answer does not serialise: {e}")))?;
    Ok((status, [(header::CONTENT_TYPE, JSON)], Bytes::from(body)).into_response())
}

pub(crate) fn ok(value: &impl Serialize) -> RestResult {
    json(StatusCode::OK, value)
}

/// The job a path names: 400 when the id does not parse, 404 when no such job is kept.
pub(crate) fn job_of(state: &RestState, jobid: &str) -> Result<Arc<JobView>, RestError> {
    let id = HexId::parse(jobid).ok_or_else(|| RestError::bad_parameter("jobid", jobid))?;
    state
        .backend
        .job(id.into())
        .ok_or_else(|| RestError::new(StatusCode::NOT_FOUND, format!("Job {id} not found")))
}

/// The vertex a path names: 400 when its id does not parse, 404 when the job has no such
/// vertex.
pub(crate) fn vertex_of(job: &JobView, vertexid: &str) -> Result<usize, RestError> {
    let id =
        HexId::parse(vertexid).ok_or_else(|| RestError::bad_parameter("vertexid", vertexid))?;
    job.info().vertex_position(id).ok_or_else(|| {
        RestError::new(
            StatusCode::NOT_FOUND,
            format!("JobVertex {id} not found in job {}", job.info().id),
        )
    })
}
