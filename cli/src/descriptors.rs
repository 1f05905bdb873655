//! The descriptor part of `conflux inspect`: per ConsumedPartitionGroup, how many shuffle
//! descriptors it holds, their raw and compressed bytes, and whether the offload rule sends them
//! to the blob server.
//!
//! Sizes are those of a deployment where every producer is deployed and finished (so every
//! descriptor is known), on TaskManagers of 10 slots: the largest the descriptors get.

use std::sync::Arc;

use anyhow::Context;
use conflux_blob::{JobId, MemoryBlobStore};
use conflux_deploy::{
    AllProducersFinished, DeploymentConfig, OffloadRule, TaskDeploymentDescriptorFactory,
};
use conflux_graph::{ConsumedPartitionGroupId, ExecutionGraph};
use serde_json::{json, Value};

/// Groups listed one by one per edge; the rest are only counted (a pointwise edge of 100,000
/// subtasks has 100,000 groups).
const LISTED_GROUPS_PER_EDGE: u32 = 16;

/// The `descriptors` section of the report. O(N) descriptors computed and serialised once per
/// group, as a deployment would.
pub(crate) fn report(graph: &ExecutionGraph, rule: OffloadRule) -> anyhow::Result<Value> {
    let mut config = DeploymentConfig::for_job_type(graph.job_graph().job_type());
    config.offload_rule = rule;
    let store = Arc::new(MemoryBlobStore::new());
    // Only groups are sized: no task information per vertex (O(V) bytes) is serialised.
    let mut factory = TaskDeploymentDescriptorFactory::for_groups(JobId([0; 16]), config, store);
    let job = graph.job_graph();
    let mut edges = Vec::new();
    for c in graph.connections() {
        let edge = job.edge(c.edge);
        let mut listed = Vec::new();
        let (mut raw, mut compressed, mut offloaded, mut offloaded_bytes, mut descriptors) =
            (0u64, 0u64, 0u64, 0u64, 0u64);
        for k in 0..c.num_groups {
            let group = ConsumedPartitionGroupId(c.first_group + k);
            let before = factory.stats();
            factory
                .prepare_group(
                    graph,
                    group,
                    &AllProducersFinished {
                        slots_per_task_manager: 10,
                    },
                )
                .with_context(|| format!("serialising group {}", group.0))?;
            let after = factory.stats();
            let serialized = factory.cached(group).and_then(|s| s.first().cloned());
            let group_raw = after.raw_bytes - before.raw_bytes;
            let group_bytes = serialized.as_ref().map_or(0, |s| s.len() as u64);
            let is_offloaded = serialized.as_ref().is_some_and(|s| s.is_offloaded());
            let count = c.partitions_of_local_group(k).len() as u64;
            let consumers = c.consumers_of_local_group(k).len();
            raw += group_raw;
            compressed += group_bytes;
            descriptors += count;
            if is_offloaded {
                offloaded += 1;
                offloaded_bytes += group_bytes;
            }
            if k < LISTED_GROUPS_PER_EDGE {
                listed.push(json!({
                    "group": group.0,
                    "descriptors": count,
                    "consumers": consumers,
                    "raw_bytes": group_raw,
                    "compressed_bytes": group_bytes,
                    "offloaded": is_offloaded,
                }));
            }
            // Nothing is kept: the report needs sizes, not the bytes.
            factory.on_group_released(group);
        }
        edges.push(json!({
            "source": job.vertex_id(edge.source),
            "target": job.vertex_id(edge.target),
            "groups": c.num_groups,
            "descriptors": descriptors,
            "raw_bytes": raw,
            "compressed_bytes": compressed,
            "offloaded_groups": offloaded,
            "offloaded_bytes": offloaded_bytes,
            "inline_bytes": compressed - offloaded_bytes,
            "listed_groups": listed,
        }));
    }
    let sum = |key: &str| {
        edges
            .iter()
            .map(|e| e[key].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    Ok(json!({
        "offload_rule": describe(rule),
        "assumption": "every producer deployed and finished, 10 slots per TaskManager",
        "groups": sum("groups"),
        "descriptors": sum("descriptors"),
        "raw_bytes": sum("raw_bytes"),
        "compressed_bytes": sum("compressed_bytes"),
        "offloaded_groups": sum("offloaded_groups"),
        "offloaded_bytes": sum("offloaded_bytes"),
        "inline_bytes": sum("inline_bytes"),
        "edges": edges,
    }))
}

/// `descriptors x consumers >= 4194304`, `compressed bytes >= 1048576` or `never`.
pub(crate) fn describe(rule: OffloadRule) -> String {
    match rule {
        OffloadRule::DescriptorCount { threshold } => {
            format!("descriptors x consumers >= {threshold}")
        }
        OffloadRule::CompressedBytes { min_size } => format!("compressed bytes >= {min_size}"),
        OffloadRule::Never => "never".to_owned(),
    }
}
