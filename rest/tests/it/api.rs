//! The API over fixed data: every endpoint's answer has the shape of Flink 1.20.3's, errors are
//! Flink's, cancel answers 202.

use std::sync::Arc;

use serde_json::Value;

use crate::fake::{FakeBackend, Server};
use conflux_test_support::json_shape::{assert_shape, assert_shape_of, fixture};

/// A captured job's details with the plan of the captured running job: the failed job Flink
/// ran has one vertex, so its plan has no node with inputs to compare ours with.
fn job_fixture(k: &str) -> Value {
    let mut job = fixture(&format!("job_{k}.json"));
    job["plan"] = fixture("job_RUN.json")["plan"].clone();
    job
}

struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

fn call(method: reqwest::Method, url: &str) -> Answer {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let response = reqwest::Client::new()
            .request(method, url)
            .timeout(std::time::Duration::from_secs(20))
            .send()
            .await
            .unwrap();
        Answer {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: response.text().await.unwrap(),
        }
    })
}

fn get(server: &Server, path: &str) -> Answer {
    let answer = call(reqwest::Method::GET, &server.url(path));
    assert_eq!(answer.status, 200, "GET {path}: {}", answer.body);
    assert_eq!(
        answer.headers["content-type"],
        "application/json; charset=UTF-8"
    );
    assert_eq!(answer.headers["access-control-allow-origin"], "*");
    answer
}

const RUNNING: &str = "01010101010101010101010101010101";
const FINISHED: &str = "02020202020202020202020202020202";
const FAILED: &str = "03030303030303030303030303030303";
const CANCELED: &str = "04040404040404040404040404040404";

#[test]
fn every_answer_has_flinks_keys_and_types() {
    let server = Server::start(FakeBackend::four_jobs());
    for prefix in ["", "/v1"] {
        let p = |path: &str| format!("{prefix}{path}");
        assert_shape(&get(&server, &p("/config")).json(), "config.json");
        assert_shape(&get(&server, &p("/overview")).json(), "overview.json");
        assert_shape(&get(&server, &p("/jobs")).json(), "jobs.json");
        assert_shape(
            &get(&server, &p("/jobs/overview")).json(),
            "jobs_overview.json",
        );
        assert_shape(
            &get(&server, &p("/taskmanagers")).json(),
            "taskmanagers.json",
        );
        assert_shape(
            &get(&server, &p("/taskmanagers/tm0")).json(),
            "taskmanager_detail_busy.json",
        );
        assert_shape(
            &get(&server, &p("/jobmanager/config")).json(),
            "jobmanager_config.json",
        );
        for (id, k) in [
            (RUNNING, "RUN"),
            (FINISHED, "FIN"),
            (FAILED, "FAILED"),
            (CANCELED, "CANCELED"),
        ] {
            assert_shape_of(
                &get(&server, &p(&format!("/jobs/{id}"))).json(),
                &job_fixture(k),
                &format!("job_{k}.json"),
            );
            assert_shape(
                &get(&server, &p(&format!("/jobs/{id}/exceptions"))).json(),
                &format!("exceptions_{k}.json"),
            );
            assert_shape(
                &get(&server, &p(&format!("/jobs/{id}/execution-result"))).json(),
                &format!("result_{k}.json"),
            );
        }
        for (id, k) in [(RUNNING, "RUN"), (FINISHED, "FIN")] {
            assert_shape(
                &get(&server, &p(&format!("/jobs/{id}/plan"))).json(),
                &format!("plan_{k}.json"),
            );
            let job = get(&server, &p(&format!("/jobs/{id}"))).json();
            for vertex in job["vertices"].as_array().unwrap() {
                let vid = vertex["id"].as_str().unwrap();
                assert_shape(
                    &get(&server, &p(&format!("/jobs/{id}/vertices/{vid}"))).json(),
                    &format!("v_{k}_cbc357ccb763df2852fee8c4fc7d55f2.json"),
                );
                assert_shape(
                    &get(
                        &server,
                        &p(&format!("/jobs/{id}/vertices/{vid}/subtasktimes")),
                    )
                    .json(),
                    &format!("st_{k}_cbc357ccb763df2852fee8c4fc7d55f2.json"),
                );
            }
        }
    }
}

