//! Worked examples of Flink's scheduling, failover and release behaviour, replayed through
//! scripts exactly as `conflux simulate` runs them.

use std::sync::Arc;

use conflux_graph::{ExecutionGraph, PipelinedRegions};
use conflux_sim::script::{replay, Script};
use conflux_test_support::job_graphs::{build, edge, job, vertex};
use serde_json::{json, Value};

fn graph(
    job_type: &str,
    vertices: &[(&str, u32)],
    edges: &[(&str, &str, &str, &str)],
) -> (Arc<ExecutionGraph>, Arc<PipelinedRegions>) {
    build(&job(
        job_type,
        vertices.iter().map(|&(id, p)| vertex(id, p)).collect(),
        edges
            .iter()
            .map(|&(s, t, pattern, ty)| edge(s, t, pattern, ty))
            .collect(),
    ))
}

/// Replays `script` and compares the timeline with `expected` (a JSON list) and the status.
fn check(
    g: &(Arc<ExecutionGraph>, Arc<PipelinedRegions>),
    script: Value,
    expected: Value,
    status: &str,
) {
    let script = Script::parse(script.to_string().as_bytes()).expect("script");
    let out = replay(Arc::clone(&g.0), Arc::clone(&g.1), &script).expect("replays");
    let actual = serde_json::to_value(&out.timeline).expect("json");
    assert_eq!(
        actual, expected,
        "\nactual:   {actual}\nexpected: {expected}"
    );
    assert_eq!(out.status, status);
}

/// Flink 1.20 `PipelinedRegionSchedulingStrategyTest.testStartScheduling` and the issue's
/// example: hybrid consumers are scheduled with their producers, the blocking all-to-all sinks
/// only after both map3 subtasks finished, one request each.
#[test]
fn start_scheduling_with_pipelined_hybrid_and_blocking_edges() {
    let g = graph(
        "batch",
        &[
            ("source", 2),
            ("map1", 2),
            ("map2", 2),
            ("map3", 2),
            ("sink", 2),
        ],
        &[
            ("source", "map1", "pointwise", "pipelined_bounded"),
            ("map1", "map2", "pointwise", "hybrid_full"),
            ("map2", "map3", "pointwise", "hybrid_selective"),
            ("map3", "sink", "all_to_all", "blocking"),
        ],
    );
    check(
        &g,
        json!({"events": [{"finish": "map3#0"}, {"finish": "map3#1"}]}),
        json!([
            {"event": -1, "deploy": ["source#0", "map1#0"]},
            {"event": -1, "deploy": ["source#1", "map1#1"]},
            {"event": -1, "deploy": ["map2#0"]},
            {"event": -1, "deploy": ["map2#1"]},
            {"event": -1, "deploy": ["map3#0"]},
            {"event": -1, "deploy": ["map3#1"]},
            // Hybrid partitions are released by the scheduler once their consumer region is done.
            {"event": 0, "release": ["map2#0"]},
            {"event": 1, "release": ["map2#1"]},
            {"event": 1, "deploy": ["sink#0"]},
            {"event": 1, "deploy": ["sink#1"]},
        ]),
        "RUNNING",
    );
}

/// FLINK-22017: a blocking pointwise consumer starts as soon as its own inputs are finished.
#[test]
fn blocking_pointwise_consumer_is_scheduled_individually() {
    let g = graph(
        "batch",
        &[("A", 4), ("B", 2)],
        &[("A", "B", "pointwise", "blocking")],
    );
    check(
        &g,
        json!({"events": [{"finish": "A#2"}, {"finish": "A#3"}, {"finish": "A#0"}, {"finish": "B#1"}]}),
        json!([
            {"event": -1, "deploy": ["A#0"]},
            {"event": -1, "deploy": ["A#1"]},
            {"event": -1, "deploy": ["A#2"]},
            {"event": -1, "deploy": ["A#3"]},
            {"event": 1, "deploy": ["B#1"]},
            {"event": 3, "release": ["A#2", "A#3"]},
        ]),
        "RUNNING",
    );
}

