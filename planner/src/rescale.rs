//! Rescaling a vertex from its state: which key groups each subtask owns before and after a
//! parallelism change, which old subtasks' state each new subtask reads, and how much state
//! moves.
//!
//! Keyed state is split into `max_parallelism` key groups; a subtask owns a contiguous range of
//! them, computed as Flink's `KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex`
//! does, and on restore a new subtask reads the state of every old subtask whose range overlaps
//! its own (Flink's `StateAssignmentOperation`). The max parallelism is fixed by the state: the
//! explicit one, or Flink's default for the parallelism the state was written at, which a
//! restored job keeps.

use conflux_graph::default_max_parallelism;
use conflux_graph::json::JobGraphJson;
use serde::Serialize;

use crate::edit::resolve_vertex;
use crate::error::PlanError;

pub use conflux_common::key_groups::{
    key_group_range, operator_index_for_key_group, KeyGroupRange,
};

/// A range of key groups in JSON: `{"start": 0, "end": 31, "key_groups": 32}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct KeyGroups {
    /// The first key group.
    pub start: u64,
    /// The last key group (included).
    pub end: u64,
    /// How many: `end - start + 1`.
    pub key_groups: u64,
}

fn key_groups_json<S: serde::Serializer>(k: &KeyGroupRange, s: S) -> Result<S::Ok, S::Error> {
    KeyGroups {
        start: k.start,
        end: k.end,
        key_groups: k.len(),
    }
    .serialize(s)
}

/// Whether a vertex has keyed state, as far as the plan says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeyedState {
    /// An operator of the vertex has keyed state (a state with `key_type`).
    Yes,
    /// The vertex lists its operators and none has keyed state: nothing is redistributed by
    /// key group (the ranges still show how Flink would assign them).
    No,
    /// The vertex has no operator list (e.g. a Flink JSON plan): its state is unknown.
    Unknown,
}

/// The key groups of one old subtask.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct OldSubtask {
    /// Its index.
    pub subtask: u64,
    /// Its key groups.
    #[serde(serialize_with = "key_groups_json")]
    #[schema(value_type = KeyGroups)]
    pub key_groups: KeyGroupRange,
}

/// Part of an old subtask's state a new subtask reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct StateRead {
    /// The old subtask.
    pub old_subtask: u64,
    /// The key groups read from it: its range intersected with the new subtask's.
    #[serde(serialize_with = "key_groups_json")]
    #[schema(value_type = KeyGroups)]
    pub key_groups: KeyGroupRange,
}

/// The key groups of one new subtask and where their state comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct NewSubtask {
    /// Its index.
    pub subtask: u64,
    /// Its key groups.
    #[serde(serialize_with = "key_groups_json")]
    #[schema(value_type = KeyGroups)]
    pub key_groups: KeyGroupRange,
    /// The old subtasks whose ranges overlap its own, in key group order.
    pub reads: Vec<StateRead>,
}

/// What rescaling one vertex does to its keyed state.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Rescale {
    /// The vertex id.
    pub vertex: String,
    /// Its name, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Whether it has keyed state, as far as the plan says.
    pub keyed_state: KeyedState,
    /// The number of key groups: the max parallelism the state was written with.
    pub max_parallelism: u64,
    /// Whether that max parallelism is explicit in the plan (else Flink's default for the old
    /// parallelism, which a restored job keeps).
    pub max_parallelism_configured: bool,
    /// The parallelism now.
    pub old_parallelism: u32,
    /// The parallelism asked for.
    pub new_parallelism: u32,
    /// Per old subtask, its key groups.
    pub old_subtasks: Vec<OldSubtask>,
    /// Per new subtask, its key groups and what it reads.
    pub new_subtasks: Vec<NewSubtask>,
    /// Key groups whose subtask index changes (read by new subtask `j` from an old subtask
    /// other than `j`).
    pub moved_key_groups: u64,
    /// `moved_key_groups / max_parallelism`: the share of the state that moves, with state
    /// spread evenly over key groups.
    pub moved_share: f64,
}

