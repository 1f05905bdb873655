//! Plan statistics: the worked examples.

use conflux_planner::stats::{BufferModel, Buffers};
use conflux_planner::{Edit, PlanStats, StatsConfig};

use crate::{flink_fixture, load_fixture, plan};

fn stats_of(name: &str) -> PlanStats {
    PlanStats::compute(
        &load_fixture(&flink_fixture(name), None),
        &StatsConfig::default(),
    )
    .expect("stats")
}

/// (fixture, channels, input buffers (target, required), output buffers (target, required)).
fn check(name: &str, channels: u64, input: (u64, u64), output: (u64, u64)) {
    let s = stats_of(name);
    assert_eq!(s.channels, channels, "{name}: channels");
    assert_eq!(
        s.network.input,
        Buffers {
            target: input.0,
            required: input.1
        },
        "{name}: input buffers"
    );
    assert_eq!(
        s.network.output,
        Buffers {
            target: output.0,
            required: output.1
        },
        "{name}: output buffers"
    );
    assert_eq!(
        s.network.bytes,
        (input.0 + output.0) * 32 * 1024,
        "{name}: bytes"
    );
}

#[test]
fn rebalance_vs_rescale_2000_to_1000() {
    // Streaming: gates target #channels x 2 + 8 and require all of it; pipelined partitions
    // target #subpartitions x 2 + 8 and require #subpartitions + 1.
    check(
        "rebalance-2000-1000.plan.json",
        2_000_000,
        (1000 * (2000 * 2 + 8), 1000 * (2000 * 2 + 8)),
        (2000 * (1000 * 2 + 8), 2000 * 1001),
    );
    check(
        "rescale-2000-1000.plan.json",
        2_000,
        (1000 * (2 * 2 + 8), 1000 * 12),
        (2000 * (2 + 8), 2000 * 2),
    );
    // Batch: gates require at most 1000 buffers; sort-shuffle partitions take
    // max(512, 4 x subpartitions) and require 512.
    check(
        "rebalance-2000-1000-batch.plan.json",
        2_000_000,
        (1000 * 4008, 1000 * 1000),
        (2000 * 4000, 2000 * 512),
    );
    check(
        "rescale-2000-1000-batch.plan.json",
        2_000,
        (1000 * 12, 1000 * 12),
        (2000 * 512, 2000 * 512),
    );
}

#[test]
fn rebalance_suggestion_names_the_effect_and_the_edit() {
    let s = stats_of("rebalance-2000-1000.plan.json");
    let sug = s
        .suggestions
        .iter()
        .find(|x| x.kind == "rebalance_to_rescale")
        .expect("suggestion");
    assert!(
        sug.message.contains(
            "this REBALANCE edge 2,000 -> 1,000 could be RESCALE: 2,000,000 -> 2,000 channels, saves 249,750 MiB"
        ),
        "{}",
        sug.message
    );
    let effect = sug.effect.expect("effect");
    assert_eq!(effect.buffer_bytes_saved, (8_024_000 - 32_000) * 32 * 1024);
    // Applying the suggested edit gives the rescale plan's numbers.
    let json = load_fixture(&flink_fixture("rebalance-2000-1000.plan.json"), None);
    let edited = sug
        .edit
        .as_ref()
        .expect("edit")
        .apply(&json)
        .expect("applies");
    let after = PlanStats::compute(&edited, &StatsConfig::default()).expect("stats");
    assert_eq!(after.channels, 2_000);
    assert_eq!(after.network.bytes, effect.buffer_bytes_after);
    assert!(!after
        .suggestions
        .iter()
        .any(|x| x.kind == "rebalance_to_rescale"));
    // The rescale plan has nothing to suggest about its edge.
    assert!(stats_of("rescale-2000-1000.plan.json")
        .suggestions
        .is_empty());
}

#[test]
fn regions_descriptors_and_topology() {
    let wc = load_fixture(
        &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/jobs/wordcount-10k-blocking.json"),
        None,
    );
    let s = PlanStats::compute(&wc, &StatsConfig::default()).expect("stats");
    assert_eq!(s.execution_vertices, 20_000);
    assert_eq!(s.channels, 100_000_000);
    assert_eq!(s.regions.count, 20_000);
    assert_eq!(s.regions.largest, 1);
    // One group of 10,000 descriptors read by 10,000 consumers: offloaded under 2048 x 2048.
    assert_eq!(s.descriptors.groups, 1);
    assert_eq!(s.descriptors.descriptors, 10_000);
    assert_eq!(s.descriptors.offloaded_groups, 1);
    assert!(s.descriptors.offloaded_bytes > 0);
    assert!(s.topology_bytes > 0);
    // Pipelined: one region with everything.
    let p = stats_of("rebalance-2000-1000.plan.json");
    assert_eq!((p.regions.count, p.regions.largest), (1, 3000));
    // Pointwise groups: 1,000 groups of two descriptors each, none offloaded.
    let r = stats_of("rescale-2000-1000.plan.json");
    assert_eq!(
        (r.descriptors.groups, r.descriptors.descriptors),
        (1000, 2000)
    );
    assert_eq!(r.descriptors.offloaded_groups, 0);
}

#[test]
fn every_flink_plan_has_stats_at_parallelism_10000() {
    let dir = flink_fixture("");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("fixtures") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if !name.ends_with(".plan.json") {
            continue;
        }
        let json = load_fixture(&path, Some(10_000));
        let s = PlanStats::compute(&json, &StatsConfig::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let sum: u64 = s.edges.iter().map(|e| e.channels).sum();
        assert_eq!(s.channels, sum, "{name}");
        n += 1;
    }
    assert!(n >= 50, "only {n} plans");
}

