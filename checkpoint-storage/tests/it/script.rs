//! Scenario replay: worked examples with known answers (which objects exist after each event).

use conflux_checkpoint::script::{replay, PlanSummary, Replay, Script, ScriptError};
use serde_json::json;

fn run(script: serde_json::Value) -> Replay {
    let script: Script = serde_json::from_value(script).unwrap();
    replay(&script).unwrap()
}

fn fails(script: serde_json::Value) -> ScriptError {
    let script: Script = serde_json::from_value(script).unwrap();
    replay(&script).unwrap_err()
}

fn exists(r: &Replay, event: usize) -> Vec<&str> {
    r.steps[event].exists.iter().map(String::as_str).collect()
}

/// A file uploaded by cp1 and reused by cp2 survives cp1's subsumption and goes when cp2, its
/// last user, is subsumed; the plan reuses only what the confirmed checkpoint has.
#[test]
fn reused_file_lives_until_its_last_user_is_subsumed() {
    let r = run(json!({"events": [
        {"op": "trigger", "checkpoint": 1},
        {"op": "upload", "checkpoint": 1, "local": "a", "remote": "A"},
        {"op": "ack", "checkpoint": 1},
        {"op": "complete", "checkpoint": 1},
        {"op": "notify_complete", "checkpoint": 1},
        {"op": "trigger", "checkpoint": 2},
        {"op": "snapshot", "checkpoint": 2, "local_files": ["a", "e"],
         "new_remote": {"a": "A2", "e": "X2"}},
        {"op": "ack", "checkpoint": 2},
        {"op": "complete", "checkpoint": 2},
        {"op": "notify_complete", "checkpoint": 2},
        {"op": "trigger", "checkpoint": 3},
        {"op": "snapshot", "checkpoint": 3, "local_files": ["e"], "new_remote": {}},
        {"op": "ack", "checkpoint": 3},
        {"op": "complete", "checkpoint": 3}
    ]}));
    assert_eq!(r.steps.len(), 14);
    assert_eq!(exists(&r, 1), ["A"]);
    assert_eq!(exists(&r, 2), ["A", "cp1.private"]);
    assert_eq!(exists(&r, 3), ["A", "cp1.meta", "cp1.private"]);
    assert_eq!(r.steps[3].retained, [1]);
    assert_eq!(
        r.steps[6].plan,
        Some(PlanSummary {
            reuse: [("a".to_owned(), "A".to_owned())].into(),
            upload: vec!["e".to_owned()],
        })
    );
    assert_eq!(exists(&r, 6), ["A", "X2", "cp1.meta", "cp1.private"]);
    // cp2 completes: cp1 is subsumed, its own files go, A stays (cp2 uses it).
    assert_eq!(exists(&r, 8), ["A", "X2", "cp2.meta", "cp2.private"]);
    assert_eq!(r.steps[8].retained, [2]);
    let why: Vec<(&str, &str)> = r.steps[8]
        .deleted
        .iter()
        .map(|d| (d.object.as_str(), d.why.as_str()))
        .collect();
    assert_eq!(
        why,
        [
            ("cp1.private", "checkpoint 1 is subsumed by checkpoint 2"),
            ("cp1.meta", "checkpoint 1 is subsumed by checkpoint 2"),
        ]
    );
    assert_eq!(
        r.steps[11].plan.as_ref().map(|p| p.reuse.clone()),
        Some([("e".to_owned(), "X2".to_owned())].into())
    );
    // cp3 completes: cp2 is subsumed, and A, last used by cp2, goes with it.
    assert_eq!(exists(&r, 13), ["X2", "cp3.meta", "cp3.private"]);
    let a = r.steps[13]
        .deleted
        .iter()
        .find(|d| d.object == "A")
        .unwrap();
    assert_eq!(
        a.why,
        "registry: last used by checkpoint 2, below the watermark 3"
    );
    // The JSON contract: event, exists, retained, and plan only after snapshots.
    let value = serde_json::to_value(&r).unwrap();
    assert_eq!(
        value["steps"][6],
        json!({"event": 6, "exists": ["A", "X2", "cp1.meta", "cp1.private"], "retained": [1],
               "plan": {"reuse": {"a": "A"}, "upload": ["e"]}})
    );
    assert_eq!(
        value["steps"][7],
        json!({"event": 7, "exists": ["A", "X2", "cp1.meta", "cp1.private", "cp2.private"],
               "retained": [1]})
    );
}

