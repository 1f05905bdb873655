//! High availability on a real ZooKeeper server (Debian's `zookeeper` package; the tests say
//! SKIPPED and pass when it is not installed) with real processes: two JobManagers of one
//! cluster id, TaskManagers and clients that find the leader in ZooKeeper. Every child is killed
//! and reaped by its guard, the server by its own.

use std::path::Path;
use std::time::{Duration, Instant};

use conflux_ha::LocalZooKeeper;

use crate::cluster::{json, run_bounded, word_count, Proc};

/// A ZooKeeper server, or `None` after printing why the test is skipped.
fn zookeeper(dir: &Path) -> Option<LocalZooKeeper> {
    match LocalZooKeeper::start(dir) {
        Ok(zk) => Some(zk),
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            None
        }
    }
}

/// The high-availability flags of cluster id `cluster` (sessions of 2 s).
fn ha_flags<'a>(quorum: &'a str, cluster: &'a str) -> Vec<&'a str> {
    vec![
        "--high-availability",
        "zookeeper",
        "--zookeeper-quorum",
        quorum,
        "--cluster-id",
        cluster,
        "--zookeeper-session-timeout-ms",
        "2000",
    ]
}

/// A `conflux jobmanager` of cluster id `cluster` on a free port.
fn start_jobmanager(name: &str, quorum: &str, cluster: &str, dir: &Path) -> Proc {
    let blobs = dir.join(format!("{name}-blobs"));
    let store = dir.join("ha-store");
    let mut args = vec![
        "jobmanager",
        "--rest-port",
        "0",
        "--address",
        "127.0.0.1:0",
        "--blob-dir",
        blobs.to_str().expect("utf-8"),
        "--heartbeat-interval-ms",
        "100",
        "--heartbeat-timeout-ms",
        "1000",
        "--ha-storage-dir",
        store.to_str().expect("utf-8"),
    ];
    args.extend(ha_flags(quorum, cluster));
    Proc::start(name, &args, dir, false)
}

/// A `conflux taskmanager` following the leader of `cluster`.
fn start_taskmanager(name: &str, quorum: &str, cluster: &str, dir: &Path) -> Proc {
    let data = dir.join(format!("{name}-data"));
    let mut args = vec![
        "taskmanager",
        "--slots",
        "2",
        "--data-dir",
        data.to_str().expect("utf-8"),
        "--exit-with-parent",
    ];
    args.extend(ha_flags(quorum, cluster));
    Proc::start(name, &args, dir, true)
}

/// Submits `job` (detached) to the leader of `cluster`; returns its id.
fn submit(job: &str, quorum: &str, cluster: &str, dir: &Path) -> String {
    let mut args = vec![
        "submit",
        job,
        "--detached",
        "--task-duration-ms",
        "1500",
        "--format",
        "json",
    ];
    args.extend(ha_flags(quorum, cluster));
    let (status, stdout, stderr) = run_bounded("submit", &args, dir, Duration::from_secs(20));
    assert!(status.success(), "{stderr}");
    json(&stdout, &stderr)["job_id"]
        .as_str()
        .expect("job_id")
        .to_owned()
}

/// `conflux wait JOB` on whoever leads `cluster`: the report.
fn wait(job: &str, quorum: &str, cluster: &str, dir: &Path) -> serde_json::Value {
    let mut args = vec!["wait", job, "--format", "json"];
    args.extend(ha_flags(quorum, cluster));
    let (status, stdout, stderr) = run_bounded("wait", &args, dir, Duration::from_secs(60));
    assert!(status.success(), "{stdout}\n{stderr}");
    json(&stdout, &stderr)
}

/// `conflux list` on the leader of `cluster`: the jobs' ids.
fn list(quorum: &str, cluster: &str, dir: &Path) -> Vec<String> {
    let mut args = vec!["list", "--all", "--format", "json"];
    args.extend(ha_flags(quorum, cluster));
    let (status, stdout, stderr) = run_bounded("list", &args, dir, Duration::from_secs(20));
    assert!(status.success(), "{stderr}");
    json(&stdout, &stderr)["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| j["job_id"].as_str().expect("id").to_owned())
        .collect()
}

#[test]
fn a_killed_leader_is_followed_and_its_job_recovered_and_finished() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(zk) = zookeeper(dir.path()) else {
        return;
    };
    let q = zk.quorum();
    let job = word_count(dir.path(), 2, "blocking");
    let mut jm1 = start_jobmanager("jm-1", &q, "c1", dir.path());
    jm1.wait_for_log("JobManager leads cluster id c1", 1, Duration::from_secs(20));
    let mut jm2 = start_jobmanager("jm-2", &q, "c1", dir.path());
    jm2.wait_for_log("standing by", 1, Duration::from_secs(20));
    // A JobManager of another cluster id leads its own cluster at once and never takes c1's
    // jobs.
    let mut other = start_jobmanager("jm-other", &q, "other", dir.path());
    other.wait_for_log(
        "JobManager leads cluster id other",
        1,
        Duration::from_secs(20),
    );
    let mut tms: Vec<Proc> = (0..2)
        .map(|i| start_taskmanager(&format!("tm-{i}"), &q, "c1", dir.path()))
        .collect();
    for tm in &mut tms {
        tm.wait_for_log("registered", 1, Duration::from_secs(20));
    }
    let id = submit(&job, &q, "c1", dir.path());
    jm1.wait_for_log("Starting execution of job", 1, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(500));
    jm1.signal("KILL");
    jm1.kill();
    let killed = Instant::now();
    let log = jm2.wait_for_log("JobManager leads cluster id c1", 1, Duration::from_secs(20));
    assert!(log.contains("1 jobs recovered"), "{log}");
    // The session of 2 s expires, then the standby leads.
    assert!(
        killed.elapsed() < Duration::from_secs(15),
        "{:?}",
        killed.elapsed()
    );
    let report = wait(&id, &q, "c1", dir.path());
    assert_eq!(report["status"], "FINISHED", "{report}");
    // Both TaskManagers registered with the new leader.
    for tm in &mut tms {
        tm.wait_for_log("registered", 2, Duration::from_secs(10));
    }
    assert_eq!(list(&q, "c1", dir.path()), vec![id.clone()]);
    assert!(list(&q, "other", dir.path()).is_empty());
    assert!(other.log().contains("0 jobs recovered"), "{}", other.log());
    // The ended job left the job store: a third leader recovers nothing.
    let mut jm3 = start_jobmanager("jm-3", &q, "c1", dir.path());
    jm3.wait_for_log("standing by", 1, Duration::from_secs(20));
    jm2.signal("KILL");
    jm2.kill();
    let log = jm3.wait_for_log("JobManager leads cluster id c1", 1, Duration::from_secs(20));
    assert!(log.contains("0 jobs recovered"), "{log}");
}

