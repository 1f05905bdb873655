//! `conflux run --speculative` end to end: the flags, the `speculative_attempts` report and the
//! refusal of options out of Flink's ranges.

use crate::support::{conflux, json_of};

/// A 200 x 200 word count on 20 TaskManagers, two of them 10x slower, with and without
/// speculation (lower bound 0: the 1-2 s tasks never reach Flink's 1 min).
#[test]
fn run_reports_speculative_attempts_and_finishes_sooner() {
    let generated = conflux(&["generate", "wordcount", "--parallelism", "200"]);
    assert!(generated.status.success());
    let dir = std::env::temp_dir().join(format!("conflux-speculative-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("wc.json");
    std::fs::write(&file, &generated.stdout).expect("write the job");
    let path = file.to_str().expect("UTF-8 path");
    let base = [
        "run",
        path,
        "--format",
        "json",
        "--quiet",
        "--slow-task-managers",
        "2",
        "--slowdown",
        "10",
        "--task-duration-ms",
        "1000..2000",
    ];
    let without = json_of(&conflux(&base));
    let with = json_of(&conflux(
        &[
            &base[..],
            &["--speculative", "--slow-task-baseline-lower-bound-ms", "0"],
        ]
        .concat(),
    ));
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(without["status"], "FINISHED");
    assert_eq!(with["status"], "FINISHED");
    let off = &without["speculative_attempts"];
    assert_eq!(off["enabled"], false);
    assert_eq!(off["started"], 0);
    let on = &with["speculative_attempts"];
    assert_eq!(on["enabled"], true);
    let started = on["started"].as_u64().expect("started");
    let won = on["won"].as_u64().expect("won");
    let cancelled = on["cancelled"].as_u64().expect("cancelled");
    let failed = on["failed"].as_u64().expect("failed");
    assert!(won >= 20, "{on}");
    assert_eq!(started, won + cancelled + failed);
    assert_eq!(with["tasks_deployed"].as_u64(), Some(400 + started));
    let (w, wo) = (
        with["virtual_ms"].as_u64().expect("ms"),
        without["virtual_ms"].as_u64().expect("ms"),
    );
    assert!(w * 2 <= wo, "with speculation {w} ms, without {wo} ms");
}

#[test]
fn run_refuses_speculative_options_out_of_range() {
    for (flag, value, message) in [
        (
            "--slow-task-baseline-ratio",
            "1",
            "slow-task-detector.execution-time.baseline-ratio must be in [0, 1), got 1",
        ),
        (
            "--slow-task-baseline-multiplier",
            "0",
            "slow-task-detector.execution-time.baseline-multiplier must be positive, got 0",
        ),
        (
            "--slow-task-check-interval-ms",
            "0",
            "slow-task-detector.check-interval must be positive, got 0 ms",
        ),
        (
            "--slowdown",
            "0.5",
            "--slowdown 0.5 is not a factor from 1 to 1000",
        ),
        // A huge factor overflowed the task times it multiplies: slow became fast.
        (
            "--slowdown",
            "1e308",
            "--slowdown 1e308 is not a factor from 1 to 1000",
        ),
        // The flag is named before the Flink option.
        (
            "--speculative-max-concurrent-executions",
            "0",
            "--speculative-max-concurrent-executions: execution.batch.speculative.max-concurrent-executions must be at least 1",
        ),
    ] {
        let out = conflux(&[
            "run",
            "fixtures/jobs/small/two-data-sets.json",
            "--speculative",
            flag,
            value,
        ]);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(message), "{flag} {value}: {stderr}");
    }
    // More slow TaskManagers than TaskManagers, as `cluster` refuses it.
    let out = conflux(&[
        "run",
        "fixtures/jobs/small/two-data-sets.json",
        "--task-managers",
        "2",
        "--slow-task-managers",
        "5",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--slow-task-managers 5 is more than --task-managers 2"),
        "{stderr}"
    );
}
