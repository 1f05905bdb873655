//! The HTTP face of the server (axum): routes, the bearer-token check, and the mapping of
//! [`BlobError`] to status codes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, put};
use axum::Router;
use bytes::Bytes;
use conflux_blob_api::{BlobError, BlobKey, BlobKind, JobId};
use futures_util::StreamExt;
use tokio_util::io::ReaderStream;

use crate::protocol::{JobList, LIMIT_HEADER, REFERENCES_HEADER};

use super::download::Download;
use super::state::ServerCore;

/// At most this much of a rejected upload is read (and discarded) so that the client gets to
/// read the 413 instead of a reset connection; past it the connection is closed.
const DRAIN_BYTES: u64 = 8 << 20;
/// And for at most this long.
const DRAIN_TIME: Duration = Duration::from_secs(2);

/// Bytes read from a blob file per step of a download: the memory a download holds.
const STREAM_BUFFER: usize = 64 << 10;

type Core = Arc<ServerCore>;

/// The server's routes (the protocol [`BlobServer`](crate::BlobServer) documents) over `core`.
pub(super) fn router(core: Core) -> Router {
    let blobs = Router::new()
        .route("/blobs/{key}", get(get_blob).delete(delete_blob))
        .route("/blobs/{kind}/{job}", put(put_blob))
        .route("/jobs", get(list_jobs))
        .route("/jobs/{job}", delete(delete_job))
        .route_layer(middleware::from_fn_with_state(Arc::clone(&core), authorize));
    Router::new()
        .route("/health", get(|| async { "ok\n" }))
        .merge(blobs)
        // Uploads are streamed and capped by `max_blob_bytes` in `put_stream`.
        .layer(DefaultBodyLimit::disable())
        .layer(middleware::from_fn(log_request))
        .with_state(core)
}

/// Logs every request once answered: method, path, status and the time to the answer's head
/// in ms (a download's body may still be streaming), at `debug` level: the simulator makes
/// thousands of requests. Failures are also logged by [`error_response`], server errors at
/// `error`.
async fn log_request(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    let duration_ms = started.elapsed().as_secs_f64() * 1e3;
    tracing::debug!(
        method = %method,
        path = %path,
        status = response.status().as_u16(),
        duration_ms,
        "blob request"
    );
    response
}

