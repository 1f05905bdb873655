//! `RUST_LOG` diagnostics: phases logged on stderr, the report on stdout unchanged.

use std::process::Command;

use crate::support::repo;

fn inspect(rust_log: Option<&str>) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_conflux"));
    command
        .args([
            "inspect",
            "fixtures/jobs/wordcount-10k-blocking.json",
            "--format",
            "json",
        ])
        .current_dir(repo())
        .env_remove("RUST_LOG");
    if let Some(filter) = rust_log {
        command.env("RUST_LOG", filter);
    }
    command.output().expect("runs conflux")
}

/// The report without its wall times, which differ between runs.
fn without_times(stdout: &[u8]) -> serde_json::Value {
    let mut report: serde_json::Value = serde_json::from_slice(stdout).expect("JSON report");
    report["wall_ms"] = serde_json::Value::Null;
    report
}

#[test]
fn rust_log_debug_logs_every_inspect_phase_on_stderr_only() {
    let quiet = inspect(None);
    assert!(quiet.status.success());
    assert!(
        quiet.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&quiet.stderr)
    );

    let debug = inspect(Some("debug"));
    assert!(debug.status.success());
    let log = String::from_utf8_lossy(&debug.stderr);
    for phase in [
        "phase=\"parse\"",
        "phase=\"execution_graph\"",
        "phase=\"regions\"",
        "phase=\"descriptors\"",
        "phase=\"report\"",
    ] {
        assert!(log.contains(phase), "{phase} missing from:\n{log}");
    }
    assert!(log.contains("DEBUG"), "{log}");
    assert!(log.contains("execution_vertices=20000"), "{log}");
    assert_eq!(without_times(&debug.stdout), without_times(&quiet.stdout));
}

