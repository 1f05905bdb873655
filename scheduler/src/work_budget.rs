//! The budget of a handler call and the resumable runs of region work it leaves owed
//! ([`ResetRun`], [`ScheduleRun`], [`FinishRun`]), with the weights of their steps ([`cost`]).
//! Plain state, below the scheduler that holds it and the continuation (`continuation.rs`) that
//! advances it.

use conflux_graph::{ConsumedPartitionGroupId, ExecutionVertexIndex, PipelinedRegionIndex};

/// Work units of one step, weighted by what the step costs (measured per unit on the 100k x
/// 100k word count in a release build: listing a consumer subtask or looking at a candidate
/// about 5 ns, a slot request about 220 ns per vertex, serving a shared slot about 250 ns,
/// deploying about 100 ns per vertex), so that a call's time follows its budget whichever
/// steps it does.
pub(crate) mod cost {
    /// A consumer subtask listed, a candidate region looked at, a member of a chosen region.
    pub(crate) const LOOK: usize = 1;
    /// A member of a region scheduled (its state and slot request).
    pub(crate) const SCHEDULE: usize = 32;
    /// A shared slot served (plus [`LOOK`] per vertex given the slot).
    pub(crate) const SERVE: usize = 32;
    /// A member of a region deployed.
    pub(crate) const DEPLOY: usize = 16;
    /// A vertex of a restart looked at and reset for a new attempt.
    pub(crate) const RESET: usize = 32;
}

/// A restart's reset (Flink's `resetForNewExecution` of each vertex), resumable; the
/// scheduling of the reset regions follows it.
#[derive(Debug)]
pub(crate) struct ResetRun {
    /// The virtual time of the call that started it.
    pub(crate) now_ms: u64,
    /// The vertices to reset, each at the attempt the failover saw.
    pub(crate) vertices: Vec<(ExecutionVertexIndex, u32)>,
    /// The next to look at.
    pub(crate) pos: usize,
    /// Those reset so far.
    pub(crate) reset: Vec<ExecutionVertexIndex>,
    /// Their regions, in order of their first vertex reset, without adjacent repeats.
    pub(crate) regions: Vec<PipelinedRegionIndex>,
}

impl ResetRun {
    /// A reset of `vertices`.
    pub(crate) fn new(vertices: Vec<(ExecutionVertexIndex, u32)>, now_ms: u64) -> ResetRun {
        ResetRun {
            now_ms,
            vertices,
            pos: 0,
            reset: Vec::new(),
            regions: Vec::new(),
        }
    }
}

/// What one call may still spend, in work units ([`cost`]).
#[derive(Debug)]
pub(crate) struct Budget {
    left: u64,
}

impl Budget {
    /// A call's budget (0 behaves as 1: every call makes progress).
    pub(crate) fn new(units: u32) -> Budget {
        Budget {
            left: u64::from(units.max(1)),
        }
    }

    /// No bound: the work is done whole.
    pub(crate) fn unlimited() -> Budget {
        Budget { left: u64::MAX }
    }

    /// Whether nothing is left: the next step waits for a continuation call.
    pub(crate) fn exhausted(&self) -> bool {
        self.left == 0
    }

    /// Charges `units` of work (a step already begun is finished, whatever it costs).
    pub(crate) fn spend(&mut self, units: usize) {
        self.left = self.left.saturating_sub(units as u64);
    }
}

/// One run of the scheduling strategy (Flink's `maybeScheduleRegions`), resumable: the rounds
/// of candidates, then the chosen regions scheduled in topological order.
#[derive(Debug)]
pub(crate) struct ScheduleRun {
    /// The virtual time of the call that started the run (slot request checks count from it).
    pub(crate) now_ms: u64,
    /// Groups that became consumable, whose consumer regions are the first round's candidates
    /// (listed before the first round, one consumer subtask at a time).
    pub(crate) expand: Vec<ConsumedPartitionGroupId>,
    /// The group of `expand` being listed.
    pub(crate) expand_pos: usize,
    /// The next consumer subtask of that group to look at (`None`: its first).
    pub(crate) subtask: Option<u32>,
    /// The region last added from that group (consecutive subtasks of one region add it once).
    pub(crate) last: Option<PipelinedRegionIndex>,
    /// The current round's candidates (sorted and de-duplicated once the round is open).
    pub(crate) candidates: Vec<PipelinedRegionIndex>,
    /// The next candidate of the round, or the next chosen region to schedule.
    pub(crate) pos: usize,
    /// Whether the current round has begun (its stamp taken, its candidates sorted).
    pub(crate) round_open: bool,
    /// Candidates of the next round.
    pub(crate) next: Vec<PipelinedRegionIndex>,
    /// Regions chosen so far (sorted once the choice is over).
    pub(crate) chosen: Vec<PipelinedRegionIndex>,
    /// Whether the choice is over and the chosen regions are being scheduled.
    pub(crate) scheduling: bool,
}

impl ScheduleRun {
    /// A run over the first round's candidates.
    pub(crate) fn of_regions(candidates: Vec<PipelinedRegionIndex>, now_ms: u64) -> ScheduleRun {
        ScheduleRun::new(candidates, Vec::new(), now_ms)
    }

    /// A run whose first round's candidates are the consumer regions of `groups` (Flink's
    /// `partitionGroupConsumerRegions` of each, in order).
    pub(crate) fn of_groups(groups: Vec<ConsumedPartitionGroupId>, now_ms: u64) -> ScheduleRun {
        ScheduleRun::new(Vec::new(), groups, now_ms)
    }

    fn new(
        candidates: Vec<PipelinedRegionIndex>,
        expand: Vec<ConsumedPartitionGroupId>,
        now_ms: u64,
    ) -> ScheduleRun {
        ScheduleRun {
            now_ms,
            expand,
            expand_pos: 0,
            subtask: None,
            last: None,
            candidates,
            pos: 0,
            round_open: false,
            next: Vec::new(),
            chosen: Vec::new(),
            scheduling: false,
        }
    }
}

/// The end of a call, resumable: serve the slot queue once, then deploy every complete request
/// in region (topological) order.
#[derive(Debug)]
pub(crate) enum FinishRun {
    /// Not begun: whether the queue needs serving is decided when it begins (after the
    /// scheduling run, as at the end of an unbounded call).
    Start,
    /// Serving the slot queue, one shared slot at a time.
    Serve,
    /// Deploying the complete requests, sorted; `pos` is the next.
    Deploy {
        /// Regions whose requests were complete when serving ended.
        ready: Vec<PipelinedRegionIndex>,
        /// The next to deploy.
        pos: usize,
    },
}
