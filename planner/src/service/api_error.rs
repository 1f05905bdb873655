//! Error answers and JSON responses of the service: every error is Flink's REST error shape,
//! `{"errors": ["..."]}` (Flink's `ErrorResponseBody`), plus a stable `code`, with a 4xx status
//! naming the problem (5xx only for bugs). Errors that axum answers itself (an unreadable path,
//! a rejected body) are rewritten into that shape by [`flink_errors`].

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::json;

use crate::error::PlanError;

/// An error answer: status, a stable code and a message naming the problem.
#[derive(Debug)]
pub(super) struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    pub(super) fn new(
        status: StatusCode,
        code: &'static str,
        message: impl Into<String>,
    ) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    /// A 400 `bad_query`.
    pub(super) fn bad_query(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_query", message)
    }

    /// A 500 `bug`.
    pub(super) fn bug(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "bug", message)
    }
}

impl From<PlanError> for ApiError {
    fn from(e: PlanError) -> Self {
        let (status, code) = match &e {
            PlanError::Graph(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_plan"),
            PlanError::UnknownVertex(_)
            | PlanError::UnknownEdge { .. }
            | PlanError::UnknownOperator { .. }
            | PlanError::UnknownState { .. } => (StatusCode::NOT_FOUND, "unknown_item"),
            PlanError::UnknownVersion { .. } => (StatusCode::NOT_FOUND, "unknown_version"),
            PlanError::AmbiguousVertex { .. } => (StatusCode::BAD_REQUEST, "ambiguous_vertex"),
            PlanError::Refused { .. } => (StatusCode::CONFLICT, "edit_refused"),
            PlanError::LastVersion { .. } => (StatusCode::CONFLICT, "last_version"),
            PlanError::CompiledPlan(_) | PlanError::DuplicateKey { .. } => {
                (StatusCode::UNPROCESSABLE_ENTITY, "invalid_compiled_plan")
            }
            PlanError::Duration { .. } => (StatusCode::BAD_REQUEST, "invalid_duration"),
            PlanError::Descriptors { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "bug"),
        };
        ApiError::new(status, code, e.to_string())
    }
}

impl From<BytesRejection> for ApiError {
    fn from(r: BytesRejection) -> Self {
        let status = r.status();
        let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "body_too_large"
        } else {
            "bad_body"
        };
        ApiError::new(status, code, r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        ApiError::bad_query(format!("malformed query string: {}", r.body_text()))
    }
}

/// The body of every error answer: Flink's `ErrorResponseBody` (`{"errors": [...]}`, one
/// message naming the problem) with a stable machine-readable `code`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct ErrorBody {
    /// The messages (one), e.g. `unknown plan 'p9'`.
    errors: Vec<String>,
    /// A stable code, e.g. `unknown_plan`, `edit_refused`, `body_too_large` (README).
    code: &'static str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({ "errors": [self.message], "code": self.code }).to_string();
        (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response()
    }
}

/// Largest body of an error answered by axum itself that is carried into the message (its
/// rejections are one line).
const MAX_REWRITTEN_BYTES: usize = 4096;

/// Rewrites an error answer that is not JSON (axum's own rejections and fallbacks, answered as
/// plain text) into [`ErrorBody`], keeping its status and its text as the message, so that every
/// 4xx and 5xx of the service has one shape.
pub(super) async fn flink_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response.headers().get(header::CONTENT_TYPE)
        == Some(&HeaderValue::from_static("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let text = match axum::body::to_bytes(response.into_body(), MAX_REWRITTEN_BYTES).await {
        Ok(bytes) if !bytes.is_empty() => String::from_utf8_lossy(&bytes).trim().to_owned(),
        _ => status
            .canonical_reason()
            .unwrap_or("error")
            .to_ascii_lowercase(),
    };
    let code = match status {
        StatusCode::PAYLOAD_TOO_LARGE => "body_too_large",
        StatusCode::NOT_FOUND => "unknown_endpoint",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        s if s.is_server_error() => "bug",
        _ => "bad_request",
    };
    ApiError::new(status, code, text).into_response()
}

/// What a handler answers.
pub(super) type ApiResult = Result<Response, ApiError>;

/// `value` as JSON bytes; a value that does not serialise is a bug.
pub(super) fn to_bytes(value: &impl Serialize) -> Result<Bytes, ApiError> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(|e| ApiError::bug(format!("bug: response does not serialise: {e}")))
}

/// `value` as a JSON answer with `status`.
pub(super) fn json_response(status: StatusCode, value: &impl Serialize) -> ApiResult {
    Ok(bytes_response(status, to_bytes(value)?))
}

/// `value` as a 201 answer with `Location: location` (the path of what was created).
pub(super) fn created(location: &str, value: &impl Serialize) -> ApiResult {
    let mut response = bytes_response(StatusCode::CREATED, to_bytes(value)?);
    let location = HeaderValue::from_str(location)
        .map_err(|e| ApiError::bug(format!("bug: location '{location}': {e}")))?;
    response.headers_mut().insert(header::LOCATION, location);
    Ok(response)
}

/// JSON bytes as an answer with `status`.
pub(super) fn bytes_response(status: StatusCode, body: Bytes) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
