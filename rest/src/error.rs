//! Errors as Flink's REST API answers them: `{"errors": ["..."]}` with a 4xx status (5xx only
//! for bugs), also for what axum refuses by itself (a malformed path, an unknown route, a
//! method the route does not take: 405 with `Allow`).

use axum::body::Bytes;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// The body of every error answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct ErrorResponse {
    /// What went wrong, one message.
    pub errors: Vec<String>,
}

/// Flink's content type of JSON answers.
pub(crate) const JSON: &str = "application/json; charset=UTF-8";

/// An error answer.
#[derive(Debug)]
pub(crate) struct RestError {
    status: StatusCode,
    message: String,
}

impl RestError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> RestError {
        RestError {
            status,
            message: message.into(),
        }
    }

    /// 400: a path parameter that does not parse, in Flink's words.
    pub(crate) fn bad_parameter(name: &str, value: &str) -> RestError {
        RestError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "Bad request, could not parse parameters: Cannot resolve path parameter ({name}) from value \"{value}\"."
            ),
        )
    }

    /// 500: a bug.
    pub(crate) fn bug(message: impl Into<String>) -> RestError {
        RestError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }
}

impl IntoResponse for RestError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&ErrorResponse {
            errors: vec![self.message],
        })
        .unwrap_or_default();
        (
            self.status,
            [(header::CONTENT_TYPE, JSON)],
            Bytes::from(body),
        )
            .into_response()
    }
}

/// Most bytes of a non-JSON error body kept when rewriting it.
const MAX_REWRITTEN_BYTES: usize = 4 << 10;

/// Rewrites error answers that are not JSON (axum's rejections and its default 404 and 405)
/// into Flink's shape, keeping their status and headers (`Allow`), and adds Flink's
/// `Access-Control-Allow-Origin: *` to every answer.
pub(crate) async fn flink_shape(request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    let method = request.method().clone();
    let mut response = next.run(request).await;
    response.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, MAX_REWRITTEN_BYTES).await {
        Ok(bytes) if !bytes.is_empty() => String::from_utf8_lossy(&bytes).trim().to_owned(),
        _ => match status {
            StatusCode::NOT_FOUND => format!("Not found: {path}"),
            StatusCode::METHOD_NOT_ALLOWED => format!("Method not allowed: {method} {path}"),
            _ => status.canonical_reason().unwrap_or("error").to_owned(),
        },
    };
    let mut rewritten = RestError::new(status, text).into_response();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            rewritten.headers_mut().insert(name.clone(), value.clone());
        }
    }
    rewritten
}
