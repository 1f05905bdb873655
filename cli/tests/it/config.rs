//! `--config config.yaml`, `-D` and the environment on real processes: precedence, the
//! JobManager's `/jobmanager/config`, unknown-key warnings, line-numbered errors, and secrets
//! that never reach a command line, `--help` or the REST API.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cluster::{json, u64_at, word_count, Proc};
use crate::support::conflux;

const SECRET: &str = "s3cret-from-the-file";

/// `GET path` of `base` (`http://HOST:PORT`): the body as JSON.
fn get_json(base: &str, path: &str) -> Value {
    let mut s = TcpStream::connect(base.trim_start_matches("http://")).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("answer");
    assert!(!answer.contains(SECRET), "the secret in {path}: {answer}");
    let body = answer.split("\r\n\r\n").nth(1).expect("a body");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {answer}"))
}

/// The value of `key` in a `/jobmanager/config` answer.
fn config_value(config: &Value, key: &str) -> String {
    config
        .as_array()
        .expect("an array")
        .iter()
        .find(|e| e["key"] == key)
        .and_then(|e| e["value"].as_str())
        .unwrap_or_else(|| panic!("no {key} in {config}"))
        .to_owned()
}

/// The pids of the living children of `parent` whose command line holds `word`.
fn children_running(parent: u32, word: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // `pid (comm) state ppid ...`; comm may hold spaces, so read after the last ')'.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            ppid == Some(parent) && cmdline(*pid).contains(word)
        })
        .collect()
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.to_str().expect("utf-8").to_owned()
}

#[test]
fn a_config_file_sets_a_real_cluster_and_d_overrides_it_and_no_child_sees_the_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = word_count(dir.path(), 4, "blocking");
    let config = write(
        dir.path(),
        "config.yaml",
        &format!(
            "taskmanager.numberOfTaskSlots: 2\n\
             heartbeat:\n  interval: 200 ms\n  timeout: 10 s\n\
             restart-strategy:\n  type: fixed-delay\n  fixed-delay:\n    attempts: 2\n    delay: 50 ms\n\
             rest.prot: 1\n\
             conflux:\n  token: {SECRET}\n"
        ),
    );
    let mut cluster = Proc::start(
        "cluster",
        &[
            "cluster",
            &job,
            "--config",
            &config,
            "-D",
            "taskmanager.numberOfTaskSlots=3",
            "--task-managers",
            "2",
            "--task-duration-ms",
            "1500",
            "--format",
            "json",
        ],
        dir.path(),
        false,
    );
    let log = cluster.wait_for_log("REST API http://", 1, Duration::from_secs(20));
    assert!(
        log.contains(
            "unknown configuration key rest.prot (ignored; the nearest known key is rest.port)"
        ),
        "{log}"
    );
    let rest = log
        .split("REST API ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("the REST URL")
        // The JobManager's INFO start line closes the URL with a parenthesis.
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .to_owned();
    let settings = get_json(&rest, "/jobmanager/config");
    assert_eq!(config_value(&settings, "heartbeat.interval"), "200 ms");
    assert_eq!(config_value(&settings, "heartbeat.timeout"), "10000 ms");
    assert_eq!(
        config_value(&settings, "restart-strategy.type"),
        "fixed-delay"
    );
    assert_eq!(
        config_value(&settings, "restart-strategy.fixed-delay.attempts"),
        "2"
    );
    assert_eq!(
        config_value(&settings, "taskmanager.numberOfTaskSlots"),
        "3"
    );
    assert_eq!(config_value(&settings, "conflux.token"), "******");

    // The TaskManagers get the token in their environment, not on their command lines.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut tms = Vec::new();
    while tms.len() < 2 && Instant::now() < deadline {
        tms = children_running(cluster.pid(), "taskmanager");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(tms.len(), 2, "{}", cluster.log());
    for pid in &tms {
        let line = cmdline(*pid);
        assert!(!line.contains(SECRET), "{line}");
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let environ = String::from_utf8_lossy(&environ);
        assert!(
            environ.contains(&format!("CONFLUX_TOKEN={SECRET}")),
            "{pid}"
        );
    }

    let status = cluster.wait(Duration::from_secs(60));
    let (stdout, stderr) = (cluster.stdout(), cluster.log());
    assert!(status.success(), "{stderr}");
    assert!(!stderr.contains(SECRET) && !stdout.contains(SECRET));
    let report = json(&stdout, &stderr);
    let tms = report["task_managers"].as_array().expect("task_managers");
    assert_eq!(tms.len(), 2, "{report}");
    for tm in tms {
        // -D beats the file's 2.
        assert_eq!(u64_at(tm, "slots"), 3, "{tm}");
    }
}

#[test]
fn bad_values_name_key_value_and_line_and_flags_beat_the_configuration() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = word_count(dir.path(), 2, "blocking");
    let config = write(
        dir.path(),
        "config.yaml",
        "rest:\n  port: 0\nheartbeat:\n  interval: 100 ms\n  timeout: ten seconds\n",
    );
    let out = conflux(&["run", &job, "--config", &config]);
    // `run` does not take heartbeat.timeout, but a bad line fails every command.
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{config} line 5: heartbeat.timeout: `ten seconds` is not a duration"
        )),
        "{stderr}"
    );

    // A value its flag refuses names where it came from.
    let out = conflux(&["run", &job, "-D", "taskmanager.numberOfTaskSlots=0"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("-D: taskmanager.numberOfTaskSlots = 0: "),
        "{stderr}"
    );

    // Environment < -D < flag, on `run`'s report.
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_conflux"))
            .args([
                "run",
                &job,
                "--format",
                "json",
                "--quiet",
                "--task-duration-ms",
                "0",
            ])
            .args(args)
            .env("CONFLUX_TASKMANAGER_NUMBEROFTASKSLOTS", "4")
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).expect("json");
        u64_at(&report["task_managers"][0], "slots")
    };
    assert_eq!(run(&[]), 4);
    assert_eq!(run(&["-D", "taskmanager.numberOfTaskSlots=5"]), 5);
    assert_eq!(
        run(&["-D", "taskmanager.numberOfTaskSlots=5", "--slots", "6"]),
        6
    );

    // --help never shows the environment's secret.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_conflux"))
        .args(["submit", "--help"])
        .env("CONFLUX_TOKEN", SECRET)
        .output()
        .expect("runs");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("--token-file") && !help.contains(SECRET),
        "{help}"
    );
}