/// An aborted checkpoint's uploads are deleted: the unacknowledged ones by the task when it
/// hears of the abort, the acknowledged ones by the registry after the next completion (never
/// by the abort itself, FLINK-24611).
#[test]
fn aborted_checkpoint_uploads_are_deleted() {
    let r = run(json!({"max_concurrent_checkpoints": 2, "events": [
        {"op": "trigger", "checkpoint": 1},
        {"op": "upload", "checkpoint": 1, "local": "a", "remote": "A"},
        {"op": "ack", "checkpoint": 1},
        {"op": "complete", "checkpoint": 1},
        {"op": "notify_complete", "checkpoint": 1},
        {"op": "trigger", "checkpoint": 2},
        {"op": "upload", "checkpoint": 2, "task": 0, "local": "b", "remote": "B"},
        {"op": "reuse", "checkpoint": 2, "local": "a", "remote": "A"},
        {"op": "ack", "checkpoint": 2},
        {"op": "trigger", "checkpoint": 3},
        {"op": "upload", "checkpoint": 3, "local": "c", "remote": "C"},
        {"op": "abort", "checkpoint": 2},
        {"op": "abort", "checkpoint": 3},
        {"op": "notify_abort", "checkpoint": 3},
        {"op": "trigger", "checkpoint": 4},
        {"op": "snapshot", "checkpoint": 4, "local_files": ["a"]},
        {"op": "ack", "checkpoint": 4},
        {"op": "complete", "checkpoint": 4}
    ]}));
    // The abort of cp2 deletes its private file only; B is registered and stays.
    assert_eq!(exists(&r, 11), ["A", "B", "C", "cp1.meta", "cp1.private"]);
    // cp3 was never acknowledged: its upload goes when the task hears of the abort.
    assert_eq!(exists(&r, 12), exists(&r, 11));
    assert_eq!(exists(&r, 13), ["A", "B", "cp1.meta", "cp1.private"]);
    assert_eq!(
        r.steps[15].plan.as_ref().map(|p| p.reuse.clone()),
        Some([("a".to_owned(), "A".to_owned())].into())
    );
    // cp4 completes: B (last used by the aborted cp2) and cp1's files go; A stays.
    assert_eq!(exists(&r, 17), ["A", "cp4.meta", "cp4.private"]);
    let b = r.steps[17]
        .deleted
        .iter()
        .find(|d| d.object == "B")
        .unwrap();
    assert_eq!(
        b.why,
        "registry: last used by checkpoint 2, below the watermark 4"
    );
}

/// A failed upload: the task deletes its unacknowledged uploads and the checkpoint is aborted
/// (its private file goes), while what another task acknowledged waits for the registry.
#[test]
fn upload_failure_on_one_task() {
    let r = run(json!({"events": [
        {"op": "trigger", "checkpoint": 1},
        {"op": "upload", "checkpoint": 1, "task": 0, "local": "a", "remote": "A0"},
        {"op": "ack", "checkpoint": 1, "task": 0},
        {"op": "upload", "checkpoint": 1, "task": 1, "local": "a", "remote": "A1"},
        {"op": "upload_fails", "checkpoint": 1, "task": 1},
        {"op": "trigger", "checkpoint": 2},
        {"op": "upload", "checkpoint": 2, "task": 0, "local": "z", "remote": "Z0"},
        {"op": "upload", "checkpoint": 2, "task": 1, "local": "z", "remote": "Z1"},
        {"op": "ack", "checkpoint": 2, "task": 0},
        {"op": "ack", "checkpoint": 2, "task": 1},
        {"op": "complete", "checkpoint": 2}
    ]}));
    assert_eq!(exists(&r, 3), ["A0", "A1", "cp1.private"]);
    assert_eq!(exists(&r, 4), ["A0"]);
    assert_eq!(exists(&r, 10), ["Z0", "Z1", "cp2.meta", "cp2.private"]);
}

