//! The cluster across several hosts: network namespaces on a bridge (the test-support crate's
//! `hosts` harness), one process per host, each bound to and advertising its own address, and
//! network faults while a job runs: loss, a cut TaskManager, a cut data path, one-way loss, a
//! flapping link, rate limits.
//!
//! Every word count checks its output against the counts computed from the seeds alone, and
//! runs with `--restart-attempts 10` (Flink's default without checkpointing restarts nothing).
//! Without root, `ip`, `nft` or `tc` each test prints why it is skipped and passes.

// A panic is the wanted failure in these tests.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use conflux_test_support::host_cluster::{finish, ClusterSpec, HostCluster};
use conflux_test_support::hosts::{self, Direction};
use serde_json::Value;

/// How long any submission may take before the test calls it hung.
const HANG: Duration = Duration::from_secs(90);

/// Heartbeats as the deployment test: 200 ms interval, 1 s timeout.
fn fast_heartbeats() -> Vec<String> {
    args(&[
        "--heartbeat-interval-ms",
        "200",
        "--heartbeat-timeout-ms",
        "1000",
        "--restart-attempts",
        "10",
    ])
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

/// The cluster, or `None` (the reason printed) where the harness cannot run.
fn start(spec: &ClusterSpec) -> Option<HostCluster> {
    if let Some(why) = hosts::unavailable() {
        eprintln!("SKIPPED: several hosts need root, ip, tc and nft: {why}");
        return None;
    }
    let conflux = PathBuf::from(env!("CARGO_BIN_EXE_conflux"));
    Some(HostCluster::start(&conflux, spec).unwrap_or_else(|e| panic!("starting the cluster: {e}")))
}

/// Two TaskManagers x 32 slots, so that the word count's data crosses hosts.
fn word_count_spec(jm: Vec<String>, tm: Vec<String>) -> ClusterSpec {
    ClusterSpec {
        task_managers: 2,
        slots: 32,
        jobmanager_args: jm,
        taskmanager_args: tm,
    }
}

/// Generates the 10 M-word count (64 x 64, 156,250 words per source) into the cluster's dir.
fn word_count(cluster: &HostCluster) -> PathBuf {
    let file = cluster.dir.path().join("wc10m.json");
    let out = crate::support::conflux(&[
        "generate",
        "wordcount",
        "--parallelism",
        "64",
        "--words-per-source",
        "156250",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    file
}

/// Submits `file` with `--output-dir`, waits (never past [`HANG`]), and returns the report.
fn submit(cluster: &HostCluster, file: &Path, extra: &[&str]) -> (Value, PathBuf) {
    let output = cluster.dir.path().join("out");
    let child = cluster
        .submit(
            file,
            &[&["--output-dir", output.to_str().unwrap()][..], extra].concat(),
        )
        .unwrap();
    let (_, stdout) = finish(child, HANG).unwrap_or_else(|e| {
        panic!(
            "submit: {e}\njm log:\n{}\nsubmit log:\n{}",
            cluster.log("jm"),
            cluster.log("submit")
        )
    });
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "report: {e}: {stdout:?}\nsubmit log:\n{}",
            cluster.log("submit")
        )
    });
    (report, output)
}

/// Checks the sinks' files against the counts computed from the job's seeds alone.
fn verify(file: &Path, output: &Path) {
    let bytes = std::fs::read(file).unwrap();
    let graph = conflux_graph::load::load(&bytes, &Default::default()).unwrap();
    let job =
        conflux_runtime::word_count_job_as_run(&graph, &conflux_runtime::JobReport::default())
            .unwrap()
            .expect("a word count");
    let verification = conflux_operators::verify_output(&job, output).unwrap();
    assert!(
        verification.verified(),
        "{:?}: {} words expected, {} found",
        verification.first_difference,
        verification.words_expected,
        verification.words_found
    );
    assert_eq!(verification.words_expected, 10_000_000);
}

fn status(report: &Value) -> &str {
    report["status"].as_str().unwrap_or("?")
}

