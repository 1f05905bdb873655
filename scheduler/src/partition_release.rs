//! Producing and releasing partitions: Flink's partition tracking on task finish and its
//! `RegionPartitionGroupReleaseStrategy`.
//!
//! When a region finishes, each non-pipelined group it consumed loses one unfinished consumer
//! region; at zero the group is released (`jobmanager.partition.release-during-job-execution`),
//! and a partition is released everywhere once every group containing it is.

use conflux_graph::{
    ConsumedPartitionGroupId, ExecutionVertexIndex, IntermediateResultPartitionId, PartitionIndex,
    PipelinedRegionIndex,
};

use crate::api::Command;
use crate::scheduler::Scheduler;

impl Scheduler {
    /// `v` finished: its partitions hold all their data; blocking ones count down the groups
    /// containing them. Returns the groups that became consumable (or are cross-region, which
    /// the strategy checks per consumer region). O(partitions of `v` x their consumer groups).
    pub(crate) fn partitions_finished(
        &mut self,
        v: ExecutionVertexIndex,
    ) -> Vec<ConsumedPartitionGroupId> {
        let produced: Vec<IntermediateResultPartitionId> =
            self.graph.produced_partitions(v).collect();
        let mut ready_groups = Vec::new();
        for &p in &produced {
            self.data_produced[self.graph.partition_index(p)] = true;
            let t = self
                .graph
                .job_graph()
                .data_set(p.result)
                .result_partition_type;
            if !t.is_blocking_or_blocking_persistent() {
                continue;
            }
            for cvg in self.graph.consumer_vertex_groups(p) {
                let g = cvg.consumed_partition_group();
                let counter = &mut self.unfinished_partitions[g];
                *counter = counter.saturating_sub(1);
                if *counter == 0 || self.topology.is_cross_region(g) {
                    ready_groups.push(g);
                }
            }
        }
        ready_groups
    }

    /// A member of `region` finished; when it was the last, the release strategy releases the
    /// groups the region consumed that no other unfinished region needs.
    pub(crate) fn region_member_finished(&mut self, region: PipelinedRegionIndex) {
        self.region_unfinished[region] -= 1;
        if self.region_unfinished[region] != 0 || !self.config.release_partitions_during_execution {
            return;
        }
        let groups: Vec<ConsumedPartitionGroupId> = self
            .topology
            .non_pipelined_consumed_groups(region)
            .collect();
        for g in groups {
            let count = &mut self.unfinished_consumer_regions[g];
            *count = count.saturating_sub(1);
            let t = self.graph.connection_of_group(g).result_partition_type;
            if *count == 0
                && t.is_release_by_scheduler()
                && !t.is_persistent()
                && !self.group_released[g]
            {
                self.release_group(g);
            }
        }
    }

    /// Releases a group: its descriptor cache goes, and partitions every group of which is now
    /// released are released everywhere.
    fn release_group(&mut self, g: ConsumedPartitionGroupId) {
        self.group_released[g] = true;
        let group = self.graph.consumed_partition_group(g);
        let result = group.result;
        let mut partitions = Vec::with_capacity(group.partitions.len());
        // A result's partitions have consecutive global indices (the first at partition 0); a
        // group's result is always initialised.
        let base = self
            .graph
            .checked_partition_index(IntermediateResultPartitionId {
                result,
                partition: 0,
            })
            .map_or(0, |i| i.0);
        // A result with one consuming edge has one group per partition, this one: every
        // partition is released, and the pass does no lookup per partition (a million of them
        // at 10^6 x 10^6, when the last consumer finishes).
        let only_group = self.graph.job_graph().data_set(result).consumers.len() == 1;
        for p in group.partitions {
            let id = IntermediateResultPartitionId {
                result,
                partition: p,
            };
            let i = PartitionIndex(base + p);
            if self.released[i] {
                continue;
            }
            let all_released = only_group
                || self
                    .graph
                    .consumer_vertex_groups(id)
                    .all(|cvg| self.group_released[cvg.consumed_partition_group()]);
            if all_released {
                self.released[i] = true;
                partitions.push(id);
            }
        }
        self.out.push(Command::ReleaseGroup {
            group: g,
            partitions,
        });
    }
}
