//! Flink compiled plans: listing states and TTL, and a TTL edit round trip on every shared
//! compiled plan.

use conflux_planner::compiled::parse_duration_ms;
use conflux_planner::{CompiledPlan, PlanError};
use serde_json::Value;

use crate::flink_fixture;

fn compiled_fixtures() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(flink_fixture(""))
        .expect("fixtures")
        .filter_map(|e| {
            let path = e.expect("entry").path();
            let name = path.file_name()?.to_str()?.to_owned();
            name.ends_with(".compiled-plan.json")
                .then(|| (name, std::fs::read(&path).expect("read")))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn ttl_round_trip_on_every_compiled_plan() {
    let fixtures = compiled_fixtures();
    assert_eq!(fixtures.len(), 21);
    let mut edited = 0;
    for (name, bytes) in &fixtures {
        let plan = CompiledPlan::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        // Unedited, the text is the input byte for byte.
        assert_eq!(plan.text().as_bytes(), bytes.as_slice(), "{name}");
        let original: Value = serde_json::from_slice(bytes).expect("json");
        let Some(op) = plan.stateful_operators().first() else {
            // Stateless queries have nothing to edit; an edit names the problem.
            let e = plan.with_ttl(1, "x", 1).expect_err("no state").to_string();
            assert!(e.contains("stateful nodes: none"), "{name}: {e}");
            continue;
        };
        for state in &op.states {
            let out = plan
                .with_ttl(op.id, &state.name, 3_600_000)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            // JSON-equal to the input apart from the edited value, written as Flink does.
            let mut expected = original.clone();
            let node = expected["nodes"]
                .as_array_mut()
                .expect("nodes")
                .iter_mut()
                .find(|n| n["id"].as_i64() == Some(op.id))
                .expect("node");
            let entry = node["state"]
                .as_array_mut()
                .expect("state")
                .iter_mut()
                .find(|s| s["name"] == state.name.as_str())
                .expect("state entry");
            entry["ttl"] = Value::from("3600000 ms");
            let actual: Value = serde_json::from_str(out.text()).expect("edited json");
            assert_eq!(actual, expected, "{name}");
            // Only the TTL's bytes differ.
            assert_eq!(
                out.text().len() as i64 - bytes.len() as i64,
                "\"3600000 ms\"".len() as i64 - format!("\"{}\"", state.ttl).len() as i64
            );
            let reread = out
                .stateful_operators()
                .iter()
                .find(|o| o.id == op.id)
                .and_then(|o| o.states.iter().find(|s| s.name == state.name))
                .expect("edited state");
            assert_eq!(reread.ttl_ms, 3_600_000);
            // And back: the original duration, in milliseconds.
            let back = out
                .with_ttl(op.id, &state.name, state.ttl_ms)
                .expect("edit back");
            let back_value: Value = serde_json::from_str(back.text()).expect("json");
            let mut expected_back = original.clone();
            let node = expected_back["nodes"]
                .as_array_mut()
                .expect("nodes")
                .iter_mut()
                .find(|n| n["id"].as_i64() == Some(op.id))
                .expect("node");
            for s in node["state"].as_array_mut().expect("state") {
                if s["name"] == state.name.as_str() {
                    s["ttl"] = Value::from(format!("{} ms", state.ttl_ms));
                }
            }
            assert_eq!(back_value, expected_back, "{name}");
            edited += 1;
        }
    }
    assert!(edited >= 12, "{edited} states edited");
}

#[test]
fn lists_states_and_ttl() {
    let bytes = std::fs::read(flink_fixture(
        "nexmark-q4-state-ttl-hints.compiled-plan.json",
    ))
    .expect("fixture");
    let plan = CompiledPlan::parse(&bytes).expect("parse");
    let listed: Vec<(i64, &str, &str, u64)> = plan
        .stateful_operators()
        .iter()
        .flat_map(|o| {
            o.states
                .iter()
                .map(move |s| (o.id, o.kind.as_str(), s.name.as_str(), s.ttl_ms))
        })
        .collect();
    assert_eq!(
        listed,
        vec![
            (11, "stream-exec-join_1", "leftState", 12 * 3_600_000),
            (11, "stream-exec-join_1", "rightState", 2 * 3_600_000),
            (
                15,
                "stream-exec-global-group-aggregate_1",
                "globalGroupAggregateState",
                86_400_000
            ),
            (
                19,
                "stream-exec-global-group-aggregate_1",
                "globalGroupAggregateState",
                86_400_000
            ),
        ]
    );
    // A state by its index works too; unknown ones are named.
    let by_index = plan.with_ttl(11, "1", 1000).expect("by index");
    assert_eq!(by_index.stateful_operators()[0].states[1].ttl, "1000 ms");
    let e = plan
        .with_ttl(11, "middleState", 1)
        .expect_err("unknown")
        .to_string();
    assert!(e.contains("node 11 has no state 'middleState'"), "{e}");
    let e = plan
        .with_ttl(12, "leftState", 1)
        .expect_err("stateless")
        .to_string();
    assert!(e.contains("node 12 is not a stateful node"), "{e}");
    assert_eq!(parse_duration_ms("1 h").expect("1 h"), 3_600_000);
}

#[test]
fn bad_compiled_plans_are_named() {
    for (bytes, fragment) in [
        (&b"{"[..], "invalid JSON"),
        (&b"{\"flinkVersion\": \"1.20\"}"[..], "no 'nodes' array"),
        (&br#"{"nodes": [{"id": 1, "state": [{"index": 0, "name": "s"}]}]}"#[..], "no string 'ttl'"),
        (&br#"{"nodes": [{"id": 1, "state": [{"index": 0, "name": "s", "ttl": "3 fortnights"}]}]}"#[..], "invalid duration"),
    ] {
        let e = CompiledPlan::parse(bytes).expect_err("bad").to_string();
        assert!(e.contains(fragment), "'{e}' lacks '{fragment}'");
    }
}

/// A state with two `ttl` keys: serde_json reads the last (`2 h`), the TTL edit rewrote the
/// first, so `ttl --set` reported success and changed nothing anyone reads. Duplicate keys are
/// now refused, naming the key and its byte offset.
#[test]
fn duplicate_keys_are_refused_with_key_and_offset() {
    let text =
        std::fs::read_to_string(flink_fixture("nexmark-q20.compiled-plan.json")).expect("fixture");
    let first = "\"ttl\" : \"0 ms\",\n      \"name\" : \"leftState\"";
    assert!(text.contains(first));
    let dup = text.replacen(
        first,
        "\"ttl\" : \"0 ms\",\n      \"ttl\" : \"2 h\",\n      \"name\" : \"leftState\"",
        1,
    );
    let offset = dup.find("\"ttl\" : \"2 h\"").expect("second key");
    match CompiledPlan::parse(dup.as_bytes()) {
        Err(PlanError::DuplicateKey { key, offset: at }) => {
            assert_eq!((key.as_str(), at), ("ttl", offset));
        }
        Err(other) => panic!("another error: {other}"),
        Ok(plan) => {
            let edited = plan.with_ttl(11, "leftState", 3 * 3_600_000);
            panic!(
                "accepted; the edit reads back as {:?}",
                edited.map(|p| p.stateful_operators()[0].states[0].ttl.clone())
            );
        }
    }
    let e = CompiledPlan::parse(dup.as_bytes())
        .expect_err("duplicate")
        .to_string();
    assert_eq!(
        e,
        format!("compiled plan: duplicate key 'ttl' at byte {offset}; JSON readers disagree on which value counts")
    );
    // Anywhere in the document, escaped spellings included.
    let e = CompiledPlan::parse(br#"{"nodes": [], "a": 1, "\u0061": 2}"#).expect_err("dup");
    assert!(
        matches!(e, PlanError::DuplicateKey { ref key, offset: 22 } if key == "a"),
        "{e}"
    );
}