#[test]
fn values_follow_flinks_rules() {
    let server = Server::start(FakeBackend::four_jobs());
    let overview = get(&server, "/overview").json();
    assert_eq!(overview["taskmanagers"], 1);
    assert_eq!(
        (
            overview["slots-total"].as_i64(),
            overview["slots-available"].as_i64()
        ),
        (Some(4), Some(2))
    );
    assert_eq!(
        [
            &overview["jobs-running"],
            &overview["jobs-finished"],
            &overview["jobs-failed"],
            &overview["jobs-cancelled"]
        ],
        [1, 1, 1, 1]
    );
    let jobs = get(&server, "/jobs/overview").json();
    let states: Vec<&str> = jobs["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["RUNNING", "FINISHED", "FAILED", "CANCELED"]);
    let running = &jobs["jobs"][0];
    assert_eq!(running["end-time"], -1);
    assert_eq!(running["tasks"]["running"], 4);
    assert_eq!(running["tasks"]["total"], 4);
    let finished = &jobs["jobs"][1];
    assert_eq!(finished["duration"], 5_001);
    assert_eq!(finished["tasks"]["finished"], 4);

    let job = get(&server, &format!("/jobs/{FINISHED}")).json();
    assert_eq!(job["job-type"], "BATCH");
    assert_eq!(job["status-counts"]["FINISHED"], 2);
    let source = &job["vertices"][0];
    assert_eq!(source["status"], "FINISHED");
    assert_eq!(source["start-time"], crate::fake::T0 + 120);
    assert_eq!(source["end-time"], crate::fake::T0 + 5_000);
    assert_eq!(source["duration"], 5_000 - 120);
    assert_eq!(source["metrics"]["read-bytes"], 100);
    assert_eq!(source["metrics"]["write-records"], 8);
    assert_eq!(source["metrics"]["write-records-complete"], true);
    let timestamps = &job["timestamps"];
    assert_eq!(timestamps["FINISHED"], crate::fake::T0 + 5_001);
    assert_eq!(timestamps["FAILED"], 0);

    let running_job = get(&server, &format!("/jobs/{RUNNING}")).json();
    assert_eq!(
        running_job["vertices"][0]["metrics"]["write-records-complete"],
        false
    );
    assert_eq!(running_job["vertices"][0]["end-time"], -1);

    let vid = source["id"].as_str().unwrap();
    let vertex = get(&server, &format!("/jobs/{FINISHED}/vertices/{vid}")).json();
    let subtask = &vertex["subtasks"][1];
    assert_eq!(subtask["host"], "127.0.0.1");
    assert_eq!(subtask["endpoint"], crate::fake::DATA);
    assert_eq!(subtask["taskmanager-id"], "tm0");
    assert_eq!(subtask["status-duration"]["SCHEDULED"], 10);
    assert_eq!(subtask["status-duration"]["RUNNING"], 5_000 - 130);
    assert_eq!(vertex["aggregated"]["metrics"]["read-bytes"]["sum"], 100);
    assert_eq!(vertex["aggregated"]["metrics"]["read-bytes"]["max"], 100);
    let times = get(
        &server,
        &format!("/jobs/{FINISHED}/vertices/{vid}/subtasktimes"),
    )
    .json();
    assert_eq!(times["subtasks"][0]["duration"], 5_000 - 110);
    assert_eq!(
        times["subtasks"][0]["timestamps"]["DEPLOYING"],
        crate::fake::T0 + 120
    );

    let result = get(&server, &format!("/jobs/{FAILED}/execution-result")).json();
    assert_eq!(
        result["job-execution-result"]["application-status"],
        "FAILED"
    );
    let cause = &result["job-execution-result"]["failure-cause"];
    assert_eq!(cause["class"], "conflux.JobFailure");
    assert!(cause["stack-trace"]
        .as_str()
        .unwrap()
        .contains("restarts exhausted"));
    let exceptions = get(&server, &format!("/jobs/{FAILED}/exceptions")).json();
    assert_eq!(
        exceptions["exceptionHistory"]["entries"][0]["exceptionName"],
        "conflux.JobFailure"
    );
    let concurrent = &exceptions["exceptionHistory"]["entries"][0]["concurrentExceptions"][0];
    assert_eq!(concurrent["taskName"], "Source (2/2) - execution #0");
    assert_eq!(exceptions["all-exceptions"][0]["task"], "Source (2/2)");
    assert_eq!(
        get(&server, &format!("/jobs/{RUNNING}/execution-result")).json()["status"]["id"],
        "IN_PROGRESS"
    );
}

#[test]
fn errors_are_flinks() {
    let server = Server::start(FakeBackend::four_jobs());
    let bad = call(reqwest::Method::GET, &server.url("/jobs/zzz"));
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.json()["errors"][0],
        "Bad request, could not parse parameters: Cannot resolve path parameter (jobid) from value \"zzz\"."
    );
    let unknown = call(
        reqwest::Method::GET,
        &server.url("/v1/jobs/ffffffffffffffffffffffffffffffff"),
    );
    assert_eq!(unknown.status, 404);
    assert_eq!(
        unknown.json()["errors"][0],
        "Job ffffffffffffffffffffffffffffffff not found"
    );
    let vertex = call(
        reqwest::Method::GET,
        &server.url(&format!("/jobs/{RUNNING}/vertices/{RUNNING}")),
    );
    assert_eq!(vertex.status, 404, "{}", vertex.body);
    let path = call(reqwest::Method::GET, &server.url("/nothing/here"));
    assert_eq!(path.status, 404);
    assert_eq!(path.json()["errors"][0], "Not found: /nothing/here");
    let method = call(reqwest::Method::POST, &server.url("/overview"));
    assert_eq!(method.status, 405);
    assert_eq!(method.headers["allow"], "GET,HEAD");
    assert!(method.json()["errors"][0]
        .as_str()
        .unwrap()
        .contains("/overview"));
    let cancel_unknown = call(
        reqwest::Method::PATCH,
        &server.url("/jobs/ffffffffffffffffffffffffffffffff?mode=cancel"),
    );
    assert_eq!(cancel_unknown.status, 404);
    assert_eq!(
        cancel_unknown.json()["errors"][0],
        "Job could not be found."
    );
    let finished = call(
        reqwest::Method::PATCH,
        &server.url(&format!("/jobs/{FINISHED}?mode=cancel")),
    );
    assert_eq!(finished.status, 409, "{}", finished.body);
    let stop = call(
        reqwest::Method::PATCH,
        &server.url(&format!("/jobs/{RUNNING}?mode=stop")),
    );
    assert_eq!(stop.status, 400);
}

