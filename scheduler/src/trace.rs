//! The trace digest: FNV-1a over every event handled and command emitted, so two runs can be
//! compared by one number (equal seeds, equal digests).

use conflux_common::Fnv1a64;
use conflux_deploy::ExecutionAttemptId;
use conflux_graph::ExecutionGraph;

use crate::api::{Command, Event, FailureCause};

/// A running digest of a scheduler's events and commands.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TraceDigest {
    hash: Fnv1a64,
}

/// An attempt as one word: vertex in the high half, attempt number in the low half.
fn attempt_word(a: &ExecutionAttemptId) -> u64 {
    (u64::from(a.vertex) << 32) | u64::from(a.attempt)
}

impl TraceDigest {
    pub(crate) fn new() -> TraceDigest {
        TraceDigest {
            hash: Fnv1a64::new(),
        }
    }

    pub(crate) fn digest(&self) -> u64 {
        self.hash.digest()
    }

    fn mix(&mut self, x: u64) {
        self.hash.write_u64_le(x);
    }

    /// Mixes an event with its time: a tag and two words per event (partitions by global index).
    pub(crate) fn mix_event(&mut self, graph: &ExecutionGraph, now_ms: u64, e: &Event) {
        self.mix(now_ms);
        let (tag, a, b) = match e {
            Event::Start => (1, 0, 0),
            Event::TaskManagerRegistered { location, slots } => {
                (2, u64::from(location.id.0), u64::from(*slots))
            }
            Event::TaskManagerLost(tm) => (3, u64::from(tm.0), 0),
            Event::TaskRunning(x) => (4, attempt_word(x), 0),
            Event::TaskFinished(x) => (5, attempt_word(x), 0),
            Event::TaskFinishedWithBytes(x, bytes) => (
                16,
                attempt_word(x),
                bytes
                    .iter()
                    .flatten()
                    .fold(0u64, |sum, &b| sum.wrapping_add(b)),
            ),
            Event::TaskFailed(x, c) => (
                6,
                attempt_word(x),
                match c {
                    FailureCause::Task => 0,
                    FailureCause::TaskManagerLost => 1,
                    FailureCause::PartitionNotFound(p) => {
                        2 + u64::from(graph.partition_index(*p).0)
                    }
                    FailureCause::NonRecoverable => u64::MAX,
                },
            ),
            Event::PartitionsLost(ps) => (7, ps.len() as u64, 0),
            Event::Restart(vs) => (8, vs.len() as u64, vs.first().map_or(0, |v| u64::from(v.0))),
            Event::Tick => (9, 0, 0),
            Event::Cancel => (10, 0, 0),
            Event::CheckSlowTasks => (18, 0, 0),
        };
        self.mix(tag);
        self.mix(a);
        self.mix(b);
    }

    /// Mixes a command.
    pub(crate) fn mix_command(&mut self, c: &Command) {
        match c {
            Command::Deploy { region, tasks } => {
                self.mix(11);
                self.mix(u64::from(region.0));
                for (a, s) in tasks {
                    self.mix(attempt_word(a));
                    self.mix((u64::from(s.task_manager.0) << 32) | u64::from(s.slot));
                }
            }
            Command::Cancel(a) => {
                self.mix(12);
                self.mix(attempt_word(a));
            }
            Command::Restart(vs) | Command::ResetVertices(vs) => {
                self.mix(13);
                for v in vs {
                    self.mix(u64::from(v.0));
                }
            }
            Command::ReleaseGroup { group, partitions } => {
                self.mix(14);
                self.mix(u64::from(group.0));
                self.mix(partitions.len() as u64);
            }
            Command::JobVertexInitialized {
                job_vertex,
                parallelism,
            } => {
                self.mix(17);
                self.mix(u64::from(job_vertex.0));
                self.mix(u64::from(*parallelism));
            }
            Command::DeploySpeculative { tasks } => {
                self.mix(19);
                for (a, s) in tasks {
                    self.mix(attempt_word(a));
                    self.mix((u64::from(s.task_manager.0) << 32) | u64::from(s.slot));
                }
            }
            Command::JobStatus { status, .. } => {
                self.mix(15);
                self.mix(*status as u64);
            }
        }
    }
}
