//! Slots: the TaskManagers' offered slots, slot sharing, and the pending requests of scheduled
//! regions (Flink's `DeclarativeSlotPool` with `SlotSharingExecutionSlotAllocator`, reduced to
//! what a deterministic core needs).
//!
//! Subtask `i` of every vertex of one slot sharing group shares one slot (Flink's
//! `ExecutionSlotSharingGroup`). A shared slot waiting for a physical slot is queued first come
//! first served, with a deadline (`slot.request.timeout`). A region's deploy request is complete
//! when every member has a slot; the region deploys at the end of the call.

use std::collections::{BTreeSet, HashMap, VecDeque};

use conflux_deploy::{AllocationId, ExecutionState, TaskManagerId, TaskManagerLocation};
use conflux_graph::{ExecutionGraph, ExecutionVertexIndex, IndexVec};

use crate::scheduler::Scheduler;

/// `missing_slots` of a region without an open request.
pub(crate) const NO_REQUEST: u32 = u32::MAX;

/// A shared slot's key: (slot sharing group index, subtask index).
type SharingKey = (u32, u32);

/// One execution slot sharing group instance.
#[derive(Debug, Default)]
struct SharedSlot {
    allocation: Option<AllocationId>,
    /// Vertices holding this slot.
    users: u32,
    /// Vertices waiting for the physical slot.
    waiting: Vec<ExecutionVertexIndex>,
    /// Whether it is in the queue.
    queued: bool,
}

/// The slots of the registered TaskManagers and the shared slots built on them.
#[derive(Debug)]
pub(crate) struct SlotPool {
    task_managers: HashMap<TaskManagerId, (TaskManagerLocation, u32)>,
    /// Free physical slots as (TaskManager, slot), lowest first.
    free: BTreeSet<(u32, u32)>,
    /// Per vertex, its slot sharing group (numbered by first appearance in the job graph).
    sharing_group_of: IndexVec<ExecutionVertexIndex, u32>,
    shared: HashMap<SharingKey, SharedSlot>,
    /// Shared slots waiting for a physical slot, with their deadlines (virtual ms).
    queue: VecDeque<(SharingKey, u64)>,
    /// Slots were freed or requested during the current call; the queue is served at its end,
    /// after cancellations and failovers, so that no slot goes to a task about to be cancelled.
    dirty: bool,
}

impl SlotPool {
    /// An empty pool for a graph's vertices. O(N).
    pub(crate) fn new(graph: &ExecutionGraph) -> SlotPool {
        let mut names: Vec<&str> = Vec::new();
        let mut sharing_group_of = IndexVec::with_capacity(graph.num_execution_vertices() as usize);
        for v in graph.job_graph().vertices() {
            let index = match names.iter().position(|s| *s == v.slot_sharing_group) {
                Some(i) => i,
                None => {
                    names.push(&v.slot_sharing_group);
                    names.len() - 1
                }
            };
            for _ in 0..v.parallelism {
                sharing_group_of.push(conflux_graph::index_u32(index));
            }
        }
        SlotPool {
            task_managers: HashMap::new(),
            free: BTreeSet::new(),
            sharing_group_of,
            shared: HashMap::new(),
            queue: VecDeque::new(),
            dirty: false,
        }
    }

    /// A TaskManager offers `slots` slots.
    pub(crate) fn register(&mut self, location: TaskManagerLocation, slots: u32) {
        self.task_managers.insert(location.id, (location, slots));
        for s in 0..slots {
            self.free.insert((location.id.0, s));
        }
        self.dirty = true;
    }

    /// Whether a TaskManager is registered.
    pub(crate) fn is_registered(&self, tm: TaskManagerId) -> bool {
        self.task_managers.contains_key(&tm)
    }

    /// Forgets a lost TaskManager: its free slots go, and shared slots on it lose their
    /// physical slot (their users are failed by the caller).
    pub(crate) fn remove_task_manager(&mut self, tm: TaskManagerId) {
        self.task_managers.remove(&tm);
        self.free.retain(|&(t, _)| t != tm.0);
        for shared in self.shared.values_mut() {
            if shared.allocation.is_some_and(|a| a.task_manager == tm) {
                shared.allocation = None;
                shared.users = 0;
            }
        }
        self.dirty = true;
    }

