//! Slot assignment: how the scheduler's vertices get, share and return the slot pool's slots,
//! and how its open requests are checked (Flink's `SlotSharingExecutionSlotAllocator` and
//! `PhysicalSlotRequestBulkCheckerImpl` over the pool of `slot_pool.rs`).

use conflux_deploy::{AllocationId, ExecutionState};
use conflux_graph::{ExecutionVertexIndex, JobType, PipelinedRegionIndex};

use crate::scheduler::Scheduler;
use crate::slot_pool::{BulkCheck, NO_REQUEST};

impl Scheduler {
    /// Requests the shared slot of `v`: assigned at once when its sharing group instance already
    /// holds a physical slot, else queued.
    pub(crate) fn request_slot(&mut self, v: ExecutionVertexIndex) {
        if let Some(allocation) = self.slots.request(&self.graph, v) {
            self.assign(v, allocation);
        }
    }

    /// Opens the slot request of a region whose members just requested their slots: unless it
    /// is complete already, its bulk check is scheduled `slot.request.timeout` from now.
    pub(crate) fn open_request(&mut self, region: PipelinedRegionIndex, now_ms: u64) {
        self.request_epoch[region] = self.request_epoch[region].wrapping_add(1);
        if self.missing_slots[region] == 0 {
            return;
        }
        self.slots.push_check(BulkCheck {
            due_ms: now_ms.saturating_add(self.config.slot_request_timeout_ms),
            region,
            request: self.request_epoch[region],
            unfulfillable_since: Some(now_ms),
        });
    }

    /// Runs the bulk checks due at `now_ms`. Returns the regions whose request has been
    /// unfulfillable for `slot.request.timeout`, each with why (Flink's
    /// `PhysicalSlotRequestBulkCheckerImpl` cancels such a bulk, failing its tasks with
    /// `NoResourceAvailableException`); their checks end.
    pub(crate) fn check_slot_requests(
        &mut self,
        now_ms: u64,
    ) -> Vec<(PipelinedRegionIndex, String)> {
        let timeout = self.config.slot_request_timeout_ms;
        let mut timed_out = Vec::new();
        while let Some(mut check) = self.slots.pop_due_check(now_ms) {
            let r = check.region;
            if check.request != self.request_epoch[r]
                || self.missing_slots[r] == NO_REQUEST
                || self.missing_slots[r] == 0
            {
                continue; // deployed or cancelled since
            }
            let (pending, held) = self.bulk_slots(r);
            if pending == 0 {
                continue;
            }
            let reusable = match self.graph.job_graph().job_type() {
                JobType::Batch => self.slots.total_slots().saturating_sub(held),
                JobType::Streaming => self.slots.free_slots(),
            };
            if pending <= reusable {
                check.unfulfillable_since = None;
            } else {
                let since = *check.unfulfillable_since.get_or_insert(now_ms);
                if since.saturating_add(timeout) <= now_ms {
                    timed_out.push((
                        r,
                        format!(
                            "could not acquire a slot within {timeout} ms: region {} needs {pending} more slot(s) and at most {reusable} can ever be free for it ({} TaskManager(s) with {} slot(s) in all)",
                            r.0,
                            self.slots.task_manager_count(),
                            self.slots.total_slots()
                        ),
                    ));
                    continue;
                }
            }
            check.due_ms = now_ms.saturating_add(timeout);
            self.slots.push_check(check);
        }
        timed_out
    }

    /// The member of a timed-out region whose failure stands for the bulk's: the first one still
    /// waiting in the request (Flink fails every task of the bulk; the first failure's failover
    /// restarts the region and cancels the others, whose failures are then stale).
    pub(crate) fn timed_out_member(
        &self,
        region: PipelinedRegionIndex,
    ) -> Option<ExecutionVertexIndex> {
        if self.missing_slots[region] == NO_REQUEST {
            return None;
        }
        self.regions
            .members(region)
            .find(|&v| self.state[v] == ExecutionState::Scheduled)
    }

    /// The physical slots a region's open request still waits for and those it holds, each
    /// counted once per shared slot. O(region size).
    fn bulk_slots(&self, region: PipelinedRegionIndex) -> (u64, u64) {
        let mut pending = Vec::new();
        let mut held = Vec::new();
        for v in self.regions.members(region) {
            if self.state[v] != ExecutionState::Scheduled {
                continue;
            }
            match self.allocation[v] {
                Some(a) => held.push((a.task_manager.0, a.slot)),
                None => pending.push(self.slots.sharing_key(&self.graph, v)),
            }
        }
        pending.sort_unstable();
        pending.dedup();
        held.sort_unstable();
        held.dedup();
        (pending.len() as u64, held.len() as u64)
    }

    /// Gives `v` its slot; a region whose request is now complete is ready to deploy.
    pub(crate) fn assign(&mut self, v: ExecutionVertexIndex, allocation: AllocationId) {
        self.allocation[v] = Some(allocation);
        self.location[v] = self
            .slots
            .location_index(allocation.task_manager)
            .unwrap_or(crate::scheduler::NO_LOCATION);
        let r = self.regions.region_of(v);
        if self.missing_slots[r] != NO_REQUEST && self.state[v] == ExecutionState::Scheduled {
            self.missing_slots[r] -= 1;
            if self.missing_slots[r] == 0 {
                self.ready_requests.push(r);
            }
        }
    }

    /// Returns a vertex's logical slot; the physical slot goes back to the pool when no subtask
    /// of its sharing group uses or waits for it.
    pub(crate) fn release_slot(&mut self, v: ExecutionVertexIndex) {
        let had = self.allocation[v].take();
        if self.release_own_slot(v, had) {
            return;
        }
        self.slots.release(&self.graph, v, had);
    }

    /// Closes the open request of `v`'s region (a member failed or was cancelled before it
    /// deployed).
    pub(crate) fn cancel_request(&mut self, v: ExecutionVertexIndex) {
        let r = self.regions.region_of(v);
        self.missing_slots[r] = NO_REQUEST;
    }
}
