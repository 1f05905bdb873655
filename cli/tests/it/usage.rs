//! Usage errors as every other input error: one line on stderr, exit 2, `{"error": ...}` on
//! stdout in JSON mode; control characters from the input escaped in messages.

use crate::support::{conflux, json_of};

const SMALL_JOB: &str = "fixtures/jobs/small/two-data-sets.json";

#[test]
fn clap_errors_are_one_line_and_json_in_json_mode() {
    for args in [
        &["inspect", SMALL_JOB, "--bogus", "--format", "json"][..],
        &["run", SMALL_JOB, "--slots", "many", "--format=json"][..],
        &["plan", "stats", "--format", "json"][..],
        &[
            "inspect",
            SMALL_JOB,
            "--format",
            "json",
            "--offload-rule",
            "sometimes",
        ][..],
    ] {
        let out = conflux(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert!(!stderr.contains("Usage"), "{stderr}");
        let json = json_of(&out);
        let message = json["error"].as_str().expect("error message");
        assert_eq!(format!("error: {message}\n"), stderr);
    }
    let text = conflux(&["inspect", SMALL_JOB, "--bogus"]);
    assert_eq!(text.status.code(), Some(2));
    assert!(text.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&text.stderr).lines().count(),
        1,
        "{}",
        String::from_utf8_lossy(&text.stderr)
    );
    let bare = conflux(&[]);
    assert_eq!(bare.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&bare.stderr),
        "error: a subcommand is required (see --help)\n"
    );
    let help = conflux(&["inspect", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("--detail"));
}

#[test]
fn control_characters_in_ids_and_arguments_are_escaped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = dir.path().join("job.json");
    std::fs::write(
        &job,
        r#"{"job_type": "batch", "vertices": [
            {"id": "a\u001b[31m\nb", "parallelism": 1},
            {"id": "a\u001b[31m\nb", "parallelism": 1}]}"#,
    )
    .expect("write");
    let out = conflux(&["inspect", job.to_str().expect("utf-8"), "--format", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr, "error: duplicate vertex id 'a\\u{1b}[31m\\nb'\n");
    assert_eq!(
        json_of(&out)["error"],
        "duplicate vertex id 'a\\u{1b}[31m\\nb'"
    );

    // clap drops escape sequences and most control characters itself; a newline is escaped.
    let out = conflux(&["inspect", SMALL_JOB, "--offload-rule", "x\u{1b}[2J\ny\u{7}"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
    assert!(!stderr.contains('\u{7}'), "{stderr:?}");
    assert_eq!(
        stderr,
        "error: invalid value 'x\\ny' for '--offload-rule <OFFLOAD_RULE>' \
         [possible values: count, bytes, never]\n"
    );
}

/// The planning service's bounds are flags of `conflux serve`; nonsense values are refused before
/// anything listens.
#[test]
fn serve_refuses_bounds_of_zero() {
    for flag in [
        "--max-connections",
        "--max-store-bytes",
        "--max-computations",
        "--header-read-timeout-ms",
        "--idle-timeout-ms",
    ] {
        let out = conflux(&["serve", "--address", "127.0.0.1:0", flag, "0"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
        assert!(stderr.contains(flag), "{flag}: {stderr}");
        assert!(out.stdout.is_empty(), "nothing listened: {flag}");
    }
}

/// The blob server's bounds and recovered jobs are flags; bad values are refused before anything
/// listens, naming the flag.
#[test]
fn blob_server_refuses_bad_bounds_and_job_ids() {
    let dir = tempfile::tempdir().expect("temp dir");
    let storage = dir.path().to_str().expect("utf-8 path");
    for (flag, value) in [
        ("--max-connections", "0"),
        ("--header-read-timeout-ms", "0"),
        ("--idle-timeout-ms", "0"),
        ("--recovered-jobs", "not-a-job-id"),
    ] {
        let out = conflux(&[
            "blob-server",
            "--storage-dir",
            storage,
            "--address",
            "127.0.0.1:0",
            flag,
            value,
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
        assert!(stderr.contains(flag), "{flag}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

/// `conflux completions SHELL` prints a script naming the subcommands; `conflux man` the roff
/// page of conflux or of a subcommand; an unknown subcommand is exit 2.
#[test]
fn completions_and_man_pages_print_to_stdout() {
    for (shell, marker) in [
        ("bash", "_conflux()"),
        ("zsh", "#compdef conflux"),
        ("fish", "complete -c conflux"),
    ] {
        let out = conflux(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {out:?}");
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        // Subcommands and flags (fish names a long flag without its dashes).
        for word in ["checkpoint-sim", "cluster", "slow-task-managers"] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
    }
    let out = conflux(&["man"]);
    assert!(out.status.success(), "{out:?}");
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH conflux 1"), "{page}");
    assert!(page.contains("checkpoint\\-sim"), "{page}");
    let out = conflux(&["man", "plan", "stats"]);
    assert!(out.status.success(), "{out:?}");
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH conflux-plan-stats 1"), "{page}");
    assert!(page.contains("offload\\-rule"), "{page}");
    let out = conflux(&["man", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: conflux has no subcommand \"nope\"\n"
    );
}