    /// The deadline of the oldest waiting request, virtual ms.
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.queue.front().map(|(_, deadline)| *deadline)
    }

    /// Why the job must fail, when the oldest waiting request passed its deadline at `now_ms`.
    pub(crate) fn timed_out(&self, now_ms: u64, timeout_ms: u64) -> Option<String> {
        let &(key, deadline) = self.queue.front()?;
        if deadline > now_ms {
            return None;
        }
        let waiting = self.shared.get(&key).map_or(0, |s| s.waiting.len());
        let slots: u32 = self.task_managers.values().map(|(_, s)| *s).sum();
        Some(format!(
            "could not acquire a slot within {} ms ({} task(s) waiting for slot sharing group {} subtask {}; {} TaskManager(s) with {} slot(s) in all)",
            timeout_ms,
            waiting,
            key.0,
            key.1,
            self.task_managers.len(),
            slots
        ))
    }

    /// Whether slots were freed or requested since the last call; clears the flag.
    pub(crate) fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Drops every shared slot and waiting request (the job ended).
    pub(crate) fn clear_requests(&mut self) {
        self.shared.clear();
        self.queue.clear();
    }

    /// Heap bytes of the per-vertex array (the maps grow with the slots in use, not with the
    /// graph, and are left out).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.sharing_group_of.capacity() * std::mem::size_of::<u32>()
    }

    fn sharing_key(&self, graph: &ExecutionGraph, v: ExecutionVertexIndex) -> SharingKey {
        (
            self.sharing_group_of[v],
            graph.execution_vertex_id(v).subtask,
        )
    }

    fn location(&self, tm: TaskManagerId) -> Option<TaskManagerLocation> {
        self.task_managers.get(&tm).map(|(l, _)| *l)
    }
}

impl Scheduler {
    /// Requests the shared slot of `v`: assigned at once when its sharing group instance already
    /// holds a physical slot, else queued.
    pub(crate) fn request_slot(&mut self, v: ExecutionVertexIndex, now_ms: u64) {
        let key = self.slots.sharing_key(&self.graph, v);
        let shared = self.slots.shared.entry(key).or_default();
        if let Some(allocation) = shared.allocation {
            shared.users += 1;
            self.assign(v, allocation);
            return;
        }
        shared.waiting.push(v);
        if !shared.queued {
            shared.queued = true;
            let deadline = now_ms.saturating_add(self.config.slot_request_timeout_ms);
            self.slots.queue.push_back((key, deadline));
            self.slots.dirty = true;
        }
    }

    /// Gives `v` its slot; a region whose request is now complete is ready to deploy.
    fn assign(&mut self, v: ExecutionVertexIndex, allocation: AllocationId) {
        self.allocation[v] = Some(allocation);
        self.location[v] = self.slots.location(allocation.task_manager);
        let r = self.regions.region_of(v);
        if self.missing_slots[r] != NO_REQUEST && self.state[v] == ExecutionState::Scheduled {
            self.missing_slots[r] -= 1;
            if self.missing_slots[r] == 0 {
                self.ready_requests.push(r);
            }
        }
    }

    /// Gives free slots to waiting shared slots, first come first served.
    pub(crate) fn serve_slot_queue(&mut self) {
        while let Some(&(key, _)) = self.slots.queue.front() {
            let Some(&(tm, slot)) = self.slots.free.iter().next() else {
                break;
            };
            self.slots.queue.pop_front();
            let Some(shared) = self.slots.shared.get_mut(&key) else {
                continue;
            };
            shared.queued = false;
            if shared.waiting.is_empty() {
                continue;
            }
            self.slots.free.remove(&(tm, slot));
            let allocation = AllocationId {
                task_manager: TaskManagerId(tm),
                slot,
            };
            shared.allocation = Some(allocation);
            let waiting = std::mem::take(&mut shared.waiting);
            shared.users += conflux_graph::index_u32(waiting.len());
            for v in waiting {
                self.assign(v, allocation);
            }
        }
    }

    /// Returns a vertex's logical slot; the physical slot goes back to the pool when no subtask
    /// of its sharing group uses or waits for it.
    pub(crate) fn release_slot(&mut self, v: ExecutionVertexIndex) {
        let key = self.slots.sharing_key(&self.graph, v);
        let had = self.allocation[v].take();
        let pool = &mut self.slots;
        let Some(shared) = pool.shared.get_mut(&key) else {
            return;
        };
        if had.is_some() && shared.allocation == had {
            shared.users = shared.users.saturating_sub(1);
        } else {
            shared.waiting.retain(|&w| w != v);
        }
        if shared.users == 0 && shared.waiting.is_empty() {
            if let Some(allocation) = shared.allocation.take() {
                if pool.task_managers.contains_key(&allocation.task_manager) {
                    pool.free
                        .insert((allocation.task_manager.0, allocation.slot));
                }
            }
            if !shared.queued {
                pool.shared.remove(&key);
            }
            pool.dirty = true;
        }
    }

    /// Closes the open request of `v`'s region (a member failed or was cancelled before it
    /// deployed).
    pub(crate) fn cancel_request(&mut self, v: ExecutionVertexIndex) {
        let r = self.regions.region_of(v);
        self.missing_slots[r] = NO_REQUEST;
    }
}
