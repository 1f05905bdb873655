//! End-to-end runs of `conflux checkpoint-sim --script`: the replay's JSON contract and text
//! output, and exit 2 naming an event that cannot apply.

use std::process::{Command, Output};

use serde_json::{json, Value};

fn replay(script: &Value, format: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scenario.json");
    std::fs::write(&path, serde_json::to_vec(script).unwrap()).unwrap();
    Command::new(env!("CARGO_BIN_EXE_conflux"))
        .args(["checkpoint-sim", "--script"])
        .arg(&path)
        .args(["--format", format])
        .output()
        .unwrap()
}

fn scenario() -> Value {
    json!({"retained_checkpoints": 1, "events": [
        {"op": "trigger", "checkpoint": 1},
        {"op": "upload", "checkpoint": 1, "local": "a", "remote": "A"},
        {"op": "ack", "checkpoint": 1},
        {"op": "complete", "checkpoint": 1},
        {"op": "notify_complete", "checkpoint": 1},
        {"op": "trigger", "checkpoint": 2},
        {"op": "snapshot", "checkpoint": 2, "local_files": ["a", "e"],
         "new_remote": {"a": "A2", "e": "X2"}},
        {"op": "ack", "checkpoint": 2},
        {"op": "complete", "checkpoint": 2}
    ]})
}

#[test]
fn script_replay_json_contract() {
    let out = replay(&scenario(), "json");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = value["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 9);
    assert_eq!(steps[0], json!({"event": 0, "exists": [], "retained": []}));
    assert_eq!(
        steps[6],
        json!({"event": 6, "exists": ["A", "X2", "cp1.meta", "cp1.private"], "retained": [1],
               "plan": {"reuse": {"a": "A"}, "upload": ["e"]}})
    );
    assert_eq!(
        steps[8],
        json!({"event": 8, "exists": ["A", "X2", "cp2.meta", "cp2.private"], "retained": [2]})
    );
}

#[test]
fn script_replay_text_says_why_objects_go() {
    let out = replay(&scenario(), "text");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "event 8 (complete 2): retained [2]\n  + cp2.meta\n  - cp1.private: checkpoint 1 is \
             subsumed by checkpoint 2\n  - cp1.meta: checkpoint 1 is subsumed by checkpoint 2\n  \
             exists: A X2 cp2.meta cp2.private\n"
        ),
        "{text}"
    );
    assert!(text.contains("  plan: reuse [a=A], upload [e]\n"), "{text}");
}

#[test]
fn bad_event_exits_2_naming_it() {
    let mut script = scenario();
    script["events"]
        .as_array_mut()
        .unwrap()
        .push(json!({"op": "ack", "checkpoint": 7}));
    let out = replay(&script, "json");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr.trim(),
        "error: event 9 (ack): checkpoint 7 is not pending"
    );
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        value,
        json!({"error": "event 9 (ack): checkpoint 7 is not pending"})
    );

    // An unknown op is named by its event too.
    let out = replay(
        &json!({"events": [{"op": "trigger", "checkpoint": 1}, {"op": "teleport"}]}),
        "text",
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("event 1: unknown variant `teleport`"),
        "{stderr}"
    );
}
