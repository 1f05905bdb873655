//! Shrinking a failing case greedily: fewer edges, fewer vertices, smaller parallelism, under
//! the same simulation seed, while the same invariant still breaks.

use super::*;

pub(super) fn without_edge(spec: &GraphSpec, k: usize) -> GraphSpec {
    let mut out = spec.clone();
    out.edges.remove(k);
    for e in &mut out.edges {
        e.shares = match e.shares {
            Some(s) if s == k => None,
            Some(s) if s > k => Some(s - 1),
            s => s,
        };
    }
    // An edge that shared the removed one becomes a root; later sharers of the removed edge
    // now share nothing (they keep its pattern and type).
    out
}

pub(super) fn without_vertex(spec: &GraphSpec, v: usize) -> GraphSpec {
    let mut out = spec.clone();
    while let Some(k) = out
        .edges
        .iter()
        .position(|e| e.source == v || e.target == v)
    {
        out = without_edge(&out, k);
    }
    out.parallelism.remove(v);
    out.slot_sharing.remove(v);
    let renumber = |x: usize| if x > v { x - 1 } else { x };
    for e in &mut out.edges {
        e.source = renumber(e.source);
        e.target = renumber(e.target);
    }
    out
}

/// Smaller variants of a case, most aggressive first.
pub(super) fn smaller(case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    let with_spec = |spec: GraphSpec| Case {
        spec,
        ..case.clone()
    };
    let spec = &case.spec;
    if spec.parallelism.len() > 1 {
        for v in 0..spec.parallelism.len() {
            out.push(with_spec(without_vertex(spec, v)));
        }
    }
    for k in 0..spec.edges.len() {
        out.push(with_spec(without_edge(spec, k)));
    }
    for v in 0..spec.parallelism.len() {
        if spec.parallelism[v] > 1 {
            let mut s = spec.clone();
            s.parallelism[v] -= 1;
            out.push(with_spec(s));
        }
    }
    if spec.slot_sharing.iter().any(Option::is_some) {
        let mut s = spec.clone();
        s.slot_sharing = vec![None; s.parallelism.len()];
        out.push(with_spec(s));
    }
    let faults = case.config.faults;
    let mut with_faults = |f: Faults| {
        let mut c = case.clone();
        c.config.faults = f;
        out.push(c);
    };
    if faults.task_manager_losses > 0 {
        with_faults(Faults {
            task_manager_losses: faults.task_manager_losses - 1,
            ..faults
        });
    }
    if faults.blob_server_restarts > 0 {
        with_faults(Faults {
            blob_server_restarts: 0,
            ..faults
        });
    }
    if faults.task_failure > 0.0 {
        with_faults(Faults {
            task_failure: 0.0,
            ..faults
        });
    }
    if faults.partition_not_found > 0.0 {
        with_faults(Faults {
            partition_not_found: 0.0,
            ..faults
        });
    }
    out.retain(|c| c.spec.build().is_ok());
    out
}

/// Greedy shrinking: keep any smaller variant that still breaks the same invariant.
pub(super) fn shrink(case: &Case, violation: &Violation) -> (Case, Violation) {
    let mut best = (case.clone(), violation.clone());
    let mut budget = 3_000;
    'outer: while budget > 0 {
        for candidate in smaller(&best.0) {
            budget -= 1;
            if let Err(v) = run_case(&candidate) {
                if v.invariant == violation.invariant {
                    best = (candidate, v);
                    continue 'outer;
                }
            }
            if budget == 0 {
                break;
            }
        }
        break;
    }
    best
}
