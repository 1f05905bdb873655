//! `conflux inspect`, `generate`, `run` and `simulate` end to end: outputs, the JSON contracts,
//! exit codes.

use serde_json::{json, Value};

use crate::support::{conflux, json_of, repo};

#[test]
fn inspect_word_count_10k_reports_groups_regions_and_bytes() {
    for (file, regions, job_type) in [
        ("fixtures/jobs/wordcount-10k-blocking.json", 20_000, "batch"),
        ("fixtures/jobs/wordcount-10k-pipelined.json", 1, "streaming"),
    ] {
        let out = conflux(&["inspect", file, "--format", "json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = json_of(&out);
        assert_eq!(r["regions"], regions, "{file}");
        assert_eq!(r["job_type"], job_type);
        assert_eq!(r["execution_vertices"], 20_000);
        assert_eq!(r["logical_connections"], 100_000_000u64);
        assert_eq!(r["consumed_partition_groups"], 1);
        assert_eq!(r["consumer_vertex_groups"], 1);
        assert_eq!(r["partitions"], 10_000);
        let bytes = r["topology_bytes"].as_u64().expect("topology_bytes");
        // O(N) regions arrays of u32: one word per vertex when every vertex is a region of its
        // own (the member list alone), between 2 and 3 otherwise; far below 2 MiB.
        let words = if regions == 20_000 { 1 } else { 2 };
        assert!(
            (20_000 * 4 * words..2 * 1024 * 1024).contains(&bytes),
            "{bytes}"
        );
        assert!(r["wall_ms"]["total"].as_f64().expect("total") >= 0.0);
    }
}

#[test]
fn inspect_detail_matches_hand_checked_small_topologies() {
    let dir = repo().join("fixtures/jobs/small");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("fixtures/jobs/small") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if !name.ends_with(".json") || name.ends_with(".expected.json") {
            continue;
        }
        let expected_path = dir.join(name.replace(".json", ".expected.json"));
        let expected: Value =
            serde_json::from_slice(&std::fs::read(&expected_path).expect("expected file"))
                .expect("expected JSON");
        let out = conflux(&[
            "inspect",
            path.to_str().expect("utf-8"),
            "--format",
            "json",
            "--detail",
        ]);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = json_of(&out);
        assert_eq!(r["regions"], expected["regions"], "{name}");
        assert_eq!(r["vertices"], expected["vertices"], "{name}");
        checked += 1;
    }
    assert_eq!(checked, 5);
}

#[test]
fn inspect_text_lists_vertices_when_detailed() {
    let out = conflux(&[
        "inspect",
        "fixtures/jobs/small/pointwise-3-to-5-blocking.json",
        "--detail",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("pipelined regions     8"), "{text}");
    assert!(text.contains("B#3  region 6  consumes [A#1]"), "{text}");
}

#[test]
fn inspect_accepts_flink_plans_with_parallelism_options() {
    let out = conflux(&[
        "inspect",
        "fixtures/flink-plans/tpch-q3-auto-parallelism.plan.json",
        "--format",
        "json",
        "--default-parallelism",
        "7",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json_of(&out);
    assert_eq!(r["input_format"], "flink_plan");
    assert_eq!(r["execution_vertices"], 5 * 7 + 1);
    let out = conflux(&[
        "inspect",
        "fixtures/flink-plans/rebalance-2000-1000.plan.json",
        "--format",
        "json",
        "--parallelism",
        "10",
    ]);
    let r = json_of(&out);
    assert_eq!(r["logical_connections"], 100);
    let out = conflux(&[
        "inspect",
        "fixtures/flink-plans/rescale-2000-1000.plan.json",
        "--format",
        "json",
    ]);
    let r = json_of(&out);
    assert_eq!(r["logical_connections"], 2_000);
    assert_eq!(r["regions"], 1_000);
}

#[test]
fn generate_prints_a_valid_word_count() {
    let out = conflux(&[
        "generate",
        "wordcount",
        "--parallelism",
        "3",
        "--result-partition-type",
        "hybrid_full",
    ]);
    assert!(out.status.success());
    let g = json_of(&out);
    assert_eq!(g["job_type"], "batch");
    assert_eq!(g["vertices"][0]["id"], "source");
    assert_eq!(g["vertices"][1]["parallelism"], 3);
    assert_eq!(g["edges"][0]["result_partition_type"], "hybrid_full");
    let out = conflux(&[
        "generate",
        "wordcount",
        "--parallelism",
        "3",
        "--result-partition-type",
        "pipelined",
    ]);
    assert_eq!(json_of(&out)["job_type"], "streaming");
}

/// `--words-per-source` makes the vertices name their tasks and configs; without it the output
/// is the synthetic job, byte for byte.
#[test]
fn generate_word_count_tasks() {
    let out = conflux(&["generate", "wordcount", "--parallelism", "1"]);
    assert!(out.status.success());
    let vertex =
        |id: &str| format!("    {{\n      \"id\": \"{id}\",\n      \"parallelism\": 1\n    }}");
    let expected = format!(
        "{{\n  \"name\": \"word count 1 x 1 (blocking)\",\n  \"job_type\": \"batch\",\n  \"vertices\": [\n{},\n{}\n  ],\n  \"edges\": [\n    {{\n      \"source\": \"source\",\n      \"target\": \"count\",\n      \"distribution_pattern\": \"all_to_all\",\n      \"result_partition_type\": \"blocking\",\n      \"ship_strategy\": \"HASH[word]\"\n    }}\n  ]\n}}\n",
        vertex("source"),
        vertex("count")
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);

    let out = conflux(&[
        "generate",
        "wordcount",
        "--parallelism",
        "64",
        "--words-per-source",
        "1562500",
    ]);
    assert!(out.status.success());
    let g = json_of(&out);
    assert_eq!(g["vertices"][0]["invokable"], "wordcount-source");
    assert_eq!(g["vertices"][1]["invokable"], "wordcount-count");
    for v in 0..2 {
        let c = &g["vertices"][v]["config"];
        assert_eq!(
            (&c["words-per-source"], &c["vocabulary"], &c["seed"]),
            (&"1562500".into(), &"100000".into(), &"1".into())
        );
    }
    let out = conflux(&[
        "generate",
        "wordcount",
        "--parallelism",
        "2",
        "--words-per-source",
        "10",
        "--vocabulary",
        "50",
    ]);
    assert_eq!(json_of(&out)["vertices"][1]["config"]["vocabulary"], "50");
    // --vocabulary alone, or out of range, is a usage error.
    let out = conflux(&["generate", "wordcount", "--vocabulary", "50"]);
    assert_eq!(out.status.code(), Some(2));
    let out = conflux(&[
        "generate",
        "wordcount",
        "--words-per-source",
        "1",
        "--vocabulary",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn generate_components_writes_a_job_inspect_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("components.json");
    let file = file.to_str().expect("utf-8");
    let out = conflux(&[
        "generate",
        "components",
        "--vertices",
        "10",
        "--component-size",
        "4",
        "-o",
        file,
    ]);
    assert!(out.status.success());
    let out = conflux(&["inspect", file, "--format", "json"]);
    assert!(out.status.success());
    let r = json_of(&out);
    assert_eq!(r["job_vertices"], 10);
    assert_eq!(r["job_edges"], 7); // chains v0-v3, v4-v7, v8-v9
    assert_eq!(r["regions"], 3);
}

#[test]
fn bad_input_exits_2_with_one_line_naming_the_problem() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"job_type":"batch","vertices":[{"id":"a","parallelism":1}],
            "edges":[{"source":"a","target":"ghost","distribution_pattern":"pointwise","result_partition_type":"blocking"}]}"#,
    )
    .expect("write");
    let bad = bad.to_str().expect("utf-8");
    let out = conflux(&["inspect", bad]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("unknown target vertex 'ghost'"), "{stderr}");
    assert!(out.stdout.is_empty());

    let out = conflux(&["inspect", bad, "--format", "json"]);
    assert_eq!(out.status.code(), Some(2));
    let r = json_of(&out);
    assert!(r["error"].as_str().expect("error").contains("ghost"));

    let out = conflux(&["inspect", "no/such/file.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such/file.json"));

    let out = conflux(&[
        "inspect",
        "fixtures/jobs/wordcount-10k-blocking.json",
        "--detail",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--detail would list 100000000"));

    let out = conflux(&["inspect", "--format", "yaml", bad]);
    assert_eq!(out.status.code(), Some(2));
    let out = conflux(&["generate", "wordcount", "--parallelism", "0"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn inspect_reports_descriptor_sizes_and_offload_decisions() {
    let file = "fixtures/jobs/wordcount-10k-blocking.json";
    let out = conflux(&["inspect", file, "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = &json_of(&out)["descriptors"];
    assert_eq!(d["groups"], 1);
    assert_eq!(d["descriptors"], 10_000);
    assert_eq!(d["offloaded_groups"], 1, "10,000 x 10,000 >= 2048 x 2048");
    let compressed = d["compressed_bytes"].as_u64().expect("bytes");
    let raw = d["raw_bytes"].as_u64().expect("bytes");
    assert!(
        compressed <= 100 * 1024 && compressed * 4 < raw,
        "raw {raw}, compressed {compressed}"
    );
    let group = &d["edges"][0]["listed_groups"][0];
    assert_eq!(group["consumers"], 10_000);
    assert_eq!(group["offloaded"], true);

    // Flink 1.14's byte rule: ~47 KB stays below 1 MiB.
    let out = conflux(&[
        "inspect",
        file,
        "--format",
        "json",
        "--offload-rule",
        "bytes",
    ]);
    assert_eq!(json_of(&out)["descriptors"]["offloaded_groups"], 0);
    let out = conflux(&[
        "inspect",
        file,
        "--format",
        "json",
        "--offload-rule",
        "bytes",
        "--offload-threshold",
        "1000",
    ]);
    assert_eq!(json_of(&out)["descriptors"]["offloaded_groups"], 1);
    let out = conflux(&[
        "inspect",
        file,
        "--format",
        "json",
        "--offload-threshold",
        "100000001",
    ]);
    assert_eq!(json_of(&out)["descriptors"]["offloaded_groups"], 0);

    // Pointwise 3 -> 5: three groups of one descriptor each, far below any threshold.
    let out = conflux(&[
        "inspect",
        "fixtures/jobs/small/pointwise-3-to-5-blocking.json",
        "--format",
        "json",
    ]);
    let d = &json_of(&out)["descriptors"];
    assert_eq!(
        (
            d["groups"].as_u64(),
            d["descriptors"].as_u64(),
            d["offloaded_groups"].as_u64()
        ),
        (Some(3), Some(3), Some(0))
    );
}

#[test]
fn run_finishes_the_10k_word_count_and_reports_the_contract_keys() {
    let out = conflux(&[
        "run",
        "fixtures/jobs/wordcount-10k-blocking.json",
        "--format",
        "json",
        "--quiet",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json_of(&out);
    assert_eq!(r["status"], "FINISHED");
    assert_eq!(r["tasks_deployed"], 20_000);
    assert_eq!(r["restarts"], 0);
    assert!(r["wall_ms"]["total"].as_f64().expect("total") > 0.0);
    assert!(r["max_handler_stall_ms"].as_f64().is_some());
    assert!(r["peak_rss_bytes"].as_u64().expect("rss") > 0);
    assert_eq!(r["trace_digest"].as_str().expect("digest").len(), 16);
    // One offloaded group, fetched once per TaskManager (1,000 of them) from the durable store.
    assert_eq!(r["descriptors"]["blobs_uploaded"], 1);
    assert_eq!(r["task_manager_count"], 1_000);
    let tms = r["task_managers"]
        .as_array()
        .expect("one entry per TaskManager");
    assert_eq!(tms.len(), 1_000);
    assert!(
        tms.iter()
            .all(|tm| tm["tasks"] == 20 && tm["blob_fetches"] == 1),
        "{tms:?}"
    );
    assert_eq!(r["blob_fetches"], 1_000);
    assert_eq!(r["blob_cache_hits"], 9_000);
    assert_eq!(r["blob_server"]["durable_fetches"], 1_000);
}

#[test]
fn run_with_faults_is_deterministic_per_seed() {
    let args = [
        "run",
        "fixtures/jobs/small/two-data-sets.json",
        "--format",
        "json",
        "--quiet",
        "--task-failure-rate",
        "0.3",
        "--partition-not-found-rate",
        "0.2",
        "--task-manager-losses",
        "1",
        "--blob-server-restarts",
        "1",
        "--offload-threshold",
        "1",
        "--restart-strategy",
        "exponential-delay",
    ];
    let first = json_of(&conflux(&[&args[..], &["--seed", "7"]].concat()));
    let again = json_of(&conflux(&[&args[..], &["--seed", "7"]].concat()));
    assert_eq!(first["status"], "FINISHED", "{first}");
    assert_eq!(first["trace_digest"], again["trace_digest"]);
    assert_eq!(first["restarts"], again["restarts"]);
    let digests: std::collections::HashSet<String> = (0..6)
        .map(|seed| {
            json_of(&conflux(
                &[&args[..], &["--seed", &seed.to_string()]].concat(),
            ))["trace_digest"]
                .to_string()
        })
        .collect();
    assert!(digests.len() > 1, "seeds should change the run");
}

#[test]
fn run_fails_with_exit_1_when_the_restart_strategy_gives_up() {
    // Every first attempt fails; failures while a restart is pending join it (FLIP-364), so the
    // job needs two attempts: one is not enough.
    let out = conflux(&[
        "run",
        "fixtures/jobs/small/two-data-sets.json",
        "--format",
        "json",
        "--quiet",
        "--task-failure-rate",
        "1",
        "--restart-attempts",
        "1",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json_of(&out);
    assert_eq!(r["status"], "FAILED");
    assert_eq!(r["restarts"], 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains(
        "Recovery is suppressed by the restart strategy ExponentialDelayRestartBackoffTimeStrategy"
    ));
}

/// Flink's default restart strategy without checkpointing (every job here) is none: the first
/// task failure fails the job. An earlier Conflux restarted with exponential delay by default,
/// calling that Flink 1.20's default; a strategy given restarts.
#[test]
fn run_restarts_nothing_unless_a_strategy_is_given() {
    let base = [
        "run",
        "fixtures/jobs/small/two-data-sets.json",
        "--format",
        "json",
        "--quiet",
        "--task-failure-rate",
        "0.5",
    ];
    let out = conflux(&base);
    assert_eq!(out.status.code(), Some(1));
    let r = json_of(&out);
    assert_eq!(
        (&r["status"], &r["restarts"]),
        (&json!("FAILED"), &json!(0))
    );
    let reason = r["failure_reason"].as_str().expect("a reason");
    assert!(
        reason.starts_with(
            "Recovery is suppressed by the restart strategy NoRestartBackoffTimeStrategy (0 restart(s) so far): "
        ),
        "{reason}"
    );
    for strategy in [
        &[
            "--restart-strategy",
            "fixed-delay",
            "--restart-attempts",
            "100",
        ][..],
        &[
            "--restart-strategy",
            "failure-rate",
            "--restart-max-failures-per-interval",
            "100",
        ],
        &["--restart-strategy", "exponential-delay"],
        &["--restart-attempts", "100"],
    ] {
        let r = json_of(&conflux(&[&base[..], strategy].concat()));
        assert_eq!(r["status"], "FINISHED", "{strategy:?}: {r}");
        assert!(
            r["restarts"].as_u64().expect("restarts") > 0,
            "{strategy:?}"
        );
    }
}

/// Restart flags are Flink's options: an option of another strategy, an option without a
/// strategy and a value Flink refuses are usage errors naming the flag.
#[test]
fn restart_flags_out_of_place_are_refused() {
    for (flags, message) in [
        (
            &["--restart-delay-ms", "5"][..],
            "--restart-delay-ms needs --restart-strategy",
        ),
        (
            &["--restart-strategy", "fixed-delay", "--restart-backoff-multiplier", "2"],
            "--restart-backoff-multiplier does not apply to --restart-strategy fixed-delay (it is an option of exponential-delay)",
        ),
        (
            &["--restart-strategy", "exponential-delay", "--restart-backoff-multiplier", "1"],
            "--restart-backoff-multiplier: restart-strategy.exponential-delay.backoff-multiplier 1 is not a finite number above 1",
        ),
        (
            &["--restart-strategy", "retry-forever"],
            "unknown restart strategy 'retry-forever' (expected none, fixed-delay, failure-rate or exponential-delay)",
        ),
    ] {
        let out = conflux(
            &[&["run", "fixtures/jobs/small/two-data-sets.json", "--quiet"][..], flags].concat(),
        );
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(message), "{flags:?}: {stderr}");
    }
}

/// A slot request that times out fails the bulk's tasks through the restart strategy (Flink's
/// bulk checker and `NoResourceAvailableException`): the streaming word count of 10 on one
/// TaskManager of 2 slots with 5 attempts restarts 5 times and fails at about 1,813 s (an
/// earlier Conflux failed it at 300 s with 0 restarts).
#[test]
fn run_restarts_a_job_whose_slots_never_come() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("p.json");
    let file = file.to_str().expect("utf-8 path");
    let generated = conflux(&[
        "generate",
        "wordcount",
        "--parallelism",
        "10",
        "--result-partition-type",
        "pipelined",
        "-o",
        file,
    ]);
    assert!(generated.status.success());
    let out = conflux(&[
        "run",
        file,
        "--task-managers",
        "1",
        "--slots",
        "2",
        "--restart-attempts",
        "5",
        "--format",
        "json",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let r = json_of(&out);
    assert_eq!(
        (&r["status"], &r["restarts"]),
        (&json!("FAILED"), &json!(5))
    );
    let virtual_ms = r["virtual_ms"].as_u64().expect("virtual_ms");
    assert!(
        (1_811_000..=1_815_000).contains(&virtual_ms),
        "{virtual_ms}"
    );
    assert!(r["failure_reason"]
        .as_str()
        .expect("a reason")
        .contains("NoResourceAvailableException"));
}

/// `--slot-request-timeout-ms` (Flink's `slot.request.timeout`, also as `-D`) sets how long the
/// same unservable request waits: 10 s instead of 300 s, so six attempts and five back-offs end at
/// about 73 s of virtual time instead of 1,813 s, and the failure names the 10,000 ms.
#[test]
fn the_slot_request_timeout_is_a_flag_and_a_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("p.json");
    let file = file.to_str().expect("utf-8 path");
    let generated = conflux(&[
        "generate",
        "wordcount",
        "--parallelism",
        "10",
        "--result-partition-type",
        "pipelined",
        "-o",
        file,
    ]);
    assert!(generated.status.success());
    let run = |setting: &[&str]| {
        let mut args = vec![
            "run",
            file,
            "--task-managers",
            "1",
            "--slots",
            "2",
            "--restart-attempts",
            "5",
            "--format",
            "json",
            "--quiet",
        ];
        args.extend_from_slice(setting);
        let out = conflux(&args);
        assert_eq!(out.status.code(), Some(1), "{setting:?}");
        json_of(&out)
    };
    let by_flag = run(&["--slot-request-timeout-ms", "10000"]);
    let virtual_ms = by_flag["virtual_ms"].as_u64().expect("virtual_ms");
    assert!((71_000..=75_000).contains(&virtual_ms), "{virtual_ms}");
    assert_eq!(by_flag["restarts"], json!(5));
    assert!(by_flag["failure_reason"]
        .as_str()
        .expect("a reason")
        .contains("could not acquire a slot within 10000 ms"));
    let by_key = run(&["-D", "slot.request.timeout=10 s"]);
    assert_eq!(by_key["virtual_ms"], by_flag["virtual_ms"]);
}

/// FORWARD edges form a forward group: the reproduction (source 6 -> map -1 -> FORWARD sink -1)
/// decides 85 for both (an earlier Conflux decided the sink from its own bytes, 64); two fixed,
/// different parallelisms across a FORWARD edge are refused at load, naming the edge.
#[test]
fn run_decides_one_parallelism_per_forward_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("forward.json");
    let mut job = json!({"job_type": "batch",
        "vertices": [{"id": "source", "parallelism": 6}, {"id": "map", "parallelism": -1},
                     {"id": "sink", "parallelism": -1}],
        "edges": [
            {"source": "source", "target": "map", "distribution_pattern": "all_to_all", "result_partition_type": "blocking"},
            {"source": "map", "target": "sink", "distribution_pattern": "pointwise", "result_partition_type": "blocking", "ship_strategy": "FORWARD"}]});
    std::fs::write(&file, job.to_string()).expect("write");
    let path = file.to_str().expect("utf-8 path");
    let r = json_of(&conflux(&["run", path, "--format", "json", "--quiet"]));
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert_eq!(r["decided_parallelism"], json!({"map": 85, "sink": 85}));
    job["vertices"][1]["parallelism"] = json!(4);
    job["vertices"][2]["parallelism"] = json!(5);
    std::fs::write(&file, job.to_string()).expect("write");
    let out = conflux(&["run", path, "--quiet"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "edge 1 (map -> sink): Forward partitioning does not allow change of parallelism"
        ),
        "{stderr}"
    );
}

#[test]
fn run_finishes_every_flink_plan() {
    let dir = repo().join("fixtures/flink-plans");
    let mut plans = 0;
    for entry in std::fs::read_dir(&dir).expect("fixtures") {
        let path = entry.expect("entry").path();
        if !path.to_string_lossy().ends_with(".plan.json") {
            continue;
        }
        let out = conflux(&[
            "run",
            path.to_str().expect("utf-8"),
            "--format",
            "json",
            "--quiet",
            "--default-parallelism",
            "8",
        ]);
        let r = json_of(&out);
        assert_eq!(
            r["status"],
            "FINISHED",
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        plans += 1;
    }
    assert_eq!(plans, 57);
}

#[test]
fn simulate_replays_a_script_as_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"events": [{"finish": "A#0"}, {"finish": "A#1"}, {"fail": "B#0", "partition_not_found": "A#1"}]}"#,
    )
    .expect("write");
    let out = conflux(&[
        "simulate",
        "fixtures/jobs/small/shared-data-set.json",
        "--script",
        script.to_str().expect("utf-8"),
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json_of(&out);
    assert_eq!(r["status"], "RUNNING");
    let timeline = r["timeline"].as_array().expect("timeline");
    assert_eq!(
        timeline[0],
        serde_json::json!({"event": -1, "deploy": ["A#0"]})
    );
    // A#1 is shared by B and C: its restart takes every consumer of it along.
    assert!(
        timeline.contains(
            &serde_json::json!({"event": 2, "restart": ["A#1", "B#0", "B#1", "C#0", "C#1"]})
        ),
        "{r}"
    );

    // With a restart strategy the replay follows it: `none` fails the job at that failure.
    let out = conflux(&[
        "simulate",
        "fixtures/jobs/small/shared-data-set.json",
        "--script",
        script.to_str().expect("utf-8"),
        "--restart-strategy",
        "none",
        "--format",
        "json",
    ]);
    let r = json_of(&out);
    assert_eq!(r["status"], "FAILED", "{r}");
    assert!(!r.to_string().contains("restart"), "{r}");

    std::fs::write(&script, r#"{"events": [{"finish": "B#0"}]}"#).expect("write");
    let out = conflux(&[
        "simulate",
        "fixtures/jobs/small/shared-data-set.json",
        "--script",
        script.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("B#0: cannot finish in state CREATED"));
}

#[test]
fn flink_plan_errors_name_the_node_and_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (plan, expected) in [
        (
            r#"{"jid": "j", "nodes": [{"id": "a1b2", "parallelism": 2}, {"id": "c3d4"}]}"#,
            "error: Flink plan: node \"c3d4\": missing field `parallelism`\n",
        ),
        (
            r#"{"jid": "j", "name": "no nodes"}"#,
            "error: Flink plan: missing field `nodes` (the list of job vertices)\n",
        ),
    ] {
        let file = dir.path().join("plan.json");
        std::fs::write(&file, plan).expect("write");
        let out = conflux(&["inspect", file.to_str().expect("utf-8")]);
        assert_eq!(out.status.code(), Some(2), "{plan}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), expected, "{plan}");
    }
}

/// `inspect` marks undecided vertices (`-1`, or every vertex above 1 with `--parallelism auto`)
/// and counts them at `--default-parallelism`; a streaming job cannot have them.
#[test]
fn inspect_marks_undecided_vertices() {
    let out = conflux(&[
        "inspect",
        "fixtures/flink-plans/wordcount-batch-p4.plan.json",
        "--parallelism",
        "auto",
        "--default-parallelism",
        "16",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let r = json_of(&out);
    assert_eq!(r["execution_vertices"], 32);
    let vertices = r["job_graph"]["vertices"].as_array().expect("vertices");
    assert!(
        vertices.iter().all(|v| v["undecided"] == true),
        "{vertices:?}"
    );
    let text = conflux(&[
        "inspect",
        "fixtures/flink-plans/tpch-q3-auto-parallelism.plan.json",
    ]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert_eq!(
        text.matches("parallelism 128 (undecided)").count(),
        5,
        "{text}"
    );
    assert_eq!(text.matches("parallelism 1, ").count(), 1, "{text}");
    let refused = conflux(&[
        "inspect",
        "fixtures/flink-plans/wordcount-streaming-p4.plan.json",
        "--parallelism",
        "auto",
    ]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("parallelism -1 (undecided) is only valid in a batch job"),
        "{stderr}"
    );
    let bad = conflux(&[
        "inspect",
        "fixtures/jobs/small/pointwise-3-to-5-blocking.json",
        "--parallelism",
        "most",
    ]);
    assert_eq!(bad.status.code(), Some(2));
}

/// `inspect --format dot|mermaid|svg`: one arrow per job edge, one SVG box per vertex, names
/// instead of Flink's ids, edge numbers with `--edge-stats`; misuse is exit 2.
#[test]
fn inspect_draws_pictures_of_the_job_graph() {
    let plan = "fixtures/flink-plans/nexmark-q5.plan.json";
    let report = json_of(&conflux(&["inspect", plan, "--format", "json"]));
    let count = |key: &str| usize::try_from(report[key].as_u64().expect("a count")).expect("fits");
    let (vertices, edges) = (count("job_vertices"), count("job_edges"));
    let run = |args: &[&str]| {
        let out = conflux(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let dot = run(&["inspect", plan, "--format", "dot", "--edge-stats"]);
    assert!(
        dot.starts_with("digraph \"insert-into_default_catalog"),
        "{dot}"
    );
    assert_eq!(
        dot.lines().filter(|l| l.contains("\" -> \"")).count(),
        edges
    );
    assert_eq!(dot.matches(" ch, ").count(), edges);
    // Flink's names, cut, as labels (the id stays the node's name in DOT).
    assert!(dot.contains("[14]:WindowJoin(leftWindow=[HOP("), "{dot}");
    let mermaid = run(&["inspect", plan, "--format", "mermaid"]);
    assert!(mermaid.contains("flowchart TB"));
    assert_eq!(mermaid.matches(" -->|").count(), edges);
    let svg = run(&["inspect", plan, "--format", "svg"]);
    assert!(svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("class=\"vertex\"").count(), vertices);
    assert_eq!(svg.matches("class=\"edge\"").count(), edges);

    for (args, message) in [
        (
            &["inspect", plan, "--edge-stats"][..],
            "--edge-stats labels the edges of a picture",
        ),
        (
            &["inspect", plan, "--format", "svg", "--detail"][..],
            "--detail lists execution vertices in a report",
        ),
    ] {
        let out = conflux(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(message),
            "{args:?}"
        );
    }
}

/// `generate layered` makes the pictures' benchmark shape: 200 vertices, three inputs each past
/// the first layer, a logical region per four layers.
#[test]
fn generate_layered_writes_a_job_inspect_draws() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("layered.json");
    let file = file.to_str().expect("utf-8");
    let out = conflux(&[
        "generate", "layered", "--layers", "20", "--width", "10", "-o", file,
    ]);
    assert!(out.status.success());
    let r = json_of(&conflux(&["inspect", file, "--format", "json"]));
    assert_eq!(
        (r["job_vertices"].as_u64(), r["job_edges"].as_u64()),
        (Some(200), Some(570))
    );
    let out = conflux(&["inspect", file, "--format", "dot"]);
    assert!(out.status.success());
    let dot = String::from_utf8_lossy(&out.stdout);
    assert_eq!(dot.matches("\" -> \"").count(), 570);
    // Blocking edges into layers 4, 8, 12 and 16 cut 20 layers into five logical regions.
    assert_eq!(dot.matches("subgraph cluster_").count(), 5);
}

/// The README's replay example, shipped as `examples/simulate/`: deploys of `A#0` and `A#1` at
/// the start, `B#0` and `B#1` after `A#1` finishes, and the restart of `[A#1, B#0, B#1]` with a
/// new deploy of `A#1` when `B#0` fails reading `A#1`.
#[test]
fn the_readme_replay_example_runs_as_documented() {
    let out = conflux(&[
        "simulate",
        "examples/simulate/a2-b2-blocking.json",
        "--script",
        "examples/simulate/a2-b2-blocking.script.json",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json_of(&out);
    let timeline = r["timeline"].as_array().expect("timeline");
    let at = |event: i64, kind: &str| -> Vec<serde_json::Value> {
        timeline
            .iter()
            .filter(|e| e["event"] == event && e.get(kind).is_some())
            .map(|e| e[kind].clone())
            .collect()
    };
    use serde_json::json;
    assert_eq!(at(-1, "deploy"), [json!(["A#0"]), json!(["A#1"])], "{r}");
    assert_eq!(at(1, "deploy"), [json!(["B#0"]), json!(["B#1"])], "{r}");
    assert_eq!(at(2, "restart"), [json!(["A#1", "B#0", "B#1"])], "{r}");
    assert_eq!(at(2, "deploy"), [json!(["A#1"])], "{r}");
}

/// Regression: `run --parallelism N` of the 10k word count kept the title "10000 x 10000".
#[test]
fn run_with_parallelism_titles_the_job_with_it() {
    let file = "fixtures/jobs/wordcount-10k-blocking.json";
    let out = conflux(&["run", file, "--parallelism", "3", "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json_of(&out);
    assert_eq!(r["job"], "word count 3 x 3 (blocking)");
    assert_eq!(r["tasks"], 6);
    let out = conflux(&["run", file, "--parallelism", "3"]);
    assert!(String::from_utf8_lossy(&out.stdout)
        .starts_with("job \"word count 3 x 3 (blocking)\" FINISHED"));
}
