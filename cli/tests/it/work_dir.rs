//! Working directories do not outlive their processes: `run`, `cluster`, `jobmanager` and
//! `taskmanager` remove theirs (`$TMPDIR/conflux-<kind>-<pid>-<n>` and its lock file) on
//! SIGINT, SIGTERM and SIGHUP within 5 s, and when set-up fails; what a killed process left is
//! removed by the next start of its kind, and nothing of a live process is touched.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cluster::{word_count, Proc};
use crate::support::repo;

/// The `conflux-*` entries of `tmp` (directories and lock files), sorted.
fn entries(tmp: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(tmp)
        .expect("read tmp")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("conflux-"))
        .collect();
    found.sort();
    found
}

/// Waits (at most 30 s) until `tmp` holds a directory starting with `prefix`; returns it.
fn wait_for_dir(tmp: &Path, prefix: &str) -> PathBuf {
    let start = Instant::now();
    loop {
        if let Some(dir) = std::fs::read_dir(tmp)
            .expect("read tmp")
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.is_dir()
                    && p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            })
        {
            return dir;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no {prefix}* directory"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The id of a process that has ended.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().expect("runs true");
    let pid = child.id();
    child.wait().expect("waits");
    pid
}

#[test]
fn an_interrupted_run_removes_its_directory() {
    for signal in ["INT", "TERM", "HUP"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut child = Command::new(env!("CARGO_BIN_EXE_conflux"))
            .args([
                "run",
                "fixtures/jobs/wordcount-10k-blocking.json",
                "--quiet",
                "--task-failure-rate",
                "0.2",
                "--restart-strategy",
                "exponential-delay",
            ])
            .current_dir(repo())
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("runs conflux");
        wait_for_dir(tmp.path(), "conflux-run-");
        // Let the server write into it.
        std::thread::sleep(Duration::from_millis(200));
        let killed = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        let status = child.wait().expect("wait");
        assert_eq!(status.code(), Some(130), "{signal}: {status:?}");
        assert_eq!(entries(tmp.path()), Vec::<String>::new(), "{signal}");
    }
}

#[test]
fn a_start_removes_what_dead_processes_of_its_kind_left_only() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dead = dead_pid();
    let me = std::process::id();
    let make = |name: &str| {
        let dir = tmp.path().join(name);
        std::fs::create_dir_all(dir.join("server")).expect("mkdir");
        std::fs::write(dir.join("server/blob"), b"x").expect("blob");
        File::create(tmp.path().join(format!("{name}.lock"))).expect("lock")
    };
    // A dead run's directory and lock file; a lock file whose directory is gone already.
    drop(make(&format!("conflux-run-{dead}-0")));
    File::create(tmp.path().join(format!("conflux-run-{dead}-1.lock"))).expect("lock");
    // A live process's (this test's), its lock held: left alone.
    let live_lock = make(&format!("conflux-run-{me}-0"));
    live_lock.lock().expect("lock");
    // A dead process's whose lock is held (a sweeper removing it): left alone.
    let held_lock = make(&format!("conflux-run-{dead}-2"));
    held_lock.lock().expect("lock");
    // Another kind's, and names without a process id: not this start's business.
    drop(make(&format!("conflux-jobmanager-{dead}")));
    std::fs::create_dir(tmp.path().join("conflux-run-other")).expect("mkdir");

    let out = Command::new(env!("CARGO_BIN_EXE_conflux"))
        .args(["run", "fixtures/jobs/small/two-data-sets.json", "--quiet"])
        .current_dir(repo())
        .env("TMPDIR", tmp.path())
        .output()
        .expect("runs conflux");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut expected = vec![
        format!("conflux-jobmanager-{dead}"),
        format!("conflux-jobmanager-{dead}.lock"),
        format!("conflux-run-{dead}-2"),
        format!("conflux-run-{dead}-2.lock"),
        format!("conflux-run-{me}-0"),
        format!("conflux-run-{me}-0.lock"),
        "conflux-run-other".to_owned(),
    ];
    expected.sort();
    assert_eq!(entries(tmp.path()), expected);
    assert!(tmp
        .path()
        .join(format!("conflux-run-{me}-0/server/blob"))
        .exists());

    // A JobManager's start sweeps the dead JobManager's directory (named before lock files
    // existed), and removes its own on SIGTERM.
    let logs = tempfile::tempdir().expect("tempdir");
    let mut jm = Proc::start_with_tmpdir(
        "jobmanager",
        &["jobmanager", "--address", "127.0.0.1:0", "--rest-port", "0"],
        logs.path(),
        false,
        Some(tmp.path()),
    );
    jm.wait_for_log("JobManager listening on ", 1, Duration::from_secs(20));
    assert!(!tmp
        .path()
        .join(format!("conflux-jobmanager-{dead}"))
        .exists());
    jm.signal("TERM");
    jm.wait(Duration::from_secs(5));
    assert!(entries(tmp.path())
        .iter()
        .all(|e| !e.starts_with("conflux-jobmanager-")));
    drop(live_lock);
    drop(held_lock);
}

