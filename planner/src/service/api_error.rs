//! Error answers and JSON responses of the service: every error is `{"error": "...", "code":
//! "..."}` with a 4xx status naming the problem (5xx only for bugs).

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::http::{header, StatusCode};
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

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({ "error": self.message, "code": self.code }).to_string();
        (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response()
    }
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

/// JSON bytes as an answer with `status`.
pub(super) fn bytes_response(status: StatusCode, body: Bytes) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
