//! The cluster commands' bounds and messages as real processes, each pinning a regression:
//! paths that are not UTF-8 and read-only output directories refused before anything starts,
//! a job above the JobManager's memory budget refused while the JobManager stays small, SIGTERM
//! ending a busy JobManager within 5 s, a failed job's output not verified, and what a
//! TaskManager says while it cannot register, and `cancel` of something that is not a job id.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cluster::{json, run_bounded, start_jobmanager, word_count, Proc};
use crate::support::{conflux, repo};

/// The 95-byte job of 2^26 subtasks that took a JobManager to 16 GB.
const HUGE_JOB: &str = r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":67108864,"max_parallelism":67108864}]}"#;

/// Peak resident set size of process `pid`, bytes (Linux `VmHWM`).
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM");
    kib * 1024
}

/// Regression: `cluster --output-dir $'/tmp/o\xff'` panicked in four threads and hung, and
/// `submit` panicked (exit 101). Every path flag that travels to other processes is refused at
/// the command line, exit 2 naming the flag, and nothing is created.
#[test]
fn paths_that_are_not_utf8_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count(dir.path(), 2, "blocking");
    let mut bad = dir.path().as_os_str().to_owned().into_vec();
    bad.extend_from_slice(b"/o\xff");
    let bad = OsString::from_vec(bad);
    let cases: [(&[&str], &str); 4] = [
        (&["cluster", &file, "--output-dir"], "--output-dir"),
        (
            &[
                "submit",
                &file,
                "--jobmanager",
                "127.0.0.1:1",
                "--output-dir",
            ],
            "--output-dir",
        ),
        (
            &["jobmanager", "--address", "127.0.0.1:0", "--blob-dir"],
            "--blob-dir",
        ),
        (
            &[
                "taskmanager",
                "--jobmanager",
                "127.0.0.1:1",
                "--slots",
                "1",
                "--data-dir",
            ],
            "--data-dir",
        ),
    ];
    for (args, flag) in cases {
        let mut child = Command::new(env!("CARGO_BIN_EXE_conflux"))
            .args(args)
            .arg(&bad)
            .current_dir(repo())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("runs conflux");
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait().expect("try_wait").is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{args:?} still runs: the path was not refused");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().expect("output");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(flag) && stderr.contains("not valid UTF-8"),
            "{args:?}: {stderr}"
        );
        assert!(!std::path::Path::new(&bad).exists(), "{args:?} created it");
    }
}

/// Regression: a read-only existing output directory was not checked up front, and the job
/// retried forever. (`/sys` takes no new file, whoever runs the test.)
#[test]
fn a_read_only_output_directory_is_refused_up_front() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count(dir.path(), 2, "blocking");
    let out = conflux(&["cluster", &file, "--output-dir", "/sys"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--output-dir /sys: the directory is not writable"),
        "{stderr}"
    );
}

/// Regression: the 95-byte job took the JobManager to 5.6 GB at submission and 16 GB within a
/// minute. It is refused (exit 2 naming the estimate, the limit and the option), the
/// JobManager stays under 512 MiB, and SIGTERM ends it within 5 s.
#[test]
fn a_job_above_the_budget_is_refused_and_the_jobmanager_stays_small() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = dir.path().join("huge.json");
    std::fs::write(&job, HUGE_JOB).expect("job file");
    let (mut jm, address) = start_jobmanager("jm", "127.0.0.1:0", dir.path());
    let (status, stdout, stderr) = run_bounded(
        "submit",
        &[
            "submit",
            job.to_str().expect("utf-8"),
            "--jobmanager",
            &address,
            "--detached",
        ],
        dir.path(),
        Duration::from_secs(20),
    );
    assert_eq!(status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("need an estimated")
            && stderr.contains("--max-job-memory of 4.0 GiB (4294967296 bytes)"),
        "{stderr}"
    );
    let (status, stdout, stderr) = run_bounded(
        "list",
        &["list", "--jobmanager", &address],
        dir.path(),
        Duration::from_secs(10),
    );
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, "no jobs\n");
    let rss = peak_rss(jm.pid());
    assert!(rss < 512 << 20, "the JobManager peaked at {rss} bytes");
    jm.signal("TERM");
    let stopped = Instant::now();
    let status = jm.wait(Duration::from_secs(5));
    assert!(status.success(), "{status}: {}", jm.log());
    println!(
        "JobManager peak RSS {rss} bytes; stopped {:?} after SIGTERM",
        stopped.elapsed()
    );
}

