//! Batch job recovery in the job's loop (FLIP-383's `BatchJobRecoveryHandler`): before the
//! start, wait (at most the recovery timeout) for the TaskManagers that held the job's finished
//! partitions to register again, restore every finished execution whose BLOCKING partitions
//! they all still hold, and record what each later scheduler call changes in the event log.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use conflux_deploy::{ProducerStates, TaskManagerLocation};
use conflux_graph::ExecutionVertexIndex;
use conflux_job_store::{FinishedExecution, JobEvent, RecoveredJob};
use conflux_scheduler::{Command, Event, RestoredExecution};

use super::JobRun;

/// How often the wait for TaskManagers looks at the registry.
const REGISTRATION_POLL: Duration = Duration::from_millis(20);

impl JobRun<'_> {
    /// Restores what `state` says finished and the TaskManagers still hold; returns how many
    /// executions were restored. Jobs decided at run time (adaptive batch) and streaming jobs
    /// run again from the start (logged).
    pub(super) fn restore(&mut self, state: RecoveredJob) -> u64 {
        let graph = Arc::clone(self.scheduler.graph());
        if state.finished.is_empty() {
            return 0;
        }
        if self.scheduler.is_adaptive()
            || graph.job_graph().job_type() != conflux_graph::JobType::Batch
        {
            tracing::warn!(job = %self.job.id, "a streaming or adaptive job is not recovered from its event log: it runs again from the start");
            return 0;
        }
        let needed: BTreeSet<&str> = state
            .finished
            .values()
            .map(|f| f.data_address.as_str())
            .collect();
        let deadline = Instant::now() + Duration::from_millis(self.ctx.recovery_timeout_ms);
        loop {
            let registered: HashSet<String> = self
                .ctx
                .registry
                .lock()
                .alive
                .values()
                .map(|e| e.location.data_address.to_string())
                .collect();
            let missing = needed.iter().filter(|a| !registered.contains(**a)).count();
            if missing == 0 {
                break;
            }
            if Instant::now() >= deadline {
                tracing::warn!(job = %self.job.id, missing, "TaskManagers that held finished partitions did not register within {} ms: their work runs again", self.ctx.recovery_timeout_ms);
                break;
            }
            std::thread::sleep(REGISTRATION_POLL);
        }
        // Per data address: the TaskManager and the partitions of this job it holds.
        type Held = (TaskManagerLocation, HashSet<(u32, u32, u32, u32)>);
        let mut held: HashMap<String, Held> = HashMap::new();
        {
            let registry = self.ctx.registry.lock();
            for entry in registry.alive.values() {
                let partitions = entry
                    .held
                    .iter()
                    .filter(|h| h.job == self.job.id)
                    .map(|h| (h.result, h.partition, h.vertex, h.attempt))
                    .collect();
                held.insert(
                    entry.location.data_address.to_string(),
                    (entry.location, partitions),
                );
            }
        }
        let n = graph.num_execution_vertices();
        let mut restored = Vec::new();
        for f in state.finished.values() {
            if f.vertex >= n {
                continue;
            }
            let Some((location, partitions)) = held.get(&f.data_address) else {
                continue;
            };
            let v = ExecutionVertexIndex(f.vertex);
            let kept = graph.produced_partitions(v).all(|p| {
                let t = graph.job_graph().data_set(p.result).result_partition_type;
                if t.is_blocking_or_blocking_persistent() {
                    partitions.contains(&(p.result.0, p.partition, f.vertex, f.attempt))
                } else {
                    // Pipelined: consumed inside the region, which is restored whole or not
                    // at all. Hybrid: read across regions from memory, gone with the leader.
                    t.must_be_pipelined_consumed()
                }
            });
            if kept {
                restored.push(RestoredExecution {
                    vertex: v,
                    attempt: f.attempt,
                    location: *location,
                });
            }
        }
        match self.scheduler.restore_finished(&restored) {
            Ok(vertices) => {
                let at: HashMap<ExecutionVertexIndex, u32> = restored
                    .iter()
                    .map(|r| (r.vertex, r.location.id.0))
                    .collect();
                for v in &vertices {
                    self.deployed_on[v.idx()] = at[v];
                }
                tracing::info!(
                    job = %self.job.id,
                    logged = state.finished.len(),
                    restored = vertices.len(),
                    "finished tasks recovered from the event log"
                );
                vertices.len() as u64
            }
            Err(e) => {
                tracing::warn!(job = %self.job.id, "nothing recovered: {e}");
                0
            }
        }
    }

    /// The event of `v`'s current attempt having finished where its partitions are.
    pub(super) fn logged_finish(
        &self,
        v: ExecutionVertexIndex,
        produced_bytes: Vec<Vec<u64>>,
    ) -> Option<JobEvent> {
        let location = self.scheduler.producer(v).location?;
        Some(JobEvent::TaskFinished(FinishedExecution {
            vertex: v.0,
            attempt: self.scheduler.attempt(v).attempt,
            data_address: location.data_address.to_string(),
            produced_bytes,
        }))
    }

    /// Records in the event log what one scheduler call (with its owed work) changed: the
    /// finish it handled, the vertices initialised and reset.
    pub(super) fn log_call(&mut self, event: &Event, commands: &[Command]) {
        let finished = match event {
            Event::TaskFinished(a) => Some((a.vertex, Vec::new())),
            Event::TaskFinishedWithBytes(a, bytes) => Some((a.vertex, bytes.clone())),
            _ => None,
        };
        let mut events = Vec::new();
        if let Some((vertex, bytes)) = finished {
            let v = ExecutionVertexIndex(vertex);
            if vertex < self.scheduler.graph().num_execution_vertices()
                && self.scheduler.state(v) == conflux_deploy::ExecutionState::Finished
            {
                let bytes = if self.scheduler.is_adaptive() {
                    bytes
                } else {
                    Vec::new()
                };
                events.extend(self.logged_finish(v, bytes));
            }
        }
        for c in commands {
            match c {
                Command::ResetVertices(vertices) => events.push(JobEvent::VerticesReset {
                    vertices: vertices.iter().map(|v| v.0).collect(),
                }),
                Command::JobVertexInitialized {
                    job_vertex,
                    parallelism,
                } => events.push(JobEvent::VertexInitialized {
                    job_vertex: job_vertex.0,
                    parallelism: *parallelism,
                }),
                _ => {}
            }
        }
        if let Some(log) = &mut self.event_log {
            for e in events {
                log.record(e);
            }
        }
    }
}
