//! End-to-end runs of `conflux checkpoint-sim` and `conflux local-dirs`: the JSON contract, exit
//! codes.

use crate::support::{conflux, json_of};

#[test]
fn checkpoint_sim_json_contract() {
    let out = conflux(&[
        "checkpoint-sim",
        "--checkpoints",
        "20",
        "--files-per-checkpoint",
        "200",
        "--subtasks",
        "2",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json_of(&out);
    for mode in ["merged", "unmerged"] {
        for key in [
            "objects_created",
            "bytes_written",
            "restore_failures",
            "space_amplification",
        ] {
            assert!(r[mode][key].is_number(), "{mode}.{key} in {r}");
        }
        assert_eq!(r[mode]["restore_failures"], 0, "{r}");
    }
    let merged = r["merged"]["objects_created"].as_f64().unwrap();
    let unmerged = r["unmerged"]["objects_created"].as_f64().unwrap();
    assert!(unmerged >= 20.0 * merged, "{merged} vs {unmerged}");
    assert!(r["unmerged"]["delete_requests"].as_u64().unwrap() > 0);
}

/// The two modes run in parallel and report progress on a terminal only: piped, stderr stays
/// empty and the same seed gives the same figures run after run.
#[test]
fn checkpoint_sim_piped_is_quiet_and_repeatable() {
    let args = [
        "checkpoint-sim",
        "--checkpoints",
        "8",
        "--files-per-checkpoint",
        "40",
        "--memory",
        "--format",
        "json",
    ];
    let (a, b) = (conflux(&args), conflux(&args));
    assert!(a.status.success() && b.status.success());
    assert_eq!(String::from_utf8_lossy(&a.stderr), "");
    let (a, b) = (json_of(&a), json_of(&b));
    for mode in ["merged", "unmerged"] {
        for key in [
            "objects_created",
            "put_requests",
            "bytes_written",
            "live_bytes",
        ] {
            assert_eq!(a[mode][key], b[mode][key], "{mode}.{key}");
        }
    }
}

#[test]
fn checkpoint_sim_text_and_bad_input() {
    let out = conflux(&[
        "checkpoint-sim",
        "--checkpoints",
        "6",
        "--files-per-checkpoint",
        "20",
        "--memory",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("objects created") && text.contains("space amplification"),
        "{text}"
    );
    // Numbers of four digits and more are grouped: the unmerged mode writes every one of the
    // 120 small files and more, so its byte counts have digit groups, and no number is bare.
    let bytes = text
        .lines()
        .find(|l| l.starts_with("bytes written"))
        .expect("a bytes row");
    assert!(bytes.contains(','), "{bytes}");
    for word in text.split(|c: char| !(c.is_ascii_digit() || c == ',')) {
        let digits = word.trim_matches(',');
        assert!(
            digits.len() < 4 || digits.contains(','),
            "an ungrouped number {digits} in:\n{text}"
        );
    }

    let out = conflux(&["checkpoint-sim", "--abort-rate", "1.5", "--format", "json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--abort-rate"), "{err}");
    assert!(json_of(&out)["error"]
        .as_str()
        .unwrap()
        .contains("--abort-rate"));

    let out = conflux(&[
        "checkpoint-sim",
        "--min-file-bytes",
        "10",
        "--max-file-bytes",
        "5",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn local_dirs_spreads_round_robin_across_processes() {
    let out = conflux(&[
        "local-dirs",
        "--processes",
        "3",
        "--instances-per-process",
        "4",
        "--disks",
        "4",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json_of(&out);
    let strategies = r["strategies"].as_array().unwrap();
    assert_eq!(strategies.len(), 5);
    for s in strategies {
        let counts: Vec<u64> = s["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect();
        assert_eq!(counts.iter().sum::<u64>(), 12, "{s}");
        if ["host-round-robin", "least-loaded"].contains(&s["strategy"].as_str().unwrap()) {
            assert!(s["spread"].as_u64().unwrap() <= 1, "{s}");
            assert_eq!(s["fallbacks"], 0);
        }
    }
    let out = conflux(&["local-dirs", "--strategy", "nope"]);
    assert_eq!(out.status.code(), Some(2));
}
