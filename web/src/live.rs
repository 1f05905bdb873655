//! Conflux's live job view: one page and its script and style sheet, embedded in the binary.
//! The page polls Flink's REST API of the server it came from (or of `?jobmanager=URL`, which
//! must allow cross-origin reads, as Flink's and Conflux's do), every `?refresh=MS` ms
//! (default 1,000, at least 200).

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

/// The page's files: (URL path, content type, content). The page is also served at `/`.
pub const LIVE_ASSETS: [(&str, &str, &str); 3] = [
    (
        "/conflux/live.html",
        "text/html; charset=utf-8",
        include_str!("../assets/live.html"),
    ),
    (
        "/conflux/live.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/live.js"),
    ),
    (
        "/conflux/live.css",
        "text/css; charset=utf-8",
        include_str!("../assets/live.css"),
    ),
];

/// One embedded file, never cached (a new binary may change it).
fn asset(
    content_type: &'static str,
    content: &'static str,
) -> impl IntoResponse + Clone + Send + Sync + 'static {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        content,
    )
}

/// The live view's files at their paths of [`LIVE_ASSETS`] (all under `/conflux/`), for any
/// router state: the planning service serves them so that
/// `/conflux/live.html?jobmanager=http://HOST:PORT` watches a cluster from it.
pub fn live_assets<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let mut router = Router::new();
    for (path, content_type, content) in LIVE_ASSETS {
        router = router.route(path, get(asset(content_type, content)));
    }
    router
}

/// The live view's routes: `GET /` (the page) and [`live_assets`]. They leave every path of
/// Flink's REST API free, so the router merges with the API's.
pub fn live_view() -> Router {
    let (_, page_type, page) = LIVE_ASSETS[0];
    live_assets().route("/", get(asset(page_type, page)))
}
