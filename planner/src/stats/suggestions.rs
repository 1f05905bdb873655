//! Suggestions for a plan: what could be cheaper or safer, with its effect in numbers and the
//! edit that applies it.

use conflux_graph::{
    DistributionPattern, JobEdge, JobGraph, JobType, JobVertexIndex, ShipStrategy,
};

use super::buffers::{is_pipelined, BufferModel};
use super::channels::channels;
use super::report::{EdgeStats, Effect, Suggestion};
use crate::edit::{EdgeRef, Edit};
use conflux_common::format::{group_digits as thousands, mib};

/// Suggestions for a plan whose edge statistics are `edges` (in the plan's edge order): per
/// edge, then per operator. O(V + E + operators).
pub(super) fn suggestions(
    job: &JobGraph,
    edges: &[EdgeStats],
    model: &BufferModel,
) -> Vec<Suggestion> {
    let mut out = Vec::new();
    for e in edges {
        let edge = &job.edges()[e.index];
        out.extend(rebalance_to_rescale(job, edge, e, model));
        out.extend(gate_above_required(edge, e, model));
    }
    for j in job.vertex_indices() {
        operator_suggestions(job, j, &mut out);
    }
    out
}

/// A REBALANCE edge whose data set is its own can become RESCALE (pointwise) without touching
/// key grouping; it pays off when both sides have more than one subtask.
fn rebalance_to_rescale(
    job: &JobGraph,
    edge: &JobEdge,
    e: &EdgeStats,
    model: &BufferModel,
) -> Option<Suggestion> {
    let strategy = edge.ship_strategy.as_deref().map(ShipStrategy::parse);
    let (u, d) = (e.producer_parallelism, e.consumer_parallelism);
    let shared = job.data_set(edge.data_set).consumers.len() > 1;
    if strategy != Some(ShipStrategy::Rebalance) || u <= 1 || d <= 1 || shared {
        return None;
    }
    let after_type = edge.result_partition_type;
    let p = DistributionPattern::Pointwise;
    let after_in = model.input_buffers(p, after_type, u, d);
    let after_out = model.output_buffers(p, after_type, u, d);
    let before = e.buffer_bytes;
    let after = (after_in.target + after_out.target) * model.segment_size;
    let (cb, ca) = (e.channels, channels(p, u, d));
    let saved = before.saturating_sub(after);
    Some(Suggestion {
        kind: "rebalance_to_rescale".to_owned(),
        message: format!(
            "edge {} ({} -> {}): this REBALANCE edge {} -> {} could be RESCALE: {} -> {} channels, saves {} of network buffers",
            e.index,
            e.source,
            e.target,
            thousands(u64::from(u)),
            thousands(u64::from(d)),
            thousands(cb),
            thousands(ca),
            mib(saved)
        ),
        effect: Some(Effect {
            channels_before: cb,
            channels_after: ca,
            buffer_bytes_before: before,
            buffer_bytes_after: after,
            buffer_bytes_saved: saved,
        }),
        edit: Some(Edit::SetPartitioner {
            edge: EdgeRef::Index(e.index),
            partitioner: "RESCALE".to_owned(),
        }),
    })
}

/// A batch all-to-all gate whose target is above what a batch gate requires: the rest is
/// optional (`read-buffer.required-per-gate.max`).
fn gate_above_required(edge: &JobEdge, e: &EdgeStats, model: &BufferModel) -> Option<Suggestion> {
    if is_pipelined(edge.result_partition_type)
        || edge.distribution_pattern != DistributionPattern::AllToAll
    {
        return None;
    }
    let gate_target = model.pool_target(u64::from(e.producer_parallelism));
    if gate_target <= model.batch_required_buffers_per_gate {
        return None;
    }
    Some(Suggestion {
        kind: "gate_above_required".to_owned(),
        message: format!(
            "edge {} ({} -> {}): each input gate targets {} buffers, above the {} a batch gate requires; the rest is optional and may slow the consumers down when network memory is short",
            e.index,
            e.source,
            e.target,
            thousands(gate_target),
            model.batch_required_buffers_per_gate
        ),
        effect: None,
        edit: None,
    })
}

/// Per operator of `v`: streaming state without TTL, and state without uid.
fn operator_suggestions(job: &JobGraph, j: JobVertexIndex, out: &mut Vec<Suggestion>) {
    let (job_type, id) = (job.job_type(), job.vertex_id(j));
    for o in job.operators(j) {
        let label = o.uid.as_deref().unwrap_or(&o.name);
        if job_type == JobType::Streaming {
            for s in o.state.iter().filter(|s| s.ttl_ms.is_none()) {
                out.push(Suggestion {
                    kind: "state_without_ttl".to_owned(),
                    message: format!(
                        "vertex '{id}', operator '{label}': state '{}' has no TTL and grows with its keys in a streaming job; a TTL (set_state_ttl) bounds it",
                        s.name
                    ),
                    effect: None,
                    edit: None,
                });
            }
        }
        if o.uid.is_none() && !o.state.is_empty() {
            out.push(Suggestion {
                kind: "stateful_operator_without_uid".to_owned(),
                message: format!(
                    "vertex '{id}', operator '{}': has state but no uid; its state maps to the next version only while the topology keeps its shape",
                    o.name
                ),
                effect: None,
                edit: None,
            });
        }
    }
}
