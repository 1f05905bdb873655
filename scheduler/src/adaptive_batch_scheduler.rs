//! The scheduler side of adaptive batch scheduling, as Flink 1.20's `AdaptiveBatchScheduler`:
//! building a scheduler for a dynamic graph, the produced bytes of a finish, and growing the
//! graph, the regions, the scheduling topology, the slot pool and every per-entity array when
//! the component (`adaptive.rs`, [`AdaptiveState`], which knows nothing of the scheduler)
//! decides the next vertex.

use std::sync::Arc;

use conflux_adaptive::{BatchExecutionOptions, ResultBytes};
use conflux_deploy::ExecutionState;
use conflux_graph::dynamic::first_dynamic_vertex;
use conflux_graph::forward_group::ForwardGroups;
use conflux_graph::{
    index_u32, ConsumedPartitionGroupId, ExecutionGraph, ExecutionVertexIndex, GraphError,
    IntermediateDataSetIndex, IntermediateResultPartitionId, JobGraph, JobVertexIndex,
    PipelinedRegionIndex, PipelinedRegions,
};

use crate::adaptive::{vertex_max, AdaptiveError, AdaptiveState, VertexDecision};
use crate::api::{Command, Event, SchedulerConfig, SchedulerError};
use crate::scheduler::Scheduler;
use crate::slot_pool::NO_REQUEST;
use crate::work_budget::ScheduleRun;

impl Scheduler {
    /// A scheduler that decides undecided vertices (`-1`) at run time (adaptive batch), from a
    /// job graph: undecided sources get [`BatchExecutionOptions::source_parallelism`] now, the
    /// dynamic suffix ([`first_dynamic_vertex`]) stays uninitialised until its inputs are
    /// complete. A job without undecided vertices runs as [`Scheduler::new`] would. O(V + E +
    /// N of the initialised prefix).
    ///
    /// # Errors
    /// [`AdaptiveError::Options`] for options out of range; [`AdaptiveError::Graph`] when the
    /// dynamic suffix has a pipelined edge or a co-location group (naming the vertex: fix the
    /// undecided vertices at their estimate instead, [`JobGraph::fix_undecided`]) or the graph
    /// does not fit the indices.
    pub fn new_adaptive(
        job: JobGraph,
        options: BatchExecutionOptions,
        config: SchedulerConfig,
    ) -> Result<Scheduler, AdaptiveError> {
        options.validate()?;
        let first_dynamic = first_dynamic_vertex(&job)?;
        let prefix = first_dynamic.map_or(job.vertices().len(), JobVertexIndex::idx);
        let forward = ForwardGroups::compute(&job);
        let mut group_parallelism = vec![None; forward.len()];
        let mut decisions = Vec::new();
        let parallelisms: Vec<u32> = (0..prefix)
            .map(|j| {
                let j = JobVertexIndex(index_u32(j));
                let v = job.vertex(j);
                if !v.undecided {
                    return v.parallelism;
                }
                // Only sources are undecided before the dynamic suffix; one in a forward group
                // another source decided already takes that group's parallelism.
                let group = forward.group_of(j);
                let parallelism = group
                    .and_then(|g| group_parallelism[g.0 as usize])
                    .unwrap_or_else(|| options.source_parallelism(vertex_max(&job, j, &options)));
                if let Some(g) = group {
                    group_parallelism[g.0 as usize] = Some(parallelism);
                }
                decisions.push(VertexDecision {
                    job_vertex: j,
                    parallelism,
                    undecided: true,
                    bytes_per_task: Vec::new(),
                    input_infos: Vec::new(),
                    skewed_subpartitions: Vec::new(),
                    split_subpartitions: Vec::new(),
                });
                parallelism
            })
            .collect();
        let data_sets = job.data_sets().len();
        let mut decision_of = vec![None; job.vertices().len()];
        for (i, d) in decisions.iter().enumerate() {
            decision_of[d.job_vertex.idx()] = Some(i);
        }
        let graph = ExecutionGraph::build_partial(job, &parallelisms)?;
        let regions = PipelinedRegions::compute(&graph)?;
        let mut scheduler = Scheduler::new(Arc::new(graph), Arc::new(regions), config);
        let mut state = AdaptiveState {
            options,
            first_dynamic,
            subpartitions: vec![0; data_sets],
            results: vec![None; data_sets],
            decisions,
            decision_of,
            pending_bytes: None,
            forward,
            group_parallelism,
        };
        for j in 0..prefix {
            state.track_results_of(&scheduler.graph, JobVertexIndex(index_u32(j)));
        }
        scheduler.adaptive = Some(Box::new(state));
        Ok(scheduler)
    }

    /// Whether this scheduler decides parallelism at run time ([`new_adaptive`](Self::new_adaptive)).
    pub fn is_adaptive(&self) -> bool {
        self.adaptive.is_some()
    }

    /// The subpartitions per partition of a data set whose bytes a run-time decision reads: how
    /// many entries a producer reports for it in [`Event::TaskFinishedWithBytes`]. `None` when
    /// no decision reads it (or its producer is not initialised yet). O(1).
    pub fn subpartitions_of(&self, result: IntermediateDataSetIndex) -> Option<u32> {
        let s = *self.adaptive.as_ref()?.subpartitions.get(result.idx())?;
        (s > 0).then_some(s)
    }

