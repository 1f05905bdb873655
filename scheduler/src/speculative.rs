//! Speculative execution of slow tasks in batch jobs, as Flink 1.20's `SpeculativeScheduler`
//! with its `DefaultSpeculativeExecutionHandler` and `ExecutionTimeBasedSlowTaskDetector`.
//!
//! On each [`Event::CheckSlowTasks`](crate::Event::CheckSlowTasks) the detector
//! (`speculative/detector.rs`) finds the slow attempts; the TaskManagers they run on are
//! blocked for `block-slow-node-duration` (`speculative/blocklist.rs`: no new slots from them,
//! for any task; with a duration of 0 nothing is blocked), and each slow execution vertex gets
//! speculative attempts up to `max-concurrent-executions`, each in a free slot of its own on a
//! TaskManager that is not blocked, as Flink's slot allocation serves them: the TaskManager of
//! the slow attempt itself when it is not blocked and has the first free slot. The first
//! attempt of a vertex to finish wins: it
//! becomes the vertex's current attempt, so consumers' descriptors name its partitions and its
//! TaskManager, and every other attempt is cancelled. An attempt that fails while another
//! attempt of its vertex still runs does not fail the vertex (if it was the current one, the
//! oldest speculative attempt takes its place) but counts with the restart strategy, which may
//! fail the job; only a partition-not-found failure, or the failure of the last running
//! attempt, goes to failover, as in Flink.
//!
//! Differences from Flink, each for a reason:
//! - Only vertices whose pipelined region is the vertex alone speculate (Flink speculates only
//!   with blocking exchanges too; here the rule is per vertex, so a batch job with some
//!   pipelined edges still speculates elsewhere). Streaming jobs never speculate.
//! - A speculative attempt is placed only when a free slot is there at the check; otherwise the
//!   next check tries again (Flink queues its slot request). So speculative attempts never take
//!   a slot a waiting region asked for first.
//! - The original attempt keeps its shared slot (slot sharing as configured); speculative
//!   attempts share with nobody (Flink drops slot sharing altogether when speculating).
//! - Execution times are weighed by input bytes only for tasks of vertices decided at run time
//!   (adaptive batch), which know them; other tasks compare times alone, Flink's case of
//!   unknown bytes (see `speculative/detector.rs`).
//!
//! This file is the component: its state ([`SpeculativeState`]), the detector, the blocklist and
//! the options, none of which knows the scheduler. The scheduler's hooks that drive it are
//! `speculative_scheduler.rs`.
//!
//! Off (the default), none of this state exists and no code path changes: the trace digests are
//! those of a scheduler without the feature.

pub(crate) mod blocklist;
pub(crate) mod detector;
pub(crate) mod options;

use std::collections::{BTreeMap, HashMap, HashSet};

use conflux_deploy::{AllocationId, TaskManagerLocation};
use conflux_graph::{ExecutionVertexIndex, IndexVec, JobType};

pub use options::{SpeculativeExecutionOptions, SpeculativeOptionsError};

use blocklist::Blocklist;

/// `deployed_at` of a vertex whose current attempt has not deployed.
pub(crate) const NOT_DEPLOYED: u64 = u64::MAX;

/// What speculative execution did in a run (Flink reports the winners as
/// `numEffectiveSpeculativeExecutions`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SpeculativeStats {
    /// Speculative attempts deployed.
    pub started: u64,
    /// Vertices finished by a speculative attempt (it won its race, or it carried on after the
    /// original failed).
    pub won: u64,
    /// Speculative attempts cancelled: another attempt of their vertex finished first, their
    /// vertex was restarted by a failover, or the job ended.
    pub cancelled: u64,
    /// Speculative attempts that failed (their TaskManager lost included).
    pub failed: u64,
}

/// A speculative attempt that runs beside its vertex's current attempt.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SpeculativeAttempt {
    pub(crate) attempt: u32,
    pub(crate) allocation: AllocationId,
    pub(crate) location: TaskManagerLocation,
    pub(crate) deployed_at: u64,
    pub(crate) running: bool,
}