/// Computes the key groups of a vertex before and after setting its parallelism to
/// `parallelism`; the vertex is named by id or unique name. `max_parallelism`, when given, is
/// the max parallelism the rescaled job would run with. O(old + new parallelism).
///
/// # Errors
/// [`PlanError::UnknownVertex`] / [`PlanError::AmbiguousVertex`] for the vertex;
/// [`PlanError::Refused`] with the reason when `parallelism` is 0 or above the max
/// parallelism the state was written with, or when `max_parallelism` differs from it (the key
/// groups are fixed by it: Flink refuses the restore).
pub fn rescale(
    plan: &JobGraphJson,
    vertex: &str,
    parallelism: u32,
    max_parallelism: Option<u64>,
) -> Result<Rescale, PlanError> {
    let v = &plan.vertices[resolve_vertex(plan, vertex)?];
    let refuse = |reason: String| PlanError::Refused {
        edit: format!("rescaling vertex '{}' to {parallelism}", v.id),
        reason,
    };
    let Ok(current) = u32::try_from(v.parallelism) else {
        return Err(refuse(
            "its parallelism is undecided (-1): no state was written at a known parallelism"
                .to_owned(),
        ));
    };
    let (max, configured) = match v.max_parallelism {
        Some(m) => (u64::from(m), true),
        None => (default_max_parallelism(current), false),
    };
    let written = if configured {
        format!("its max parallelism {max}")
    } else {
        format!(
            "the max parallelism {max} its state was written with (Flink's default for parallelism {}, which a restored job keeps)",
            v.parallelism
        )
    };
    if let Some(m) = max_parallelism.filter(|&m| m != max) {
        return Err(refuse(format!(
            "max parallelism {m} differs from {written}: keyed state is split into key groups fixed by the max parallelism, so Flink refuses to restore it"
        )));
    }
    if parallelism == 0 {
        return Err(refuse("parallelism must be at least 1".to_owned()));
    }
    if u64::from(parallelism) > max {
        return Err(refuse(format!(
            "parallelism {parallelism} is above {written}: a subtask must own at least one key group"
        )));
    }
    let (old_p, new_p) = (u64::from(current), u64::from(parallelism));
    let old_subtasks: Vec<OldSubtask> = (0..old_p)
        .map(|i| OldSubtask {
            subtask: i,
            key_groups: key_group_range(max, old_p, i),
        })
        .collect();
    let mut moved = 0u64;
    let new_subtasks: Vec<NewSubtask> = (0..new_p)
        .map(|j| {
            let range = key_group_range(max, new_p, j);
            let first = operator_index_for_key_group(max, old_p, range.start);
            let last = operator_index_for_key_group(max, old_p, range.end);
            let reads: Vec<StateRead> = (first..=last)
                .filter_map(|i| {
                    let old = old_subtasks.get(usize::try_from(i).ok()?)?;
                    let overlap = old.key_groups.intersection(range)?;
                    Some(StateRead {
                        old_subtask: i,
                        key_groups: overlap,
                    })
                })
                .collect();
            moved += reads
                .iter()
                .filter(|r| r.old_subtask != j)
                .map(|r| r.key_groups.len())
                .sum::<u64>();
            NewSubtask {
                subtask: j,
                key_groups: range,
                reads,
            }
        })
        .collect();
    let keyed_state = if v.operators.is_empty() {
        KeyedState::Unknown
    } else if v
        .operators
        .iter()
        .any(|o| o.state.iter().any(|s| s.key_type.is_some()))
    {
        KeyedState::Yes
    } else {
        KeyedState::No
    };
    Ok(Rescale {
        vertex: v.id.clone(),
        name: v.name.clone(),
        keyed_state,
        max_parallelism: max,
        max_parallelism_configured: configured,
        old_parallelism: current,
        new_parallelism: parallelism,
        old_subtasks,
        new_subtasks,
        moved_key_groups: moved,
        moved_share: moved as f64 / max as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Flink's `KeyGroupRangeAssignmentTest`-style values: ranges tile `0..max` in order.
    #[test]
    fn ranges_are_flinks() {
        let r = |max, p, i| {
            let k = key_group_range(max, p, i);
            (k.start, k.end)
        };
        assert_eq!(r(4096, 1, 0), (0, 4095));
        assert_eq!(r(4096, 2, 0), (0, 2047));
        assert_eq!(r(4096, 2, 1), (2048, 4095));
        assert_eq!(r(128, 3, 0), (0, 42));
        assert_eq!(r(128, 3, 1), (43, 85));
        assert_eq!(r(128, 3, 2), (86, 127));
        assert_eq!(r(10, 10, 7), (7, 7));
        // Flink 1.x printed for parallelism 5 at its default max parallelism 128:
        // subtask 3 owns 77-102, subtask 4 owns 103-127.
        assert_eq!(r(128, 5, 3), (77, 102));
        assert_eq!(r(128, 5, 4), (103, 127));
        for (max, p) in [
            (128u64, 3u64),
            (128, 7),
            (4096, 1000),
            (32_768, 10_000),
            (5, 5),
        ] {
            let mut next = 0;
            for i in 0..p {
                let k = key_group_range(max, p, i);
                assert_eq!(k.start, next, "{max} {p} {i}");
                for g in [k.start, k.end] {
                    assert_eq!(operator_index_for_key_group(max, p, g), i);
                }
                next = k.end + 1;
            }
            assert_eq!(next, max);
        }
    }
}
