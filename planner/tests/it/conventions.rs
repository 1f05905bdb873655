//! The service's conventions over real HTTP: the `/v1` prefix (the unprefixed paths still
//! answer the same), `Location` on creation, `DELETE` of plans and versions, Flink's error shape
//! for every error, and the OpenAPI document listing every route.

use std::collections::BTreeSet;

use conflux_planner::service::{RunningService, ServiceConfig};
use serde_json::{json, Value};

use crate::flink_fixture;

fn start(config: ServiceConfig) -> RunningService {
    RunningService::start(ServiceConfig {
        address: "127.0.0.1:0".parse().expect("addr"),
        ..config
    })
    .expect("service starts")
}

/// One request on a fresh connection: `(status, headers in lower case, body)`.
fn raw(
    addr: std::net::SocketAddr,
    method: &str,
    target: &str,
    body: &[u8],
) -> (u16, String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("timeout");
    let head = format!(
        "{method} {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).expect("head");
    // A server refusing a large body may close before reading it all.
    let _ = s.write_all(body);
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let split = answer
        .find("\r\n\r\n")
        .unwrap_or_else(|| panic!("{method} {target}: {answer}"));
    let status = answer[9..12].parse().expect("status");
    (
        status,
        answer[..split].to_ascii_lowercase(),
        answer[split + 4..].to_owned(),
    )
}

fn json_of(method: &str, target: &str, body: &str) -> Value {
    serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("{method} {target}: not JSON ({e}): {body}"))
}

/// `(status, body as JSON)`.
fn call(addr: std::net::SocketAddr, method: &str, target: &str, body: &[u8]) -> (u16, Value) {
    let (status, _, text) = raw(addr, method, target, body);
    let value = if text.is_empty() {
        Value::Null
    } else {
        json_of(method, target, &text)
    };
    (status, value)
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .map(str::trim)
}

fn q5() -> Vec<u8> {
    std::fs::read(flink_fixture("tpch-q5.plan.json")).expect("q5")
}