/// Blocking 2 x 2 all-to-all, producers finished, consumers running.
#[test]
fn restart_sets_of_a_blocking_all_to_all_job() {
    let g = graph(
        "batch",
        &[("A", 2), ("B", 2)],
        &[("A", "B", "all_to_all", "blocking")],
    );
    let start = json!([
        {"event": -1, "deploy": ["A#0"]},
        {"event": -1, "deploy": ["A#1"]},
        {"event": 1, "deploy": ["B#0"]},
        {"event": 1, "deploy": ["B#1"]},
    ]);
    let with = |more: Value| {
        let mut v = start.as_array().expect("list").clone();
        v.extend(more.as_array().expect("list").iter().cloned());
        Value::Array(v)
    };
    // A failed consumer restarts only itself.
    check(
        &g,
        json!({"events": [{"finish": "A#0"}, {"finish": "A#1"}, {"fail": "B#0"}]}),
        with(json!([{"event": 2, "restart": ["B#0"]}, {"event": 2, "deploy": ["B#0"]}])),
        "RUNNING",
    );
    // A failed (finished) producer restarts itself and both consumers; the consumers wait for
    // it to finish again.
    check(
        &g,
        json!({"events": [{"finish": "A#0"}, {"finish": "A#1"}, {"fail": "A#0"}, {"finish": "A#0"}]}),
        with(json!([
            {"event": 2, "restart": ["A#0", "B#0", "B#1"]},
            {"event": 2, "deploy": ["A#0"]},
            {"event": 3, "deploy": ["B#0"]},
            {"event": 3, "deploy": ["B#1"]},
        ])),
        "RUNNING",
    );
    // A consumer that cannot read A#1 restarts A#1 and with it every consumer of A#1.
    check(
        &g,
        json!({"events": [{"finish": "A#0"}, {"finish": "A#1"}, {"fail": "B#0", "partition_not_found": "A#1"}]}),
        with(json!([
            {"event": 2, "restart": ["A#1", "B#0", "B#1"]},
            {"event": 2, "deploy": ["A#1"]},
        ])),
        "RUNNING",
    );
    // Partitions known lost count as unavailable too.
    check(
        &g,
        json!({"events": [{"finish": "A#0"}, {"finish": "A#1"}, {"fail": "B#1", "unavailable": ["A#0"]}]}),
        with(json!([
            {"event": 2, "restart": ["A#0", "B#0", "B#1"]},
            {"event": 2, "deploy": ["A#0"]},
        ])),
        "RUNNING",
    );
}

/// Finishing the whole job releases each consumed group once all its consumer regions finished.
#[test]
fn job_runs_to_finished_and_releases_groups() {
    let g = graph(
        "batch",
        &[("A", 2), ("B", 2)],
        &[("A", "B", "all_to_all", "blocking")],
    );
    check(
        &g,
        json!({"events": [{"finish": "A#0"}, {"finish": "A#1"}, {"finish": "B#0"}, {"finish": "B#1"}]}),
        json!([
            {"event": -1, "deploy": ["A#0"]},
            {"event": -1, "deploy": ["A#1"]},
            {"event": 1, "deploy": ["B#0"]},
            {"event": 1, "deploy": ["B#1"]},
            {"event": 3, "release": ["A#0", "A#1"]},
        ]),
        "FINISHED",
    );
}

/// Pipelined failures restart the producer (pipelined inputs are never available).
#[test]
fn pipelined_consumer_failure_restarts_its_producer_region() {
    let g = graph(
        "streaming",
        &[("A", 2), ("B", 2), ("C", 2)],
        &[
            ("A", "B", "pointwise", "pipelined"),
            ("B", "C", "all_to_all", "blocking"),
        ],
    );
    check(
        &g,
        json!({"events": [{"fail": "B#1"}]}),
        json!([
            {"event": -1, "deploy": ["A#0", "B#0"]},
            {"event": -1, "deploy": ["A#1", "B#1"]},
            {"event": 0, "restart": ["A#1", "B#1"]},
            {"event": 0, "deploy": ["A#1", "B#1"]},
        ]),
        "RUNNING",
    );
}

/// A lost TaskManager fails its running tasks and loses the finished partitions stored on it.
#[test]
fn task_manager_loss() {
    let g = graph(
        "batch",
        &[("A", 2), ("B", 2)],
        &[("A", "B", "all_to_all", "blocking")],
    );
    // One slot each on two TaskManagers: A#0 runs on tm0, A#1 on tm1; once both finish, B#0
    // and B#1 take the freed slots in the same order.
    check(
        &g,
        json!({
            "task_managers": [{"id": "tm0", "slots": 1}, {"id": "tm1", "slots": 1}],
            "events": [{"finish": "A#0"}, {"finish": "A#1"}, {"lose_task_manager": "tm1"}]
        }),
        json!([
            {"event": -1, "deploy": ["A#0"]},
            {"event": -1, "deploy": ["A#1"]},
            {"event": 1, "deploy": ["B#0"]},
            {"event": 1, "deploy": ["B#1"]},
            // tm1 holds A#1's partition and runs B#1: B#1 fails, A#1's partition is lost, so A#1
            // restarts with both its consumers.
            {"event": 2, "restart": ["A#1", "B#0", "B#1"]},
            {"event": 2, "deploy": ["A#1"]},
        ]),
        "RUNNING",
    );
}

