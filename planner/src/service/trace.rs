//! Request logging: one `tracing` event per request with its method, path, status and
//! duration.

use std::time::Instant;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

/// Logs each request once it is answered, at INFO (DEBUG for `/v1/health` and `/health`, which
/// monitors poll),
/// with the fields `method`, `path`, `status` and `duration_us`. The query string is left out:
/// it is the client's to log.
pub(super) async fn log_request(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let start = Instant::now();
    let response = next.run(request).await;
    let duration_us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
    let status = response.status().as_u16();
    if path == "/v1/health" || path == "/health" {
        tracing::debug!(%method, %path, status, duration_us, "request");
    } else {
        tracing::info!(%method, %path, status, duration_us, "request");
    }
    response
}