#[test]
fn v1_paths_location_headers_and_deletes() {
    let service = start(ServiceConfig::default());
    let addr = service.addr();

    let (s, head, body) = raw(addr, "POST", "/v1/plans", &q5());
    assert_eq!(s, 201, "{body}");
    assert_eq!(header(&head, "location"), Some("/v1/plans/p1"));
    assert_eq!(json_of("POST", "/v1/plans", &body)["id"], "p1");
    let (s, v1) = call(addr, "GET", "/v1/plans/p1", b"");
    assert_eq!((s, v1["latest"].as_u64()), (200, Some(1)), "{v1}");
    // The unprefixed path is a deprecated alias answering the same.
    assert_eq!(call(addr, "GET", "/plans/p1", b""), (200, v1));

    let edit = br#"{"kind": "set_parallelism", "vertex": "a0ee7b14d617ba4d8109c408f52753c7", "parallelism": 4}"#;
    let (s, head, body) = raw(addr, "POST", "/v1/plans/p1/edits", edit);
    assert_eq!(s, 201, "{body}");
    assert_eq!(header(&head, "location"), Some("/v1/plans/p1/versions/2"));
    let (s, plan) = call(addr, "GET", "/v1/plans/p1/versions/2", b"");
    assert_eq!(s, 200);
    let agg = plan["vertices"]
        .as_array()
        .expect("vertices")
        .iter()
        .find(|v| v["id"] == "a0ee7b14d617ba4d8109c408f52753c7")
        .expect("the aggregate");
    assert_eq!(agg["parallelism"], 4);
    call(addr, "GET", "/v1/plans/p1/stats?version=2", b"");

    // Deleting version 2 (with its cached statistics): gone, and its number is not given again.
    assert_eq!(
        call(addr, "DELETE", "/v1/plans/p1/versions/2", b""),
        (204, Value::Null)
    );
    let (s, v) = call(addr, "GET", "/v1/plans/p1/versions/2", b"");
    assert_eq!(
        (s, v["code"].as_str()),
        (404, Some("unknown_version")),
        "{v}"
    );
    let (s, head, _) = raw(addr, "POST", "/v1/plans/p1/edits", edit);
    assert_eq!(
        (s, header(&head, "location")),
        (201, Some("/v1/plans/p1/versions/3"))
    );
    let (_, v) = call(addr, "GET", "/v1/plans/p1/versions", b"");
    let numbers: Vec<u64> = v["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .filter_map(|v| v["number"].as_u64())
        .collect();
    assert_eq!(numbers, [1, 3]);
    // Version 1 can go; the last one left cannot.
    assert_eq!(call(addr, "DELETE", "/v1/plans/p1/versions/1", b"").0, 204);
    let (s, v) = call(addr, "DELETE", "/v1/plans/p1/versions/3", b"");
    assert_eq!((s, v["code"].as_str()), (409, Some("last_version")), "{v}");

    assert_eq!(call(addr, "DELETE", "/v1/plans/p1", b"").0, 204);
    for target in ["/v1/plans/p1", "/v1/plans/p1/stats"] {
        let (s, v) = call(addr, "GET", target, b"");
        assert_eq!(
            (s, v["code"].as_str()),
            (404, Some("unknown_plan")),
            "{target}: {v}"
        );
    }
    let (s, v) = call(addr, "DELETE", "/v1/plans/p1", b"");
    assert_eq!(
        (s, v["errors"][0].as_str()),
        (404, Some("unknown plan 'p1'"))
    );
    let (s, v) = call(addr, "GET", "/v1/plans", b"");
    assert_eq!((s, v), (200, json!({"plans": []})));
}

/// After `--max-plans` every POST got 507 until a restart: a DELETE frees the slot.
#[test]
fn deleting_a_plan_frees_its_max_plans_slot() {
    let service = start(ServiceConfig {
        max_plans: 2,
        ..ServiceConfig::default()
    });
    let addr = service.addr();
    for id in ["p1", "p2"] {
        let (s, v) = call(addr, "POST", "/v1/plans", &q5());
        assert_eq!((s, v["id"].as_str()), (201, Some(id)), "{v}");
    }
    let (s, v) = call(addr, "POST", "/v1/plans", &q5());
    assert_eq!(
        (s, v["code"].as_str()),
        (507, Some("too_many_plans")),
        "{v}"
    );
    assert_eq!(call(addr, "DELETE", "/v1/plans/p1", b"").0, 204);
    let (s, v) = call(addr, "POST", "/v1/plans", &q5());
    assert_eq!(s, 201, "{v}");
    let (_, list) = call(addr, "GET", "/v1/plans", b"");
    let ids: Vec<&str> = list["plans"]
        .as_array()
        .expect("plans")
        .iter()
        .filter_map(|p| p["id"].as_str())
        .collect();
    assert_eq!(ids, ["p2", v["id"].as_str().expect("id")]);
    let (s, v) = call(addr, "POST", "/v1/plans", &q5());
    assert_eq!(
        (s, v["code"].as_str()),
        (507, Some("too_many_plans")),
        "{v}"
    );
}

/// Every error, also those axum answers itself (an unreadable path segment, a body above the
/// limit, an unknown route), is `{"errors": ["..."], "code": "..."}` as JSON.
#[test]
fn every_error_is_flink_shaped() {
    let service = start(ServiceConfig {
        max_body_bytes: 1 << 16,
        ..ServiceConfig::default()
    });
    let addr = service.addr();
    assert_eq!(call(addr, "POST", "/v1/plans", &q5()).0, 201);
    let big = vec![b' '; 1 << 17];
    let cases: [(&str, &str, &[u8], u16, &str); 10] = [
        ("POST", "/v1/plans", b"{not json", 422, "invalid_plan"),
        ("POST", "/v1/plans", &big, 413, "body_too_large"),
        ("POST", "/v1/compat", b"{\"old\": 1}", 400, "bad_body"),
        (
            "POST",
            "/v1/plans/p1/edits",
            b"{\"kind\": 7}",
            400,
            "bad_edit",
        ),
        ("GET", "/v1/plans/p1/stats?version=x", b"", 400, "bad_query"),
        ("GET", "/v1/plans/p1/versions/one", b"", 400, "bad_version"),
        ("GET", "/v1/plans/%FF%FE", b"", 400, "bad_request"),
        ("GET", "/v1/nowhere", b"", 404, "unknown_endpoint"),
        ("PUT", "/v1/plans/p1", b"", 405, "method_not_allowed"),
        ("GET", "/assets/missing.js", b"", 404, "unknown_endpoint"),
    ];
    for (method, target, body, status, code) in cases {
        let (s, head, text) = raw(addr, method, target, body);
        assert_eq!(s, status, "{method} {target}: {text}");
        assert_eq!(
            header(&head, "content-type"),
            Some("application/json"),
            "{target}"
        );
        let v = json_of(method, target, &text);
        let errors = v["errors"]
            .as_array()
            .unwrap_or_else(|| panic!("{target}: {v}"));
        assert_eq!(errors.len(), 1, "{target}: {v}");
        assert!(
            !errors[0].as_str().unwrap_or_default().is_empty(),
            "{target}: {v}"
        );
        assert_eq!(v["code"], code, "{target}: {v}");
        assert_eq!(
            v.as_object().map(|o| o.len()),
            Some(2),
            "only errors and code: {v}"
        );
    }
}

/// The README's endpoint table: `(method, path)` of each row, query strings left out.
fn readme_endpoints() -> BTreeSet<(String, String)> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README");
    // The planning API's section only: the JobManager's REST API has a table of its own.
    readme
        .lines()
        .skip_while(|l| !l.starts_with("## Planning API"))
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| {
            let (method, rest) = l.split_once(' ')?;
            let path = rest.split(['`', '[', '?']).next()?;
            (["GET", "POST", "DELETE"].contains(&method) && path.starts_with('/'))
                .then(|| (method.to_ascii_lowercase(), path.to_owned()))
        })
        .collect()
}

