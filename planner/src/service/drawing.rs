//! `GET /v1/plans/{id}/layout`: a version's job graph laid out as the CLI's SVG lays it out
//! ([`crate::picture::drawing()`]), for the plan viewer, which draws these boxes and routes as
//! they are. Computed per request (the layout is about linear, tens of milliseconds for
//! thousands of vertices) as a computation (see [`AppState::compute`]).

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use conflux_graph::JobGraph;
use serde::Deserialize;

use super::api_error::{json_response, ApiError, ApiResult, ErrorBody};
use super::state::AppState;
use crate::error::PlanError;
use crate::picture::{self, Direction, Options, PictureError};

/// `?version=n&direction=LR|TB` of `/plans/{id}/layout`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct LayoutQuery {
    version: Option<String>,
    direction: Option<String>,
}

impl LayoutQuery {
    fn direction(&self) -> Result<Direction, ApiError> {
        match self.direction.as_deref() {
            None | Some("LR") => Ok(Direction::LeftToRight),
            Some("TB") => Ok(Direction::TopToBottom),
            Some(other) => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_query",
                format!("direction '{other}' is not LR or TB"),
            )),
        }
    }
}

/// `GET /v1/plans/{id}/layout`: a version's drawing.
#[utoipa::path(get, path = "/plans/{id}/layout", tag = "plans",
    params(("id" = String, Path, description = "plan id, e.g. p1", example = "p1"),
        ("version" = Option<u32>, Query, description = "version number (default: the latest)"),
        ("direction" = Option<String>, Query, description = "`LR` (sources on the left, the default) or `TB` (sources on top)")),
    responses((status = 200, description = "vertex boxes with their wrapped names, edge routes and label boxes, px", body = picture::Drawing),
        (status = "4XX", description = "unknown plan or version, bad query, too many vertices to lay out", body = ErrorBody)))]
pub(super) async fn layout(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    query: Result<Query<LayoutQuery>, QueryRejection>,
) -> ApiResult {
    let Query(query) = query?;
    let direction = query.direction()?;
    let version = super::query::whole_number("version", query.version.as_deref())?;
    let (_, plan) = state.store().version(&id, version)?;
    let drawing = state
        .compute("the layout", move || {
            let job = JobGraph::from_json(&plan).map_err(PlanError::from)?;
            let options = Options {
                direction,
                ..Options::default()
            };
            picture::drawing(&job, &options).map_err(|e| match e {
                PictureError::TooLarge { .. } => {
                    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "too_large", e.to_string())
                }
                e => ApiError::new(StatusCode::BAD_REQUEST, "bad_plan", e.to_string()),
            })
        })
        .await??;
    json_response(StatusCode::OK, &drawing)
}