#[test]
fn pointwise_uneven_buffers() {
    // 10 -> 6 pointwise: gates read 1 or 2 partitions (4 gates read 2), 10 channels.
    let json = plan(
        r#"{"job_type": "streaming", "vertices": [{"id": "a", "parallelism": 10}, {"id": "b", "parallelism": 6}],
            "edges": [{"source": "a", "target": "b", "distribution_pattern": "pointwise", "result_partition_type": "pipelined_bounded"}]}"#,
    );
    let s = PlanStats::compute(&json, &StatsConfig::default()).expect("stats");
    assert_eq!(s.channels, 10);
    // 2 gates x (1 x 2 + 8) + 4 gates x (2 x 2 + 8)
    assert_eq!(s.network.input.target, 2 * 10 + 4 * 12);
    let m = BufferModel::default();
    assert_eq!(m.segment_size, 32768);
}

#[test]
fn stateful_suggestions() {
    let json = plan(
        r#"{"job_type": "streaming", "vertices": [
              {"id": "src", "parallelism": 2},
              {"id": "dedup", "parallelism": 2, "operators": [{"name": "dedup", "state": [{"name": "seen", "kind": "value", "key_type": "STRING", "value_type": "BOOLEAN"}]}]}],
            "edges": [{"source": "src", "target": "dedup", "distribution_pattern": "all_to_all", "result_partition_type": "pipelined_bounded", "ship_strategy": "HASH[id]"}]}"#,
    );
    let s = PlanStats::compute(&json, &StatsConfig::default()).expect("stats");
    let kinds: Vec<&str> = s.suggestions.iter().map(|x| x.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["state_without_ttl", "stateful_operator_without_uid"]
    );
    assert_eq!(s.stateful_operators, 1);
    assert_eq!(
        s.suggestions[0].message,
        "vertex 'dedup', operator 'dedup': state 'seen' has no TTL and grows with its keys in a streaming job; a TTL (set_state_ttl) bounds it"
    );
    // The TTL edit the suggestion names sets the TTL, and the suggestion goes away; the
    // missing uid is still reported.
    let edited = Edit::SetStateTtl {
        vertex: "dedup".into(),
        operator: "dedup".into(),
        state: "seen".into(),
        ttl_ms: Some(3_600_000),
    }
    .apply(&json)
    .expect("ttl edit");
    assert_eq!(
        edited.vertices[1].operators[0].state[0].ttl_ms,
        Some(3_600_000)
    );
    assert_eq!(json.vertices[1].operators[0].state[0].ttl_ms, None);
    let after = PlanStats::compute(&edited, &StatsConfig::default()).expect("stats");
    let kinds: Vec<&str> = after.suggestions.iter().map(|x| x.kind.as_str()).collect();
    assert_eq!(kinds, ["stateful_operator_without_uid"]);
    assert_eq!(
        after.suggestions[0].message,
        "vertex 'dedup', operator 'dedup': has state but no uid; its state maps to the next version only while the topology keeps its shape"
    );
    assert_eq!((after.channels, after.stateful_operators), (4, 1));
}

/// A chain a -> b -> c, all-to-all at parallelism 2,000, of result partition type `kind`.
fn chain_2000(kind: &str) -> PlanStats {
    let json = plan(&format!(
        r#"{{"job_type": "streaming", "vertices": [{{"id": "a", "parallelism": 2000}}, {{"id": "b", "parallelism": 2000}}, {{"id": "c", "parallelism": 2000}}],
            "edges": [{{"source": "a", "target": "b", "distribution_pattern": "all_to_all", "result_partition_type": "{kind}"}},
                      {{"source": "b", "target": "c", "distribution_pattern": "all_to_all", "result_partition_type": "{kind}"}}]}}"#
    ));
    PlanStats::compute(&json, &StatsConfig::default()).expect("stats")
}

#[test]
fn a_subtask_beyond_a_taskmanagers_network_memory_is_flagged() {
    // Pipelined: a gate of 2,000 channels requires its whole target, 2,000 x 2 + 8 = 4,008
    // buffers; a partition of 2,000 subpartitions requires 2,001. One subtask of b has both:
    // 6,009 x 32 KiB = 196,902,912 bytes > 128 MiB. a (2,001 buffers) and c (4,008 buffers,
    // 131,334,144 bytes) fit.
    let s = chain_2000("pipelined_bounded");
    assert_eq!(s.flags.len(), 1, "{:?}", s.flags);
    let f = &s.flags[0];
    assert_eq!(f.kind, "subtask_network_memory");
    assert_eq!(f.vertex.as_deref(), Some("b"));
    assert_eq!(f.bytes, 6_009 * 32_768);
    assert_eq!(f.limit_bytes, 128 * 1024 * 1024);
    assert!(
        f.message.starts_with(
            "one subtask of vertex 'b' requires 188 MiB of network buffers, more than a TaskManager's 128 MiB"
        ) && f.message.contains("taskmanager.memory.network.fraction")
            && f.message.contains("taskmanager.network.memory.buffers-per-channel"),
        "{}",
        f.message
    );
    // Blocking: a batch gate requires at most 1,000 buffers and a sort-shuffle partition 512:
    // 1,512 x 32 KiB per subtask of b, nothing flagged.
    assert!(chain_2000("blocking").flags.is_empty());
}
