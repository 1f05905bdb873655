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

/// One edge of the `descriptors` section, serialised in place of its placeholder while the report
/// is written ([`DescriptorReport::rows`]). Numbers rather than a `serde_json::Value`, which took
/// about 1.5 KB per edge (2.3 GB for a job of 1.5 million edges); its listed groups are a range
/// of [`DescriptorReport::listed`], not a vector of their own.
pub(crate) struct EdgeDescriptors<'a> {
    compressed_bytes: u64,
    descriptors: u64,
    groups: u32,
    offloaded_bytes: u64,
    offloaded_groups: u64,
    raw_bytes: u64,
    source: &'a str,
    target: &'a str,
    listed: std::ops::Range<usize>,
}

/// One row of `descriptors.edges`. Fields in alphabetical order, as the `Value` maps of the rest
/// of the report.
#[derive(serde::Serialize)]
pub(crate) struct EdgeRow<'a> {
    pub(crate) compressed_bytes: u64,
    pub(crate) descriptors: u64,
    pub(crate) groups: u32,
    pub(crate) inline_bytes: u64,
    pub(crate) listed_groups: &'a [ListedGroup],
    pub(crate) offloaded_bytes: u64,
    pub(crate) offloaded_groups: u64,
    pub(crate) raw_bytes: u64,
    pub(crate) source: &'a str,
    pub(crate) target: &'a str,
}

/// One of the first [`LISTED_GROUPS_PER_EDGE`] groups of an edge.
#[derive(serde::Serialize)]
pub(crate) struct ListedGroup {
    pub(crate) compressed_bytes: u64,
    pub(crate) consumers: usize,
    pub(crate) descriptors: u64,
    pub(crate) group: u32,
    pub(crate) offloaded: bool,
    pub(crate) raw_bytes: u64,
}

/// The `descriptors` section: its totals, with an empty `edges` placeholder, and the edges.
pub(crate) struct DescriptorReport<'a> {
    pub(crate) summary: Value,
    edges: Vec<EdgeDescriptors<'a>>,
    listed: Vec<ListedGroup>,
}

impl DescriptorReport<'_> {
    /// The rows of `descriptors.edges`, made one at a time.
    pub(crate) fn rows(&self) -> impl Iterator<Item = EdgeRow<'_>> + '_ {
        self.edges.iter().map(|e| EdgeRow {
            compressed_bytes: e.compressed_bytes,
            descriptors: e.descriptors,
            groups: e.groups,
            inline_bytes: e.compressed_bytes - e.offloaded_bytes,
            listed_groups: &self.listed[e.listed.clone()],
            offloaded_bytes: e.offloaded_bytes,
            offloaded_groups: e.offloaded_groups,
            raw_bytes: e.raw_bytes,
            source: e.source,
            target: e.target,
        })
    }
}

/// The `descriptors` section of the report. O(N) descriptors computed and serialised once per
/// group, as a deployment would.
pub(crate) fn report(
    graph: &ExecutionGraph,
    rule: OffloadRule,
) -> anyhow::Result<DescriptorReport<'_>> {
    let mut config = DeploymentConfig::for_job_type(graph.job_graph().job_type());
    config.offload_rule = rule;
    let store = Arc::new(MemoryBlobStore::new());
    // Only groups are sized: no task information per vertex (O(V) bytes) is serialised.
    let mut factory = TaskDeploymentDescriptorFactory::for_groups(JobId([0; 16]), config, store);
    let job = graph.job_graph();
    let mut edges = Vec::with_capacity(graph.connections().len());
    let mut listed = Vec::new();
    for c in graph.connections() {
        let edge = job.edge(c.edge);
        let first_listed = listed.len();
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
                listed.push(ListedGroup {
                    group: group.0,
                    descriptors: count,
                    consumers,
                    raw_bytes: group_raw,
                    compressed_bytes: group_bytes,
                    offloaded: is_offloaded,
                });
            }
            // Nothing is kept: the report needs sizes, not the bytes.
            factory.on_group_released(group);
        }
        edges.push(EdgeDescriptors {
            source: job.vertex_id(edge.source),
            target: job.vertex_id(edge.target),
            groups: c.num_groups,
            descriptors,
            raw_bytes: raw,
            compressed_bytes: compressed,
            offloaded_groups: offloaded,
            offloaded_bytes,
            listed: first_listed..listed.len(),
        });
    }
    let sum = |f: fn(&EdgeDescriptors<'_>) -> u64| edges.iter().map(f).sum::<u64>();
    let summary = json!({
        "offload_rule": rule.to_string(),
        "assumption": "every producer deployed and finished, 10 slots per TaskManager",
        "groups": sum(|e| u64::from(e.groups)),
        "descriptors": sum(|e| e.descriptors),
        "raw_bytes": sum(|e| e.raw_bytes),
        "compressed_bytes": sum(|e| e.compressed_bytes),
        "offloaded_groups": sum(|e| e.offloaded_groups),
        "offloaded_bytes": sum(|e| e.offloaded_bytes),
        "inline_bytes": sum(|e| e.compressed_bytes - e.offloaded_bytes),
        "edges": [],
    });
    Ok(DescriptorReport {
        summary,
        edges,
        listed,
    })
}
