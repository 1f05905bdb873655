//! The HTTP planning service (`conflux serve`): the synchronous planning core behind JSON
//! endpoints (axum on tokio, hyper's HTTP/1 server). Plans live in memory; statistics are
//! computed once per version and served from a cache afterwards.
//!
//! Endpoints live under `/v1` (the same paths without prefix are deprecated aliases that answer
//! the same); creation answers 201 with a `Location`; plans and versions are removed with
//! `DELETE`. Every error is Flink's `{"errors": ["..."]}` plus a stable `code`, with a 4xx
//! status naming the problem (5xx only for bugs), also for what axum rejects itself. The OpenAPI
//! document is generated from the handlers (utoipa) and served at `/v1/openapi.json`; the plan
//! viewer, a page embedded in the binary, at `/`. Request bodies are capped ([`ServiceConfig::max_body_bytes`]); query strings
//! are parsed by axum's `Query` extractor, and one that cannot be read is a 400 `bad_query`.
//! Every request is logged with `tracing` (method, path, status, duration). The README lists
//! the endpoints.
//!
//! Bounded whatever the clients do, each bound a [`ServiceConfig`] field:
//! - memory: stored plans, versions and cached statistics stay within `max_store_bytes`
//!   (least recently used plans evicted, else 507); expensive work runs at most
//!   `max_concurrent_computations` at a time, and identical statistics requests share one
//!   computation;
//! - the async workers: expensive work runs on blocking threads, and the store's lock is only
//!   held for bookkeeping, so `/health` stays fast under load;
//! - descriptors: at most `max_connections` connections, closed after `header_read_timeout`
//!   without a complete request head or `idle_timeout` without traffic.
//!
//! The code: `config` (settings), `connections` (accept loop and timeouts), `trace` (request
//! logging), `query` and `api_error` (what comes in and goes out), `state` (the shared state
//! and the computation limit), `store` (plans within the budget), the endpoints in
//! `plans`, `statistics` and `analyses`, and `web` (the plan viewer's embedded page).

mod analyses;
mod answers;
mod api_error;
mod config;
mod drawing;
mod plans;
mod query;
mod state;
mod statistics;
mod store;
mod trace;
mod web;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::Router;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use config::ServiceConfig;

use api_error::{bytes_response, ApiError, ApiResult};
use state::AppState;

/// The prefix of the current API version: every endpoint is served under it.
pub const API_PREFIX: &str = "/v1";

/// The OpenAPI document's fixed parts; the paths come from the handlers' `#[utoipa::path]`.
#[derive(OpenApi)]
#[openapi(info(
    title = "Conflux planning service",
    description = "Plan statistics, versioned edits, diffs, state compatibility and rescaling of \
        Flink job graphs and JSON plans (`conflux serve`). Errors are `{\"errors\": [...], \
        \"code\": ...}` with a 4xx status (5xx only for bugs). The same endpoints without the \
        `/v1` prefix are kept as deprecated aliases."
))]
struct ApiDoc;

/// `GET /v1/health`: whether the service answers.
#[utoipa::path(get, path = "/health", tag = "service",
    responses((status = 200, description = "`{\"status\": \"ok\"}`", body = answers::Health)))]
async fn health() -> axum::response::Response {
    // Static bytes: health checks stay cheap. A test checks them against `answers::Health`.
    bytes_response(StatusCode::OK, Bytes::from_static(HEALTH))
}

/// The body of `GET /v1/health`.
const HEALTH: &[u8] = br#"{"status":"ok"}"#;

/// `GET /v1/openapi.json`: this document.
#[utoipa::path(get, path = "/openapi.json", tag = "service",
    responses((status = 200, description = "the OpenAPI 3.1 document of the service", body = Object)))]
async fn openapi_json(State(state): State<Arc<AppState>>) -> ApiResult {
    let doc = state
        .openapi
        .get()
        .ok_or_else(|| ApiError::bug("bug: the OpenAPI document was not set"))?;
    Ok(bytes_response(StatusCode::OK, doc.clone()))
}

