//! Flink 1.20's `PipelinedRegionSchedulingStrategy`: which regions to schedule, and when.
//!
//! A region is schedulable when every non-pipelined group it consumes from outside is
//! consumable: a blocking group when all its partitions finished (a per-group counter, so the
//! check is O(1) amortised when the last partition finishes), a hybrid group when its producer
//! regions are scheduled. Candidates are taken in breadth-first rounds (Flink 1.17+'s
//! `maybeScheduleRegions`), and the chosen regions are scheduled in topological order, one slot
//! request each. What the strategy precomputes about groups and regions is in
//! [`topology`].

pub(crate) mod topology;

use std::sync::Arc;

use conflux_deploy::ExecutionState;
use conflux_graph::{
    ConsumedPartitionGroupId, ExecutionVertexIndex, IntermediateResultPartitionId,
    PipelinedRegionIndex,
};

use crate::api::SchedulerError;
use crate::scheduler::Scheduler;
use crate::work_budget::{cost, Budget, ScheduleRun};

/// Sorts `regions` ascending, which they mostly are already (sources, the consumers of a group,
/// regions chosen from ascending candidates, slots served in request order): then the check is
/// the only cost, a pass over them, where a sort of a million took several milliseconds in one
/// step. An out-of-order list is sorted in this step, charged what the sort costs. Duplicates
/// stay (adjacent ones, for the caller to drop).
pub(crate) fn sort_unless_ascending(regions: &mut [PipelinedRegionIndex], budget: &mut Budget) {
    if regions.is_sorted() {
        return;
    }
    let n = regions.len();
    budget.spend(cost::LOOK * n * (usize::BITS - n.leading_zeros()) as usize);
    regions.sort_unstable();
}

impl Scheduler {
    /// Flink 1.17+'s breadth-first `maybeScheduleRegions`: rounds of schedulable candidates,
    /// each round adding the consumer regions of the can-be-pipelined (hybrid) groups its chosen
    /// regions produce; then every chosen region is scheduled in topological order, one request
    /// each.
    ///
    /// When it is the last thing its handler call does (the call set `defer_schedule`), the run
    /// is only recorded and done within the call's work budget, the rest in continuation calls
    /// (`continuation.rs`); otherwise it is done here, whole.
    pub(crate) fn maybe_schedule_regions(
        &mut self,
        mut run: ScheduleRun,
    ) -> Result<(), SchedulerError> {
        if std::mem::take(&mut self.defer_schedule) && self.pending_schedule.is_none() {
            self.pending_schedule = Some(run);
            return Ok(());
        }
        let done = self.step_schedule(&mut run, &mut Budget::unlimited())?;
        debug_assert!(done, "an unlimited budget finishes the run");
        Ok(())
    }

    /// Advances a scheduling run within `budget`; true when it is complete. Splitting a run into
    /// steps changes nothing: between steps no event is handled (the driver continues first, and
    /// `handle` finishes owed work before its event), so the round stamps and the chosen flags
    /// stay as the previous step left them.
    pub(crate) fn step_schedule(
        &mut self,
        run: &mut ScheduleRun,
        budget: &mut Budget,
    ) -> Result<bool, SchedulerError> {
        // The first round's candidates: the consumer regions of the groups that became
        // consumable, one consumer subtask at a time.
        while run.expand_pos < run.expand.len() {
            let g = run.expand[run.expand_pos];
            let cvg = self.graph.consumer_vertex_group(g.consumer_vertex_group());
            let first = self.graph.execution_vertices_of(cvg.job_vertex).start;
            let cross_region = self.topology.is_cross_region(g);
            let mut s = run.subtask.unwrap_or(cvg.subtasks.start);
            while s < cvg.subtasks.end {
                if budget.exhausted() {
                    run.subtask = Some(s);
                    return Ok(false);
                }
                let r = self.regions.region_of(ExecutionVertexIndex(first + s));
                s += 1;
                budget.spend(cost::LOOK);
                if run.last != Some(r) && (cross_region || self.topology.is_external(g, r)) {
                    run.candidates.push(r);
                    run.last = Some(r);
                }
            }
            run.expand_pos += 1;
            run.subtask = None;
            run.last = None;
        }
        // The choice: breadth-first rounds of candidates.
        while !run.scheduling {
            if !run.round_open {
                if run.candidates.is_empty() {
                    sort_unless_ascending(&mut run.chosen, budget);
                    run.scheduling = true;
                    run.pos = 0;
                    break;
                }
                if run.chosen.is_empty() {
                    // Every first-round candidate may be chosen: room for them all, allocated
                    // before anything is in it, so that choosing a million never copies it.
                    run.chosen.reserve(run.candidates.len());
                }
                self.round = self.round.wrapping_add(1);
                sort_unless_ascending(&mut run.candidates, budget);
                run.candidates.dedup();
                run.round_open = true;
                run.pos = 0;
            }
            if run.pos == run.candidates.len() {
                run.candidates = std::mem::take(&mut run.next);
                run.round_open = false;
                continue;
            }
            if budget.exhausted() {
                return Ok(false);
            }
            let region = run.candidates[run.pos];
            run.pos += 1;
            budget.spend(cost::LOOK);
            if !self.is_schedulable(region) {
                continue;
            }
            self.chosen[region] = true;
            run.chosen.push(region);
            budget.spend(cost::LOOK * self.regions.member_indices(region).len());
            // Consumers of hybrid (can-be-pipelined, non-pipelined) groups this region produces
            // are candidates of the next round.
            for v in self.regions.members(region) {
                for p in self.graph.produced_partitions(v) {
                    let t = self
                        .graph
                        .job_graph()
                        .data_set(p.result)
                        .result_partition_type;
                    if !t.can_be_pipelined_consumed() || t.must_be_pipelined_consumed() {
                        continue;
                    }
                    for cvg in self.graph.consumer_vertex_groups(p) {
                        let g = cvg.consumed_partition_group();
                        if self.group_visited_round[g] == self.round {
                            continue;
                        }
                        self.group_visited_round[g] = self.round;
                        // Listed within this step, whatever its size; charged all the same.
                        budget.spend(cost::LOOK * self.push_consumer_regions(g, &mut run.next));
                    }
                }
            }
        }
        // The chosen regions, in topological order. The chosen flags only matter to the choice,
        // so each is cleared as its region is scheduled.
        while run.pos < run.chosen.len() {
            if budget.exhausted() {
                return Ok(false);
            }
            let r = run.chosen[run.pos];
            run.pos += 1;
            self.chosen[r] = false;
            budget.spend(cost::SCHEDULE * self.regions.member_indices(r).len());
            self.schedule_region(r, run.now_ms)?;
        }
        Ok(true)
    }

