//! Standard output that cannot be written (a full disk, a reader gone) ends with exit 1 and one
//! line on stderr, or quietly for a closed pipe; never a panic (exit 101).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::repo;

const SMALL_JOB: &str = "fixtures/jobs/small/two-data-sets.json";

/// The commands of the CLI that print a report, each on the small job (or its own input in
/// `dir`).
fn commands(dir: &Path) -> Vec<Vec<String>> {
    let owned = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let script = dir.join("script.json");
    std::fs::write(&script, r#"{"events": [{"finish": "A#0"}]}"#).expect("script");
    let script = script.to_str().expect("utf-8");
    let edited = dir.join("edited.json");
    vec![
        owned(&["inspect", SMALL_JOB]),
        owned(&["inspect", SMALL_JOB, "--format", "json"]),
        owned(&["run", SMALL_JOB, "--quiet"]),
        owned(&["run", SMALL_JOB, "--quiet", "--format", "json"]),
        owned(&["simulate", SMALL_JOB, "--script", script]),
        owned(&["plan", "stats", SMALL_JOB]),
        owned(&["plan", "diff", SMALL_JOB, SMALL_JOB, "--format", "json"]),
        owned(&["plan", "compat", SMALL_JOB, SMALL_JOB]),
        owned(&[
            "plan",
            "edit",
            SMALL_JOB,
            "--set-parallelism",
            "A=1",
            "-o",
            edited.to_str().expect("utf-8"),
        ]),
        owned(&["generate", "wordcount", "--parallelism", "4"]),
        owned(&["checkpoint-sim", "--format", "json"]),
        owned(&["local-dirs", "--format", "json"]),
    ]
}

fn run_to(args: &[String], stdout: Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conflux"))
        .args(args)
        .current_dir(repo())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("runs conflux")
}

#[test]
fn a_full_stdout_exits_1_with_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    for args in commands(dir.path()) {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let out = run_to(&args, Stdio::from(full));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("error: writing standard output: ") && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn a_closed_pipe_exits_1_quietly() {
    let dir = tempfile::tempdir().expect("tempdir");
    for args in commands(dir.path()) {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let out = run_to(&args, Stdio::from(writer));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}
