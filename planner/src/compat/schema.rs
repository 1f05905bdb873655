//! The state-schema checks of the compatibility analysis: per state of a paired operator, its
//! kind, key and value types (with Flink's row and POJO evolution rules) and TTL.

use conflux_graph::json::StateJson;

use super::mapping::Op;
use super::verdict::{LayerKind, RowNotes, Verdict};

/// Compares the states of an old operator and its partner by name: dropped, new and changed
/// states. O(states^2) per operator.
/// `UNKNOWN` when either side's state is unknown (the plan carries no state information).
pub(super) fn check_states(o: &Op, n: &Op, notes: &mut RowNotes<'_>) {
    if !o.state_known || !n.state_known {
        let side = match (o.state_known, n.state_known) {
            (false, false) => "neither plan carries state information",
            (false, true) => "the old plan carries no state information",
            _ => "the new plan carries no state information",
        };
        notes.note(
            LayerKind::StateSchema,
            Verdict::Unknown,
            format!(
                "state unknown ({side}): its state names, kinds, types and TTL cannot be compared"
            ),
        );
        return;
    }
    for s in &o.states {
        match n.states.iter().find(|t| t.name == s.name) {
            Some(t) => compare_state(s, t, notes),
            None => notes.note(
                LayerKind::StateSchema,
                Verdict::CompatibleAsIs,
                format!(
                    "state '{}' is no longer registered; it is not restored",
                    s.name
                ),
            ),
        }
    }
    for t in n
        .states
        .iter()
        .filter(|t| !o.states.iter().any(|s| s.name == t.name))
    {
        notes.note(
            LayerKind::StateSchema,
            Verdict::CompatibleAsIs,
            format!("state '{}' is new; it starts empty", t.name),
        );
    }
}

/// A value type as the analysis reads it: `ROW<name TYPE, ...>` (positional, as Flink SQL's
/// RowData), `POJO<name TYPE, ...>` (by field name, as Flink's PojoSerializer), or anything else
/// (compared as a whole).
#[derive(Debug, PartialEq, Eq)]
enum TypeShape {
    Row(Vec<(String, String)>),
    Pojo(Vec<(String, String)>),
    Atomic(String),
}

fn shape_of(t: &str) -> TypeShape {
    let t = t.trim();
    let upper = t.to_ascii_uppercase();
    for (prefix, row) in [("ROW<", true), ("POJO<", false)] {
        if upper.starts_with(prefix) && t.ends_with('>') {
            let inner = &t[prefix.len()..t.len() - 1];
            let fields = split_top_level(inner)
                .into_iter()
                .map(|f| {
                    let f = f.trim();
                    match f.split_once(char::is_whitespace) {
                        Some((n, ty)) => (n.trim().to_owned(), ty.trim().to_owned()),
                        None => (f.to_owned(), String::new()),
                    }
                })
                .filter(|(n, _)| !n.is_empty())
                .collect();
            return if row {
                TypeShape::Row(fields)
            } else {
                TypeShape::Pojo(fields)
            };
        }
    }
    TypeShape::Atomic(t.to_owned())
}

/// Splits on commas outside `<>`, `()` and `[]`.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Compares one state across versions: kind, key type, value type, TTL.
fn compare_state(s: &StateJson, t: &StateJson, notes: &mut RowNotes<'_>) {
    let mut report = |layer, verdict, reason| notes.note(layer, verdict, reason);
    let name = &s.name;
    if s.kind != t.kind {
        report(
            LayerKind::StateSchema,
            Verdict::Incompatible,
            format!("state '{name}': kind changes from {} to {}", s.kind, t.kind),
        );
    }
    if s.key_type != t.key_type {
        report(
            LayerKind::StateSchema,
            Verdict::Incompatible,
            format!(
                "state '{name}': key type changes from {} to {} (a key serializer cannot migrate)",
                s.key_type.as_deref().unwrap_or("none"),
                t.key_type.as_deref().unwrap_or("none")
            ),
        );
    }
    match (&s.value_type, &t.value_type) {
        (Some(a), Some(b)) if a != b => {
            let (layer, verdict, reason) = compare_value_types(name, a, b);
            report(layer, verdict, reason);
        }
        (None, Some(_)) | (Some(_), None) => report(
            LayerKind::StateSchema,
            Verdict::Incompatible,
            format!("state '{name}': value type is given on one side only"),
        ),
        _ => {}
    }
    match (s.ttl_ms, t.ttl_ms) {
        (Some(a), Some(b)) if a != b => report(
            LayerKind::StateSchema,
            Verdict::CompatibleAsIs,
            format!("state '{name}': TTL {a} ms -> {b} ms (a changed duration is compatible)"),
        ),
        (None, Some(b)) => report(
            LayerKind::StateSchema,
            Verdict::Incompatible,
            format!(
                "state '{name}': TTL enabled ({b} ms) on state written without TTL; Flink 1.20 cannot restore it (migration exists from Flink 2.0, FLINK-35780)"
            ),
        ),
        (Some(a), None) => report(
            LayerKind::StateSchema,
            Verdict::Incompatible,
            format!(
                "state '{name}': TTL ({a} ms) disabled on state written with TTL; Flink 1.20 cannot restore it (migration exists from Flink 2.0, FLINK-35780)"
            ),
        ),
        _ => {}
    }
}