/// NO_CLAIM: the restored snapshot's files are never referenced nor deleted. CLAIM: they are
/// reused and deleted once unused. LEGACY: reused, never deleted.
#[test]
fn restore_modes() {
    let script = |mode: &str| {
        json!({"events": [
            {"op": "savepoint", "checkpoint": 5, "files": ["A", "SP5"]},
            {"op": "restore", "checkpoint": 5, "mode": mode, "shared": {"a": "A"}},
            {"op": "trigger", "checkpoint": 6},
            {"op": "snapshot", "checkpoint": 6, "local_files": ["a", "b"],
             "new_remote": {"a": "A6", "b": "B6"}},
            {"op": "ack", "checkpoint": 6},
            {"op": "complete", "checkpoint": 6},
            {"op": "notify_complete", "checkpoint": 6},
            {"op": "trigger", "checkpoint": 7},
            {"op": "snapshot", "checkpoint": 7, "local_files": ["b"], "new_remote": {}},
            {"op": "ack", "checkpoint": 7},
            {"op": "complete", "checkpoint": 7}
        ]})
    };
    let no_claim = run(script("no_claim"));
    assert_eq!(
        no_claim.steps[3].plan.as_ref().map(|p| p.upload.clone()),
        Some(vec!["a".to_owned(), "b".to_owned()])
    );
    assert_eq!(no_claim.steps[1].retained, Vec::<u64>::new());
    assert_eq!(
        exists(&no_claim, 10),
        ["A", "B6", "SP5", "cp7.meta", "cp7.private"]
    );
    for step in &no_claim.steps {
        assert!(step.exists.iter().any(|o| o == "A"), "event {}", step.event);
        assert!(
            step.exists.iter().any(|o| o == "SP5"),
            "event {}",
            step.event
        );
    }

    let claim = run(script("claim"));
    assert_eq!(claim.steps[1].retained, [5]);
    assert_eq!(
        claim.steps[3]
            .plan
            .as_ref()
            .map(|p| (p.reuse.clone(), p.upload.clone())),
        Some((
            [("a".to_owned(), "A".to_owned())].into(),
            vec!["b".to_owned()]
        ))
    );
    // cp6 subsumes the savepoint: its own file goes, A (used by cp6) stays.
    assert_eq!(exists(&claim, 5), ["A", "B6", "cp6.meta", "cp6.private"]);
    assert_eq!(exists(&claim, 10), ["B6", "cp7.meta", "cp7.private"]);

    let legacy = run(script("legacy"));
    assert_eq!(legacy.steps[1].retained, Vec::<u64>::new());
    assert_eq!(
        legacy.steps[3].plan.as_ref().map(|p| p.reuse.clone()),
        Some([("a".to_owned(), "A".to_owned())].into())
    );
    assert_eq!(
        exists(&legacy, 10),
        ["A", "B6", "SP5", "cp7.meta", "cp7.private"]
    );
}