/// The OpenAPI document is generated from the handlers: every route the router serves is in
/// it (checked both ways: each documented operation is served, and each endpoint of the
/// README's table, which lists them all, is documented), and each unprefixed alias is served.
#[test]
fn the_openapi_document_lists_every_route() {
    let service = start(ServiceConfig::default());
    let addr = service.addr();
    assert_eq!(call(addr, "POST", "/v1/plans", &q5()).0, 201);
    let (s, doc) = call(addr, "GET", "/v1/openapi.json", b"");
    assert_eq!(s, 200);
    assert!(
        doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")),
        "{}",
        doc["openapi"]
    );
    assert_eq!(
        doc,
        serde_json::to_value(conflux_planner::service::openapi()).expect("doc")
    );

    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("item").keys() {
            if ["get", "post", "delete", "put", "patch"].contains(&method.as_str()) {
                documented.insert((method.clone(), path.clone()));
            }
        }
    }
    assert!(documented.len() >= 20, "{documented:?}");
    let concrete = |path: &str| {
        path.replace("{id}", "p1")
            .replace("{version}", "1")
            .replace("{file}", "app.js")
    };
    for (method, path) in &documented {
        let target = concrete(path);
        let (s, _, text) = raw(addr, &method.to_ascii_uppercase(), &target, b"{}");
        let unknown = text.contains("\"unknown_endpoint\"") || s == 405;
        assert!(
            !unknown,
            "{method} {path} is documented but not served: {s} {text}"
        );
        if let Some(unprefixed) = target.strip_prefix("/v1") {
            let (s2, _, text2) = raw(addr, &method.to_ascii_uppercase(), unprefixed, b"{}");
            assert!(
                !text2.contains("\"unknown_endpoint\"") && s2 != 405,
                "{method} {unprefixed} (alias) not served: {s2} {text2}"
            );
        }
    }
    let readme = readme_endpoints();
    assert!(readme.len() >= 20, "{readme:?}");
    for (method, path) in &readme {
        assert!(
            documented.contains(&(method.clone(), path.clone())),
            "{method} {path} is in the README but not in /v1/openapi.json"
        );
    }
    for (method, path) in &documented {
        assert!(
            readme.contains(&(method.clone(), path.clone())),
            "{method} {path} is in /v1/openapi.json but not in the README's table"
        );
    }
}

/// The OpenAPI document is typed: every JSON request body and every JSON success answer has a
/// schema of its own (a reference to a named schema, or a typed array), never a bare object,
/// except the document itself; every operation's summary names its current path (`/v1/...`,
/// not a deprecated alias); and no rustdoc syntax leaks into a summary or description.
#[test]
fn the_openapi_document_types_every_body_and_names_current_paths() {
    let doc = serde_json::to_value(conflux_planner::service::openapi()).expect("doc");
    let mut problems = Vec::new();
    let bare = |schema: &Value| {
        schema.get("$ref").is_none()
            && schema.get("oneOf").is_none()
            && schema.get("properties").is_none()
            && schema["type"] != "array"
    };
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("item") {
            let name = format!("{method} {path}");
            let summary = op["summary"].as_str().unwrap_or_default();
            if path.starts_with("/v1/") && !summary.contains(&format!("/v1{}", &path[3..])) {
                problems.push(format!(
                    "{name}: summary {summary:?} does not name its path"
                ));
            }
            if let Some(body) = op.pointer("/requestBody/content/application~1json/schema") {
                if bare(body) {
                    problems.push(format!("{name}: untyped request body {body}"));
                }
            }
            for (status, response) in op["responses"].as_object().expect("responses") {
                let Some(schema) = response.pointer("/content/application~1json/schema") else {
                    continue;
                };
                if status.starts_with('2') && path != "/v1/openapi.json" && bare(schema) {
                    problems.push(format!("{name} {status}: untyped answer {schema}"));
                }
            }
        }
    }
    let text = doc.to_string();
    for leak in ["](", "[`", "crate::", "super::"] {
        if text.contains(leak) {
            let at = text.find(leak).unwrap_or(0);
            problems.push(format!(
                "rustdoc syntax {leak:?} in the document: ...{}...",
                text.get(at.saturating_sub(80)..(at + 80).min(text.len()))
                    .unwrap_or(leak)
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
