//! Flink's dashboard served from a directory: index at `/`, content types, no way out of the
//! directory, Flink's 404, only `GET` and `HEAD`; and the live view's routes.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt as _;
use tower::ServiceExt as _;

/// A dashboard directory: `index.html`, a script, a style sheet, an image under `assets/`, and
/// a secret file beside the directory.
fn dashboard() -> (tempfile::TempDir, Router) {
    let root = tempfile::tempdir().expect("tempdir");
    std::fs::write(root.path().join("secret.txt"), "outside").expect("secret");
    let web = root.path().join("web");
    std::fs::create_dir_all(web.join("assets/images")).expect("dirs");
    std::fs::write(
        web.join("index.html"),
        "<!doctype html><title>Flink</title>",
    )
    .expect("index");
    std::fs::write(web.join("main.1234.js"), "console.log(1)").expect("js");
    std::fs::write(web.join("styles.css"), "body{}").expect("css");
    std::fs::write(web.join("assets/images/flink.svg"), "<svg/>").expect("svg");
    let router = conflux_web::flink_dashboard(&web).expect("a dashboard");
    (root, router)
}

async fn get(router: &Router, method: Method, path: &str) -> (StatusCode, String, String) {
    let response = router
        .clone()
        .oneshot(
            Request::builder()
                .method(method)
                .uri(path)
                .body(Body::empty())
                .expect("request"),
        )
        .await
        .expect("infallible");
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().expect("ascii").to_owned())
        .unwrap_or_default();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (
        status,
        content_type,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

#[tokio::test]
async fn serves_files_with_their_content_types_and_index_at_the_root() {
    let (_root, router) = dashboard();
    for (path, content_type, body) in [
        ("/", "text/html", "<!doctype html><title>Flink</title>"),
        (
            "/index.html",
            "text/html",
            "<!doctype html><title>Flink</title>",
        ),
        ("/main.1234.js", "text/javascript", "console.log(1)"),
        ("/styles.css", "text/css", "body{}"),
        ("/assets/images/flink.svg", "image/svg+xml", "<svg/>"),
    ] {
        let (status, ct, got) = get(&router, Method::GET, path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(ct.starts_with(content_type), "{path}: {ct}");
        assert_eq!(got, body, "{path}");
    }
    let (status, _, body) = get(&router, Method::HEAD, "/styles.css").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, ""));
}

#[tokio::test]
async fn paths_out_of_the_directory_and_unknown_files_answer_flinks_404() {
    let (_root, router) = dashboard();
    for path in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/assets/..%2f..%2fsecret.txt",
        "/assets/%2e%2e/%2e%2e/secret.txt",
        "/nothing.js",
        "/jobs/0123/vertices",
    ] {
        let (status, ct, body) = get(&router, Method::GET, path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert!(ct.starts_with("application/json"), "{path}: {ct}");
        assert_eq!(body, r#"{"errors":["File not found."]}"#, "{path}");
    }
    let (status, _, _) = get(&router, Method::POST, "/index.html").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
}

#[test]
fn a_directory_without_index_html_is_refused_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = conflux_web::flink_dashboard(dir.path()).expect_err("no index.html");
    let message = err.to_string();
    assert!(
        message.contains(&dir.path().display().to_string()) && message.contains("index.html"),
        "{message}"
    );
}

#[tokio::test]
async fn the_live_view_is_served_at_the_root_with_its_script_and_style_sheet() {
    let router = conflux_web::live_view();
    let (status, ct, page) = get(&router, Method::GET, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(ct.starts_with("text/html"), "{ct}");
    assert!(page.contains("/conflux/live.js") && page.contains("/conflux/live.css"));
    for (path, content_type, content) in conflux_web::LIVE_ASSETS {
        let (status, ct, body) = get(&router, Method::GET, path).await;
        assert_eq!(
            (status, ct.as_str()),
            (StatusCode::OK, content_type),
            "{path}"
        );
        assert_eq!(body, content, "{path}");
    }
    // It reads Flink's REST API only.
    let script = conflux_web::LIVE_ASSETS[1].2;
    for endpoint in ["/jobs/overview", "/taskmanagers", "`/jobs/${selected}`"] {
        assert!(script.contains(endpoint), "{endpoint}");
    }
}