    /// The bytes per subpartition a data set's producers reported so far (summed), when a
    /// run-time decision reads it.
    pub fn produced_bytes(&self, result: IntermediateDataSetIndex) -> Option<&[u64]> {
        self.adaptive
            .as_ref()?
            .results
            .get(result.idx())?
            .as_ref()
            .map(ResultBytes::bytes_per_subpartition)
    }

    /// What was decided at run time so far, in the order it was decided (empty for a
    /// scheduler from [`new`](Self::new)).
    pub fn decisions(&self) -> &[VertexDecision] {
        self.adaptive.as_ref().map_or(&[], |a| &a.decisions)
    }

    /// Per subtask of job vertex `j`, the bytes it reads over all its inputs, when `j` was
    /// decided at run time and has inputs ([`VertexDecision::bytes_per_task`]); `None` for a
    /// source, a vertex built whole, or a scheduler from [`new`](Self::new): its tasks' input
    /// bytes are unknown. What the slow task detector weighs execution times by, as Flink's
    /// `ExecutionVertex.getInputBytes`. O(1).
    pub fn input_bytes_per_task(&self, j: JobVertexIndex) -> Option<&[u64]> {
        let state = self.adaptive.as_ref()?;
        let i = (*state.decision_of.get(j.idx())?)?;
        let bytes = &state.decisions.get(i)?.bytes_per_task;
        (!bytes.is_empty()).then_some(bytes.as_slice())
    }

    /// Checks a byte report before anything changes: one entry per produced data set, each
    /// empty or of the data set's subpartition count.
    pub(crate) fn validate_produced_bytes(&self, event: &Event) -> Result<(), SchedulerError> {
        let (Event::TaskFinishedWithBytes(a, bytes), Some(state)) = (event, &self.adaptive) else {
            return Ok(());
        };
        if !self.is_current(*a) {
            return Ok(());
        }
        let v = ExecutionVertexIndex(a.vertex);
        // As a plain finish: a never-deployed attempt cannot finish.
        let vertex_state = self.state[v];
        if matches!(
            vertex_state,
            ExecutionState::Created | ExecutionState::Scheduled
        ) {
            return Err(SchedulerError::InvalidTransition {
                vertex: self.graph.execution_vertex_name(v),
                action: "finish",
                state: vertex_state.as_str(),
            });
        }
        let id = self.graph.execution_vertex_id(v);
        let produced = self.graph.job_graph().produced_data_sets(id.job_vertex);
        let bad = |reason: String| SchedulerError::ProducedBytes {
            vertex: self.graph.execution_vertex_name(v),
            reason,
        };
        if bytes.len() != produced.len() {
            return Err(bad(format!(
                "{} entries for {} produced data sets",
                bytes.len(),
                produced.len()
            )));
        }
        for (entry, &d) in bytes.iter().zip(produced) {
            let expected = state.subpartitions[d.idx()] as usize;
            if expected > 0 && !entry.is_empty() && entry.len() != expected {
                return Err(bad(format!(
                    "{} subpartitions reported for data set {}, it has {expected}",
                    entry.len(),
                    d.0
                )));
            }
        }
        Ok(())
    }

    /// A finish with bytes becomes a plain finish; its bytes are kept for
    /// [`adaptive_vertex_finished`](Self::adaptive_vertex_finished). Other events pass.
    pub(crate) fn take_produced_bytes(&mut self, event: Event) -> Event {
        match event {
            Event::TaskFinishedWithBytes(a, bytes) => {
                if let Some(state) = self.adaptive.as_mut() {
                    state.pending_bytes = Some((a, bytes));
                }
                Event::TaskFinished(a)
            }
            event => event,
        }
    }

    /// `v` finished: its bytes count toward the results decisions read, and every vertex that
    /// became decidable is initialised. Returns the new regions (scheduling candidates).
    ///
    /// # Errors
    /// Why a decision or the growth failed (the job fails with it).
    pub(crate) fn adaptive_vertex_finished(
        &mut self,
        v: ExecutionVertexIndex,
    ) -> Result<Vec<PipelinedRegionIndex>, String> {
        let Some(mut state) = self.adaptive.take() else {
            return Ok(Vec::new());
        };
        let grown = self.record_and_grow(&mut state, v);
        self.adaptive = Some(state);
        grown
    }

