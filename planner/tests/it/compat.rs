//! State-compatibility pre-analysis: each verdict on small plans.

use conflux_graph::json::JobGraphJson;
use conflux_planner::compat::{analyze_compiled, MatchedBy, OperatorMapping};
use conflux_planner::{analyze, CompatOptions, CompiledPlan, Verdict};

use crate::{flink_fixture, plan};

/// source -> (HASH) -> agg -> sink; the aggregate's state value type and the parallelism vary.
fn agg_job(uids: bool, parallelism: u32, acc_type: &str, extra_op: bool) -> JobGraphJson {
    let uid = |u: &str| {
        if uids {
            format!(r#""uid": "{u}", "#)
        } else {
            String::new()
        }
    };
    let extra = if extra_op {
        format!(
            r#"{{"id": "filter", "parallelism": {parallelism}, "operators": [{{{}"name": "filter"}}]}},"#,
            uid("filter")
        )
    } else {
        String::new()
    };
    let (first, edge0) = if extra_op {
        (
            "filter",
            r#"{"source": "src", "target": "filter", "distribution_pattern": "pointwise", "result_partition_type": "pipelined_bounded", "ship_strategy": "FORWARD"},"#,
        )
    } else {
        ("src", "")
    };
    plan(&format!(
        r#"{{"job_type": "streaming", "vertices": [
          {{"id": "src", "parallelism": {parallelism}, "operators": [{{{}"name": "source"}}]}},
          {extra}
          {{"id": "agg", "parallelism": {parallelism}, "operators": [{{{}"name": "group-aggregate", "state": [{{"name": "acc", "kind": "value", "key_type": "STRING", "value_type": "{acc_type}", "ttl_ms": 3600000}}]}}]}},
          {{"id": "sink", "parallelism": {parallelism}, "operators": [{{{}"name": "sink"}}]}}],
         "edges": [{edge0}
          {{"source": "{first}", "target": "agg", "distribution_pattern": "all_to_all", "result_partition_type": "pipelined_bounded", "ship_strategy": "HASH[k]"}},
          {{"source": "agg", "target": "sink", "distribution_pattern": "pointwise", "result_partition_type": "pipelined_bounded", "ship_strategy": "FORWARD"}}]}}"#,
        uid("src"),
        uid("agg"),
        uid("sink")
    ))
}

const ACC: &str = "ROW<cnt BIGINT, total DOUBLE>";

fn check(old: &JobGraphJson, new: &JobGraphJson, verdict: Verdict, reason: &str) {
    let report = analyze(old, new, &CompatOptions::default()).expect("analysis");
    assert_eq!(report.verdict, verdict, "{report:#?}");
    let reasons: Vec<&String> = report.operators.iter().flat_map(|o| &o.reasons).collect();
    assert!(
        reason.is_empty() || reasons.iter().any(|r| r.contains(reason)),
        "no reason containing '{reason}' in {reasons:#?}"
    );
}

#[test]
fn unchanged_is_compatible_as_is() {
    for uids in [true, false] {
        let j = agg_job(uids, 4, ACC, false);
        check(&j, &j, Verdict::CompatibleAsIs, "");
        let report = analyze(&j, &j, &CompatOptions::default()).expect("analysis");
        let how = if uids {
            MatchedBy::Uid
        } else {
            MatchedBy::AutoId
        };
        assert!(report.operators.iter().all(|o| o.matched_by == how));
    }
}

#[test]
fn parallelism_changed_is_compatible_as_is() {
    for uids in [true, false] {
        check(
            &agg_job(uids, 4, ACC, false),
            &agg_job(uids, 8, ACC, false),
            Verdict::CompatibleAsIs,
            "parallelism 4 -> 8: state is redistributed by key group",
        );
    }
    // Beyond the max parallelism the state was written with (128 by default): incompatible.
    check(
        &agg_job(true, 4, ACC, false),
        &agg_job(true, 200, ACC, false),
        Verdict::Incompatible,
        "above the max parallelism 128",
    );
}

#[test]
fn field_added_to_aggregate_state_needs_migration() {
    check(
        &agg_job(true, 4, ACC, false),
        &agg_job(
            true,
            4,
            "ROW<cnt BIGINT, total DOUBLE, maximum DOUBLE>",
            false,
        ),
        Verdict::CompatibleAfterMigration,
        "row fields added [maximum]",
    );
}

