//! Replaying a job's events into [`RecoveredJob`], and compaction: the shortest event list that
//! replays into the same state. Pure.

use std::collections::BTreeMap;

use crate::event::{FinishedExecution, JobEvent};

/// The state a job's event log replays into: what a JobManager taking the job over restores
/// into its scheduler before it schedules anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveredJob {
    /// Finished executions by execution vertex index (the latest finish of each vertex not
    /// reset since).
    pub finished: BTreeMap<u32, FinishedExecution>,
    /// Decided parallelism by job vertex (topological index), for vertices initialised at run
    /// time.
    pub decided_parallelism: BTreeMap<u32, u32>,
}

impl RecoveredJob {
    /// Applies one event: a finish records (or replaces) its vertex's execution, a reset
    /// forgets its vertices' finishes, an initialisation records the decided parallelism (a
    /// later one for the same vertex replaces it).
    pub fn apply(&mut self, event: &JobEvent) {
        match event {
            JobEvent::TaskFinished(f) => {
                self.finished.insert(f.vertex, f.clone());
            }
            JobEvent::VertexInitialized {
                job_vertex,
                parallelism,
            } => {
                self.decided_parallelism.insert(*job_vertex, *parallelism);
            }
            JobEvent::VerticesReset { vertices } => {
                for v in vertices {
                    self.finished.remove(v);
                }
            }
        }
    }

    /// The state `events` replay into, from empty.
    pub fn replay<'a>(events: impl IntoIterator<Item = &'a JobEvent>) -> RecoveredJob {
        let mut state = RecoveredJob::default();
        for e in events {
            state.apply(e);
        }
        state
    }

    /// The events of a compacted log: every decided parallelism (by job vertex), then every
    /// finished execution (by vertex). Replaying them gives this state back. O(state).
    pub fn snapshot(&self) -> Vec<JobEvent> {
        self.decided_parallelism
            .iter()
            .map(|(&job_vertex, &parallelism)| JobEvent::VertexInitialized {
                job_vertex,
                parallelism,
            })
            .chain(
                self.finished
                    .values()
                    .map(|f| JobEvent::TaskFinished(f.clone())),
            )
            .collect()
    }
}