#[test]
fn script_mistakes_are_errors_naming_the_event() {
    let g = graph(
        "batch",
        &[("A", 2), ("B", 2)],
        &[("A", "B", "all_to_all", "blocking")],
    );
    for (script, fragment) in [
        (
            json!({"events": [{"finish": "B#0"}]}),
            "event 0: B#0: cannot finish in state CREATED",
        ),
        (
            json!({"events": [{"finish": "C#0"}]}),
            "event 0: unknown vertex 'C'",
        ),
        (
            json!({"events": [{"finish": "A#7"}]}),
            "subtask 7 is not below the parallelism 2",
        ),
        (
            json!({"events": [{"lose_task_manager": "tm9"}]}),
            "unknown TaskManager 'tm9'",
        ),
        (
            json!({"events": [{"finish": "A#0", "fail": "A#1"}]}),
            "exactly one of",
        ),
        (json!({"events": [{}]}), "exactly one of"),
        (
            json!({"events": [{"finish": "A#0", "unavailable": ["A#1"]}]}),
            "go with fail",
        ),
        (
            json!({"events": [{"fail": "A#0", "partition_not_found": "A#0@nope"}]}),
            "no data set 'nope'",
        ),
        (json!({"events": [{"jump": "A#0"}]}), "unknown field `jump`"),
    ] {
        let error = match Script::parse(script.to_string().as_bytes()) {
            Err(e) => e.to_string(),
            Ok(s) => replay(Arc::clone(&g.0), Arc::clone(&g.1), &s)
                .expect_err("must fail")
                .to_string(),
        };
        assert!(error.contains(fragment), "{error} lacks {fragment}");
    }
}

/// A script's cluster obeys the limits `conflux run` applies to its flags: a TaskManager of
/// 4,294,967,295 slots grew per-slot state to gigabytes before.
#[test]
fn scripts_with_impossible_clusters_are_refused_naming_the_task_manager() {
    let parse = |task_managers: Value| {
        Script::parse(
            json!({"task_managers": task_managers, "events": []})
                .to_string()
                .as_bytes(),
        )
    };
    let huge = parse(json!([{"id": "tm0", "slots": 4}, {"id": "big", "slots": 4_294_967_295u32}]))
        .expect_err("too many slots");
    assert_eq!(
        huge.to_string(),
        "task manager \"big\": 4294967295 slots per TaskManager is outside 1..=65536"
    );
    let none = parse(json!([{"id": "empty", "slots": 0}])).expect_err("no slots");
    assert!(
        none.to_string()
            .starts_with("task manager \"empty\": 0 slots"),
        "{none}"
    );
    let many: Vec<Value> = (0..1_025)
        .map(|i| json!({"id": format!("tm{i}"), "slots": 65_536}))
        .collect();
    let total = parse(Value::Array(many)).expect_err("above 2^26 slots in all");
    assert_eq!(
        total.to_string(),
        "task managers up to \"tm1024\" offer 67174400 slots, above the limit of 67108864"
    );
    assert!(parse(json!([{"id": "ok", "slots": 65_536}])).is_ok());
}

/// With restart flags the replay follows the strategy: `none` fails the job at the first
/// failure (no restart set); fixed delay of one attempt restarts the first failure after its
/// delay, before the next event, and fails the job at the second.
#[test]
fn a_restart_strategy_decides_the_replay_s_failovers() {
    use conflux_scheduler::RestartStrategy;
    use conflux_sim::script::replay_with;
    let g = graph(
        "batch",
        &[("A", 2), ("B", 2)],
        &[("A", "B", "all_to_all", "blocking")],
    );
    let replay = |strategy, events: Value| {
        let script =
            Script::parse(json!({ "events": events }).to_string().as_bytes()).expect("script");
        replay_with(Arc::clone(&g.0), Arc::clone(&g.1), &script, strategy).expect("replays")
    };
    let start = json!([
        {"event": -1, "deploy": ["A#0"]},
        {"event": -1, "deploy": ["A#1"]},
    ]);
    let out = replay(RestartStrategy::None, json!([{"fail": "A#0"}]));
    assert_eq!(out.status, "FAILED");
    assert_eq!(serde_json::to_value(&out.timeline).expect("json"), start);
    let once = RestartStrategy::FixedDelay {
        attempts: 1,
        delay_ms: 1_000,
    };
    let out = replay(once, json!([{"fail": "A#0"}, {"fail": "A#1"}]));
    assert_eq!(out.status, "FAILED");
    assert_eq!(
        serde_json::to_value(&out.timeline).expect("json"),
        json!([
            {"event": -1, "deploy": ["A#0"]},
            {"event": -1, "deploy": ["A#1"]},
            {"event": 0, "restart": ["A#0"]},
            {"event": 0, "deploy": ["A#0"]},
        ])
    );
}