/// One finding: its layer, verdict and reason.
type Finding = (LayerKind, Verdict, String);

/// Compares two different value types of state `name`.
fn compare_value_types(name: &str, a: &str, b: &str) -> Finding {
    match (shape_of(a), shape_of(b)) {
        (TypeShape::Row(x), TypeShape::Row(y)) => compare_rows(name, &x, &y),
        (TypeShape::Pojo(x), TypeShape::Pojo(y)) => compare_pojos(name, &x, &y),
        _ => (
            LayerKind::StateSchema,
            Verdict::Incompatible,
            format!("state '{name}': value type changes from {a} to {b}, not an evolvable change"),
        ),
    }
}

/// Rows are positional (Flink SQL's RowData): a field changing type is incompatible, fields
/// reordered are read into the wrong fields, fields added or removed need a migration.
fn compare_rows(name: &str, x: &[(String, String)], y: &[(String, String)]) -> Finding {
    let common_old: Vec<&(String, String)> =
        x.iter().filter(|f| y.iter().any(|g| g.0 == f.0)).collect();
    let common_new: Vec<&(String, String)> =
        y.iter().filter(|g| x.iter().any(|f| f.0 == g.0)).collect();
    if let Some(((n, t1), (_, t2))) = common_old
        .iter()
        .filter_map(|f| common_new.iter().find(|g| g.0 == f.0).map(|g| (*f, *g)))
        .find(|(f, g)| f.1 != g.1)
    {
        return (
            LayerKind::StateSchema,
            Verdict::Incompatible,
            format!("state '{name}': field '{n}' changes type from {t1} to {t2}"),
        );
    }
    let old_order: Vec<&str> = common_old.iter().map(|f| f.0.as_str()).collect();
    let new_order: Vec<&str> = common_new.iter().map(|f| f.0.as_str()).collect();
    if old_order != new_order {
        return (
            LayerKind::BusinessLogic,
            Verdict::Incompatible,
            format!(
                "state '{name}': row fields reordered ({} -> {}), e.g. aggregates swapped: a positional row state would be read into the wrong fields",
                old_order.join(", "),
                new_order.join(", ")
            ),
        );
    }
    let added: Vec<&str> = y
        .iter()
        .filter(|g| !x.iter().any(|f| f.0 == g.0))
        .map(|g| g.0.as_str())
        .collect();
    let removed: Vec<&str> = x
        .iter()
        .filter(|f| !y.iter().any(|g| g.0 == f.0))
        .map(|f| f.0.as_str())
        .collect();
    (
        LayerKind::StateSchema,
        Verdict::CompatibleAfterMigration,
        format!(
            "state '{name}': row fields added [{}] removed [{}]: the state must be migrated (read with the old schema, rewritten with the new)",
            added.join(", "),
            removed.join(", ")
        ),
    )
}

/// POJOs are read by field name (Flink's PojoSerializer): a field changing type is
/// incompatible, reordered fields restore as is, added or removed fields migrate.
fn compare_pojos(name: &str, x: &[(String, String)], y: &[(String, String)]) -> Finding {
    if let Some((f, g)) = x
        .iter()
        .filter_map(|f| y.iter().find(|g| g.0 == f.0).map(|g| (f, g)))
        .find(|(f, g)| f.1 != g.1)
    {
        return (
            LayerKind::StateSchema,
            Verdict::Incompatible,
            format!(
                "state '{name}': POJO field '{}' changes type from {} to {}",
                f.0, f.1, g.1
            ),
        );
    }
    let same_set = x.len() == y.len() && x.iter().all(|f| y.contains(f));
    if same_set {
        (
            LayerKind::StateSchema,
            Verdict::CompatibleAsIs,
            format!("state '{name}': POJO fields reordered (read by name with a reconfigured serializer)"),
        )
    } else {
        (
            LayerKind::StateSchema,
            Verdict::CompatibleAfterMigration,
            format!("state '{name}': POJO fields added or removed: the state is migrated (POJO schema evolution)"),
        )
    }
}