#[test]
fn two_aggregates_swapped_are_incompatible() {
    // SELECT COUNT(*), SUM(x) -> SELECT SUM(x), COUNT(*): the accumulator row's fields swap.
    let old = agg_job(true, 4, ACC, false);
    let new = agg_job(true, 4, "ROW<total DOUBLE, cnt BIGINT>", false);
    check(&old, &new, Verdict::Incompatible, "row fields reordered");
    let report = analyze(&old, &new, &CompatOptions::default()).expect("analysis");
    assert_eq!(report.business_logic.verdict, Verdict::Incompatible);

    // Two aggregate operators without uids swapped in place: auto-generated ids follow the
    // position, so Flink would restore each state into the other function; the analysis pairs
    // them by name instead, which needs their state moved to the new ids.
    let ty = |f: &str| if f == "count" { "BIGINT" } else { "DOUBLE" };
    let two = |first: &str, second: &str| {
        let (t1, t2) = (ty(first), ty(second));
        plan(&format!(
            r#"{{"job_type": "streaming", "vertices": [
              {{"id": "src", "parallelism": 2, "operators": [{{"name": "source"}}]}},
              {{"id": "a1", "parallelism": 2, "operators": [{{"name": "{first}", "state": [{{"name": "{first}", "kind": "value", "key_type": "STRING", "value_type": "{t1}"}}]}}]}},
              {{"id": "a2", "parallelism": 2, "operators": [{{"name": "{second}", "state": [{{"name": "{second}", "kind": "value", "key_type": "STRING", "value_type": "{t2}"}}]}}]}}],
             "edges": [
              {{"source": "src", "target": "a1", "distribution_pattern": "all_to_all", "result_partition_type": "pipelined_bounded", "ship_strategy": "HASH[k]"}},
              {{"source": "a1", "target": "a2", "distribution_pattern": "all_to_all", "result_partition_type": "pipelined_bounded", "ship_strategy": "HASH[k]"}}]}}"#
        ))
    };
    check(
        &two("count", "sum"),
        &two("sum", "count"),
        Verdict::CompatibleAfterRename,
        "changeOperatorIdentifier",
    );
    // With different state names too, nothing pairs them by name: the positional pairing is
    // reported as the conflict it is.
    let mut other = two("sum", "count");
    other.vertices[1].operators[0].name = "max".into();
    other.vertices[2].operators[0].name = "min".into();
    check(
        &two("count", "sum"),
        &other,
        Verdict::Incompatible,
        "a different function at the same place",
    );
}

#[test]
fn operator_added_without_uids_needs_rename() {
    // A new operator upstream shifts the auto-generated ids of everything after it: the
    // aggregate is found by structure, and its state must move to its new id.
    let old = agg_job(false, 4, ACC, false);
    let new = agg_job(false, 4, ACC, true);
    check(
        &old,
        &new,
        Verdict::CompatibleAfterRename,
        "changeOperatorIdentifier",
    );
    let report = analyze(&old, &new, &CompatOptions::default()).expect("analysis");
    let agg = report
        .operators
        .iter()
        .find(|o| o.old.as_ref().is_some_and(|r| r.vertex == "agg"))
        .expect("agg row");
    assert_eq!(agg.matched_by, MatchedBy::Structure);
    assert!(report
        .operators
        .iter()
        .any(|o| o.old.is_none() && o.new.as_ref().is_some_and(|n| n.name == "filter")));
    // With uids, adding an operator changes nothing for the state.
    check(
        &agg_job(true, 4, ACC, false),
        &agg_job(true, 4, ACC, true),
        Verdict::CompatibleAsIs,
        "added",
    );
}

#[test]
fn removed_state_ttl_keys_and_renames() {
    let old = agg_job(true, 4, ACC, false);
    // The aggregate removed: its state has nowhere to go.
    let mut removed = old.clone();
    removed.vertices[1].operators[0].uid = Some("other".into());
    removed.vertices[1].operators[0].name = "other".into();
    removed.vertices[1].operators[0].state.clear();
    check(&old, &removed, Verdict::Incompatible, "non-restored state");
    let lenient = CompatOptions {
        allow_non_restored_state: true,
        ..CompatOptions::default()
    };
    assert_eq!(
        analyze(&old, &removed, &lenient).expect("analysis").verdict,
        Verdict::CompatibleAsIs
    );
    // TTL duration changed: as is; TTL removed: incompatible in Flink 1.20.
    let mut ttl = old.clone();
    ttl.vertices[1].operators[0].state[0].ttl_ms = Some(60_000);
    check(
        &old,
        &ttl,
        Verdict::CompatibleAsIs,
        "TTL 3600000 ms -> 60000 ms",
    );
    ttl.vertices[1].operators[0].state[0].ttl_ms = None;
    check(
        &old,
        &ttl,
        Verdict::Incompatible,
        "TTL (3600000 ms) disabled",
    );
    // Key type changed.
    let mut key = old.clone();
    key.vertices[1].operators[0].state[0].key_type = Some("BIGINT".into());
    check(&old, &key, Verdict::Incompatible, "key type changes");
    // Keyed input no longer hash-partitioned.
    let mut rebalanced = old.clone();
    rebalanced.edges[0].ship_strategy = Some("REBALANCE".into());
    check(&old, &rebalanced, Verdict::Incompatible, "is now REBALANCE");
    // A renamed uid with a rename map: after rename.
    let mut renamed = old.clone();
    renamed.vertices[1].operators[0].uid = Some("agg-v2".into());
    let options = CompatOptions {
        renames: [("agg".to_owned(), "agg-v2".to_owned())].into(),
        ..CompatOptions::default()
    };
    let report = analyze(&old, &renamed, &options).expect("analysis");
    assert_eq!(report.verdict, Verdict::CompatibleAfterRename);
}