/// Regression: `jobmanager` and `taskmanager` left `/tmp/conflux-{jobmanager,taskmanager}-<pid>`
/// on SIGTERM and SIGINT, and SIGHUP was not handled.
#[test]
fn jobmanager_and_taskmanager_remove_their_directories_on_every_signal() {
    let logs = tempfile::tempdir().expect("tempdir");
    for signal in ["INT", "TERM", "HUP"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut jm = Proc::start_with_tmpdir(
            &format!("jobmanager-{signal}"),
            &["jobmanager", "--address", "127.0.0.1:0", "--rest-port", "0"],
            logs.path(),
            false,
            Some(tmp.path()),
        );
        let log = jm.wait_for_log("JobManager listening on ", 1, Duration::from_secs(20));
        let address = log
            .split("JobManager listening on ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .expect("an address")
            .to_owned();
        let mut tm = Proc::start_with_tmpdir(
            &format!("taskmanager-{signal}"),
            &["taskmanager", "--jobmanager", &address, "--slots", "1"],
            logs.path(),
            false,
            Some(tmp.path()),
        );
        tm.wait_for_log("registered", 1, Duration::from_secs(20));
        wait_for_dir(tmp.path(), "conflux-taskmanager-");
        for (name, proc) in [("taskmanager", &mut tm), ("jobmanager", &mut jm)] {
            let signalled = Instant::now();
            proc.signal(signal);
            let status = proc.wait(Duration::from_secs(5));
            assert!(
                signalled.elapsed() < Duration::from_secs(5),
                "{name} {signal}: {:?}",
                signalled.elapsed()
            );
            assert_eq!(status.code(), Some(0), "{name} {signal}: {}", proc.log());
        }
        assert_eq!(entries(tmp.path()), Vec::<String>::new(), "{signal}");
    }
}

/// Regression: `taskmanager --advertised-address 8.8.8.8` (an address it cannot bind) exited 1
/// and left its directory.
#[test]
fn a_taskmanager_that_cannot_set_up_leaves_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_conflux"))
        .args([
            "taskmanager",
            "--jobmanager",
            "127.0.0.1:1",
            "--slots",
            "1",
            "--advertised-address",
            "8.8.8.8",
        ])
        .current_dir(repo())
        .env("TMPDIR", tmp.path())
        .output()
        .expect("runs conflux");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("data server"), "{stderr}");
    assert_eq!(entries(tmp.path()), Vec::<String>::new());
}

/// Regression: `cluster` killed by SIGHUP (unhandled) or SIGKILL left `conflux-cluster-*` with
/// its partitions, never swept. SIGHUP now stops it within 5 s, removing everything; what a
/// SIGKILL leaves, the next `cluster` removes.
#[test]
fn a_hung_up_cluster_cleans_up_and_a_killed_one_is_swept_by_the_next() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let logs = tempfile::tempdir().expect("tempdir");
    let file = word_count(logs.path(), 2, "blocking");
    let long = [
        "cluster",
        file.as_str(),
        "--task-managers",
        "2",
        "--task-duration-ms",
        "60000",
    ];
    for signal in ["HUP", "KILL"] {
        let mut cluster = Proc::start_with_tmpdir(
            &format!("cluster-{signal}"),
            &long,
            logs.path(),
            false,
            Some(tmp.path()),
        );
        let dir = wait_for_dir(tmp.path(), "conflux-cluster-");
        wait_for_dir(&dir, "tm-1");
        let signalled = Instant::now();
        cluster.signal(signal);
        cluster.wait(Duration::from_secs(5));
        assert!(signalled.elapsed() < Duration::from_secs(5));
        if signal == "HUP" {
            assert_eq!(entries(tmp.path()), Vec::<String>::new());
        } else {
            assert!(dir.exists(), "a SIGKILL leaves the directory");
            // Its TaskManagers see their standard input close and exit on their own; until
            // they have, the directory is still theirs (a loaded machine takes a while).
            let deadline = Instant::now() + Duration::from_secs(20);
            while orphans_of(&dir) {
                assert!(
                    Instant::now() < deadline,
                    "TaskManagers of a killed cluster still run"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    let mut next = Proc::start_with_tmpdir(
        "cluster-next",
        &[
            "cluster",
            file.as_str(),
            "--task-managers",
            "1",
            "--task-duration-ms",
            "0",
        ],
        logs.path(),
        false,
        Some(tmp.path()),
    );
    let status = next.wait(Duration::from_secs(60));
    assert!(status.success(), "{}", next.log());
    assert_eq!(entries(tmp.path()), Vec::<String>::new());
}

/// Whether a process whose command line names `dir` still runs (a killed cluster's children).
fn orphans_of(dir: &Path) -> bool {
    Command::new("pgrep")
        .args(["-f", &dir.to_string_lossy()])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
