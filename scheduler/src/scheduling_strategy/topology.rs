//! What the scheduling strategy precomputes about groups and regions (Flink's
//! `PipelinedRegionSchedulingStrategy` initialisation, FLINK-21330 / FLINK-22077).

use conflux_graph::{
    index_u32, ConsumedPartitionGroupId, EdgeConnection, ExecutionGraph, ExecutionVertexIndex,
    IndexVec, JobVertexIndex, PipelinedRegionIndex, PipelinedRegions,
};

/// Per group and per region facts, computed once in O(N + groups + partitions of groups).
#[derive(Debug)]
pub(crate) struct SchedulingTopology {
    /// Per group: it has several producer regions and one of its consumer regions is among them.
    /// Only pointwise non-pipelined edges inside a logical region give such groups.
    cross_region: IndexVec<ConsumedPartitionGroupId, bool>,
    /// Per group: the region of the producer of its first partition (Flink decides "external"
    /// by the first partition).
    first_producer_region: IndexVec<ConsumedPartitionGroupId, PipelinedRegionIndex>,
    /// Region -> its non-pipelined consumed groups, de-duplicated, ascending (CSR).
    region_group_offsets: Vec<u32>,
    region_groups: Vec<u32>,
}

impl SchedulingTopology {
    /// O(N x inputs + partitions of the consumed groups).
    pub(crate) fn new(graph: &ExecutionGraph, regions: &PipelinedRegions) -> SchedulingTopology {
        let num_groups = graph.num_groups() as usize;
        let mut first_producer_region = IndexVec::from_elem(PipelinedRegionIndex(0), num_groups);
        let mut cross_region = IndexVec::from_elem(false, num_groups);
        for c in graph.connections() {
            connection_facts(
                graph,
                regions,
                c,
                &mut first_producer_region,
                &mut cross_region,
            );
        }

        // Non-pipelined consumed groups per region, de-duplicated with a last-seen stamp.
        let mut last_region: IndexVec<ConsumedPartitionGroupId, Option<PipelinedRegionIndex>> =
            IndexVec::from_elem(None, num_groups);
        let mut region_group_offsets = Vec::with_capacity(regions.len() + 1);
        let mut region_groups = Vec::new();
        region_group_offsets.push(0);
        for region in regions.indices() {
            let start = region_groups.len();
            for v in regions.members(region) {
                for g in graph.consumed_partition_groups(v) {
                    let c = graph.connection_of_group(g);
                    if c.result_partition_type.must_be_pipelined_consumed() {
                        continue;
                    }
                    if last_region[g] != Some(region) {
                        last_region[g] = Some(region);
                        region_groups.push(g.0);
                    }
                }
            }
            region_groups[start..].sort_unstable();
            region_group_offsets.push(index_u32(region_groups.len()));
        }
        SchedulingTopology {
            cross_region,
            first_producer_region,
            region_group_offsets,
            region_groups,
        }
    }

