//! Batch job recovery (Flink 1.20's FLIP-383, its `DefaultBatchJobRecoveryHandler`): a
//! JobManager that takes a job over restores the executions the job's event log says finished
//! and whose partitions the TaskManagers still hold, before it starts scheduling; only the rest
//! runs again.
//!
//! Restoring works on whole pipelined regions: a region is restored when every one of its
//! members is given, otherwise none of them is (its members run again, as a region failover
//! would run them). A restored vertex is FINISHED at its attempt, its partitions produced at the
//! given location; the partition release strategy and the scheduling strategy count it as any
//! finish. [`Event::Start`] then schedules every region whose inputs are all consumable (the
//! sources not restored, and the consumers of restored producers), not just the sources.

use std::collections::HashMap;

use conflux_deploy::{ExecutionState, TaskManagerLocation};
use conflux_graph::{ExecutionVertexIndex, PipelinedRegionIndex};

use crate::api::{JobStatus, SchedulerError};
use crate::scheduler::Scheduler;

/// A finished execution to restore: the vertex, the attempt that finished and where its
/// produced partitions are held (the TaskManager as it registered with this JobManager).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestoredExecution {
    /// The execution vertex.
    pub vertex: ExecutionVertexIndex,
    /// The attempt number that finished; the vertex's next attempt, should it run again, is
    /// the one after it.
    pub attempt: u32,
    /// The TaskManager holding its partitions.
    pub location: TaskManagerLocation,
}

impl Scheduler {
    /// Restores finished executions before [`Event::Start`](crate::Event::Start) (FLIP-383's
    /// `BatchJobRecoveryHandler`): every region all of whose members are in `finished` becomes
    /// finished (a vertex named twice: the last one counts); the others are left CREATED.
    /// Partitions consumed only by restored regions are released as the release strategy would
    /// have released them (the commands come with the next call). Returns the restored
    /// vertices, ascending. O(named vertices + their regions' members and groups).
    ///
    /// # Errors
    /// [`SchedulerError::UnknownVertex`] for a vertex beyond the graph,
    /// [`SchedulerError::RestoreAfterStart`] once the job has started; nothing is restored
    /// then.
    pub fn restore_finished(
        &mut self,
        finished: &[RestoredExecution],
    ) -> Result<Vec<ExecutionVertexIndex>, SchedulerError> {
        if self.status != JobStatus::Created {
            return Err(SchedulerError::RestoreAfterStart(self.status.as_str()));
        }
        let mut by_vertex: HashMap<ExecutionVertexIndex, RestoredExecution> = HashMap::new();
        for f in finished {
            if f.vertex.idx() >= self.state.len() {
                return Err(SchedulerError::UnknownVertex(f.vertex.0));
            }
            by_vertex.insert(f.vertex, *f);
        }
        let mut regions: Vec<PipelinedRegionIndex> = by_vertex
            .keys()
            .map(|&v| self.regions.region_of(v))
            .collect();
        regions.sort_unstable();
        regions.dedup();
        let mut restored = Vec::new();
        let whole: Vec<PipelinedRegionIndex> = regions
            .into_iter()
            .filter(|&r| {
                !self.scheduled[r]
                    && self.regions.members(r).all(|v| {
                        by_vertex.contains_key(&v) && self.state[v] == ExecutionState::Created
                    })
            })
            .collect();
        for r in whole {
            self.scheduled[r] = true;
            let members: Vec<ExecutionVertexIndex> = self.regions.members(r).collect();
            for v in members {
                let f = by_vertex[&v];
                self.attempt[v] = f.attempt;
                self.location[v] = self.slots.intern_location(f.location);
                self.set_state(v, ExecutionState::Finished);
                self.unfinished_vertices -= 1;
                // The groups this makes consumable are found again at `Start`, which looks at
                // every region still to schedule.
                let _ready = self.partitions_finished(v);
                self.region_member_finished(r);
                restored.push(v);
            }
            self.restored_regions += 1;
        }
        restored.sort_unstable();
        Ok(restored)
    }

    /// Regions restored by [`restore_finished`](Self::restore_finished).
    pub fn restored_regions(&self) -> u32 {
        self.restored_regions
    }

    /// What `Start` schedules: the source regions, or after a restore every region not yet
    /// scheduled (the strategy keeps those whose inputs are consumable), ascending.
    pub(crate) fn start_candidates(&mut self) -> Vec<PipelinedRegionIndex> {
        let sources = std::mem::take(&mut self.source_regions);
        if self.restored_regions == 0 {
            return sources;
        }
        self.regions
            .indices()
            .filter(|&r| !self.scheduled[r])
            .collect()
    }
}