#[test]
fn a_leader_cut_off_from_zookeeper_stops_acting_before_the_next_leads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(zk) = zookeeper(dir.path()) else {
        return;
    };
    let q = zk.quorum();
    let job = word_count(dir.path(), 2, "blocking");
    let mut jm1 = start_jobmanager("jm-1", &q, "c2", dir.path());
    jm1.wait_for_log("JobManager leads cluster id c2", 1, Duration::from_secs(20));
    let mut jm2 = start_jobmanager("jm-2", &q, "c2", dir.path());
    jm2.wait_for_log("standing by", 1, Duration::from_secs(20));
    let mut tm = start_taskmanager("tm", &q, "c2", dir.path());
    tm.wait_for_log("registered", 1, Duration::from_secs(20));
    let id = submit(&job, &q, "c2", dir.path());
    jm1.wait_for_log("Starting execution of job", 1, Duration::from_secs(20));
    // Stopped past its session timeout (2 s): ZooKeeper expires it and the standby leads.
    jm1.signal("STOP");
    jm2.wait_for_log("JobManager leads cluster id c2", 1, Duration::from_secs(20));
    jm1.signal("CONT");
    // Resumed, the old leader knows its lease is over: it stops, sending nothing more.
    let status = jm1.wait(Duration::from_secs(10));
    assert_eq!(status.code(), Some(1), "{}", jm1.log());
    let log = jm1.log();
    assert!(
        log.contains("lost the leadership of cluster id c2"),
        "{log}"
    );
    let report = wait(&id, &q, "c2", dir.path());
    assert_eq!(report["status"], "FINISHED", "{report}");
    // The TaskManager left the old leader for the new one.
    tm.wait_for_log("registered", 2, Duration::from_secs(10));
}

/// `conflux cluster --job-managers 2` starts its own ZooKeeper, two JobManagers and TaskManagers
/// that follow the leader; `--kill-job-manager-after-ms` kills the leader while the sinks run,
/// the standby takes over and finishes the job, and the report counts the change and times it.
#[test]
fn cluster_with_two_job_managers_survives_its_killed_leader() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Skipped where no ZooKeeper can be started; `cluster` starts one of its own.
    if zookeeper(dir.path()).is_none() {
        return;
    }
    let file = crate::cluster::word_count_with_data(dir.path(), 4, 2, 200_000);
    let out = dir.path().join("out");
    let (status, stdout, stderr) = run_bounded(
        "cluster-ha",
        &[
            "cluster",
            &file,
            "--job-managers",
            "2",
            "--task-managers",
            "2",
            "--slots",
            "2",
            "--zookeeper-session-timeout-ms",
            "2000",
            "--kill-job-manager-after-ms",
            "1000",
            "--restart-attempts",
            "10",
            "--sink-delay-us",
            "30000",
            "--output-dir",
            out.to_str().expect("utf-8"),
            "--verify",
            "--format",
            "json",
        ],
        dir.path(),
        Duration::from_secs(120),
    );
    assert!(status.success(), "{stdout}\n{stderr}");
    let r = json(&stdout, &stderr);
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert_eq!(r["leader_changes"], 1, "{r}");
    assert_eq!(r["kill_skipped"], serde_json::Value::Null, "{r}");
    let recovery_ms = r["recovery_ms"].as_f64().expect("recovery_ms");
    // At least the 2 s session had to expire before the standby could lead.
    assert!((1_000.0..60_000.0).contains(&recovery_ms), "{r}");
    assert_eq!(r["data"]["output_verified"], true, "{r}");
    // The sources finished before the kill are kept: the sinks' kill re-runs no source.
    assert_eq!(
        crate::cluster::u64_at(&r["data"]["reruns"], "source"),
        0,
        "{r}"
    );
}