    /// The non-pipelined groups a region consumes (Flink's
    /// `getAllNonPipelinedConsumedPartitionGroups`).
    pub(crate) fn non_pipelined_consumed_groups(
        &self,
        region: PipelinedRegionIndex,
    ) -> impl Iterator<Item = ConsumedPartitionGroupId> + '_ {
        let r = region.idx();
        self.region_groups
            [self.region_group_offsets[r] as usize..self.region_group_offsets[r + 1] as usize]
            .iter()
            .map(|&g| ConsumedPartitionGroupId(g))
    }

    /// Positions of `region`'s non-pipelined consumed groups, for
    /// [`non_pipelined_consumed_group_at`](Self::non_pipelined_consumed_group_at) (a walk that
    /// needs the scheduler mutable in between).
    pub(crate) fn non_pipelined_consumed_group_positions(
        &self,
        region: PipelinedRegionIndex,
    ) -> std::ops::Range<usize> {
        let r = region.idx();
        self.region_group_offsets[r] as usize..self.region_group_offsets[r + 1] as usize
    }

    /// The group at a position of
    /// [`non_pipelined_consumed_group_positions`](Self::non_pipelined_consumed_group_positions).
    pub(crate) fn non_pipelined_consumed_group_at(&self, i: usize) -> ConsumedPartitionGroupId {
        ConsumedPartitionGroupId(self.region_groups[i])
    }

    /// Whether group `g`, consumed by `region`, is produced outside it (by its first partition).
    pub(crate) fn is_external(
        &self,
        g: ConsumedPartitionGroupId,
        region: PipelinedRegionIndex,
    ) -> bool {
        self.first_producer_region[g] != region
    }

    /// Whether group `g` is cross-region.
    pub(crate) fn is_cross_region(&self, g: ConsumedPartitionGroupId) -> bool {
        self.cross_region[g]
    }

    /// The regions schedulable at the start: those consuming no non-pipelined group from
    /// another region. O(regions + their consumed groups).
    pub(crate) fn source_regions(&self, regions: &PipelinedRegions) -> Vec<PipelinedRegionIndex> {
        regions
            .indices()
            .filter(|&region| {
                self.non_pipelined_consumed_groups(region)
                    .all(|g| !self.is_cross_region(g) && !self.is_external(g, region))
            })
            .collect()
    }

    /// Appends the facts of a job vertex initialised at run time (adaptive batch): its groups
    /// (`graph` already grown, groups from `first_new_group` on) and its regions (`regions`
    /// already extended, regions from `first_new_region` on). Nothing earlier changes. O(its
    /// subtasks x inputs + the partitions of its groups).
    pub(crate) fn extend(
        &mut self,
        graph: &ExecutionGraph,
        regions: &PipelinedRegions,
        job_vertex: JobVertexIndex,
        first_new_region: usize,
    ) {
        let groups = graph.num_groups() as usize;
        self.first_producer_region
            .resize(groups, PipelinedRegionIndex(0));
        self.cross_region.resize(groups, false);
        for &e in graph.job_graph().inputs(job_vertex) {
            connection_facts(
                graph,
                regions,
                graph.connection(e),
                &mut self.first_producer_region,
                &mut self.cross_region,
            );
        }
        for r in first_new_region..regions.len() {
            let region = PipelinedRegionIndex(index_u32(r));
            let start = self.region_groups.len();
            for v in regions.members(region) {
                for g in graph.consumed_partition_groups(v) {
                    if !graph
                        .connection_of_group(g)
                        .result_partition_type
                        .must_be_pipelined_consumed()
                    {
                        self.region_groups.push(g.0);
                    }
                }
            }
            self.region_groups[start..].sort_unstable();
            let mut kept = start;
            for i in start..self.region_groups.len() {
                if i == start || self.region_groups[i] != self.region_groups[kept - 1] {
                    self.region_groups[kept] = self.region_groups[i];
                    kept += 1;
                }
            }
            self.region_groups.truncate(kept);
            self.region_group_offsets
                .push(index_u32(self.region_groups.len()));
        }
    }

    /// Heap bytes.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.cross_region.capacity()
            + 4 * (self.first_producer_region.capacity()
                + self.region_group_offsets.capacity()
                + self.region_groups.capacity())
    }
}

/// Per group of one connection: the region of the producer of its first partition, and whether
/// it is cross-region. O(partitions and consumers of its groups).
fn connection_facts(
    graph: &ExecutionGraph,
    regions: &PipelinedRegions,
    c: &EdgeConnection,
    first_producer_region: &mut IndexVec<ConsumedPartitionGroupId, PipelinedRegionIndex>,
    cross_region: &mut IndexVec<ConsumedPartitionGroupId, bool>,
) {
    if c.result_partition_type.must_be_pipelined_consumed() {
        return;
    }
    let producers = graph.execution_vertices_of(c.producer).start;
    let consumers = graph.execution_vertices_of(c.consumer).start;
    for k in 0..c.num_groups {
        let g = ConsumedPartitionGroupId(c.first_group + k);
        let parts = c.partitions_of_local_group(k);
        let region = |p: u32| regions.region_of(ExecutionVertexIndex(producers + p));
        let first = region(parts.start);
        first_producer_region[g] = first;
        if parts.clone().all(|p| region(p) == first) {
            continue;
        }
        let mut producer_regions: Vec<PipelinedRegionIndex> = parts.map(region).collect();
        producer_regions.sort_unstable();
        producer_regions.dedup();
        cross_region[g] = c.consumers_of_local_group(k).any(|s| {
            let r = regions.region_of(ExecutionVertexIndex(consumers + s));
            producer_regions.binary_search(&r).is_ok()
        });
    }
}
