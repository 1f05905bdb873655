//! The TaskManager's Prometheus endpoint (`GET /metrics` on `--metrics-port`), on
//! `conflux-http`'s accept loop.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::http::header;
use axum::routing::get;
use axum::Router;

use super::session::Counters;
use crate::metrics::{TaskManagerMetrics, TaskManagerTotals};

/// The metrics server; stops when dropped.
pub(crate) struct MetricsServer {
    /// Where it listens.
    pub(crate) address: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Binds `address` and serves `GET /metrics` (Prometheus' text format, OpenMetrics flavour):
/// at most 16 connections, 10 s for a request's head, 60 s of idleness.
///
/// # Errors
/// The address cannot be bound.
pub(crate) async fn start(
    address: SocketAddr,
    metrics: Arc<TaskManagerMetrics>,
    counters: Arc<Counters>,
) -> std::io::Result<MetricsServer> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    let bound = listener.local_addr()?;
    let router = Router::new().route(
        "/metrics",
        get(move || {
            let text = metrics.scrape(TaskManagerTotals {
                blob_fetches: counters.blob_fetches(),
                tdd_bytes_received: counters.tdd_bytes_received.load(Ordering::Relaxed),
                tasks: counters.tasks.load(Ordering::Relaxed),
            });
            async move {
                (
                    [(
                        header::CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    text,
                )
            }
        }),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let limits = conflux_http::Limits::new(Duration::from_secs(10), Duration::from_secs(60), 16);
    tokio::spawn(conflux_http::serve(
        listener,
        router,
        limits,
        conflux_http::OpenConnections::default(),
        async move {
            let _ = stopped.await;
        },
    ));
    Ok(MetricsServer {
        address: bound,
        stop: Some(stop),
    })
}
