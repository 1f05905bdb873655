//! Shuffle descriptors of a plan, measured as `conflux inspect` does: serialised once per
//! group shape of an edge, with the offload decision of the configured rule.

use std::net::{Ipv4Addr, SocketAddr};

use conflux_deploy::{
    shuffle_descriptor_for, wire, ConsumptionPolicy, DeployError, ExecutionAttemptId,
    ExecutionState, OffloadRule, ProducerView, ShuffleDescriptorGroup, TaskManagerId,
    TaskManagerLocation,
};
use conflux_graph::{EdgeConnection, ExecutionGraph};
use serde::Serialize;

use crate::error::PlanError;

/// Shuffle descriptors over the plan, as `conflux inspect` measures them: every producer
/// deployed and finished, 10 slots per TaskManager.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct DescriptorStats {
    /// The offload rule, e.g. `descriptors x consumers >= 4194304`.
    pub offload_rule: String,
    /// ConsumedPartitionGroups.
    pub groups: u64,
    /// Shuffle descriptors over all groups.
    pub descriptors: u64,
    /// MessagePack bytes before compression.
    pub raw_bytes: u64,
    /// Framed, compressed bytes.
    pub compressed_bytes: u64,
    /// Groups sent to the blob server.
    pub offloaded_groups: u64,
    /// Their bytes.
    pub offloaded_bytes: u64,
    /// Bytes kept inside the descriptors.
    pub inline_bytes: u64,
}

impl DescriptorStats {
    /// Adds the counts and bytes of `other` (the offload rule stays).
    pub(crate) fn add(&mut self, other: &DescriptorStats) {
        self.groups += other.groups;
        self.descriptors += other.descriptors;
        self.raw_bytes += other.raw_bytes;
        self.compressed_bytes += other.compressed_bytes;
        self.offloaded_groups += other.offloaded_groups;
        self.offloaded_bytes += other.offloaded_bytes;
        self.inline_bytes += other.inline_bytes;
    }
}

/// Every producer deployed and finished on TaskManager `vertex / 10`: the largest descriptors.
fn producer_view(vertex: u32) -> ProducerView {
    let tm = vertex / 10;
    ProducerView {
        attempt: ExecutionAttemptId { vertex, attempt: 0 },
        state: ExecutionState::Finished,
        location: Some(TaskManagerLocation {
            id: TaskManagerId(tm),
            data_address: SocketAddr::from((Ipv4Addr::from(0x0a00_0000 | tm), 6121)),
        }),
    }
}

/// `descriptors x consumers >= 4194304`, `compressed bytes >= 1048576` or `never`.
pub fn describe_offload_rule(rule: OffloadRule) -> String {
    match rule {
        OffloadRule::DescriptorCount { threshold } => {
            format!("descriptors x consumers >= {threshold}")
        }
        OffloadRule::CompressedBytes { min_size } => format!("compressed bytes >= {min_size}"),
        OffloadRule::Never => "never".to_owned(),
    }
}

/// Descriptors of one edge: the groups of an edge come in at most two shapes (partitions,
/// consumers); one group of each shape is serialised and the result multiplied. O(groups) to
/// count the shapes, plus the serialisation of at most two groups.
pub(super) fn edge_descriptors(
    graph: &ExecutionGraph,
    c: &EdgeConnection,
    rule: OffloadRule,
    policy: &ConsumptionPolicy,
) -> Result<DescriptorStats, PlanError> {
    let producer_start = graph.execution_vertices_of(c.producer).start;
    // (partitions, consumers, count, first local group)
    let mut shapes: Vec<(u32, u32, u64, u32)> = Vec::with_capacity(2);
    for k in 0..c.num_groups {
        // Ranges of u32 indices: their lengths fit in u32.
        let range_len = |r: std::ops::Range<u32>| r.end - r.start;
        let p = range_len(c.partitions_of_local_group(k));
        let n = range_len(c.consumers_of_local_group(k));
        match shapes.iter_mut().find(|s| s.0 == p && s.1 == n) {
            Some(s) => s.2 += 1,
            None => shapes.push((p, n, 1, k)),
        }
    }
    let mut out = DescriptorStats {
        offload_rule: describe_offload_rule(rule),
        ..DescriptorStats::default()
    };
    for (partitions, consumers, count, k) in shapes {
        let mut descriptors = Vec::with_capacity(partitions as usize);
        for p in c.partitions_of_local_group(k) {
            let producer = producer_view(producer_start + p);
            let d = shuffle_descriptor_for(
                (c.result.0, p),
                c.result_partition_type,
                &producer,
                true,
                c.result.0,
                policy,
            )
            .map_err(|state| PlanError::Descriptors {
                edge: edge_name(graph, c),
                source: DeployError::ProducerNotReady {
                    partition: format!("{}#{p}", graph.job_graph().vertex_id(c.producer)),
                    state,
                },
            })?;
            descriptors.push(d);
        }
        let group = ShuffleDescriptorGroup {
            descriptors,
            indices: None,
        };
        let (bytes, size) =
            wire::encode_descriptor_group(&group).map_err(|e| PlanError::Descriptors {
                edge: edge_name(graph, c),
                source: DeployError::Wire(e),
            })?;
        let offloaded = rule.should_offload(partitions as usize, consumers, bytes.len());
        let len = bytes.len() as u64;
        out.groups += count;
        out.descriptors += count * u64::from(partitions);
        out.raw_bytes += count * size.raw as u64;
        out.compressed_bytes += count * len;
        if offloaded {
            out.offloaded_groups += count;
            out.offloaded_bytes += count * len;
        } else {
            out.inline_bytes += count * len;
        }
    }
    Ok(out)
}

fn edge_name(graph: &ExecutionGraph, c: &EdgeConnection) -> String {
    let job = graph.job_graph();
    format!(
        "{} ({} -> {})",
        c.edge.0,
        job.vertex_id(c.producer),
        job.vertex_id(c.consumer)
    )
}