/// FLINK-29913: two concurrent checkpoints upload the same local file under two names; the
/// second one's completion deletes exactly the first one's copy.
#[test]
fn concurrent_uploads_of_one_local_file() {
    let r = run(json!({"max_concurrent_checkpoints": 2, "events": [
        {"op": "trigger", "checkpoint": 1},
        {"op": "snapshot", "checkpoint": 1, "local_files": ["s"], "new_remote": {"s": "S1"}},
        {"op": "ack", "checkpoint": 1},
        {"op": "complete", "checkpoint": 1},
        {"op": "notify_complete", "checkpoint": 1},
        {"op": "trigger", "checkpoint": 2},
        {"op": "snapshot", "checkpoint": 2, "local_files": ["s", "n"],
         "new_remote": {"n": "N2"}},
        {"op": "trigger", "checkpoint": 3},
        {"op": "snapshot", "checkpoint": 3, "local_files": ["s", "n"],
         "new_remote": {"n": "N3"}},
        {"op": "ack", "checkpoint": 2},
        {"op": "ack", "checkpoint": 3},
        {"op": "complete", "checkpoint": 2},
        {"op": "complete", "checkpoint": 3}
    ]}));
    assert_eq!(
        r.steps[8]
            .plan
            .as_ref()
            .map(|p| (p.reuse.clone(), p.upload.clone())),
        Some((
            [("s".to_owned(), "S1".to_owned())].into(),
            vec!["n".to_owned()]
        ))
    );
    assert_eq!(
        exists(&r, 11),
        ["N2", "N3", "S1", "cp2.meta", "cp2.private", "cp3.private"]
    );
    assert_eq!(exists(&r, 12), ["N3", "S1", "cp3.meta", "cp3.private"]);
}

/// Job-manager failover: pending checkpoints are lost (their uploads stay as orphans), the
/// registry is rebuilt from the store, and the tasks plan from the recovered checkpoint.
#[test]
fn jm_failover_rebuilds_the_registry() {
    let r = run(json!({"retained_checkpoints": 1, "events": [
        {"op": "trigger", "checkpoint": 1},
        {"op": "upload", "checkpoint": 1, "local": "a", "remote": "A"},
        {"op": "upload", "checkpoint": 1, "local": "b", "remote": "B"},
        {"op": "ack", "checkpoint": 1},
        {"op": "complete", "checkpoint": 1},
        {"op": "trigger", "checkpoint": 2},
        {"op": "upload", "checkpoint": 2, "local": "c", "remote": "C"},
        {"op": "ack", "checkpoint": 2},
        {"op": "jm_failover", "store": [{"checkpoint": 1, "shared": {"a": "A", "b": "B"}}]},
        {"op": "trigger", "checkpoint": 3},
        {"op": "snapshot", "checkpoint": 3, "local_files": ["a"]},
        {"op": "ack", "checkpoint": 3},
        {"op": "complete", "checkpoint": 3}
    ]}));
    assert_eq!(r.steps[8].retained, [1]);
    assert_eq!(
        r.steps[10].plan.as_ref().map(|p| p.reuse.clone()),
        Some([("a".to_owned(), "A".to_owned())].into())
    );
    // B (only in cp1) goes with cp1; C and cp2.private, of the lost cp2, stay for the sweep.
    assert_eq!(
        exists(&r, 12),
        ["A", "C", "cp2.private", "cp3.meta", "cp3.private"]
    );
}

/// Job failover: pending checkpoints are aborted, unacknowledged uploads cleaned up, and the
/// tasks restart from the latest retained checkpoint.
#[test]
fn job_failover_aborts_pending_checkpoints() {
    let r = run(json!({"events": [
        {"op": "trigger", "checkpoint": 1},
        {"op": "upload", "checkpoint": 1, "local": "a", "remote": "A"},
        {"op": "ack", "checkpoint": 1},
        {"op": "complete", "checkpoint": 1},
        {"op": "trigger", "checkpoint": 2},
        {"op": "upload", "checkpoint": 2, "local": "b", "remote": "B"},
        {"op": "job_failover"},
        {"op": "trigger", "checkpoint": 3},
        {"op": "snapshot", "checkpoint": 3, "local_files": ["a", "b"],
         "new_remote": {"b": "B3"}}
    ]}));
    assert_eq!(exists(&r, 6), ["A", "cp1.meta", "cp1.private"]);
    assert_eq!(
        r.steps[8]
            .plan
            .as_ref()
            .map(|p| (p.reuse.clone(), p.upload.clone())),
        Some((
            [("a".to_owned(), "A".to_owned())].into(),
            vec!["b".to_owned()]
        ))
    );
}