/// The API's endpoints, without prefix, with their OpenAPI description. Every endpoint is
/// registered here with `routes!`, so that the document lists exactly what is served.
fn api() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new()
        .routes(routes!(health))
        .routes(routes!(openapi_json))
        .routes(routes!(plans::submit, plans::list_plans))
        .routes(routes!(plans::plan_summary, plans::delete_plan))
        .routes(routes!(plans::list_versions))
        .routes(routes!(plans::get_version, plans::delete_version))
        .routes(routes!(statistics::stats))
        .routes(routes!(statistics::regions))
        .routes(routes!(drawing::layout))
        .routes(routes!(plans::apply_edit))
        .routes(routes!(plans::diff_versions))
        .routes(routes!(plans::compat_versions))
        .routes(routes!(plans::rescale_vertex))
        .routes(routes!(analyses::compat_plans))
        .routes(routes!(analyses::compiled_states))
        .routes(routes!(analyses::compiled_ttl))
}

/// The router and the OpenAPI document of the service: the API under [`API_PREFIX`], the plan
/// viewer's page and assets at `/` and `/assets/...`.
fn documented() -> (Router<Arc<AppState>>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .nest(API_PREFIX, api())
        .merge(web::routes())
        .split_for_parts()
}

/// The OpenAPI document of the service, as served at `/v1/openapi.json`.
pub fn openapi() -> utoipa::openapi::OpenApi {
    documented().1
}

/// The service's routes, with a fresh in-memory store: the API under `/v1` (and, deprecated,
/// the same endpoints without prefix, answering the same), the plan viewer at `/`, and
/// `/v1/openapi.json`.
pub fn router(config: ServiceConfig) -> Router {
    let limit = config.max_body_bytes;
    let state = Arc::new(AppState::new(config));
    let (documented, doc) = documented();
    // Serialising the document built from literal descriptions cannot fail; an empty one would
    // show at the first request.
    let doc = serde_json::to_vec(&doc).unwrap_or_default();
    let _ = state.openapi.set(Bytes::from(doc));
    let (legacy, _) = api().split_for_parts();
    documented
        .merge(legacy)
        // Conflux's live job view, for a JobManager named by `?jobmanager=URL`.
        .merge(conflux_web::live_assets())
        .fallback(|| async {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "unknown_endpoint",
                "no such endpoint (see /v1/openapi.json or the README's endpoint table)",
            )
        })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this endpoint does not take this method",
            )
        })
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn(api_error::flink_errors))
        .layer(axum::middleware::from_fn(trace::log_request))
        .with_state(state)
}

/// Serves the planning API on `listener` until `shutdown` completes, within the connection
/// limits of `config` (`max_connections`, `header_read_timeout`, `idle_timeout`); then lets
/// the requests in progress finish.
///
/// # Errors
/// The listener's I/O error.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: ServiceConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = conflux_http::Limits::new(
        config.header_read_timeout,
        config.idle_timeout,
        config.max_connections,
    );
    let open = conflux_http::OpenConnections::default();
    conflux_http::serve(listener, router(config), limits, open, shutdown).await
}

/// A service running on a thread of its own with its own tokio runtime (for the CLI, tests and
/// benchmarks that are not async themselves). Stops when dropped.
#[derive(Debug)]
pub struct RunningService {
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunningService {
    /// Binds `config.address` and starts serving.
    ///
    /// # Errors
    /// The I/O error of creating the runtime or binding the address (naming it).
    pub fn start(config: ServiceConfig) -> std::io::Result<RunningService> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let address = config.address;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(address))
            .map_err(|e| std::io::Error::new(e.kind(), format!("binding {address}: {e}")))?;
        let addr = listener.local_addr()?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("conflux-planner".to_owned())
            .spawn(move || {
                let _ = runtime.block_on(serve(listener, config, async {
                    let _ = rx.await;
                }));
            })?;
        Ok(RunningService {
            addr,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Blocks until the service stops (it only stops when told to).
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for RunningService {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    /// The static health answer is what its documented type serialises to.
    #[test]
    fn the_health_answer_is_its_type() {
        let typed = serde_json::to_vec(&super::answers::Health { status: "ok" }).unwrap();
        assert_eq!(typed, super::HEALTH);
    }
}