fn count(report: &Value, key: &str) -> u64 {
    report[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not a count: {report}"))
}

/// 0.1% of the packets every host sends or receives are dropped: the 10 M-word count counts
/// every word, no heartbeat times out. And no component advertises 127.0.0.1: every listening
/// socket of every host is on its own address, the blob server's URL included.
#[test]
fn loss_everywhere_loses_no_word_and_nothing_listens_on_loopback() {
    let Some(cluster) = start(&word_count_spec(
        args(&[
            "--heartbeat-interval-ms",
            "1000",
            "--heartbeat-timeout-ms",
            "5000",
            "--restart-attempts",
            "10",
        ]),
        Vec::new(),
    )) else {
        return;
    };
    let file = word_count(&cluster);
    let mut faults = Vec::new();
    for host in cluster.hosts.hosts() {
        faults.push(
            cluster
                .hosts
                .loss(&host.name, Direction::Both, 0.001)
                .unwrap(),
        );
    }
    let (report, output) = submit(&cluster, &file, &[]);
    drop(faults);
    assert_eq!(status(&report), "FINISHED", "{report}");
    verify(&file, &output);
    assert_eq!(count(&report, "heartbeat_timeouts"), 0, "{report}");
    assert_eq!(count(&report, "re_registrations"), 0, "{report}");
    assert!(report["partition_request_retries"].is_u64(), "{report}");

    // Every listening socket on its host's own address, none on loopback.
    for host in cluster.hosts.hosts() {
        let out = cluster
            .hosts
            .command(&host.name, "ss")
            .args(["-Htln"])
            .output()
            .unwrap();
        let listening = String::from_utf8_lossy(&out.stdout).into_owned();
        let locals: Vec<&str> = listening
            .lines()
            .filter_map(|l| l.split_whitespace().nth(3))
            .collect();
        assert!(!locals.is_empty(), "{}: nothing listens", host.name);
        for local in &locals {
            assert!(
                local.starts_with(&format!("{}:", host.ip)),
                "{} listens on {local}, not on its own address {}",
                host.name,
                host.ip
            );
        }
    }
    let jm_ip = cluster.hosts.ip("jm");
    let jm_log = cluster.log("jm");
    assert!(
        jm_log.contains(&format!("(blob server http://{jm_ip}:")),
        "the blob server's URL is not the JobManager host's: {jm_log}"
    );
}

/// The 10k x 10k no-op job (synthetic tasks of 0 ms) on 10 TaskManagers x 1,000 slots, with
/// 200 ms / 1 s heartbeats and 0.1% loss on every host, deploys and finishes with no heartbeat
/// timeout.
#[test]
fn deployment_under_loss_with_fast_heartbeats_times_nothing_out() {
    let Some(cluster) = start(&ClusterSpec {
        task_managers: 10,
        slots: 1000,
        jobmanager_args: fast_heartbeats(),
        taskmanager_args: Vec::new(),
    }) else {
        return;
    };
    let file = cluster.dir.path().join("noop.json");
    let out = crate::support::conflux(&[
        "generate",
        "wordcount",
        "--parallelism",
        "10000",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut faults = Vec::new();
    for host in cluster.hosts.hosts() {
        faults.push(
            cluster
                .hosts
                .loss(&host.name, Direction::Both, 0.001)
                .unwrap(),
        );
    }
    let child = cluster.submit(&file, &["--task-duration-ms", "0"]).unwrap();
    let (_, stdout) = finish(child, HANG).unwrap();
    drop(faults);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(status(&report), "FINISHED", "{report}");
    assert_eq!(count(&report, "tasks"), 20_000);
    assert_eq!(count(&report, "heartbeat_timeouts"), 0, "{report}");
    assert_eq!(count(&report, "task_managers_lost"), 0, "{report}");
}

/// Waits until the word count's sources write partitions on `tm` (at most 30 s).
fn wait_running(cluster: &HostCluster, tm: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let partitions = cluster.dir.path().join(tm).join("partitions");
    while !std::fs::read_dir(&partitions).is_ok_and(|mut d| d.next().is_some()) {
        assert!(Instant::now() < deadline, "the job did not start on {tm}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One TaskManager cut off for 3 s (heartbeat timeout 1 s) while the word count runs: it is
/// declared lost, its regions run again elsewhere, it cancels its tasks and registers again
/// after the heal; every word is counted.
#[test]
fn a_task_manager_cut_off_for_3_s_is_lost_and_registers_again() {
    let Some(cluster) = start(&word_count_spec(fast_heartbeats(), Vec::new())) else {
        return;
    };
    let file = word_count(&cluster);
    let output = cluster.dir.path().join("out");
    let child = cluster
        .submit(
            &file,
            &[
                "--output-dir",
                output.to_str().unwrap(),
                "--sink-delay-us",
                "50000",
            ],
        )
        .unwrap();
    wait_running(&cluster, "tm2");
    let cut = cluster.hosts.cut("tm2", Direction::Both).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    cut.heal();
    let (_, stdout) = finish(child, HANG).unwrap();
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(status(&report), "FINISHED", "{report}");
    verify(&file, &output);
    assert!(count(&report, "heartbeat_timeouts") >= 1, "{report}");
    assert!(count(&report, "restarts") >= 1, "{report}");
    cluster
        .wait_for_log("tm2", "JobManager lost", Duration::from_secs(10))
        .unwrap();
    assert!(
        count(&report, "re_registrations") >= 1,
        "{report}\n{}",
        cluster.log("tm2")
    );
}

/// Only the path between the two TaskManagers is cut (both reach the JobManager): a cut
/// shorter than the partition requests' retries is ridden out by retrying (no restart); one
/// longer fails the consumers with partition-not-found, their producers run again, and the
/// job still counts every word once the path is back.
#[test]
fn a_cut_data_path_is_retried_and_only_then_restarts_the_producers() {
    for (cut_for, restarts_expected) in [
        (Duration::from_millis(1500), false),
        (Duration::from_secs(6), true),
    ] {
        let Some(cluster) = start(&word_count_spec(
            args(&[
                "--heartbeat-interval-ms",
                "500",
                "--heartbeat-timeout-ms",
                "5000",
                "--restart-attempts",
                "10",
            ]),
            args(&[
                "--partition-request-timeout-ms",
                "500",
                "--partition-request-backoff-initial-ms",
                "100",
                "--partition-request-backoff-max-ms",
                "800",
            ]),
        )) else {
            return;
        };
        let file = word_count(&cluster);
        let cut = cluster
            .hosts
            .cut_between("tm1", "tm2", Direction::Both)
            .unwrap();
        let output = cluster.dir.path().join("out");
        let child = cluster
            .submit(&file, &["--output-dir", output.to_str().unwrap()])
            .unwrap();
        // The consumers start once the sources are done: the cut lasts from their first
        // retry on.
        let retried = |c: &HostCluster| {
            ["tm1", "tm2"]
                .iter()
                .any(|tm| c.log(tm).contains("partition request retried"))
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !retried(&cluster) {
            assert!(
                Instant::now() < deadline,
                "no partition request was retried"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(cut_for);
        cut.heal();
        let (_, stdout) = finish(child, HANG).unwrap();
        let report: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(status(&report), "FINISHED", "{report}");
        verify(&file, &output);
        assert!(count(&report, "partition_request_retries") > 0, "{report}");
        assert_eq!(count(&report, "heartbeat_timeouts"), 0, "{report}");
        assert_eq!(
            count(&report, "restarts") > 0,
            restarts_expected,
            "cut for {cut_for:?}: {report}"
        );
    }
}

/// The TaskManager hears the JobManager but is not heard (one-way loss), and another's link
/// flaps every 500 ms, during deployment: the job ends FINISHED (every word counted) or FAILED
/// naming why, never hangs, and the report counts the timeouts and re-registrations.
#[test]
fn one_way_loss_and_a_flapping_link_never_hang_the_job() {
    let Some(cluster) = start(&word_count_spec(fast_heartbeats(), Vec::new())) else {
        return;
    };
    let file = word_count(&cluster);
    let one_way = cluster
        .hosts
        .cut_between("tm1", "jm", Direction::Outbound)
        .unwrap();
    let flapping = cluster.hosts.flap("tm2", Duration::from_millis(500));
    let output = cluster.dir.path().join("out");
    let child = cluster
        .submit(&file, &["--output-dir", output.to_str().unwrap()])
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    drop(one_way);
    let cuts = flapping.stop();
    assert!(cuts >= 2, "{cuts}");
    let (_, stdout) = finish(child, HANG).unwrap();
    let report: Value = serde_json::from_str(&stdout).unwrap();
    for key in [
        "heartbeat_timeouts",
        "rpc_timeouts",
        "re_registrations",
        "partition_request_retries",
    ] {
        assert!(report[key].is_u64(), "{key}: {report}");
    }
    match status(&report) {
        "FINISHED" => verify(&file, &output),
        "FAILED" => assert!(
            report["failure_reason"]
                .as_str()
                .is_some_and(|r| !r.is_empty()),
            "{report}"
        ),
        other => panic!("{other}: {report}"),
    }
    assert!(count(&report, "heartbeat_timeouts") >= 1, "{report}");
}

/// The TaskManagers' links limited to 10 MB/s while the word count shuffles: heartbeats are
/// not starved behind the shuffle (no timeout), and the report gives their round trip.
#[test]
fn rate_limited_links_starve_no_heartbeat() {
    let Some(cluster) = start(&word_count_spec(
        args(&[
            "--heartbeat-interval-ms",
            "500",
            "--heartbeat-timeout-ms",
            "5000",
            "--restart-attempts",
            "10",
        ]),
        Vec::new(),
    )) else {
        return;
    };
    let file = word_count(&cluster);
    let limits: Vec<_> = ["tm1", "tm2"]
        .iter()
        .map(|tm| cluster.hosts.rate_limit(tm, 10_000_000).unwrap())
        .collect();
    let (report, output) = submit(&cluster, &file, &[]);
    drop(limits);
    assert_eq!(status(&report), "FINISHED", "{report}");
    verify(&file, &output);
    assert_eq!(count(&report, "heartbeat_timeouts"), 0, "{report}");
    assert!(
        report["max_heartbeat_rtt_ms"]
            .as_f64()
            .is_some_and(|rtt| rtt > 0.0),
        "{report}"
    );
    eprintln!(
        "max heartbeat round trip at 10 MB/s: {} ms",
        report["max_heartbeat_rtt_ms"]
    );
}

/// Delay needs `netem`: where the kernel has none, the harness says so and the test says why
/// it skips; where it has, the host's interface carries the delay until the fault is healed.
#[test]
fn delay_where_the_kernel_has_netem() {
    if let Some(why) = hosts::unavailable() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let hosts = hosts::Hosts::create(&["a", "b"]).unwrap();
    let qdiscs = || {
        let out = std::process::Command::new("tc")
            .args([
                "-n",
                &hosts.host("a").namespace,
                "qdisc",
                "show",
                "dev",
                "eth0",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    match hosts.delay("a", Duration::from_millis(20)) {
        Ok(fault) => {
            assert!(qdiscs().contains("delay 20ms"), "{}", qdiscs());
            fault.heal();
            assert!(!qdiscs().contains("netem"), "{}", qdiscs());
        }
        Err(e) => {
            assert!(e.0.starts_with("no netem delay on this kernel"), "{e}");
            eprintln!("SKIPPED delay: {e}");
        }
    }
}

/// The harness removes what it made: its namespaces go with it, and those of a run whose
/// process is gone are swept by the next one.
#[test]
fn the_harness_leaves_no_namespace_behind() {
    if let Some(why) = hosts::unavailable() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let namespaces = || {
        let out = std::process::Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // A leftover of a killed run: a process id that is not alive (above the kernel's limit).
    let stale = format!("{}4194305-0-h0", hosts::PREFIX);
    assert!(std::process::Command::new("ip")
        .args(["netns", "add", &stale])
        .status()
        .unwrap()
        .success());
    let made = hosts::Hosts::create(&["a"]).unwrap();
    assert!(!namespaces().contains(&stale), "{}", namespaces());
    let mine = made.host("a").namespace.clone();
    let cut = made.cut("a", Direction::Both).unwrap();
    assert!(namespaces().contains(&mine));
    drop(cut);
    drop(made);
    assert!(!namespaces().contains(&mine), "{}", namespaces());
}