#[test]
fn flink_plans_and_compiled_plans() {
    // Flink plans carry no operator lists: vertices (JobVertexIDs) map by id; the topology
    // checks out, but their state cannot be seen, so the state schema is UNKNOWN.
    let p = crate::load_fixture(&flink_fixture("nexmark-q4.plan.json"), None);
    let mut scaled = p.clone();
    for v in &mut scaled.vertices {
        v.parallelism = 16;
    }
    let report = analyze(&p, &scaled, &CompatOptions::default()).expect("analysis");
    assert_eq!(report.verdict, Verdict::Unknown);
    assert_eq!(report.topology.verdict, Verdict::CompatibleAsIs);
    assert_eq!(report.business_logic.verdict, Verdict::CompatibleAsIs);
    assert_eq!(report.state_schema.verdict, Verdict::Unknown);
    assert!(report
        .operators
        .iter()
        .all(|o| o.matched_by == MatchedBy::VertexId));

    let a = CompiledPlan::parse(
        &std::fs::read(flink_fixture("nexmark-q4.compiled-plan.json")).expect("fixture"),
    )
    .expect("compiled");
    let b = a.with_ttl(11, "leftState", 3_600_000).expect("edit");
    let report = analyze_compiled(&a, &b, &CompatOptions::default());
    assert_eq!(report.verdict, Verdict::Incompatible, "{report:#?}");
    let c = CompiledPlan::parse(
        &std::fs::read(flink_fixture(
            "nexmark-q4-state-ttl-hints.compiled-plan.json",
        ))
        .expect("fixture"),
    )
    .expect("compiled");
    let d = c.with_ttl(11, "leftState", 3_600_000).expect("edit");
    assert_eq!(
        analyze_compiled(&c, &d, &CompatOptions::default()).verdict,
        Verdict::CompatibleAsIs
    );
}

/// Two Flink JSON plans of unrelated queries carry no state information: the verdict is
/// UNKNOWN, not COMPATIBLE_AS_IS, and no removed operator is said to have no state.
#[test]
fn flink_plans_without_state_information_are_unknown() {
    let q5 = crate::load_fixture(&flink_fixture("nexmark-q5.plan.json"), None);
    let q20 = crate::load_fixture(&flink_fixture("nexmark-q20.plan.json"), None);
    let report = analyze(&q5, &q20, &CompatOptions::default()).expect("analysis");
    assert_eq!(report.verdict, Verdict::Unknown, "{report:#?}");
    assert_eq!(report.topology.verdict, Verdict::Unknown);
    assert_eq!(report.state_schema.verdict, Verdict::Unknown);
    assert_eq!(report.business_logic.verdict, Verdict::CompatibleAsIs);
    assert_eq!(
        report.topology.findings[0],
        "4 old and 3 new operators, 1 paired"
    );
    let removed: Vec<&OperatorMapping> = report
        .operators
        .iter()
        .filter(|o| o.new.is_none())
        .collect();
    assert_eq!(removed.len(), 3);
    for o in &removed {
        assert_eq!(o.verdict, Verdict::Unknown);
        let old = o.old.as_ref().expect("old");
        assert!(old
            .vertex_name
            .as_deref()
            .is_some_and(|n| n.starts_with('[')));
        assert!(
            o.reasons[0].starts_with("removed; whether it has state is unknown"),
            "{:?}",
            o.reasons
        );
    }
    let everything = serde_json::to_string(&report).expect("json");
    assert!(!everything.contains("has no state"), "{everything}");
    assert!(everything.contains(r#""verdict":"UNKNOWN""#));

    // Non-restored state allowed: the removals are fine whatever state they had, but the state
    // of the one paired vertex still cannot be compared.
    let allow = CompatOptions {
        allow_non_restored_state: true,
        ..CompatOptions::default()
    };
    let report = analyze(&q5, &q20, &allow).expect("analysis");
    assert_eq!(report.topology.verdict, Verdict::CompatibleAsIs);
    assert_eq!(report.verdict, Verdict::Unknown);

    // A known incompatibility stays the verdict: UNKNOWN ranks below INCOMPATIBLE.
    assert!(Verdict::CompatibleAfterMigration < Verdict::Unknown);
    assert!(Verdict::Unknown < Verdict::Incompatible);
    let mut known = agg_job(true, 4, ACC, false);
    known.vertices[0].operators.clear(); // the source's state is unknown on both sides
    let mut mixed = known.clone();
    mixed.vertices.retain(|v| v.id != "agg");
    mixed
        .edges
        .retain(|e| e.source != "agg" && e.target != "agg");
    let report = analyze(&known, &mixed, &CompatOptions::default()).expect("analysis");
    assert_eq!(report.verdict, Verdict::Incompatible, "{report:#?}");
    assert_eq!(report.state_schema.verdict, Verdict::Unknown);
}
