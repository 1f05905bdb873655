//! The plan viewer: a page served at `/` that opens a plan (a file or pasted JSON), draws its
//! job graph and drives the API under `/v1` (statistics, regions, edits, diffs, compatibility).
//! Plain HTML, CSS and JavaScript with no build step, embedded in the binary with the layout
//! library it uses (`@dagrejs/dagre`, vendored under `planner/web/vendor/` with its licence), so
//! the page works offline.

use std::sync::Arc;

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::api_error::{ApiError, ErrorBody};
use super::state::AppState;

/// The page.
const INDEX_HTML: &str = include_str!("../../web/index.html");

/// The page's assets by name: (name, content type, content).
const ASSETS: [(&str, &str, &str); 3] = [
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/app.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../web/style.css"),
    ),
    (
        "dagre.min.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/vendor/dagre.min.js"),
    ),
];

/// The page's routes, with their OpenAPI description.
pub(super) fn routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new()
        .routes(routes!(index))
        .routes(routes!(asset))
}

/// `GET /`: the plan viewer.
#[utoipa::path(get, path = "/", tag = "plan viewer",
    responses((status = 200, description = "the plan viewer's page", content_type = "text/html")))]
async fn index() -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        INDEX_HTML,
    )
        .into_response()
}

/// `GET /assets/{file}`: the page's script, style sheet and layout library.
#[utoipa::path(get, path = "/assets/{file}", tag = "plan viewer",
    params(("file" = String, Path, description = "`app.js`, `style.css` or `dagre.min.js`", example = "app.js")),
    responses((status = 200, description = "the asset"),
        (status = 404, description = "no such asset", body = ErrorBody)))]
async fn asset(Path(file): Path<String>) -> Result<Response, ApiError> {
    let (_, content_type, content) = ASSETS
        .iter()
        .find(|(name, _, _)| *name == file)
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "unknown_endpoint",
                format!("no asset '{file}' (app.js, style.css, dagre.min.js)"),
            )
        })?;
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, *content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        *content,
    )
        .into_response())
}
