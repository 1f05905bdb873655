//! `conflux plan ...` and `conflux serve` end to end: the binary, its outputs and exit codes.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use crate::support::{conflux, fixture, json_of, repo};

#[test]
fn stats_channels_rebalance_vs_rescale() {
    for (name, channels) in [
        ("flink-plans/rebalance-2000-1000.plan.json", 2_000_000u64),
        ("flink-plans/rescale-2000-1000.plan.json", 2_000),
    ] {
        let out = conflux(&["plan", "stats", &fixture(name), "--format", "json"]);
        assert!(out.status.success(), "{name}: {out:?}");
        assert_eq!(json_of(&out)["channels"], channels, "{name}");
    }
    // --parallelism scales every vertex above 1.
    let out = conflux(&[
        "plan",
        "stats",
        &fixture("flink-plans/wordcount-streaming-p4.plan.json"),
        "--parallelism",
        "100",
        "--format",
        "json",
    ]);
    assert_eq!(json_of(&out)["channels"], 10_000);
    let text = conflux(&[
        "plan",
        "stats",
        &fixture("flink-plans/rebalance-2000-1000.plan.json"),
    ]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("could be RESCALE: 2,000,000 -> 2,000 channels"),
        "{text}"
    );
}

#[test]
fn edit_writes_a_new_file_and_refusals_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_path = dir.path().join("rescaled.json");
    let out_str = out_path.display().to_string();
    let out = conflux(&[
        "plan",
        "edit",
        &fixture("flink-plans/rebalance-2000-1000.plan.json"),
        "--set-partitioner",
        "0=RESCALE",
        "--output",
        &out_str,
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(json_of(&out)["channels"], 2_000);
    let stats = conflux(&["plan", "stats", &out_str, "--format", "json"]);
    assert_eq!(json_of(&stats)["channels"], 2_000);
    // diff and compat between the two.
    let d = conflux(&[
        "plan",
        "diff",
        &fixture("flink-plans/rebalance-2000-1000.plan.json"),
        &out_str,
        "--format",
        "json",
    ]);
    assert_eq!(
        json_of(&d)["channels"],
        serde_json::json!([2_000_000, 2_000])
    );
    let c = conflux(&[
        "plan",
        "compat",
        &fixture("flink-plans/rebalance-2000-1000.plan.json"),
        &out_str,
        "--format",
        "json",
    ]);
    assert_eq!(json_of(&c)["verdict"], "UNKNOWN");
    assert_eq!(json_of(&c)["topology"]["verdict"], "COMPATIBLE_AS_IS");

    // A keyed edge cannot become RESCALE: exit 2, the reason on stderr, {"error"} on stdout.
    let refused = conflux(&[
        "plan",
        "edit",
        &fixture("flink-plans/wordcount-streaming-p4.plan.json"),
        "--set-partitioner",
        "0=RESCALE",
        "--output",
        &dir.path().join("x.json").display().to_string(),
        "--format",
        "json",
    ]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("keyed") && stderr.lines().count() == 1,
        "{stderr}"
    );
    assert!(json_of(&refused)["error"]
        .as_str()
        .is_some_and(|e| e.contains("HASH")));
    // A missing file is invalid input too.
    let missing = conflux(&["plan", "stats", "/nonexistent/plan.json"]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn ttl_lists_and_edits_compiled_plans() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = fixture("flink-plans/nexmark-q18.compiled-plan.json");
    let out = conflux(&["plan", "ttl", &plan, "--format", "json"]);
    let v = json_of(&out);
    assert_eq!(
        v["stateful_operators"][0]["states"][0]["name"],
        "deduplicateState"
    );
    let edited = dir.path().join("q18.json");
    let out = conflux(&[
        "plan",
        "ttl",
        &plan,
        "--set",
        "5:deduplicateState=1 h",
        "--output",
        &edited.display().to_string(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let mut original: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&plan).expect("read")).expect("json");
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&edited).expect("read")).expect("json");
    for n in original["nodes"].as_array_mut().expect("nodes") {
        if n["id"] == 5 {
            n["state"][0]["ttl"] = "3600000 ms".into();
        }
    }
    assert_eq!(written, original);
    let bad = conflux(&[
        "plan",
        "ttl",
        &plan,
        "--set",
        "5:nope=1 h",
        "--output",
        "/tmp/never.json",
    ]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn edit_and_ttl_refuse_to_overwrite_their_input_under_any_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = dir.path().join("job.json");
    std::fs::copy(repo().join("fixtures/jobs/small/two-data-sets.json"), &job).expect("copy");
    let original = std::fs::read(&job).expect("read");
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&job, &link).expect("symlink");
    let hard = dir.path().join("hard.json");
    std::fs::hard_link(&job, &hard).expect("hard link");
    let job_str = job.to_str().expect("utf-8");
    let dotted = format!("{}/./job.json", dir.path().display());
    for output in [
        job_str,
        link.to_str().expect("utf-8"),
        hard.to_str().expect("utf-8"),
        &dotted,
    ] {
        let out = conflux(&[
            "plan",
            "edit",
            job_str,
            "--set-parallelism",
            "A=1",
            "-o",
            output,
            "--format",
            "json",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{output}: {stderr}");
        assert!(stderr.contains("is the input file"), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(json_of(&out)["error"].is_string());
        assert_eq!(std::fs::read(&job).expect("read"), original, "{output}");
    }

    let plan = dir.path().join("q18.json");
    std::fs::copy(fixture("flink-plans/nexmark-q18.compiled-plan.json"), &plan).expect("copy");
    let original = std::fs::read(&plan).expect("read");
    let plan_link = dir.path().join("q18-link.json");
    std::os::unix::fs::symlink(&plan, &plan_link).expect("symlink");
    let out = conflux(&[
        "plan",
        "ttl",
        plan.to_str().expect("utf-8"),
        "--set",
        "5:deduplicateState=1 h",
        "--output",
        plan_link.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(std::fs::read(&plan).expect("read"), original);
}

#[test]
fn serve_answers_over_http() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_conflux"))
        .args(["serve", "--address", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("address line");
    let addr = line.trim().trim_start_matches("http://").to_owned();
    let request = |method: &str, path: &str, body: &[u8]| -> String {
        let mut s = std::net::TcpStream::connect(&addr).expect("connect");
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .expect("write");
        s.write_all(body).expect("body");
        let mut response = String::new();
        s.read_to_string(&mut response).expect("read");
        response
    };
    let plan = std::fs::read(fixture("flink-plans/rescale-2000-1000.plan.json")).expect("plan");
    let created = request("POST", "/plans", &plan);
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    let stats = request("GET", "/plans/p1/stats", b"");
    assert!(
        stats.starts_with("HTTP/1.1 200") && stats.contains("\"channels\":2000"),
        "{stats}"
    );
    let missing = request("GET", "/plans/p9/stats", b"");
    assert!(
        missing.starts_with("HTTP/1.1 404") && missing.contains("unknown plan 'p9'"),
        "{missing}"
    );
    child.kill().expect("kill");
    let _ = child.wait();
}

/// Flink's names: `inspect` (text and JSON) and `plan stats` show them beside the ids, a unique
/// name works wherever a vertex is taken, `plan edit` keeps them, and a shared name is refused
/// naming the candidates.
#[test]
fn flink_names_are_shown_kept_and_resolve_vertices() {
    const SORT: &str = "[35]:Sort(orderBy=[revenue DESC])";
    const SORT_ID: &str = "23149c2f4012e830eebb47b5587a5f2f";
    let q5 = fixture("flink-plans/tpch-q5.plan.json");
    let out = conflux(&["inspect", &q5, "--format", "json"]);
    assert!(out.status.success(), "{out:?}");
    let report = json_of(&out);
    let sort = report["job_graph"]["vertices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == SORT_ID)
        .expect("the sort vertex");
    assert_eq!(sort["name"], SORT);
    assert_eq!(
        sort["description"],
        "[35]:Sort(orderBy=[revenue DESC])\n+- tpch_q5[36]: Writer\n"
    );
    let text = String::from_utf8_lossy(&conflux(&["inspect", &q5]).stdout).into_owned();
    assert!(
        text.contains(&format!("  {SORT_ID} \"{SORT}\"  parallelism 1,")),
        "{text}"
    );
    let stats = String::from_utf8_lossy(&conflux(&["plan", "stats", &q5]).stdout).into_owned();
    assert!(
        stats.contains(&format!("-> {SORT_ID} \"{SORT}\" GLOBAL")),
        "{stats}"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let edited = dir.path().join("q5.json").display().to_string();
    let out = conflux(&[
        "plan",
        "edit",
        &q5,
        "--set-parallelism",
        &format!("{SORT}=2"),
        "--edit",
        &format!(r#"{{"kind": "add_tap", "vertex": "{SORT}", "side": "input"}}"#),
        "-o",
        &edited,
    ]);
    assert!(out.status.success(), "{out:?}");
    let plan: serde_json::Value = serde_json::from_slice(&std::fs::read(&edited).unwrap()).unwrap();
    let vertex = plan["vertices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == SORT_ID)
        .unwrap();
    assert_eq!(
        (vertex["name"].as_str(), vertex["parallelism"].as_u64()),
        (Some(SORT), Some(2))
    );
    assert!(vertex["description"].as_str().unwrap().starts_with(SORT));
    assert_eq!(
        plan["vertices"].as_array().unwrap().len(),
        12,
        "the tap was added by name"
    );

    let shared = dir.path().join("shared.json");
    std::fs::write(
        &shared,
        r#"{"job_type": "streaming", "vertices": [
            {"id": "a", "name": "Map", "parallelism": 2},
            {"id": "b", "name": "Map", "parallelism": 2}]}"#,
    )
    .unwrap();
    let out = conflux(&[
        "plan",
        "edit",
        &shared.display().to_string(),
        "--set-parallelism",
        "Map=3",
        "-o",
        &dir.path().join("x.json").display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: vertex name 'Map' is ambiguous: vertices a, b have it; name one by id"
    );
}

/// `plan compat` of two Flink plans without state information says UNKNOWN and exits 0;
/// `--fail-on unknown` exits 3 after the report, `--fail-on incompatible` does not; a known
/// incompatibility exits 3 with either.
#[test]
fn compat_fail_on_exits_3_at_the_threshold() {
    let (q5, q20) = (
        fixture("flink-plans/nexmark-q5.plan.json"),
        fixture("flink-plans/nexmark-q20.plan.json"),
    );
    let out = conflux(&["plan", "compat", &q5, &q20]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.starts_with("verdict UNKNOWN\n"), "{text}");
    assert!(!text.contains("has no state"), "{text}");
    assert!(
        text.contains("(vertex 337adade1e207453ed3502e01d75fd03 \"[7]:GlobalWindowAggregate("),
        "findings name vertices by id and Flink name: {text}"
    );
    let diff = conflux(&["plan", "diff", &q5, &q20]);
    assert!(String::from_utf8_lossy(&diff.stdout)
        .contains("- vertex 414804e8911fd1feb927e51d6977268a \"[12]:GlobalWindowAggregate("));
    let out = conflux(&[
        "plan",
        "compat",
        &q5,
        &q20,
        "--fail-on",
        "unknown",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(json_of(&out)["verdict"], "UNKNOWN", "the report is printed");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: verdict UNKNOWN is at least UNKNOWN (--fail-on)"
    );
    let out = conflux(&["plan", "compat", &q5, &q20, "--fail-on", "incompatible"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");

    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let old = write(
        "old.json",
        r#"{"job_type": "streaming", "vertices": [{"id": "agg", "parallelism": 2,
            "operators": [{"uid": "agg", "name": "agg", "state": [{"name": "s", "kind": "value", "key_type": "K"}]}]}]}"#,
    );
    let new = write(
        "new.json",
        r#"{"job_type": "streaming", "vertices": [{"id": "other", "parallelism": 2, "operators": [{"name": "map"}]}]}"#,
    );
    for level in ["incompatible", "unknown"] {
        let out = conflux(&["plan", "compat", &old, &new, "--fail-on", level]);
        assert_eq!(out.status.code(), Some(3), "{level}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("verdict INCOMPATIBLE\n"));
    }
    let out = conflux(&["plan", "compat", &old, &new, "--fail-on", "sometimes"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// `plan edit --emit flink-overrides` prints the value of Flink's
/// `pipeline.jobvertex-parallelism-overrides`; other edits and plans without JobVertexIDs are
/// refused naming them (exit 2).
#[test]
fn edit_emits_flink_parallelism_overrides() {
    let q5 = fixture("flink-plans/tpch-q5.plan.json");
    let out = conflux(&[
        "plan",
        "edit",
        &q5,
        "--emit",
        "flink-overrides",
        "--set-parallelism",
        "[35]:Sort(orderBy=[revenue DESC])=2",
        "--set-parallelism",
        "a0ee7b14d617ba4d8109c408f52753c7=4",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "23149c2f4012e830eebb47b5587a5f2f:2,a0ee7b14d617ba4d8109c408f52753c7:4\n"
    );
    let out = conflux(&[
        "plan",
        "edit",
        &q5,
        "--emit",
        "flink-overrides",
        "--set-parallelism",
        "a0ee7b14d617ba4d8109c408f52753c7=4",
        "--format",
        "json",
    ]);
    let v = json_of(&out);
    assert_eq!(v["key"], "pipeline.jobvertex-parallelism-overrides");
    assert_eq!(v["value"], "a0ee7b14d617ba4d8109c408f52753c7:4");
    assert_eq!(v["overrides"][0]["parallelism"], 4);
    assert!(v["overrides"][0]["name"]
        .as_str()
        .unwrap()
        .starts_with("[33]:HashAggregate("));

    let out = conflux(&[
        "plan",
        "edit",
        &q5,
        "--emit",
        "flink-overrides",
        "--set-parallelism",
        "a0ee7b14d617ba4d8109c408f52753c7=4",
        "--set-partitioner",
        "0=RESCALE",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(
        "set_partitioner on edge 0 cannot be expressed: the option sets parallelism only"
    ));
    let out = conflux(&[
        "plan",
        "edit",
        &fixture("jobs/wordcount-10k-blocking.json"),
        "--emit",
        "flink-overrides",
        "--set-parallelism",
        "count=5",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("vertex 'count' has no Flink JobVertexID (32 hex digits)"));
    let out = conflux(&[
        "plan",
        "edit",
        &q5,
        "--emit",
        "flink-overrides",
        "--parallelism",
        "3",
        "--set-parallelism",
        "a0ee7b14d617ba4d8109c408f52753c7=4",
    ]);
    assert_eq!(out.status.code(), Some(2));
    // Without --emit, --output stays required.
    let out = conflux(&[
        "plan",
        "edit",
        &q5,
        "--set-parallelism",
        "a0ee7b14d617ba4d8109c408f52753c7=4",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// `plan rescale`: the README's 4 -> 3 worked example of 128 key groups
/// (`examples/rescale/agg.json`) in text and JSON, a vertex by id and by name, and the refusal
/// above the max parallelism (exit 2).
#[test]
fn rescale_shows_key_groups_per_subtask() {
    let file = "examples/rescale/agg.json".to_owned();
    let expected =
        "vertex agg \"count per user\": parallelism 4 -> 3, 128 key groups (max parallelism, \
         Flink's default for the old parallelism); keyed state: yes\n\
         old subtasks\n  0: key groups 0-31 (32)\n  1: key groups 32-63 (32)\n  \
         2: key groups 64-95 (32)\n  3: key groups 96-127 (32)\n\
         new subtasks\n  0: key groups 0-42 (43), reads old 0 [0-31 (32)], old 1 [32-42 (11)]\n  \
         1: key groups 43-85 (43), reads old 1 [43-63 (21)], old 2 [64-85 (22)]\n  \
         2: key groups 86-127 (42), reads old 2 [86-95 (10)], old 3 [96-127 (32)]\n\
         moves 65 of 128 key groups (50.8% of the state)\n";
    // The README's command, then the vertex by its name.
    for vertex in ["agg", "count per user"] {
        let out = conflux(&[
            "plan",
            "rescale",
            &file,
            "--vertex",
            vertex,
            "--parallelism",
            "3",
        ]);
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "{vertex}");
    }
    let out = conflux(&[
        "plan",
        "rescale",
        &file,
        "--vertex",
        "agg",
        "--parallelism",
        "8",
        "--format",
        "json",
    ]);
    let v = json_of(&out);
    assert_eq!(
        (v["moved_key_groups"].as_u64(), v["moved_share"].as_f64()),
        (Some(112), Some(0.875))
    );
    assert_eq!(v["new_subtasks"].as_array().unwrap().len(), 8);
    let out = conflux(&[
        "plan",
        "rescale",
        &file,
        "--vertex",
        "agg",
        "--parallelism",
        "200",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("parallelism 200 is above the max parallelism 128 its state was written with"));
    let out = conflux(&[
        "plan",
        "rescale",
        &file,
        "--vertex",
        "agg",
        "--parallelism",
        "2",
        "--max-parallelism",
        "256",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// Undecided parallelism (`-1`): `plan stats` counts it at `--default-parallelism` and names the
/// vertices; `plan edit` keeps `-1` and the adaptive fields in what it writes.
#[test]
fn undecided_vertices_are_estimated_and_kept_by_edits() {
    let plan = fixture("flink-plans/wordcount-batch-p4-adaptive.plan.json");
    let stats = conflux(&[
        "plan",
        "stats",
        &plan,
        "--default-parallelism",
        "8",
        "--format",
        "json",
    ]);
    assert!(stats.status.success(), "{stats:?}");
    let s = json_of(&stats);
    assert_eq!(s["execution_vertices"], 16);
    assert_eq!(s["channels"], 64);
    assert_eq!(
        s["undecided_vertices"],
        serde_json::json!([
            "cbc357ccb763df2852fee8c4fc7d55f2",
            "90bea66de1c231edf33913ecd54406c1"
        ])
    );
    let text = conflux(&["plan", "stats", &plan]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("undecided cbc357ccb763df2852fee8c4fc7d55f2, 90bea66de1c231edf33913ecd54406c1 (parallelism -1, counted at 128)"),
        "{text}"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let out_path = dir.path().join("edited.json");
    let out_str = out_path.display().to_string();
    let out = conflux(&[
        "plan",
        "edit",
        &plan,
        "--set-slot-sharing-group",
        "cbc357ccb763df2852fee8c4fc7d55f2=sources",
        "--output",
        &out_str,
    ]);
    assert!(out.status.success(), "{out:?}");
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out_path).expect("written")).expect("json");
    for v in written["vertices"].as_array().expect("vertices") {
        assert_eq!(v["parallelism"], -1, "{v}");
    }
    // A job graph with the adaptive fields keeps them through an edit.
    let job = dir.path().join("job.json");
    std::fs::write(
        &job,
        r#"{"job_type":"batch","vertices":[
            {"id":"s","parallelism":-1,"source_bytes":1048576},
            {"id":"c","parallelism":-1,"skew_splittable":true}],
           "edges":[{"source":"s","target":"c","distribution_pattern":"all_to_all","result_partition_type":"blocking"}]}"#,
    )
    .expect("write");
    let edited = dir.path().join("job-edited.json");
    let out = conflux(&[
        "plan",
        "edit",
        &job.display().to_string(),
        "--set-slot-sharing-group",
        "c=g",
        "--output",
        &edited.display().to_string(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&edited).expect("written")).expect("json");
    assert_eq!(written["vertices"][0]["source_bytes"], 1_048_576);
    assert_eq!(written["vertices"][1]["skew_splittable"], true);
    assert_eq!(written["vertices"][1]["parallelism"], -1);
}
