//! The HTTP planning service (`conflux serve`): the synchronous planning core behind JSON
//! endpoints (axum on tokio, hyper's HTTP/1 server). Plans live in memory; statistics are
//! computed once per version and served from a cache afterwards.
//!
//! Every error is `{"error": "...", "code": "..."}` with a 4xx status naming the problem (5xx
//! only for bugs). Request bodies are capped ([`ServiceConfig::max_body_bytes`]); query strings
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
//! and the computation limit), `store` (plans within the budget), and the endpoints in
//! `plans`, `statistics` and `analyses`.

mod analyses;
mod api_error;
mod config;
mod connections;
mod plans;
mod query;
mod state;
mod statistics;
mod store;
mod trace;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;

pub use config::ServiceConfig;

use api_error::{bytes_response, ApiError};
use state::AppState;

/// The service's routes, with a fresh in-memory store.
pub fn router(config: ServiceConfig) -> Router {
    let limit = config.max_body_bytes;
    let state = Arc::new(AppState::new(config));
    Router::new()
        .route(
            "/health",
            get(|| async {
                bytes_response(StatusCode::OK, Bytes::from_static(br#"{"status":"ok"}"#))
            }),
        )
        .route("/plans", post(plans::submit).get(plans::list_plans))
        .route("/plans/{id}", get(plans::plan_summary))
        .route("/plans/{id}/versions", get(plans::list_versions))
        .route("/plans/{id}/versions/{version}", get(plans::get_version))
        .route("/plans/{id}/stats", get(statistics::stats))
        .route("/plans/{id}/regions", get(statistics::regions))
        .route("/plans/{id}/edits", post(plans::apply_edit))
        .route("/plans/{id}/diff", get(plans::diff_versions))
        .route("/plans/{id}/compat", get(plans::compat_versions))
        .route("/plans/{id}/rescale", get(plans::rescale_vertex))
        .route("/compat", post(analyses::compat_plans))
        .route("/compiled-plans/states", post(analyses::compiled_states))
        .route("/compiled-plans/ttl", post(analyses::compiled_ttl))
        .fallback(|| async {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "unknown_endpoint",
                "no such endpoint (see the README's endpoint table)",
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
    let limits = connections::Limits::of(&config);
    connections::serve(listener, router(config), limits, shutdown).await
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
