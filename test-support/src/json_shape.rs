//! Structural comparison of JSON documents: same keys at every level, nested ones included, and
//! the same JSON types (integers and floats told apart), so that a missing, extra or mistyped
//! key fails. An array element of ours must match some element of Flink's array (a source's plan
//! node has no `inputs`, a sink's has); an empty array of ours matches any array.

use serde_json::Value;

/// Loads a captured answer of Flink 1.20.3's REST API from `fixtures/flink-rest/`.
///
/// # Panics
/// If the file is missing or not JSON.
pub fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/flink-rest")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `Ok` when `ours` has exactly `flink`'s shape; else the first difference, with its path
/// (`path` names where `ours` is, `$` at the top).
///
/// # Errors
/// The first difference: missing or extra keys, a JSON type that differs, an array element of
/// ours that matches none of Flink's.
pub fn same_shape(ours: &Value, flink: &Value, path: &str) -> Result<(), String> {
    match (ours, flink) {
        (Value::Object(a), Value::Object(b)) => {
            let missing: Vec<&String> = b.keys().filter(|k| !a.contains_key(*k)).collect();
            let extra: Vec<&String> = a.keys().filter(|k| !b.contains_key(*k)).collect();
            if !missing.is_empty() || !extra.is_empty() {
                return Err(format!(
                    "{path}: missing keys {missing:?}, extra keys {extra:?}"
                ));
            }
            for (k, v) in a {
                same_shape(v, &b[k], &format!("{path}.{k}"))?;
            }
            Ok(())
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, element) in a.iter().enumerate() {
                if b.is_empty() {
                    return Err(format!("{path}: Flink's array is empty, ours is not"));
                }
                let mut first_error = None;
                let matched =
                    b.iter()
                        .any(|f| match same_shape(element, f, &format!("{path}[{i}]")) {
                            Ok(()) => true,
                            Err(e) => {
                                first_error.get_or_insert(e);
                                false
                            }
                        });
                if !matched {
                    return Err(first_error.unwrap_or_default());
                }
            }
            Ok(())
        }
        _ if kind(ours) == kind(flink) => Ok(()),
        _ => Err(format!(
            "{path}: ours is {} ({ours}), Flink's {} ({flink})",
            kind(ours),
            kind(flink)
        )),
    }
}

/// Panics unless `ours` has the shape of the captured answer `fixture_name`.
///
/// # Panics
/// When the shapes differ, naming the first difference.
pub fn assert_shape(ours: &Value, fixture_name: &str) {
    assert_shape_of(ours, &fixture(fixture_name), fixture_name);
}

/// Panics unless `ours` has `flink`'s shape (`what` names `flink` in the message).
///
/// # Panics
/// When the shapes differ, naming the first difference.
pub fn assert_shape_of(ours: &Value, flink: &Value, what: &str) {
    if let Err(e) = same_shape(ours, flink, "$") {
        panic!("against {what}: {e}\nours: {ours:#}");
    }
}

#[cfg(test)]
#[test]
#[allow(clippy::unwrap_used)]
fn the_comparison_catches_missing_extra_and_mistyped_keys() {
    let flink: Value =
        serde_json::json!({"a": 1, "b": {"c": 1.5, "d": [ {"x": "s"}, {"x": "s", "y": true} ]}});
    assert!(same_shape(
        &serde_json::json!({"a": 2, "b": {"c": 2.0, "d": [{"x": "t", "y": false}]}}),
        &flink,
        "$"
    )
    .is_ok());
    let missing =
        same_shape(&serde_json::json!({"a": 2, "b": {"d": []}}), &flink, "$").unwrap_err();
    assert!(missing.contains("$.b: missing keys [\"c\"]"), "{missing}");
    let extra = same_shape(
        &serde_json::json!({"a": 2, "z": 0, "b": {"c": 1.0, "d": []}}),
        &flink,
        "$",
    )
    .unwrap_err();
    assert!(extra.contains("extra keys [\"z\"]"), "{extra}");
    let int_for_float = same_shape(
        &serde_json::json!({"a": 2, "b": {"c": 2, "d": []}}),
        &flink,
        "$",
    )
    .unwrap_err();
    assert!(
        int_for_float.contains("$.b.c: ours is integer"),
        "{int_for_float}"
    );
    let bad_element = same_shape(
        &serde_json::json!({"a": 2, "b": {"c": 2.0, "d": [{"x": 1}]}}),
        &flink,
        "$",
    )
    .unwrap_err();
    assert!(bad_element.contains("$.b.d[0].x"), "{bad_element}");
}
