//! `conflux-rest`: Flink 1.20's REST API on the JobManager, so that Flink's own clients
//! (`flink list`, `flink cancel`, the web dashboard's calls, scripts written for Flink) work
//! against Conflux.
//!
//! - [`body`]: the response bodies, with Flink's keys, value types and enums.
//! - [`view`]: what the API reads: per job a [`JobView`] (fixed [`JobInfo`], the latest
//!   [`JobSnapshot`] the job loop published, per vertex a [`SubtaskTable`]).
//!   **Invariant: views read snapshots**: no request takes a scheduler's lock, waits for a
//!   job's event loop or walks every task of a job; one that shows subtasks copies the table
//!   of that one vertex.
//! - [`RestBackend`]: what the API asks of a JobManager (jobs, TaskManagers, cancel, settings,
//!   metrics text).
//! - [`JobRecorder`]: how a job loop keeps a view, in O(1) per task state change.
//! - `render` turns views into bodies; `routes` holds the endpoints and their OpenAPI
//!   descriptions; `error` Flink's error shape; `java_throwable` the Java-serialised failure
//!   Flink's client reads from an execution result.
//!
//! Served by [`router`] (under `/v1` and unversioned, `/metrics` at the root,
//! `/v1/openapi.json`), on `conflux-http`'s accept loop. Answers are gzip-compressed for clients
//! that accept it.

pub mod backend;
pub mod body;
mod error;
pub mod ids;
mod java_throwable;
mod recorder;
mod render;
mod routes;
pub mod states;
pub mod view;

use std::sync::Arc;

use axum::body::Bytes;
use axum::Router;
use tokio::sync::Semaphore;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

pub use backend::{CancelOutcome, RestBackend, TaskManagerStatus};
pub use error::ErrorResponse;
pub use ids::{job_vertex_id, slot_sharing_group_id, HexId};
pub use java_throwable::serialized_throwable;
pub use recorder::{JobRecorder, VertexUpdate};
pub use render::{now_ms, FLINK_VERSION, JOB_FAILURE, TASK_FAILURE};
pub use states::{ExecutionState, JobStatus};
pub use view::{
    Exceptions, IoCounts, JobInfo, JobSnapshot, JobType, JobView, SubtaskRecord, SubtaskTable,
    VertexInfo, VertexSnapshot, NO_TASK_MANAGER,
};

/// The prefix of the current API version (Flink's `/v1`); every endpoint is also served
/// without it.
pub const API_PREFIX: &str = "/v1";

/// The OpenAPI document's fixed parts; the paths come from the handlers.
#[derive(OpenApi)]
#[openapi(info(
    title = "Conflux JobManager REST API",
    description = "Flink 1.20's JobManager REST API as Conflux serves it: the same paths, keys, \
        value types and enums, so Flink's clients work unchanged. Every endpoint is also served \
        without the `/v1` prefix. Errors are Flink's `{\"errors\": [...]}`. `/metrics` (at the \
        root) is the Prometheus scrape."
))]
struct ApiDoc;

fn documented() -> (Router<Arc<routes::RestState>>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .nest(API_PREFIX, routes::api())
        .merge(routes::metrics_route())
        .split_for_parts()
}

/// The OpenAPI document, as served at `/v1/openapi.json`.
pub fn openapi() -> utoipa::openapi::OpenApi {
    documented().1
}

/// The REST API over `backend`: every endpoint under `/v1` and unversioned, `/metrics`,
/// `/v1/openapi.json`; unknown paths answer Flink's 404 (`Not found: <path>`), a method a path
/// does not take 405 with `Allow`. A static web UI can be added with
/// [`Router::fallback_service`] on the result.
pub fn router(backend: Arc<dyn RestBackend>) -> Router {
    let (documented, doc) = documented();
    // A document built from literal descriptions always serialises.
    let openapi = Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
    let state = Arc::new(routes::RestState {
        backend,
        openapi,
        heavy: Semaphore::new(routes::MAX_HEAVY_ANSWERS),
    });
    let (unversioned, _) = routes::api().split_for_parts();
    documented
        .merge(unversioned)
        .layer(axum::middleware::from_fn(error::flink_shape))
        .layer(tower_http::compression::CompressionLayer::new())
        .with_state(state)
}
