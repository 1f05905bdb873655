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
