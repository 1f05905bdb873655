//! Bounded handler calls: the work a call owes beyond its budget, and how continuation calls
//! finish it.
//!
//! A call's region work is the one place where a single event can cost O(N): the last source
//! of an N x N blocking job makes N consumer regions schedulable at once, and each must be
//! chosen, scheduled, given a slot and deployed. That work comes at the end of a call, in a
//! fixed order: the scheduling strategy's run (when it is the last thing the event does), then
//! the end of the call (serve the slot queue, deploy the complete requests in region order).
//! Each step costs work units weighted by what it costs (`cost`), a region's steps by its
//! members, against [`SchedulerConfig::work_budget`];
//! when the budget is spent the rest is kept here and [`Scheduler::continue_work`] does the next
//! budget's worth. No event is applied while work is owed, so the steps see exactly the state
//! the single unbounded call would have seen, and the commands, concatenated, are the same.
//!
//! [`SchedulerConfig::work_budget`]: crate::SchedulerConfig::work_budget

use conflux_deploy::{ExecutionAttemptId, ExecutionState};
use conflux_graph::PipelinedRegionIndex;

use crate::api::{Command, JobStatus, SchedulerError};
use crate::scheduler::Scheduler;
use crate::scheduling_strategy::sort_unless_ascending;
use crate::slot_pool::NO_REQUEST;
use crate::work_budget::{cost, Budget, FinishRun};

impl Scheduler {
    /// Whether the last call left work owed: schedulable regions not yet scheduled, a slot queue
    /// not yet served, or complete requests not yet deployed. While it is true the driver calls
    /// [`continue_work`](Self::continue_work), at the same virtual time, before its next event.
    pub fn has_pending_work(&self) -> bool {
        self.pending_reset.is_some()
            || self.pending_schedule.is_some()
            || self.pending_finish.is_some()
    }

    /// Does the next [`work_budget`](crate::SchedulerConfig::work_budget) of owed work and
    /// returns the commands it causes, which continue those of the previous call: concatenated,
    /// the commands of [`handle`](Self::handle) and its continuations are the commands one
    /// unbounded call would have returned, and the trace digest is the same. It runs at the
    /// virtual time of the call that left the work (no timers fire) and does nothing when no work
    /// is owed.
    ///
    /// A driver calls it until [`has_pending_work`](Self::has_pending_work) is false before it
    /// hands the scheduler its next event; [`handle`](Self::handle) with work still owed first
    /// finishes that work, whole (the result is the same, only the call is no longer bounded).
    ///
    /// # Errors
    /// [`SchedulerError::RegionNotCreated`], a bug (as from [`handle`](Self::handle)).
    pub fn continue_work(&mut self) -> Result<Vec<Command>, SchedulerError> {
        let mut budget = Budget::new(self.config.work_budget);
        self.run_owed(&mut budget)?;
        Ok(self.take_commands())
    }

    /// Does owed work within `budget`: a restart's reset first, then the scheduling run, then
    /// the end of the call.
    pub(crate) fn run_owed(&mut self, budget: &mut Budget) -> Result<(), SchedulerError> {
        if let Some(mut run) = self.pending_reset.take() {
            if !self.step_reset(&mut run, budget) {
                self.pending_reset = Some(run);
                return Ok(());
            }
            self.pending_schedule = self.reset_done(run, budget);
        }
        if let Some(mut run) = self.pending_schedule.take() {
            if !self.step_schedule(&mut run, budget)? {
                self.pending_schedule = Some(run);
                return Ok(());
            }
        }
        if let Some(mut finish) = self.pending_finish.take() {
            if !self.step_finish(&mut finish, budget) {
                self.pending_finish = Some(finish);
            }
        }
        Ok(())
    }

    /// Advances the end of a call within `budget`; true when it is complete. Serves the slot
    /// queue once (after every cancellation of the call), then emits one deploy command per
    /// request whose slots are all assigned, in region (topological) order. Flink deploys a
    /// request only when every slot of it is there.
    fn step_finish(&mut self, finish: &mut FinishRun, budget: &mut Budget) -> bool {
        loop {
            match finish {
                FinishRun::Start => {
                    *finish = if self.slots.take_dirty() && self.status == JobStatus::Running {
                        FinishRun::Serve
                    } else {
                        self.deploy_phase(budget)
                    };
                }
                FinishRun::Serve => {
                    if budget.exhausted() {
                        return false;
                    }
                    let mut waiting = std::mem::take(&mut self.served);
                    match self.slots.serve_next(&mut waiting) {
                        None => *finish = self.deploy_phase(budget),
                        Some(None) => budget.spend(cost::LOOK),
                        Some(Some(allocation)) => {
                            budget.spend(cost::SERVE + cost::LOOK * waiting.len());
                            for &v in &waiting {
                                self.assign(v, allocation);
                            }
                        }
                    }
                    self.served = waiting;
                }
                FinishRun::Deploy { ready, pos } => {
                    while *pos < ready.len() {
                        if budget.exhausted() {
                            return false;
                        }
                        let r = ready[*pos];
                        *pos += 1;
                        budget.spend(cost::DEPLOY * self.regions.member_indices(r).len());
                        self.deploy_region(r);
                    }
                    return true;
                }
            }
        }
    }

    /// The deploy phase over the requests complete now, sorted (they became complete in
    /// request order, mostly ascending already).
    fn deploy_phase(&mut self, budget: &mut Budget) -> FinishRun {
        let mut ready = std::mem::take(&mut self.ready_requests);
        sort_unless_ascending(&mut ready, budget);
        FinishRun::Deploy { ready, pos: 0 }
    }

    /// Deploys a complete request: its members become DEPLOYING, one command for the region.
    fn deploy_region(&mut self, r: PipelinedRegionIndex) {
        // Cancelled since it became ready.
        if self.missing_slots[r] != 0 {
            return;
        }
        self.missing_slots[r] = NO_REQUEST;
        let regions = std::sync::Arc::clone(&self.regions);
        let mut tasks = Vec::with_capacity(regions.member_indices(r).len());
        for v in regions.members(r) {
            self.set_state(v, ExecutionState::Deploying);
            self.speculative_deployed(v);
            if let Some(allocation) = self.allocation[v] {
                tasks.push((
                    ExecutionAttemptId {
                        vertex: v.0,
                        attempt: self.attempt[v],
                    },
                    allocation,
                ));
            }
        }
        self.out.push(Command::Deploy { region: r, tasks });
    }

    /// Mixes the commands not yet in the trace digest (they precede whatever comes next).
    pub(crate) fn mix_out(&mut self) {
        for c in &self.out[self.mixed..] {
            self.trace.mix_command(c);
        }
        self.mixed = self.out.len();
    }

    /// The commands of this call, each mixed into the trace digest once.
    pub(crate) fn take_commands(&mut self) -> Vec<Command> {
        self.mix_out();
        self.mixed = 0;
        std::mem::take(&mut self.out)
    }
}