/// Regression: SIGTERM did not end a busy JobManager within 60 s (its runtime waited for the
/// job runner). A job of 2 million subtasks keeps the runner busy for seconds (building its
/// scheduler, then asking slots for every subtask); the JobManager still ends within 5 s.
#[test]
fn sigterm_ends_a_busy_jobmanager_within_5_s() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = dir.path().join("big.json");
    std::fs::write(
        &job,
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":2000000}]}"#,
    )
    .expect("job file");
    let (mut jm, address) = start_jobmanager("jm", "127.0.0.1:0", dir.path());
    let (status, _, stderr) = run_bounded(
        "submit",
        &[
            "submit",
            job.to_str().expect("utf-8"),
            "--jobmanager",
            &address,
            "--detached",
        ],
        dir.path(),
        Duration::from_secs(20),
    );
    assert!(status.success(), "{stderr}");
    std::thread::sleep(Duration::from_millis(300));
    jm.signal("TERM");
    let stopped = Instant::now();
    jm.wait(Duration::from_secs(5));
    println!(
        "busy JobManager stopped {:?} after SIGTERM",
        stopped.elapsed()
    );
}

/// Regression: with a data directory quota of 0 the job retried forever with nothing said;
/// with restarts bounded it failed, and `--verify` then said "the output is wrong" about the
/// part files of a failed job. Now the job fails at once, with its reason, its output has no
/// `_SUCCESS`, and `--verify` says it did not verify a failed job (exit 1).
#[test]
fn a_job_that_cannot_write_fails_at_once_and_is_not_verified() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let job = dir.path().join("wc.json");
    let generated = conflux(&[
        "generate",
        "wordcount",
        "--parallelism",
        "2",
        "--words-per-source",
        "20000",
        "-o",
        job.to_str().expect("utf-8"),
    ]);
    assert!(generated.status.success());
    let (status, stdout, stderr) = run_bounded(
        "cluster",
        &[
            "cluster",
            job.to_str().expect("utf-8"),
            "--task-managers",
            "1",
            "--data-dir-max-bytes",
            "0",
            "--output-dir",
            out.to_str().expect("utf-8"),
            "--verify",
            "--format",
            "json",
        ],
        dir.path(),
        Duration::from_secs(60),
    );
    assert_eq!(status.code(), Some(1), "{stdout}\n{stderr}");
    let report = json(&stdout, &stderr);
    assert_eq!(report["status"], "FAILED", "{report}");
    assert_eq!(report["restarts"], 0, "{report}");
    assert!(
        stderr.contains("not verified: the job FAILED:") && stderr.contains("non-recoverable"),
        "{stderr}"
    );
    assert!(!stderr.contains("the output is wrong"), "{stderr}");
    assert!(!out.join("_SUCCESS").exists());
}

/// Regression: `taskmanager --jobmanager 127.0.0.1:1` printed nothing while it retried forever.
/// At the default log level it says once whom it tries and why it fails, and no line per
/// attempt.
#[test]
fn a_task_manager_says_what_it_retries() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Its working directory inside the test's: the SIGKILL below leaves it behind.
    let data = dir.path().join("tm-data");
    let mut tm = Proc::start(
        "tm",
        &[
            "taskmanager",
            "--jobmanager",
            "127.0.0.1:1",
            "--slots",
            "1",
            "--data-dir",
            data.to_str().expect("utf-8"),
        ],
        dir.path(),
        false,
    );
    // Proc logs at info; the line must show at the default level (warn) too: it is a warning.
    let text = tm.wait_for_log(
        "cannot register with the JobManager at 127.0.0.1:1",
        1,
        Duration::from_secs(10),
    );
    assert!(text.contains("WARN"), "{text}");
    // 0.5 s to 5 s between attempts: several in 2 s, still one line.
    std::thread::sleep(Duration::from_secs(2));
    let text = tm.log();
    assert_eq!(text.matches("cannot register").count(), 1, "{text}");
    tm.kill();
}

/// Regression: `cancel deadbeef` reported a blob key error.
#[test]
fn cancel_of_something_that_is_not_a_job_id_is_a_usage_error() {
    let out = conflux(&["cancel", "deadbeef", "--jobmanager", "127.0.0.1:1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("\"deadbeef\" is not a job id: a job id is 32 hex digits"),
        "{stderr}"
    );
}