#[test]
fn events_that_cannot_apply_are_named() {
    let e = fails(json!({"events": [
        {"op": "trigger", "checkpoint": 1},
        {"op": "ack", "checkpoint": 2}
    ]}));
    let named = matches!(
        e,
        ScriptError::Invalid {
            event: 1,
            op: "ack",
            ..
        }
    );
    assert!(named, "{e:?}");
    assert_eq!(e.to_string(), "event 1 (ack): checkpoint 2 is not pending");

    let e = fails(json!({"events": [
        {"op": "trigger", "checkpoint": 1},
        {"op": "reuse", "checkpoint": 1, "local": "a", "remote": "A"}
    ]}));
    assert_eq!(
        e.to_string(),
        "event 1 (reuse): object A was never uploaded"
    );

    let e = fails(json!({"events": [
        {"op": "trigger", "checkpoint": 1},
        {"op": "snapshot", "checkpoint": 1, "local_files": ["a"], "new_remote": {}}
    ]}));
    assert_eq!(
        e.to_string(),
        "event 1 (snapshot): the plan uploads a but new_remote names no object for it"
    );

    let e = fails(json!({"events": [
        {"op": "trigger", "checkpoint": 1},
        {"op": "snapshot", "checkpoint": 1, "local_files": ["a"],
         "new_remote": {"a": "A", "b": "B"}}
    ]}));
    assert_eq!(
        e.to_string(),
        "event 1 (snapshot): new_remote names b, which is not among local_files"
    );

    let e = fails(json!({"events": [
        {"op": "trigger", "checkpoint": 1},
        {"op": "trigger", "checkpoint": 2}
    ]}));
    assert_eq!(
        e.to_string(),
        "event 1 (trigger): 1 checkpoints are pending: max_concurrent_checkpoints is 1"
    );

    let e = fails(json!({"events": [
        {"op": "trigger", "checkpoint": 1},
        {"op": "ack", "checkpoint": 1},
        {"op": "upload", "checkpoint": 1, "local": "a", "remote": "A"}
    ]}));
    assert_eq!(
        e.to_string(),
        "event 2 (upload): task 0 already acknowledged checkpoint 1"
    );

    let e = fails(json!({"events": [
        {"op": "trigger", "checkpoint": 1},
        {"op": "ack", "checkpoint": 1},
        {"op": "complete", "checkpoint": 1},
        {"op": "notify_abort", "checkpoint": 1}
    ]}));
    assert_eq!(
        e.to_string(),
        "event 3 (notify_abort): checkpoint 1 was not aborted"
    );

    // The registry dropped A: a reference to it is refused at acknowledgement.
    let e = fails(json!({"events": [
        {"op": "trigger", "checkpoint": 1},
        {"op": "upload", "checkpoint": 1, "local": "a", "remote": "A"},
        {"op": "ack", "checkpoint": 1},
        {"op": "complete", "checkpoint": 1},
        {"op": "trigger", "checkpoint": 2},
        {"op": "ack", "checkpoint": 2},
        {"op": "complete", "checkpoint": 2},
        {"op": "trigger", "checkpoint": 3},
        {"op": "reuse", "checkpoint": 3, "local": "a", "remote": "A"},
        {"op": "ack", "checkpoint": 3}
    ]}));
    let named = matches!(
        e,
        ScriptError::Refused {
            event: 9,
            op: "ack",
            ..
        }
    );
    assert!(named, "{e:?}");
    assert_eq!(
        e.to_string(),
        "event 9 (ack): checkpoint chk-3 references unknown shared state object A"
    );
}