#[test]
fn cancel_answers_202_and_the_job_shows_cancelling() {
    let backend = FakeBackend::four_jobs();
    let server = Server::start(Arc::clone(&backend) as Arc<dyn conflux_rest::RestBackend>);
    let answer = call(
        reqwest::Method::PATCH,
        &server.url(&format!("/v1/jobs/{RUNNING}?mode=cancel")),
    );
    assert_eq!(answer.status, 202);
    assert_eq!(answer.body, "{}");
    assert_eq!(
        get(&server, &format!("/jobs/{RUNNING}")).json()["state"],
        "CANCELLING"
    );
}

#[test]
fn the_openapi_document_lists_every_endpoint_and_metrics_are_text() {
    let server = Server::start(FakeBackend::four_jobs());
    let doc = get(&server, "/v1/openapi.json").json();
    let paths: Vec<&String> = doc["paths"].as_object().unwrap().keys().collect();
    for path in [
        "/v1/config",
        "/v1/overview",
        "/v1/jobs",
        "/v1/jobs/overview",
        "/v1/jobs/{jobid}",
        "/v1/jobs/{jobid}/plan",
        "/v1/jobs/{jobid}/exceptions",
        "/v1/jobs/{jobid}/execution-result",
        "/v1/jobs/{jobid}/vertices/{vertexid}",
        "/v1/jobs/{jobid}/vertices/{vertexid}/subtasktimes",
        "/v1/taskmanagers",
        "/v1/taskmanagers/{taskmanagerid}",
        "/v1/jobmanager/config",
        "/metrics",
    ] {
        assert!(
            paths.iter().any(|p| *p == path),
            "{path} missing from {paths:?}"
        );
    }
    assert!(doc["paths"]["/v1/jobs/{jobid}"]["patch"].is_object());
    let metrics = call(reqwest::Method::GET, &server.url("/metrics"));
    assert_eq!(metrics.status, 200);
    assert!(metrics.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/openmetrics-text"));
    assert!(metrics.body.contains("flink_jobmanager_numRunningJobs"));
}

#[test]
fn the_dashboards_extra_endpoints_answer_flinks_way() {
    let server = Server::start(FakeBackend::four_jobs());
    for prefix in ["", "/v1"] {
        let p = |path: &str| format!("{prefix}{path}");
        for (id, k) in [(RUNNING, "RUN"), (FINISHED, "FIN")] {
            let config = get(&server, &p(&format!("/jobs/{id}/config"))).json();
            assert_shape(&config, &format!("jobconfig_{k}.json"));
            assert_eq!(config["jid"], id);
            assert_eq!(config["execution-config"]["execution-mode"], "PIPELINED");
            assert_eq!(config["execution-config"]["job-parallelism"], -1);
            let job = get(&server, &p(&format!("/jobs/{id}"))).json();
            assert_eq!(config["name"], job["name"]);
            for vertex in job["vertices"].as_array().unwrap() {
                let vid = vertex["id"].as_str().unwrap();
                let acc = get(
                    &server,
                    &p(&format!("/jobs/{id}/vertices/{vid}/accumulators")),
                );
                assert_shape(
                    &acc.json(),
                    "vacc_RUN_cbc357ccb763df2852fee8c4fc7d55f2.json",
                );
                assert_eq!(acc.json()["id"], vid);
                for path in [
                    "metrics",
                    "metrics?get=0.numRecordsIn,0.busyTimeMsPerSecond",
                    "subtasks/metrics?get=busyTimeMsPerSecond&agg=max",
                    "watermarks",
                ] {
                    let answer = get(&server, &p(&format!("/jobs/{id}/vertices/{vid}/{path}")));
                    assert_eq!(answer.json(), serde_json::json!([]), "{path}");
                }
            }
            for path in ["checkpoints", "checkpoints/config"] {
                let answer = call(
                    reqwest::Method::GET,
                    &server.url(&p(&format!("/jobs/{id}/{path}"))),
                );
                assert_eq!(answer.status, 404, "{path}");
                assert!(
                    answer.json()["errors"][0]
                        .as_str()
                        .unwrap()
                        .starts_with("Checkpointing"),
                    "{}",
                    answer.body
                );
            }
        }
        assert_eq!(
            get(
                &server,
                &p("/taskmanagers/tm0/metrics?get=Status.JVM.CPU.Load")
            )
            .json(),
            serde_json::json!([])
        );
        assert_eq!(
            get(&server, &p("/jobmanager/metrics")).json(),
            serde_json::json!([])
        );
        // Unknown jobs, vertices and TaskManagers are Flink's 404s, bad ids 400.
        for (path, status) in [
            ("/jobs/ffffffffffffffffffffffffffffffff/config", 404),
            ("/jobs/zzz/config", 400),
            ("/jobs/ffffffffffffffffffffffffffffffff/checkpoints", 404),
            (
                format!("/jobs/{RUNNING}/vertices/{RUNNING}/metrics").as_str(),
                404,
            ),
            (
                format!("/jobs/{RUNNING}/vertices/zzz/watermarks").as_str(),
                400,
            ),
            ("/taskmanagers/tm999/metrics", 404),
        ] {
            let answer = call(reqwest::Method::GET, &server.url(&p(path)));
            assert_eq!(answer.status, status, "{path}: {}", answer.body);
        }
    }
}