    fn record_and_grow(
        &mut self,
        state: &mut AdaptiveState,
        v: ExecutionVertexIndex,
    ) -> Result<Vec<PipelinedRegionIndex>, String> {
        let attempt = self.attempt(v);
        let bytes = state
            .pending_bytes
            .take()
            .filter(|(a, _)| *a == attempt)
            .map(|(_, b)| b);
        let id = self.graph.execution_vertex_id(v);
        let produced = self.graph.job_graph().produced_data_sets(id.job_vertex);
        for (i, &d) in produced.iter().enumerate() {
            let Some(result) = state.results[d.idx()].as_mut() else {
                continue;
            };
            let reported = bytes
                .as_ref()
                .and_then(|b| b.get(i))
                .filter(|b| !b.is_empty());
            let added = match reported {
                Some(b) => result.add(id.subtask, b),
                // Not reported: no bytes (a runtime that does not measure them).
                None => result.add(id.subtask, &vec![0; state.subpartitions[d.idx()] as usize]),
            };
            added.map_err(|e| format!("{}: {e}", self.graph.execution_vertex_name(v)))?;
        }

        let mut new_regions = Vec::new();
        while let Some(j) = self.graph.next_uninitialized() {
            let Some(decision) = state.decide(&self.graph, j) else {
                break;
            };
            let decision = decision.map_err(|e| {
                format!(
                    "deciding the parallelism of {}: {e}",
                    self.graph.job_graph().vertex_id(j)
                )
            })?;
            let regions = self
                .grow(decision.parallelism)
                .map_err(|e| format!("bug: growing the execution graph: {e}"))?;
            new_regions.extend(regions);
            state.group_decided(j, decision.parallelism);
            state.track_results_of(&self.graph, j);
            state.decision_of[j.idx()] = Some(state.decisions.len());
            state.decisions.push(decision);
        }
        Ok(new_regions)
    }

    /// Initialises the next job vertex with `parallelism` subtasks and grows every structure of
    /// the scheduler with it; returns its regions. O(its subtasks x inputs + the partitions of
    /// its groups).
    fn grow(&mut self, parallelism: u32) -> Result<Vec<PipelinedRegionIndex>, GraphError> {
        let old_groups = self.graph.num_groups() as usize;
        let old_regions = self.regions.len();
        // The scheduler is the graph's only owner while it runs (a driver takes it from
        // `graph()` after each call), so this does not copy; if a caller kept a clone, that
        // clone stays as it was.
        let j = Arc::make_mut(&mut self.graph).initialize_next(parallelism)?;
        Arc::make_mut(&mut self.regions).extend(&self.graph, j)?;
        let graph = Arc::clone(&self.graph);
        let regions = Arc::clone(&self.regions);

        let n = graph.num_execution_vertices() as usize;
        self.state.resize(n, ExecutionState::Created);
        self.attempt.resize(n, 0);
        self.allocation.resize(n, None);
        self.location.resize(n, crate::scheduler::NO_LOCATION);
        self.unfinished_vertices += parallelism;
        self.slots.extend(&graph, j);

        let partitions = graph.num_partitions() as usize;
        self.data_produced.resize(partitions, false);
        self.lost.resize(partitions, false);
        self.released.resize(partitions, false);

        let groups = graph.num_groups() as usize;
        self.unfinished_partitions.resize(groups, 0);
        self.unfinished_consumer_regions.resize(groups, 0);
        self.group_released.resize(groups, false);
        self.group_round.resize(groups, u32::MAX);
        self.group_consumable.resize(groups, false);
        self.group_visited_round.resize(groups, u32::MAX);
        for g in old_groups..groups {
            let g = ConsumedPartitionGroupId(index_u32(g));
            let group = graph.consumed_partition_group(g);
            // A producer restarted since it reported its bytes has not produced again yet.
            self.unfinished_partitions[g] = if group
                .result_partition_type
                .is_blocking_or_blocking_persistent()
            {
                index_u32(
                    group
                        .partitions
                        .filter(|&p| {
                            let id = IntermediateResultPartitionId {
                                result: group.result,
                                partition: p,
                            };
                            !self.data_produced[graph.partition_index(id)]
                        })
                        .count(),
                )
            } else {
                group.partitions.end - group.partitions.start
            };
        }

        self.topology.extend(&graph, &regions, j, old_regions);
        let new_regions: Vec<PipelinedRegionIndex> = (old_regions..regions.len())
            .map(|r| PipelinedRegionIndex(index_u32(r)))
            .collect();
        let total = regions.len();
        self.scheduled.resize(total, false);
        self.chosen.resize(total, false);
        self.missing_slots.resize(total, NO_REQUEST);
        self.request_epoch.resize(total, 0);
        for &r in &new_regions {
            self.region_unfinished
                .push(index_u32(regions.member_indices(r).len()));
            for g in self
                .topology
                .non_pipelined_consumed_groups(r)
                .collect::<Vec<_>>()
            {
                self.unfinished_consumer_regions[g] += 1;
            }
        }
        self.out.push(Command::JobVertexInitialized {
            job_vertex: j,
            parallelism,
        });
        Ok(new_regions)
    }

    /// Schedules the consumers of `ready_groups` (as
    /// [`schedule_consumers_of`](Self::schedule_consumers_of)) and the regions of vertices just
    /// initialised, in one run.
    pub(crate) fn schedule_grown(
        &mut self,
        ready_groups: Vec<ConsumedPartitionGroupId>,
        grown: Vec<PipelinedRegionIndex>,
        now_ms: u64,
    ) -> Result<(), SchedulerError> {
        let groups = self.once_per_call(ready_groups);
        let mut run = ScheduleRun::of_groups(groups, now_ms);
        run.candidates = grown;
        self.maybe_schedule_regions(run)
    }
}
