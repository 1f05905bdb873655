//! Which tasks restart after a failure: Flink's `RestartPipelinedRegionFailoverStrategy`
//! (FLINK-21331) and `RestartAllFailoverStrategy`.
//!
//! [`tasks_to_restart`] is a breadth-first search over regions from the failed one, expanding
//! each consumed and each consumer group once, so an all-to-all edge costs O(N) however many
//! regions it joins.

use std::collections::VecDeque;

use conflux_graph::{
    ConsumedPartitionGroupId, ConsumerVertexGroupId, ExecutionGraph, ExecutionVertexIndex,
    IndexVec, IntermediateResultPartitionId, PipelinedRegionIndex, PipelinedRegions,
    ResultPartitionType,
};

/// `jobmanager.execution.failover-strategy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailoverStrategy {
    /// Restart the pipelined regions a failure touches (Flink's default, `region`).
    #[default]
    Region,
    /// Restart every task (`full`).
    Full,
}

/// Whether a partition can still be read: Flink's availability check, minus the type rule
/// (applied by [`tasks_to_restart`]).
pub trait PartitionAvailability {
    /// Whether the current producer attempt's partition is still held (not lost, not released).
    fn is_tracked(&self, partition: IntermediateResultPartitionId) -> bool;
}

/// The vertices to restart when `failed` fails, before Flink's filter of CREATED vertices
/// (applied by the caller, who knows states). `failed_partition` is a partition the cause names
/// (partition not found): unavailable for this decision.
///
/// Region strategy: the failed region; every consumer region of a restarted region's partitions,
/// whatever the type; the producer region of every consumed partition that is not available,
/// where PIPELINED, PIPELINED_BOUNDED and HYBRID_SELECTIVE (not reconsumable) are never
/// available. Each group is expanded once. Time O(N + groups + partitions reached); regions
/// come out in index (topological) order, vertices ascending.
pub fn tasks_to_restart(
    graph: &ExecutionGraph,
    regions: &PipelinedRegions,
    strategy: FailoverStrategy,
    failed: ExecutionVertexIndex,
    failed_partition: Option<IntermediateResultPartitionId>,
    availability: &dyn PartitionAvailability,
) -> Vec<ExecutionVertexIndex> {
    if strategy == FailoverStrategy::Full {
        return (0..graph.num_execution_vertices())
            .map(ExecutionVertexIndex)
            .collect();
    }
    let available = |p: IntermediateResultPartitionId, t: ResultPartitionType| {
        Some(p) != failed_partition
            && (t.is_reconsumable() || t == ResultPartitionType::PipelinedApproximate)
            && availability.is_tracked(p)
    };
    let mut region_visited: IndexVec<PipelinedRegionIndex, bool> =
        IndexVec::from_elem(false, regions.len());
    let mut group_visited: IndexVec<ConsumedPartitionGroupId, bool> =
        IndexVec::from_elem(false, graph.num_groups() as usize);
    let mut consumer_group_visited: IndexVec<ConsumerVertexGroupId, bool> =
        IndexVec::from_elem(false, graph.num_groups() as usize);
    let mut queue = VecDeque::new();
    let start = regions.region_of(failed);
    region_visited[start] = true;
    queue.push_back(start);
    while let Some(region) = queue.pop_front() {
        let mut enqueue = |r: PipelinedRegionIndex, queue: &mut VecDeque<PipelinedRegionIndex>| {
            if !region_visited[r] {
                region_visited[r] = true;
                queue.push_back(r);
            }
        };
        for v in regions.members(region) {
            // Upstream: producers of unavailable consumed partitions.
            for g in graph.consumed_partition_groups(v) {
                if std::mem::replace(&mut group_visited[g], true) {
                    continue;
                }
                let group = graph.consumed_partition_group(g);
                for p in group.partitions.clone() {
                    let partition = IntermediateResultPartitionId {
                        result: group.result,
                        partition: p,
                    };
                    if !available(partition, group.result_partition_type) {
                        enqueue(regions.region_of(graph.producer_of(partition)), &mut queue);
                    }
                }
            }
            // Downstream: every consumer of every produced partition.
            for partition in graph.produced_partitions(v) {
                for cvg in graph.consumer_vertex_groups(partition) {
                    if std::mem::replace(&mut consumer_group_visited[cvg], true) {
                        continue;
                    }
                    let group = graph.consumer_vertex_group(cvg);
                    let first = graph.execution_vertices_of(group.job_vertex).start;
                    let mut last = None;
                    for s in group.subtasks {
                        let r = regions.region_of(ExecutionVertexIndex(first + s));
                        if last != Some(r) {
                            enqueue(r, &mut queue);
                            last = Some(r);
                        }
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    for (r, visited) in region_visited.iter_enumerated() {
        if *visited {
            out.extend(regions.members(r));
        }
    }
    out.sort_unstable();
    out
}