    /// `ready_groups` without repeats, in order: a new round, in which each group is taken the
    /// first time only.
    pub(crate) fn once_per_call(
        &mut self,
        ready_groups: Vec<ConsumedPartitionGroupId>,
    ) -> Vec<ConsumedPartitionGroupId> {
        let mut groups = Vec::new();
        self.round = self.round.wrapping_add(1);
        for g in ready_groups {
            if self.group_visited_round[g] == self.round {
                continue;
            }
            self.group_visited_round[g] = self.round;
            groups.push(g);
        }
        groups
    }

    /// Schedules the consumer regions of groups that became consumable when a producer
    /// finished (each group looked at once per call).
    pub(crate) fn schedule_consumers_of(
        &mut self,
        ready_groups: Vec<ConsumedPartitionGroupId>,
        now_ms: u64,
    ) -> Result<(), SchedulerError> {
        let groups = self.once_per_call(ready_groups);
        // No candidates, no run (listing them changes no state).
        if groups.is_empty() {
            return Ok(());
        }
        self.maybe_schedule_regions(ScheduleRun::of_groups(groups, now_ms))
    }

    /// The consumer regions for which group `g` is external or cross-region (Flink's
    /// `partitionGroupConsumerRegions`), computed from the group's consumer range. Returns the
    /// consumer subtasks looked at.
    fn push_consumer_regions(
        &self,
        g: ConsumedPartitionGroupId,
        out: &mut Vec<PipelinedRegionIndex>,
    ) -> usize {
        let cvg = self.graph.consumer_vertex_group(g.consumer_vertex_group());
        let looked_at = cvg.subtasks.len();
        let first = self.graph.execution_vertices_of(cvg.job_vertex).start;
        let mut last = None;
        for s in cvg.subtasks {
            let r = self.regions.region_of(ExecutionVertexIndex(first + s));
            if last != Some(r)
                && (self.topology.is_cross_region(g) || self.topology.is_external(g, r))
            {
                out.push(r);
                last = Some(r);
            }
        }
        looked_at
    }

    fn is_schedulable(&mut self, region: PipelinedRegionIndex) -> bool {
        if self.scheduled[region] || self.chosen[region] {
            return false;
        }
        for i in self.topology.non_pipelined_consumed_group_positions(region) {
            let g = self.topology.non_pipelined_consumed_group_at(i);
            let ok = if self.topology.is_cross_region(g) {
                self.group_consumable_now(g, Some(region))
            } else if self.topology.is_external(g, region) {
                if self.group_round[g] != self.round {
                    self.group_round[g] = self.round;
                    self.group_consumable[g] = self.group_consumable_now(g, None);
                }
                self.group_consumable[g]
            } else {
                true
            };
            if !ok {
                return false;
            }
        }
        true
    }

    /// A blocking group needs all its (external) partitions finished; a hybrid group needs
    /// their producer regions scheduled or chosen. `except_region`: partitions produced by this
    /// region count as consumable (a cross-region group seen from one of its producer regions).
    fn group_consumable_now(
        &self,
        g: ConsumedPartitionGroupId,
        except_region: Option<PipelinedRegionIndex>,
    ) -> bool {
        let group = self.graph.consumed_partition_group(g);
        let pipelinable = group.result_partition_type.can_be_pipelined_consumed();
        if !pipelinable && except_region.is_none() {
            return self.unfinished_partitions[g] == 0;
        }
        let producers = self
            .graph
            .execution_vertices_of(self.graph.job_graph().data_set(group.result).producer)
            .start;
        group.partitions.clone().all(|p| {
            let producer_region = self.regions.region_of(ExecutionVertexIndex(producers + p));
            if Some(producer_region) == except_region {
                return true;
            }
            if pipelinable {
                self.scheduled[producer_region] || self.chosen[producer_region]
            } else {
                let partition = IntermediateResultPartitionId {
                    result: group.result,
                    partition: p,
                };
                self.data_produced[self.graph.partition_index(partition)]
            }
        })
    }

    /// Marks a region scheduled and requests a slot for each member.
    fn schedule_region(
        &mut self,
        region: PipelinedRegionIndex,
        now_ms: u64,
    ) -> Result<(), SchedulerError> {
        if self
            .regions
            .members(region)
            .any(|v| self.state[v] != ExecutionState::Created)
        {
            return Err(SchedulerError::RegionNotCreated(region));
        }
        self.scheduled[region] = true;
        let regions = Arc::clone(&self.regions);
        self.missing_slots[region] = conflux_graph::index_u32(regions.member_indices(region).len());
        for v in regions.members(region) {
            self.set_state(v, ExecutionState::Scheduled);
        }
        for v in regions.members(region) {
            self.request_slot(v);
        }
        self.open_request(region, now_ms);
        Ok(())
    }
}