/// The HTTP status of an error.
fn status_of(error: &BlobError) -> StatusCode {
    match error {
        BlobError::NotFound(_) => StatusCode::NOT_FOUND,
        BlobError::InvalidKey(_) => StatusCode::BAD_REQUEST,
        BlobError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        BlobError::Unauthorized => StatusCode::UNAUTHORIZED,
        BlobError::BadUpload { .. } => StatusCode::BAD_REQUEST,
        BlobError::UploadStalled { .. } => StatusCode::REQUEST_TIMEOUT,
        BlobError::Remote(_) | BlobError::Transport { .. } => StatusCode::BAD_GATEWAY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

fn error_response(error: &BlobError) -> Response {
    let status = status_of(error);
    if status.is_server_error() {
        tracing::error!(error = %error, "blob request failed");
    } else {
        tracing::debug!(error = %error, "blob request rejected");
    }
    let mut response = (status, format!("{}\n", public_message(error))).into_response();
    let headers = response.headers_mut();
    match error {
        BlobError::TooLarge { limit, .. } => {
            headers.insert(LIMIT_HEADER, HeaderValue::from(*limit));
        }
        BlobError::Unauthorized => {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        _ => {}
    }
    response
}

/// The body of an error answer: the message of errors about the request, which name only
/// keys, jobs and sizes; a generic text for failures of the server itself, whose messages name
/// its files and stores (those go to the server's log only).
fn public_message(error: &BlobError) -> String {
    match error {
        BlobError::NotFound(_)
        | BlobError::InvalidKey(_)
        | BlobError::DigestMismatch { .. }
        | BlobError::TooLarge { .. }
        | BlobError::Unauthorized
        | BlobError::BadUpload { .. }
        | BlobError::UploadStalled { .. } => error.to_string(),
        BlobError::Io { .. } => "I/O failure on the blob server (details in its log)".to_owned(),
        BlobError::Store { .. } => {
            "durable blob store failure (details in the blob server's log)".to_owned()
        }
        _ => "internal error of the blob server (details in its log)".to_owned(),
    }
}

/// Compares without an early exit, so the time taken does not reveal a prefix of the token.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

async fn authorize(State(core): State<Core>, request: Request, next: Next) -> Response {
    if let Some(token) = &core.auth_token {
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "));
        if !presented.is_some_and(|given| same_secret(given.as_bytes(), token.as_bytes())) {
            return error_response(&BlobError::Unauthorized);
        }
    }
    next.run(request).await
}

async fn get_blob(State(core): State<Core>, Path(key): Path<String>) -> Response {
    let key = match key.parse::<BlobKey>() {
        Ok(key) => key,
        Err(e) => return error_response(&e),
    };
    let mut response = match core.open(&key).await {
        Ok(Download::File { file, len }) => {
            // Bounded memory per connection: at most one buffer of the file at a time, and
            // nothing read ahead while the client does not take it.
            let stream =
                ReaderStream::with_capacity(tokio::fs::File::from_std(file), STREAM_BUFFER);
            let mut response = Body::from_stream(stream).into_response();
            response
                .headers_mut()
                .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
            response
        }
        Ok(Download::Bytes(bytes)) => bytes.into_response(),
        Err(e) => return error_response(&e),
    };
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    response
}

async fn delete_blob(State(core): State<Core>, Path(key): Path<String>) -> Response {
    let key = match key.parse::<BlobKey>() {
        Ok(key) => key,
        Err(e) => return error_response(&e),
    };
    match core.delete(&key).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => error_response(&e),
    }
}

/// `GET /jobs`: the jobs with blobs here, as `{"jobs": ["<job hex>", ...]}`, sorted.
async fn list_jobs(State(core): State<Core>) -> Response {
    let list = JobList {
        jobs: core.jobs().iter().map(ToString::to_string).collect(),
    };
    match serde_json::to_string(&list) {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => error_response(&BlobError::Internal(format!("encoding the job list: {e}"))),
    }
}

async fn delete_job(State(core): State<Core>, Path(job): Path<String>) -> Response {
    let job = match job.parse::<JobId>() {
        Ok(job) => job,
        Err(e) => return error_response(&e),
    };
    match core.cleanup_job(job).await {
        Ok(_) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => error_response(&e),
    }
}

fn parse_kind(kind: &str) -> Result<BlobKind, BlobError> {
    match kind {
        "permanent" | "p" => Ok(BlobKind::Permanent),
        "transient" | "t" => Ok(BlobKind::Transient),
        other => Err(BlobError::InvalidKey(format!(
            "'{}' is not a blob kind (permanent or transient)",
            other.escape_debug()
        ))),
    }
}

fn parse_job(job: &str) -> Result<Option<JobId>, BlobError> {
    match job {
        "no_job" => Ok(None),
        hex => hex.parse().map(Some),
    }
}

async fn put_blob(
    State(core): State<Core>,
    Path((kind, job)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let (kind, job) = match (parse_kind(&kind), parse_job(&job)) {
        (Ok(kind), Ok(job)) => (kind, job),
        (Err(e), _) | (_, Err(e)) => return error_response(&e),
    };
    let declared_len = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    let mut stream = body.into_data_stream();
    match core.put_stream(kind, job, &mut stream, declared_len).await {
        Ok((key, refs)) => {
            let mut response = (StatusCode::CREATED, format!("{key}\n")).into_response();
            let headers = response.headers_mut();
            if let Ok(location) = HeaderValue::from_str(&format!("/blobs/{key}")) {
                headers.insert(header::LOCATION, location);
            }
            headers.insert(REFERENCES_HEADER, HeaderValue::from(refs));
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            response
        }
        Err(e) => {
            if matches!(e, BlobError::TooLarge { .. }) {
                drain(&mut stream, declared_len).await;
            }
            error_response(&e)
        }
    }
}

/// Reads and discards what is left of a rejected upload, within [`DRAIN_BYTES`] and
/// [`DRAIN_TIME`], so that HTTP/1 clients that send the whole body before reading the answer
/// see the 413. Nothing is written.
async fn drain<S>(stream: &mut S, declared_len: Option<u64>)
where
    S: futures_util::Stream<Item = Result<Bytes, axum::Error>> + Unpin,
{
    if declared_len.is_some_and(|len| len > DRAIN_BYTES) {
        return;
    }
    let discard = async {
        let mut drained = 0u64;
        while let Some(Ok(chunk)) = stream.next().await {
            drained += chunk.len() as u64;
            if drained > DRAIN_BYTES {
                break;
            }
        }
    };
    tokio::time::timeout(DRAIN_TIME, discard).await.ok();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abd", b"abc"));
        assert!(!same_secret(b"ab", b"abc"));
        assert!(!same_secret(b"", b"abc"));
    }

    #[test]
    fn kinds_and_jobs_parse_strictly() {
        assert_eq!(parse_kind("permanent").ok(), Some(BlobKind::Permanent));
        assert_eq!(parse_kind("t").ok(), Some(BlobKind::Transient));
        assert!(parse_kind("../x").is_err());
        assert_eq!(parse_job("no_job").ok(), Some(None));
        assert!(parse_job("..").is_err());
    }
}
