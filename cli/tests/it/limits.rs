//! Sizes that would exhaust memory are refused at once with exit 2 and a line naming the limit:
//! `inspect --detail` on a huge vertex, `run` on a huge or empty cluster.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::support::repo;

const SMALL_JOB: &str = "fixtures/jobs/small/two-data-sets.json";

/// Runs conflux with its address space capped at 2 GiB, so that a regression fails the
/// allocation quickly instead of swapping the machine, and times it.
fn conflux_capped(args: &[&str]) -> (Output, Duration) {
    let start = Instant::now();
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 2097152 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_conflux"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("runs conflux");
    (out, start.elapsed())
}

fn assert_refused(args: &[&str], expected: &[&str]) {
    let (out, took) = conflux_capped(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    for e in expected {
        assert!(stderr.contains(e), "{args:?}: {e} missing from {stderr}");
    }
    assert!(took < Duration::from_secs(5), "{args:?} took {took:?}");
}

#[test]
fn detail_on_a_vertex_of_67_million_subtasks_is_refused_before_expanding() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = dir.path().join("huge.json");
    std::fs::write(
        &job,
        r#"{"job_type": "batch", "vertices": [{"id": "a", "parallelism": 67108864}]}"#,
    )
    .expect("write");
    let job = job.to_str().expect("utf-8");
    assert_refused(
        &["inspect", job, "--detail"],
        &[
            "--detail",
            "67,108,864 execution vertices",
            "limit 1,000,000",
        ],
    );
    assert_refused(
        &["inspect", job, "--detail", "--format", "json"],
        &["67,108,864 execution vertices"],
    );
}

#[test]
fn cluster_sizes_are_bounded_at_once() {
    assert_refused(
        &["run", SMALL_JOB, "--slots", "4294967295"],
        &["--slots", "4294967295", "1..=65536"],
    );
    assert_refused(&["run", SMALL_JOB, "--slots", "0"], &["--slots", "0"]);
    assert_refused(
        &["run", SMALL_JOB, "--task-managers", "4294967295"],
        &["--task-managers", "4294967295", "1..=1000000"],
    );
    assert_refused(
        &["run", SMALL_JOB, "--task-managers", "0"],
        &["--task-managers", "0"],
    );
    assert_refused(
        &[
            "run",
            SMALL_JOB,
            "--task-managers",
            "1000000",
            "--slots",
            "65536",
        ],
        &[
            "1000000 TaskManagers x 65536 slots",
            "above the limit of 67108864",
        ],
    );
    // The largest accepted values still run.
    let (out, _) = conflux_capped(&["run", SMALL_JOB, "--quiet", "--slots", "65536"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn input_files_above_256_mib_are_refused_before_reading() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big = dir.path().join("big.json");
    // Sparse: no disk space, and a regression would read 256 MiB of zeros, not fail the cap.
    std::fs::File::create(&big)
        .and_then(|f| f.set_len((256 << 20) + 1))
        .expect("sparse file");
    let big = big.to_str().expect("utf-8");
    let limit = "268435457 bytes, above the limit of 268435456 bytes (256 MiB)";
    assert_refused(&["inspect", big], &[big, limit]);
    assert_refused(&["run", big], &[limit]);
    assert_refused(&["plan", "stats", big], &[limit]);
}
