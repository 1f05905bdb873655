//! Flink's dashboard from a directory: `GET`/`HEAD` of the files under it, `index.html` for `/`
//! and for directories, content types by file extension, ranges, gzip for clients that accept
//! it. Paths are resolved inside the directory only: `..`, absolute paths and drive prefixes
//! (also percent-encoded) answer 404, never a file outside it. Files are streamed in chunks
//! (`tower-http`'s `ServeDir`), so an answer holds a bounded buffer whatever the file's size.

use std::path::{Path, PathBuf};

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Router;
use tower_http::compression::CompressionLayer;
use tower_http::services::ServeDir;

/// A `--web-ui-dir` that cannot serve a dashboard.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebUiDirError {
    /// The directory has no `index.html` (or it cannot be read).
    #[error(
        "--web-ui-dir {}: no index.html in it ({source}); it must be the `web/` folder of Flink's \
         flink-dist jar (unzip flink-dist-1.20.3.jar 'web/*')",
        .dir.display()
    )]
    NoIndex {
        /// The directory given.
        dir: PathBuf,
        /// Why `index.html` could not be read.
        source: std::io::Error,
    },
}

/// Checks that `dir` holds a dashboard: an `index.html` that is a readable file.
///
/// # Errors
/// [`WebUiDirError::NoIndex`] naming the directory.
pub fn check_web_ui_dir(dir: &Path) -> Result<(), WebUiDirError> {
    let index = dir.join("index.html");
    std::fs::File::open(&index)
        .and_then(|f| f.metadata())
        .and_then(|m| {
            if m.is_file() {
                Ok(())
            } else {
                Err(std::io::Error::other("not a file"))
            }
        })
        .map_err(|source| WebUiDirError::NoIndex {
            dir: dir.to_owned(),
            source,
        })
}

/// The answer for a path that names no file: Flink's `StaticFileServerHandler`'s 404 with its
/// error body, `{"errors": ["File not found."]}`.
async fn file_not_found() -> impl IntoResponse {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "application/json; charset=UTF-8")],
        r#"{"errors":["File not found."]}"#,
    )
}

/// The files under `dir` as a router with only a fallback, meant as the REST API's
/// [`Router::fallback_service`]: the API's routes answer first, every other path is a file.
/// Methods other than `GET` and `HEAD` answer 405.
///
/// # Errors
/// [`WebUiDirError`] when `dir` has no `index.html` ([`check_web_ui_dir`]).
pub fn flink_dashboard(dir: &Path) -> Result<Router, WebUiDirError> {
    check_web_ui_dir(dir)?;
    let files = ServeDir::new(dir)
        .append_index_html_on_directories(true)
        .not_found_service(axum::routing::any(file_not_found));
    Ok(Router::new()
        .fallback_service(files)
        .layer(CompressionLayer::new()))
}