/// The scheduler's speculative execution state; it exists only when the feature is on.
#[derive(Debug)]
pub(crate) struct SpeculativeState {
    pub(crate) options: SpeculativeExecutionOptions,
    /// Per vertex, when its current attempt deployed, virtual ms ([`NOT_DEPLOYED`] before).
    pub(crate) deployed_at: IndexVec<ExecutionVertexIndex, u64>,
    /// Per vertex, how long its finishing attempt ran, ms (meaningful while FINISHED).
    pub(crate) execution_ms: IndexVec<ExecutionVertexIndex, u64>,
    /// The speculative attempts running beside each vertex's current attempt (ordered, so
    /// that every walk over them is deterministic).
    pub(crate) attempts: BTreeMap<ExecutionVertexIndex, Vec<SpeculativeAttempt>>,
    /// The highest attempt number issued, per vertex that ever had a speculative attempt: a
    /// restart continues above it, so a late report of a cancelled attempt is never taken for
    /// the new one.
    pub(crate) issued: HashMap<ExecutionVertexIndex, u32>,
    /// Vertices whose current attempt is a former speculative one, in a slot of its own.
    pub(crate) own_slot: HashSet<ExecutionVertexIndex>,
    pub(crate) blocklist: Blocklist,
    pub(crate) stats: SpeculativeStats,
}

impl SpeculativeState {
    /// The state for `n` execution vertices when `options` enable speculation in a batch job;
    /// `None` otherwise. O(N).
    pub(crate) fn new(
        options: SpeculativeExecutionOptions,
        job_type: JobType,
        n: usize,
    ) -> Option<Box<SpeculativeState>> {
        (options.enabled && job_type == JobType::Batch).then(|| {
            Box::new(SpeculativeState {
                options,
                deployed_at: IndexVec::from_elem(NOT_DEPLOYED, n),
                execution_ms: IndexVec::from_elem(0, n),
                attempts: BTreeMap::new(),
                issued: HashMap::new(),
                own_slot: HashSet::new(),
                blocklist: Blocklist::default(),
                stats: SpeculativeStats::default(),
            })
        })
    }

    /// Heap bytes of the per-vertex arrays (the maps grow with the speculating vertices).
    pub(crate) fn heap_bytes(&self) -> usize {
        (self.deployed_at.capacity() + self.execution_ms.capacity()) * std::mem::size_of::<u64>()
    }

    // The per-vertex arrays are read and written through these, which treat a vertex beyond
    // them as not deployed and grow them on a write: a graph initialised vertex by vertex
    // appends execution vertices after the scheduler was built.

    /// When `v`'s current attempt deployed ([`NOT_DEPLOYED`] before).
    pub(crate) fn deployed_at(&self, v: ExecutionVertexIndex) -> u64 {
        self.deployed_at.get(v).copied().unwrap_or(NOT_DEPLOYED)
    }

    pub(crate) fn set_deployed_at(&mut self, v: ExecutionVertexIndex, at: u64) {
        while self.deployed_at.len() <= v.idx() {
            self.deployed_at.push(NOT_DEPLOYED);
        }
        self.deployed_at[v] = at;
    }

    /// How long `v`'s finishing attempt ran, ms.
    pub(crate) fn execution_ms(&self, v: ExecutionVertexIndex) -> u64 {
        self.execution_ms.get(v).copied().unwrap_or(0)
    }

    pub(crate) fn set_execution_ms(&mut self, v: ExecutionVertexIndex, ms: u64) {
        while self.execution_ms.len() <= v.idx() {
            self.execution_ms.push(0);
        }
        self.execution_ms[v] = ms;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vertices initialised after the scheduler was built (a graph grown vertex by vertex) read
    /// as not deployed and are added on a write.
    #[test]
    fn the_per_vertex_times_grow_with_the_graph() {
        let options = SpeculativeExecutionOptions {
            enabled: true,
            ..SpeculativeExecutionOptions::default()
        };
        assert!(SpeculativeState::new(options, JobType::Streaming, 2).is_none());
        let off = SpeculativeExecutionOptions::default();
        assert!(SpeculativeState::new(off, JobType::Batch, 2).is_none());
        let mut s = SpeculativeState::new(options, JobType::Batch, 2).expect("on");
        let (v1, v5) = (ExecutionVertexIndex(1), ExecutionVertexIndex(5));
        assert_eq!(s.deployed_at(v5), NOT_DEPLOYED);
        assert_eq!(s.execution_ms(v5), 0);
        s.set_deployed_at(v5, 7);
        s.set_execution_ms(v5, 1_500);
        s.set_deployed_at(v1, 3);
        assert_eq!((s.deployed_at(v1), s.deployed_at(v5)), (3, 7));
        assert_eq!(s.deployed_at(ExecutionVertexIndex(4)), NOT_DEPLOYED);
        assert_eq!(s.execution_ms(v5), 1_500);
    }
}
