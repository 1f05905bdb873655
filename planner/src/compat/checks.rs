//! The checks of one old operator against its new partner (or its absence): topology (removed
//! operators, changed ids), business logic (different functions paired, lost key
//! partitioning) and key groups. State schemas are checked in [`super::schema`].

use conflux_graph::{default_max_parallelism, ShipStrategy};

use super::mapping::Op;
use super::verdict::{CompatOptions, LayerKind, MatchedBy, RowNotes, Verdict};

/// An old operator without a partner: fine without state or with non-restored state allowed,
/// else the restore fails; `UNKNOWN` when its state cannot be seen.
pub(super) fn check_removed(o: &Op, options: &CompatOptions, notes: &mut RowNotes<'_>) {
    let (verdict, reason) = if o.known_stateless() {
        (Verdict::CompatibleAsIs, "removed; it has no state")
    } else if options.allow_non_restored_state && !o.state_known {
        (
            Verdict::CompatibleAsIs,
            "removed; any state it had is dropped (non-restored state allowed; the plan carries no state information)",
        )
    } else if options.allow_non_restored_state {
        (
            Verdict::CompatibleAsIs,
            "removed; its state is dropped (non-restored state allowed)",
        )
    } else if !o.state_known {
        (
            Verdict::Unknown,
            "removed; whether it has state is unknown (the plan carries no state information): if it has, the restore fails unless non-restored state is allowed (-n), which drops it",
        )
    } else {
        (
            Verdict::Incompatible,
            "removed, but it has state: the restore fails unless non-restored state is allowed (-n), which drops it",
        )
    };
    notes.note(LayerKind::Topology, verdict, reason.to_owned());
}

/// Topology: a stateful operator paired by the rename map or by structure has another operator
/// id, so its state must be moved to the new id.
pub(super) fn check_ids(o: &Op, n: &Op, how: MatchedBy, notes: &mut RowNotes<'_>) {
    let by = match how {
        MatchedBy::Rename => "the rename map",
        MatchedBy::Structure => "structure",
        _ => return,
    };
    if o.known_stateless() {
        return;
    }
    let state = if o.state_known {
        "its state must be moved"
    } else {
        "whether it has state is unknown (the plan carries no state information); any state it has must be moved"
    };
    notes.note(
        LayerKind::Topology,
        Verdict::CompatibleAfterRename,
        format!(
            "mapped by {by} to {}, whose operator id differs ({} -> {}); {state} to the new id (State Processor API changeOperatorIdentifier)",
            n.label(),
            o.r.id,
            n.r.id
        ),
    );
}

/// Business logic: a renamed operator, which is a conflict when only the auto-generated id
/// paired two different stateful functions.
pub(super) fn check_function(o: &Op, n: &Op, how: MatchedBy, notes: &mut RowNotes<'_>) {
    if o.r.name == n.r.name {
        return;
    }
    let stateful = !o.states.is_empty() || !n.states.is_empty();
    let unknown = !o.state_known || !n.state_known;
    if how == MatchedBy::AutoId && !stateful && unknown {
        notes.note(
            LayerKind::BusinessLogic,
            Verdict::Unknown,
            format!(
                "auto-generated ids pair it with '{}', a different function at the same place in the topology; whether either has state is unknown (no state information): if so, it would be restored into the wrong operator",
                n.r.name
            ),
        );
    } else if how == MatchedBy::AutoId && stateful {
        notes.note(
            LayerKind::BusinessLogic,
            Verdict::Incompatible,
            format!(
                "auto-generated ids pair it with '{}', a different function at the same place in the topology: its state would be restored into the wrong operator; set uids",
                n.r.name
            ),
        );
    } else {
        notes.note(
            LayerKind::BusinessLogic,
            Verdict::CompatibleAsIs,
            format!("renamed to '{}'", n.r.name),
        );
    }
}

/// Business logic: keyed state whose hash-partitioned input is no longer hash-partitioned
/// would be read by subtasks that do not own the keys (`UNKNOWN` when whether it has keyed
/// state is unknown).
pub(super) fn check_key_partitioning(o: &Op, n: &Op, notes: &mut RowNotes<'_>) {
    if !(o.may_have_keyed_state() && n.head && o.head) {
        return;
    }
    let keyed = |s: &str| ShipStrategy::parse(s).is_keyed();
    let was_keyed =
        !o.inputs.is_empty() && o.inputs.iter().all(|s| s.as_deref().is_some_and(keyed));
    let lost = n
        .inputs
        .iter()
        .filter_map(|s| s.as_deref())
        .find(|s| !keyed(s));
    if let (true, Some(s)) = (was_keyed, lost) {
        let (verdict, state) = if o.state_known {
            (Verdict::Incompatible, "keyed state")
        } else {
            (
                Verdict::Unknown,
                "whether it has keyed state is unknown (no state information); if it has, that state",
            )
        };
        notes.note(
            LayerKind::BusinessLogic,
            verdict,
            format!(
                "its input was hash-partitioned and is now {s}: {state} would be read by subtasks that do not own the keys"
            ),
        );
    }
}

/// Key groups: keyed state is split into key groups fixed by the max parallelism, which must
/// stay, and the new parallelism must not exceed it (`UNKNOWN` instead of `INCOMPATIBLE` when
/// the operator's state is unknown). O(1).
pub(super) fn check_key_groups(o: &Op, n: &Op, notes: &mut RowNotes<'_>) {
    if o.known_stateless() {
        return;
    }
    let (broken, maybe) = if o.state_known {
        (Verdict::Incompatible, "")
    } else {
        (
            Verdict::Unknown,
            "if it has state (unknown: no state information): ",
        )
    };
    let old_max = o
        .max_parallelism
        .unwrap_or_else(|| default_max_parallelism(o.parallelism));
    let new_max = n.max_parallelism.unwrap_or(old_max);
    if o.may_have_keyed_state() && new_max != old_max {
        notes.note(
            LayerKind::StateSchema,
            broken,
            format!(
                "{maybe}max parallelism changes from {old_max} to {new_max}: keyed state is split into key groups fixed by the max parallelism"
            ),
        );
    }
    if u64::from(n.parallelism) > new_max {
        notes.note(
            LayerKind::StateSchema,
            broken,
            format!(
                "{maybe}parallelism {} is above the max parallelism {new_max} the state was written with",
                n.parallelism
            ),
        );
    } else if o.parallelism != n.parallelism {
        notes.note(
            LayerKind::StateSchema,
            Verdict::CompatibleAsIs,
            format!(
                "parallelism {} -> {}: state is redistributed by key group on restore",
                o.parallelism, n.parallelism
            ),
        );
    }
}
