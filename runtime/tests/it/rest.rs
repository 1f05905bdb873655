//! The REST API and the Prometheus metrics of a real JobManager and TaskManagers on loopback:
//! every answer has Flink 1.20.3's keys and types while a job runs and after it was cancelled
//! over REST; figures move as a job runs.

use std::net::SocketAddr;
use std::time::Duration;

use conflux_graph::ResultPartitionType;
use conflux_runtime::protocol::{JobOptions, JobSubmission};
use conflux_test_support::json_shape::{assert_shape, assert_shape_of, fixture};
use serde_json::Value;

use crate::support::{
    jm_config, start_jm, submission, tm_config, wait_for_task_managers, within, Tm, WordCount,
};

/// A port no one listens on now (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

async fn get(url: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .get(url)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = response.status().as_u16();
    (status, response.text().await.expect("a body"))
}

async fn json(rest: SocketAddr, path: &str) -> Value {
    let (status, body) = get(&format!("http://{rest}{path}")).await;
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
}

/// Polls `path` until `check` holds (at most 20 s); the last answer.
async fn until(rest: SocketAddr, path: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    within(what, Duration::from_secs(20), async {
        loop {
            let answer = json(rest, path).await;
            if check(&answer) {
                return answer;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// The value of the first sample of `metric` whose labels contain `labels`, if any.
fn sample(text: &str, metric: &str, labels: &str) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")) || l.starts_with(&format!("{metric} ")))
        .find(|l| l.contains(labels))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// The sum of every sample of `metric`.
fn sum(text: &str, metric: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")))
        .filter_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
        .sum()
}

/// A captured job's details with the plan of the captured running job (whose nodes include a
/// source and a consumer, as ours).
fn job_fixture(k: &str) -> Value {
    let mut job = fixture(&format!("job_{k}.json"));
    job["plan"] = fixture("job_RUN.json")["plan"].clone();
    job
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_running_job_has_flinks_shapes_and_is_cancelled_over_rest() {
    let dir = tempfile::tempdir().unwrap();
    let jm = start_jm(jm_config(dir.path())).await;
    let rest = jm.rest_address().expect("the REST API is on by default");
    let address = jm.address().to_string();
    let _tms: Vec<Tm> = (0..2)
        .map(|i| Tm::spawn(tm_config(&address, 2, &dir.path().join(format!("tm{i}")))))
        .collect();
    wait_for_task_managers(&jm, 2).await;
    // 2 x 2 tasks that run for a minute: RUNNING until cancelled.
    let job = jm
        .submit(submission(
            crate::support::word_count(2, ResultPartitionType::PipelinedBounded),
            (60_000, 60_000),
        ))
        .await
        .unwrap()
        .to_string();
    let overview = until(rest, "/jobs/overview", "4 tasks RUNNING", |o| {
        o["jobs"][0]["tasks"]["running"] == 4
    })
    .await;
    assert_shape(&overview, "jobs_overview.json");
    assert_eq!(overview["jobs"][0]["state"], "RUNNING");
    assert_eq!(overview["jobs"][0]["jid"], job.as_str());

    assert_shape(&json(rest, "/config").await, "config.json");
    let cluster = json(rest, "/v1/overview").await;
    assert_shape(&cluster, "overview.json");
    assert_eq!(
        (
            cluster["taskmanagers"].as_u64(),
            cluster["slots-total"].as_u64()
        ),
        (Some(2), Some(4))
    );
    assert_eq!(
        cluster["slots-available"], 2,
        "2 shared slots in use: {cluster}"
    );
    assert_eq!(cluster["jobs-running"], 1);
    assert_shape(&json(rest, "/jobs").await, "jobs.json");
    let details = json(rest, &format!("/jobs/{job}")).await;
    assert_shape_of(&details, &job_fixture("RUN"), "job_RUN.json");
    assert_eq!(details["job-type"], "STREAMING");
    assert_eq!(details["status-counts"]["RUNNING"], 2);
    assert_eq!(details["vertices"][0]["tasks"]["RUNNING"], 2);
    assert_shape(
        &json(rest, &format!("/jobs/{job}/plan")).await,
        "plan_RUN.json",
    );
    assert_shape(
        &json(rest, &format!("/jobs/{job}/exceptions")).await,
        "exceptions_RUN.json",
    );
    assert_shape(
        &json(rest, &format!("/jobs/{job}/execution-result")).await,
        "result_RUN.json",
    );
    for vertex in details["vertices"].as_array().unwrap() {
        let v = vertex["id"].as_str().unwrap();
        let detail = json(rest, &format!("/jobs/{job}/vertices/{v}")).await;
        assert_shape(&detail, "v_RUN_cbc357ccb763df2852fee8c4fc7d55f2.json");
        assert!(detail["subtasks"][0]["taskmanager-id"]
            .as_str()
            .unwrap()
            .starts_with("tm"));
        let times = json(rest, &format!("/jobs/{job}/vertices/{v}/subtasktimes")).await;
        assert_shape(&times, "st_RUN_cbc357ccb763df2852fee8c4fc7d55f2.json");
        assert!(
            times["subtasks"][1]["timestamps"]["RUNNING"]
                .as_i64()
                .unwrap()
                > 0
        );
    }
    let tms = json(rest, "/taskmanagers").await;
    assert_shape(&tms, "taskmanagers_busy.json");
    let used: u64 = tms["taskmanagers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["slotsNumber"].as_u64().unwrap() - t["freeSlots"].as_u64().unwrap())
        .sum();
    assert_eq!(used, 2);
    let id = tms["taskmanagers"][0]["id"].as_str().unwrap().to_owned();
    assert_shape(
        &json(rest, &format!("/taskmanagers/{id}")).await,
        "taskmanager_detail_busy.json",
    );
    let config = json(rest, "/jobmanager/config").await;
    assert_shape(&config, "jobmanager_config.json");
    assert!(config
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["key"] == "rest.port"
            && e["value"].as_str().and_then(|v| v.parse().ok()) == Some(rest.port())));

    let (_, first) = get(&format!("http://{rest}/metrics")).await;
    assert_eq!(
        sample(&first, "flink_jobmanager_numRunningJobs", "host="),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &first,
            "flink_jobmanager_numRegisteredTaskManagers",
            "host="
        ),
        Some(2.0)
    );
    assert_eq!(
        sample(&first, "flink_jobmanager_taskSlotsTotal", "host="),
        Some(4.0)
    );
    let uptime = sample(
        &first,
        "flink_jobmanager_job_uptime",
        &format!("job_id=\"{job}\""),
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (_, second) = get(&format!("http://{rest}/metrics")).await;
    let later = sample(
        &second,
        "flink_jobmanager_job_uptime",
        &format!("job_id=\"{job}\""),
    )
    .unwrap();
    assert!(later > uptime, "uptime {uptime} then {later}");
    assert!(
        sum(&second, "conflux_jobmanager_descriptor_bytes_total") > 0.0
            || second.contains("conflux_jobmanager_descriptor_bytes_total ")
    );

    let cancel = reqwest::Client::new()
        .patch(format!("http://{rest}/jobs/{job}?mode=cancel"))
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status().as_u16(), 202);
    assert_eq!(cancel.text().await.unwrap(), "{}");
    let cancelled = until(rest, &format!("/jobs/{job}"), "CANCELED", |j| {
        j["state"] == "CANCELED"
    })
    .await;
    assert_shape_of(&cancelled, &job_fixture("CANCELED"), "job_CANCELED.json");
    assert_eq!(cancelled["status-counts"]["CANCELED"], 2);
    assert!(cancelled["timestamps"]["CANCELLING"].as_i64().unwrap() > 0);
    assert_shape(
        &json(rest, &format!("/jobs/{job}/exceptions")).await,
        "exceptions_CANCELED.json",
    );
    let result = json(rest, &format!("/jobs/{job}/execution-result")).await;
    assert_shape(&result, "result_CANCELED.json");
    assert_eq!(
        result["job-execution-result"]["application-status"],
        "CANCELED"
    );
    let (_, after) = get(&format!("http://{rest}/metrics")).await;
    assert_eq!(
        sample(&after, "flink_jobmanager_numRunningJobs", "host="),
        Some(0.0)
    );
    assert!(!after.contains("flink_jobmanager_job_uptime{"), "{after}");
    jm.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn task_figures_move_as_a_word_count_runs() {
    let dir = tempfile::tempdir().unwrap();
    let jm = start_jm(jm_config(dir.path())).await;
    let rest = jm.rest_address().unwrap();
    let metrics_port = free_port();
    let mut config = tm_config(&jm.address().to_string(), 4, &dir.path().join("tm"));
    config.metrics_address = Some(SocketAddr::from(([127, 0, 0, 1], metrics_port)));
    let _tm = Tm::spawn(config);
    wait_for_task_managers(&jm, 1).await;
    let wc = WordCount::blocking(2, Some(2), 20_000, 2_000, 5);
    let output = dir.path().join("out");
    let job = jm
        .submit(JobSubmission {
            job: wc.job(),
            source: "wordcount.json".into(),
            options: JobOptions {
                output_dir: Some(output),
                // Slow sinks: the job runs long enough to be watched.
                sink_delay_us: 100_000,
                ..JobOptions::default()
            },
        })
        .await
        .unwrap();
    let words = wc.words() as f64;
    let tm_metrics = format!("http://127.0.0.1:{metrics_port}/metrics");
    // The sources finish first (a blocking edge); their series stay until the job ends.
    let (text, records_in) = within(
        "the sources' records counted",
        Duration::from_secs(30),
        async {
            loop {
                let (status, text) = get(&tm_metrics).await;
                assert_eq!(status, 200);
                let records_in = sum(&text, "flink_taskmanager_job_task_numRecordsIn");
                if sum(&text, "flink_taskmanager_job_task_numRecordsOut") == words
                    && records_in > 0.0
                {
                    return (text, records_in);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        },
    )
    .await;
    assert!(
        sum(&text, "flink_taskmanager_job_task_numBytesOut") > words,
        "{text}"
    );
    assert!(
        text.contains(&format!("job_id=\"{job}\"")) && text.contains("job_name=\"word_count\""),
        "{text}"
    );
    assert!(
        text.contains("subtask_index=\"1\"") && text.contains("tm_id=\"tm0\""),
        "{text}"
    );
    // While the counts run, what they read grows.
    within("more records read", Duration::from_secs(30), async {
        loop {
            let (_, text) = get(&tm_metrics).await;
            if sum(&text, "flink_taskmanager_job_task_numRecordsIn") > records_in {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let report = within("the job's end", Duration::from_secs(60), jm.wait(job))
        .await
        .unwrap();
    assert_eq!(report.status, "FINISHED");
    let details = json(rest, &format!("/jobs/{job}")).await;
    let source = &details["vertices"][0];
    assert_eq!(source["metrics"]["write-records"].as_f64(), Some(words));
    assert_eq!(source["metrics"]["write-records-complete"], true);
    let count = &details["vertices"][1];
    assert_eq!(count["metrics"]["read-records"].as_f64(), Some(words));
    assert!(count["metrics"]["read-bytes"].as_u64().unwrap() > 0);
    assert_eq!(count["status"], "FINISHED");
    // The finished job as every endpoint shows it: 2 vertices of 2 subtasks, all FINISHED.
    assert_eq!(details["state"], "FINISHED");
    assert_eq!(details["job-type"], "BATCH");
    assert_eq!(details["status-counts"]["FINISHED"], 2);
    assert!(details["end-time"].as_i64().unwrap() >= details["start-time"].as_i64().unwrap());
    for vertex in details["vertices"].as_array().unwrap() {
        assert_eq!(vertex["parallelism"], 2, "{vertex}");
        assert_eq!(vertex["tasks"]["FINISHED"], 2, "{vertex}");
        assert_eq!(vertex["tasks"]["RUNNING"], 0, "{vertex}");
        let v = vertex["id"].as_str().unwrap();
        let detail = json(rest, &format!("/v1/jobs/{job}/vertices/{v}")).await;
        assert_eq!(detail["parallelism"], 2);
        let subtasks = detail["subtasks"].as_array().unwrap();
        assert_eq!(subtasks.len(), 2);
        for (i, subtask) in subtasks.iter().enumerate() {
            assert_eq!(subtask["subtask"], i, "{subtask}");
            assert_eq!(subtask["status"], "FINISHED", "{subtask}");
            assert_eq!(subtask["taskmanager-id"], "tm0", "{subtask}");
        }
    }
    let overview = json(rest, "/jobs/overview").await;
    let listed = overview["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jid"] == job.to_string().as_str())
        .cloned()
        .unwrap_or_else(|| panic!("{job} in {overview}"));
    assert_eq!(listed["state"], "FINISHED");
    assert_eq!(listed["tasks"]["total"], 4);
    assert_eq!(listed["tasks"]["finished"], 4);
    let tms = json(rest, "/taskmanagers").await;
    assert_eq!(tms["taskmanagers"].as_array().unwrap().len(), 1);
    assert_eq!(tms["taskmanagers"][0]["slotsNumber"], 4);
    assert_eq!(tms["taskmanagers"][0]["freeSlots"], 4, "{tms}");
    let (_, jm_metrics) = get(&format!("http://{rest}/metrics")).await;
    for (metric, value) in [
        ("flink_jobmanager_numRunningJobs", 0.0),
        ("flink_jobmanager_numRegisteredTaskManagers", 1.0),
        ("flink_jobmanager_taskSlotsTotal", 4.0),
        ("flink_jobmanager_taskSlotsAvailable", 4.0),
    ] {
        assert_eq!(
            sample(&jm_metrics, metric, "host="),
            Some(value),
            "{metric}: {jm_metrics}"
        );
    }
    assert!(
        sample(&jm_metrics, "conflux_jobmanager_descriptor_bytes_total", "").unwrap_or(0.0) > 0.0,
        "{jm_metrics}"
    );
    // The job ended: its tasks' series are gone.
    let (_, text) = get(&tm_metrics).await;
    assert!(
        !text.contains("flink_taskmanager_job_task_numRecordsOut{"),
        "{text}"
    );
    assert!(
        sample(&text, "conflux_taskmanager_tasks_total", "").unwrap_or(0.0) >= 4.0,
        "{text}"
    );
    jm.shutdown().await;
}
