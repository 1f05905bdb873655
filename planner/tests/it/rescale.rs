//! Rescaling from state: key groups per subtask as Flink's `KeyGroupRangeAssignment`, what
//! each new subtask reads, the share that moves, and the refusals.

use conflux_planner::rescale::{key_group_range, rescale, KeyedState};
use conflux_planner::PlanError;

use crate::plan;

fn job(max_parallelism: Option<u32>) -> conflux_graph::json::JobGraphJson {
    let max = max_parallelism.map_or(String::new(), |m| format!(r#""max_parallelism": {m}, "#));
    plan(&format!(
        r#"{{"job_type": "streaming", "vertices": [{{"id": "agg", "name": "count per user", "parallelism": 4, {max}
          "operators": [{{"uid": "agg", "name": "count", "state": [{{"name": "acc", "kind": "value", "key_type": "STRING"}}]}}]}}]}}"#
    ))
}

fn ranges(r: &[(u64, u64)]) -> Vec<(u64, u64)> {
    r.to_vec()
}

/// Max parallelism 128 (Flink's default for parallelism 4), 4 -> 3: old subtasks own 32 key
/// groups each; new ones 43, 43, 42; each new subtask reads two old ones; 11 + 22 + 32 = 65 of
/// 128 key groups change subtask.
#[test]
fn four_to_three_of_128_key_groups() {
    let r = rescale(&job(None), "count per user", 3, None).expect("rescale");
    assert_eq!(
        (
            r.vertex.as_str(),
            r.max_parallelism,
            r.max_parallelism_configured
        ),
        ("agg", 128, false)
    );
    assert_eq!(r.keyed_state, KeyedState::Yes);
    let old: Vec<(u64, u64)> = r
        .old_subtasks
        .iter()
        .map(|o| (o.key_groups.start, o.key_groups.end))
        .collect();
    assert_eq!(old, ranges(&[(0, 31), (32, 63), (64, 95), (96, 127)]));
    let new: Vec<(u64, u64)> = r
        .new_subtasks
        .iter()
        .map(|n| (n.key_groups.start, n.key_groups.end))
        .collect();
    assert_eq!(new, ranges(&[(0, 42), (43, 85), (86, 127)]));
    let reads: Vec<Vec<(u64, u64, u64)>> = r
        .new_subtasks
        .iter()
        .map(|n| {
            n.reads
                .iter()
                .map(|x| (x.old_subtask, x.key_groups.start, x.key_groups.end))
                .collect()
        })
        .collect();
    assert_eq!(
        reads,
        [
            vec![(0, 0, 31), (1, 32, 42)],
            vec![(1, 43, 63), (2, 64, 85)],
            vec![(2, 86, 95), (3, 96, 127)]
        ]
    );
    assert_eq!(r.moved_key_groups, 65);
    assert_eq!(r.moved_share, 65.0 / 128.0);
    let json = serde_json::to_value(&r).expect("json");
    assert_eq!(
        json["new_subtasks"][0]["key_groups"],
        serde_json::json!({"start": 0, "end": 42, "key_groups": 43})
    );
}

/// Doubling moves every key group but those of subtask 0's first half: 4 -> 8 of 128 moves 112;
/// the same parallelism moves nothing; an explicit max parallelism of 10 from 4 to 10 gives
/// one key group per subtask.
#[test]
fn other_worked_examples() {
    let r = rescale(&job(None), "agg", 8, None).expect("rescale");
    assert_eq!((r.moved_key_groups, r.moved_share), (112, 0.875));
    assert!(r
        .new_subtasks
        .iter()
        .all(|n| n.reads.len() == 1 && n.reads[0].old_subtask == n.subtask / 2));
    let same = rescale(&job(None), "agg", 4, None).expect("rescale");
    assert_eq!(same.moved_key_groups, 0);
    let r = rescale(&job(Some(10)), "agg", 10, Some(10)).expect("rescale");
    assert!(r.max_parallelism_configured);
    let old: Vec<(u64, u64)> = r
        .old_subtasks
        .iter()
        .map(|o| (o.key_groups.start, o.key_groups.end))
        .collect();
    assert_eq!(old, ranges(&[(0, 2), (3, 4), (5, 7), (8, 9)]));
    // Key group k now on subtask k; it stays only where the old owner had the same index.
    assert_eq!(r.moved_key_groups, 9);
    let k = key_group_range(10, 3, 1);
    assert_eq!((k.start, k.end, k.len()), (4, 6, 3));
}

#[test]
fn above_the_max_parallelism_or_another_max_is_refused() {
    let e = rescale(&job(None), "agg", 129, None).unwrap_err();
    assert!(matches!(e, PlanError::Refused { .. }));
    assert_eq!(
        e.to_string(),
        "rescaling vertex 'agg' to 129 refused: parallelism 129 is above the max parallelism 128 \
         its state was written with (Flink's default for parallelism 4, which a restored job \
         keeps): a subtask must own at least one key group"
    );
    let e = rescale(&job(Some(64)), "agg", 65, None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("parallelism 65 is above its max parallelism 64"),
        "{e}"
    );
    let e = rescale(&job(Some(64)), "agg", 8, Some(128))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("max parallelism 128 differs from its max parallelism 64: keyed state is split into key groups fixed by the max parallelism"),
        "{e}"
    );
    assert!(rescale(&job(Some(64)), "agg", 8, Some(64)).is_ok());
    let e = rescale(&job(None), "agg", 0, None).unwrap_err().to_string();
    assert!(e.contains("parallelism must be at least 1"), "{e}");
    assert!(matches!(
        rescale(&job(None), "nope", 2, None),
        Err(PlanError::UnknownVertex(v)) if v == "nope"
    ));
}

/// A Flink plan says nothing about state: the ranges are Flink's, the keyed state unknown.
#[test]
fn flink_plan_vertices_have_unknown_state() {
    let q5 = crate::load_fixture(&crate::flink_fixture("nexmark-q5.plan.json"), None);
    let r = rescale(&q5, "337adade1e207453ed3502e01d75fd03", 3, None).expect("rescale");
    assert_eq!(r.keyed_state, KeyedState::Unknown);
    assert_eq!((r.old_parallelism, r.max_parallelism), (8, 128));
    assert_eq!(r.old_subtasks[7].key_groups.start, 112);
}
