//! `conflux run` on undecided vertices (`-1`): decided at run time from the bytes the simulated
//! tasks write, as Flink 1.20's adaptive batch scheduler.

use serde_json::Value;

use crate::support::{conflux, json_of, repo};

const WORD_COUNT: &str = "fixtures/flink-plans/wordcount-batch-p4-adaptive.plan.json";
/// The word count's vertices (Flink's ids).
const COUNTER: &str = "90bea66de1c231edf33913ecd54406c1";
const SOURCE: &str = "cbc357ccb763df2852fee8c4fc7d55f2";

fn run_json(args: &[&str]) -> Value {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json", "--quiet"]);
    let out = conflux(&all);
    let r = json_of(&out);
    assert_eq!(
        r["status"],
        "FINISHED",
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    r
}

/// The known answer: 1 GiB from the source (its 128 subtasks, Flink 1.20's default source
/// parallelism falling back to the max parallelism), spread evenly, decides 64 counting
/// subtasks of 16 MiB each (`avg-data-volume-per-task`).
#[test]
fn the_word_count_of_one_gib_decides_64() {
    let r = run_json(&[WORD_COUNT, "--source-bytes", "1073741824"]);
    assert_eq!(r["decided_parallelism"][COUNTER], 64, "{r}");
    assert_eq!(r["decided_parallelism"][SOURCE], 128, "{r}");
    assert_eq!(r["tasks"], 128 + 64);
    assert_eq!(r["tasks_deployed"], 128 + 64);
    let per_task = &r["bytes_per_task"][COUNTER];
    assert_eq!(
        (&per_task["min"], &per_task["max"]),
        (&Value::from(16u64 << 20), &Value::from(16u64 << 20))
    );
    assert_eq!(r["skewed_subpartitions"]["count"], 0);

    // A quarter of the bytes decides a quarter of the subtasks.
    let r = run_json(&[WORD_COUNT, "--source-bytes", "268435456"]);
    assert_eq!(r["decided_parallelism"][COUNTER], 16, "{r}");

    // `--default-parallelism` given: the estimate, nothing decided.
    let r = run_json(&[WORD_COUNT, "--default-parallelism", "8"]);
    assert_eq!(r["tasks"], 16);
    assert!(r["decided_parallelism"].is_null(), "{r}");
}

/// Skewed bytes (Zipf 1.0 over the subpartitions) are reported: the hottest subpartitions with
/// their bytes far above the average per subtask; the same seed decides the same.
#[test]
fn skew_is_reported_and_runs_are_deterministic() {
    let args = [WORD_COUNT, "--source-bytes", "1073741824", "--skew", "1.0"];
    let r = run_json(&args);
    let skewed = &r["skewed_subpartitions"];
    assert!(skewed["count"].as_u64().expect("count") >= 1, "{r}");
    let largest = skewed["largest"].as_array().expect("largest");
    let top = &largest[0];
    assert!(
        top["bytes"].as_u64().expect("bytes")
            > 4 * top["average_bytes_per_task"].as_u64().expect("average"),
        "{top}"
    );
    let again = run_json(&args);
    assert_eq!(r["trace_digest"], again["trace_digest"]);
    assert_eq!(r["decided_parallelism"], again["decided_parallelism"]);
    let bad = conflux(&["run", WORD_COUNT, "--skew", "-1"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// Every batch plan of the fixtures runs to FINISHED, those with `-1` deciding at run time;
/// every TPC-H plan also with `--parallelism auto` (a plan with pipelined edges after its first
/// undecided vertex runs at the estimate, and says why).
#[test]
fn every_batch_plan_finishes_deciding() {
    let dir = repo().join("fixtures/flink-plans");
    let mut plans: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".plan.json"))
        .collect();
    plans.sort();
    let (mut batch, mut undecided, mut tpch) = (0, 0, 0);
    for path in plans {
        let text = std::fs::read_to_string(&path).expect("plan");
        if !text.contains("\"BATCH\"") {
            continue;
        }
        batch += 1;
        let file = path.to_str().expect("utf-8");
        let r = run_json(&[file, "--source-bytes", "268435456"]);
        if text.contains("\"parallelism\":-1") {
            undecided += 1;
            let decided = r["decided_parallelism"].as_object().expect("decided");
            assert!(!decided.is_empty(), "{file}: {r}");
        }
        if file.contains("tpch-") {
            tpch += 1;
            let r = run_json(&[file, "--parallelism", "auto", "--source-bytes", "268435456"]);
            let decided = r["decided_parallelism"].as_object().map_or(0, |d| d.len());
            assert!(
                decided > 0 || r["undecided_at_estimate"].is_string(),
                "{file}: {r}"
            );
        }
    }
    assert_eq!((batch, undecided, tpch), (28, 2, 22));
}

/// Beyond Flink: a `skew_splittable` consumer reads each subpartition above its average share
/// through several subtasks (ranges of producers), so with Zipf 1.0 skew the busiest subtask
/// reads at most 1.5 times the median one; the same consumer without the mark does not.
#[test]
fn skew_splitting_balances_the_bytes_per_task() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = |splittable: bool| {
        format!(
            r#"{{"name": "skewed", "job_type": "batch",
                "vertices": [{{"id": "source", "parallelism": -1}},
                             {{"id": "count", "parallelism": -1, "skew_splittable": {splittable}}}],
                "edges": [{{"source": "source", "target": "count",
                            "distribution_pattern": "all_to_all",
                            "result_partition_type": "blocking"}}]}}"#
        )
    };
    let split = dir.path().join("split.json");
    std::fs::write(&split, job(true)).expect("write");
    let whole = dir.path().join("whole.json");
    std::fs::write(&whole, job(false)).expect("write");
    for seed in ["0", "1", "2"] {
        let args = |file: &std::path::Path| {
            run_json(&[
                file.to_str().expect("utf-8"),
                "--skew",
                "1.0",
                "--seed",
                seed,
            ])
        };
        let r = args(&split);
        let ratio = r["bytes_per_task"]["count"]["max_over_median"]
            .as_f64()
            .expect("ratio");
        assert!(ratio <= 1.5, "seed {seed}: {r}");
        let splits = r["skew_splits"].as_array().expect("splits");
        assert!(!splits.is_empty(), "{r}");
        // The hottest subpartition (Zipf 1.0 over 128: 1 / H(128) of 1 GiB) is read by several
        // subtasks.
        assert!(
            splits
                .iter()
                .any(|s| s["pieces"].as_u64().expect("pieces") >= 9),
            "{r}"
        );
        let r = args(&whole);
        let ratio = r["bytes_per_task"]["count"]["max_over_median"]
            .as_f64()
            .expect("ratio");
        assert!(ratio > 5.0, "seed {seed}: {r}");
        assert_eq!(r["skew_splits"], serde_json::json!([]));
    }
}