#[test]
fn run_and_plan_log_their_phases() {
    for args in [
        &["run", "fixtures/jobs/small/two-data-sets.json", "--quiet"][..],
        &["plan", "stats", "fixtures/jobs/small/two-data-sets.json"][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_conflux"))
            .args(args)
            .current_dir(repo())
            .env("RUST_LOG", "conflux=debug")
            .output()
            .expect("runs conflux");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(log.contains("phase=\"parse\""), "{args:?}: {log}");
        if args[0] == "run" {
            assert!(log.contains("phase=\"run\""), "{log}");
            assert!(log.contains("phase=\"report\""), "{log}");
        } else {
            assert!(log.contains("phase=\"stats\""), "{log}");
        }
    }
}

/// A plain `jobmanager` and `taskmanager` (no `RUST_LOG`) log at INFO: where they listen, and
/// for a job its submission, its state changes and each vertex's first RUNNING and all
/// FINISHED in Flink's words; per-task lines are DEBUG, so none show.
#[test]
fn daemons_log_at_info_by_default_in_flink_s_words() {
    use crate::cluster::{run_bounded, word_count, Proc};
    use std::time::Duration;

    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count(dir.path(), 2, "blocking");
    let blobs = dir.path().join("blobs");
    let mut jm = Proc::start_without_rust_log(
        "jm",
        &[
            "jobmanager",
            "--rest-port",
            "0",
            "--address",
            "127.0.0.1:0",
            "--blob-dir",
            blobs.to_str().expect("utf-8"),
        ],
        dir.path(),
        false,
    );
    let log = jm.wait_for_log("JobManager listening on ", 1, Duration::from_secs(10));
    let start = log
        .lines()
        .find(|l| l.contains("JobManager listening on "))
        .expect("the start line");
    assert!(start.contains(" INFO "), "{start}");
    for part in [
        "(blob server http://127.0.0.1:",
        ", REST API http://127.0.0.1:",
    ] {
        assert!(start.contains(part), "{part} missing: {start}");
    }
    let address = start
        .split("JobManager listening on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("an address")
        .to_owned();
    let data = dir.path().join("tm-data");
    let mut tm = Proc::start_without_rust_log(
        "tm",
        &[
            "taskmanager",
            "--jobmanager",
            &address,
            "--slots",
            "2",
            "--data-dir",
            data.to_str().expect("utf-8"),
            "--exit-with-parent",
        ],
        dir.path(),
        true,
    );
    let tm_log = tm.wait_for_log("registered", 1, Duration::from_secs(10));
    let tm_start = tm_log
        .lines()
        .find(|l| l.contains("TaskManager started: data server on 127.0.0.1:"))
        .unwrap_or_else(|| panic!("no start line: {tm_log}"));
    assert!(tm_start.contains(" INFO "), "{tm_start}");
    assert!(tm_start.contains(&format!("registering with the JobManager at {address}")));
    jm.wait_for_log("TaskManager registered", 1, Duration::from_secs(10));

    let (status, stdout, stderr) = run_bounded(
        "submit",
        &[
            "submit",
            &file,
            "--jobmanager",
            &address,
            "--format",
            "json",
            "--task-duration-ms",
            "300",
        ],
        dir.path(),
        Duration::from_secs(30),
    );
    assert!(status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("report");
    let id = report["job_id"].as_str().expect("job_id").to_owned();
    let name = "word count 2 x 2 (blocking)";
    let log = jm.wait_for_log(
        "reached terminal state FINISHED.",
        1,
        Duration::from_secs(5),
    );
    for line in [
        format!("Received JobGraph submission '{name}' ({id})."),
        format!("Starting execution of job '{name}' ({id})."),
        format!("Job {name} ({id}) switched from state CREATED to RUNNING."),
        format!("Job {name} ({id}) switched from state RUNNING to FINISHED."),
        format!("Job {id} reached terminal state FINISHED."),
    ] {
        assert_eq!(log.matches(&line).count(), 1, "{line} not once in:\n{log}");
    }
    // Two vertices (source, count): each logs its first RUNNING and its FINISHED once.
    assert_eq!(log.matches("to RUNNING.").count(), 3, "{log}");
    assert_eq!(log.matches("to FINISHED.").count(), 3, "{log}");
    assert_eq!(log.matches("Job vertex ").count(), 4, "{log}");
    assert!(!log.contains("DEBUG"), "{log}");
    assert!(!tm.log().contains("task switched"), "{}", tm.log());
    tm.kill();
    jm.kill();
}

/// `--log-format json`: every line of a JobManager's and a TaskManager's stderr is a JSON
/// object with the time, level, target and message, and the event's fields beside them.
#[test]
fn log_format_json_writes_one_object_per_line() {
    use crate::cluster::{run_bounded, word_count, Proc};
    use std::time::Duration;

    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count(dir.path(), 2, "pipelined");
    let blobs = dir.path().join("blobs");
    let mut jm = Proc::start_without_rust_log(
        "jm",
        &[
            "jobmanager",
            "--rest-port",
            "0",
            "--address",
            "127.0.0.1:0",
            "--blob-dir",
            blobs.to_str().expect("utf-8"),
            "--log-format",
            "json",
        ],
        dir.path(),
        false,
    );
    let log = jm.wait_for_log("JobManager listening on ", 1, Duration::from_secs(10));
    let lines = |log: &str| -> Vec<serde_json::Value> {
        log.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    };
    let start = lines(&log)
        .into_iter()
        .find(|l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("JobManager listening on "))
        })
        .expect("the start line");
    assert_eq!(start["level"], "INFO", "{start}");
    assert_eq!(start["target"], "conflux_runtime::jobmanager", "{start}");
    assert!(start["timestamp"].is_string(), "{start}");
    let address = start["address"].as_str().expect("address").to_owned();
    assert!(address.starts_with("127.0.0.1:"), "{start}");
    assert!(
        start["rest"]
            .as_str()
            .is_some_and(|r| r.starts_with("http://127.0.0.1:")),
        "{start}"
    );
    let data = dir.path().join("tm-data");
    let mut tm = Proc::start_without_rust_log(
        "tm",
        &[
            "taskmanager",
            "--jobmanager",
            &address,
            "--slots",
            "4",
            "--data-dir",
            data.to_str().expect("utf-8"),
            "--exit-with-parent",
            "--log-format",
            "json",
        ],
        dir.path(),
        true,
    );
    jm.wait_for_log("TaskManager registered", 1, Duration::from_secs(10));
    let (status, stdout, stderr) = run_bounded(
        "submit",
        &[
            "submit",
            &file,
            "--jobmanager",
            &address,
            "--format",
            "json",
            "--task-duration-ms",
            "300",
        ],
        dir.path(),
        Duration::from_secs(30),
    );
    assert!(status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("report");
    let log = jm.wait_for_log(
        "reached terminal state FINISHED.",
        1,
        Duration::from_secs(5),
    );
    let finished: Vec<serde_json::Value> = lines(&log)
        .into_iter()
        .filter(|l| l["to"] == "FINISHED" && l["job"] == report["job_id"])
        .collect();
    // The job and its two vertices.
    assert_eq!(finished.len(), 3, "{log}");
    assert!(
        finished
            .iter()
            .all(|l| l["from"] == "RUNNING" && l["level"] == "INFO"),
        "{finished:?}"
    );
    assert_eq!(
        finished.iter().filter(|l| l["vertex"].is_string()).count(),
        2,
        "{finished:?}"
    );
    let tm_lines = lines(&tm.log());
    assert!(
        tm_lines.iter().any(|l| l["message"] == "registered"),
        "{tm_lines:?}"
    );
    tm.kill();
    jm.kill();
}

/// `cluster` keeps its TaskManager children at WARN (their INFO start lines would repeat per
/// TaskManager) unless `RUST_LOG` says otherwise: a plain run's stderr is quiet.
#[test]
fn cluster_keeps_its_task_managers_at_warn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = crate::cluster::word_count(dir.path(), 2, "blocking");
    let out = Command::new(env!("CARGO_BIN_EXE_conflux"))
        .args([
            "cluster",
            &file,
            "--task-managers",
            "2",
            "--task-duration-ms",
            "0",
        ])
        .current_dir(repo())
        .env_remove("RUST_LOG")
        .output()
        .expect("runs conflux cluster");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("INFO"), "{stderr}");
    assert!(!stderr.contains("TaskManager started"), "{stderr}");
}
