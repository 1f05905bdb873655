//! State-compatibility pre-analysis of an old and a new plan: can the new plan restore from the
//! old plan's state (savepoint or retained checkpoint)?
//!
//! Three layers, after Meituan's:
//! 1. **Topology**: operators mapped old -> new by uid, then by a user rename map, then by
//!    Flink's auto-generated id (emulated after the shape of Flink's `StreamGraphHasherV2`) with
//!    the same name or, for vertices without an operator list, the vertex id (a Flink JobVertexID
//!    is its head operator's id), then by structure (same name), then by auto-generated id alone;
//!    unmatched stateful old operators fail the restore unless non-restored state is allowed.
//! 2. **Business logic**: a positional (auto-id) mapping that pairs different functions, a row
//!    state whose fields were reordered (e.g. two aggregates swapped), a keyed input that is no
//!    longer hash-partitioned.
//! 3. **State schema** per mapped operator: state names, kinds, key and value types, TTL, and
//!    the key groups (max parallelism).
//!
//! The verdict is the worst of all findings, in the order COMPATIBLE_AS_IS <
//! COMPATIBLE_AFTER_RENAME < COMPATIBLE_AFTER_MIGRATION < UNKNOWN < INCOMPATIBLE. A vertex
//! without an operator list (every vertex of a Flink JSON plan) says nothing about its state:
//! what depends on that state cannot be checked and is `UNKNOWN`, never assumed stateless.
//! O(V + E + operators x states) with hash maps.

mod checks;
mod mapping;
mod schema;
mod verdict;

use conflux_graph::json::JobGraphJson;

pub use verdict::{
    CompatOptions, CompatReport, Layer, MatchedBy, OperatorMapping, OperatorRef, Verdict,
};

use crate::compiled::CompiledPlan;
use crate::error::PlanError;
use mapping::{ops_of_compiled, ops_of_job, pair_operators, Op};
use verdict::{Findings, LayerKind, RowNotes};

/// Analyses whether `new` can restore from `old`'s state. Both are job graphs (or imported
/// Flink plans).
///
/// # Errors
/// [`PlanError::Graph`] when either plan is invalid.
pub fn analyze(
    old: &JobGraphJson,
    new: &JobGraphJson,
    options: &CompatOptions,
) -> Result<CompatReport, PlanError> {
    Ok(analyze_ops(&ops_of_job(old)?, &ops_of_job(new)?, options))
}

/// [`analyze`] for two Flink compiled plans: stateful ExecNodes are mapped by node id and type
/// (what Flink SQL derives their uids from), and their states compared by name and TTL.
pub fn analyze_compiled(
    old: &CompiledPlan,
    new: &CompiledPlan,
    options: &CompatOptions,
) -> CompatReport {
    analyze_ops(&ops_of_compiled(old), &ops_of_compiled(new), options)
}

/// Pairs the operators, checks each old operator against its partner, then lists the added
/// operators; the topology's first finding counts them.
fn analyze_ops(old: &[Op], new: &[Op], options: &CompatOptions) -> CompatReport {
    let (pairs, taken) = pair_operators(old, new, options);
    let mut findings = Findings::new();
    let mut operators = Vec::with_capacity(old.len() + new.len());
    for (o, pair) in old.iter().zip(&pairs) {
        let row = OperatorMapping {
            old: Some(o.r.clone()),
            new: None,
            matched_by: MatchedBy::Unmatched,
            verdict: Verdict::CompatibleAsIs,
            reasons: Vec::new(),
        };
        let mut notes = RowNotes::new(&mut findings, o.label(), row);
        match *pair {
            None => checks::check_removed(o, options, &mut notes),
            Some((j, how)) => check_pair(o, &new[j], how, &mut notes),
        }
        operators.push(notes.finish());
    }
    for (_, n) in new.iter().enumerate().filter(|(j, _)| !taken[*j]) {
        let reason = if !n.state_known {
            "added; any state it has starts empty".to_owned()
        } else if n.states.is_empty() {
            "added; it has no state".to_owned()
        } else {
            "added; its state starts empty".to_owned()
        };
        findings.inform(LayerKind::Topology, format!("{}: {reason}", n.label()));
        operators.push(OperatorMapping {
            old: None,
            new: Some(n.r.clone()),
            matched_by: MatchedBy::Unmatched,
            verdict: Verdict::CompatibleAsIs,
            reasons: vec![reason],
        });
    }
    findings.prepend(
        LayerKind::Topology,
        format!(
            "{} old and {} new operators, {} paired",
            old.len(),
            new.len(),
            pairs.iter().filter(|p| p.is_some()).count()
        ),
    );
    findings.into_report(operators)
}

/// Every check of an old operator against its partner `n`, in report order: ids, function,
/// key partitioning, key groups, states.
fn check_pair(o: &Op, n: &Op, how: MatchedBy, notes: &mut RowNotes<'_>) {
    let row = notes.row_mut();
    row.new = Some(n.r.clone());
    row.matched_by = how;
    checks::check_ids(o, n, how, notes);
    checks::check_function(o, n, how, notes);
    checks::check_key_partitioning(o, n, notes);
    checks::check_key_groups(o, n, notes);
    schema::check_states(o, n, notes);
}
