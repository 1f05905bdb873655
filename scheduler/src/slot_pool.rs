//! Slots: the TaskManagers' offered slots, slot sharing, and the pending requests of scheduled
//! regions (Flink's `DeclarativeSlotPool` with `SlotSharingExecutionSlotAllocator`, reduced to
//! what a deterministic core needs).
//!
//! Subtask `i` of every vertex of one slot sharing group shares one slot (Flink's
//! `ExecutionSlotSharingGroup`). A shared slot waiting for a physical slot is queued first come
//! first served. A region's deploy request is complete when every member has a slot; the region
//! deploys at the end of the call.
//!
//! A request waits as long as it could ever be served: as Flink 1.20's
//! `PhysicalSlotRequestBulkCheckerImpl`, each open request (a bulk) is checked every
//! `slot.request.timeout` from its creation, and fails the job only when it has been
//! unfulfillable for that long. A bulk is fulfillable when its pending slots fit into the slots
//! that can ever be free for it: in a batch job every registered slot except those the bulk
//! already holds (slots in use by other regions free up when they finish); in a streaming job
//! only the free ones (running streaming tasks occupy their slots indefinitely).

use std::collections::{BTreeSet, HashMap, HashSet};

use conflux_deploy::{AllocationId, TaskManagerId, TaskManagerLocation};
use conflux_graph::{ExecutionGraph, ExecutionVertexIndex, IndexVec, PipelinedRegionIndex};

use crate::chunked_queue::ChunkedQueue;

/// `missing_slots` of a region without an open request.
pub(crate) const NO_REQUEST: u32 = u32::MAX;

/// A shared slot's key: (slot sharing group index, subtask index).
pub(crate) type SharingKey = (u32, u32);

/// The end of a list of waiting vertices (and no vertex).
const NONE: u32 = u32::MAX;

/// Heap bytes of one shared slot (one per subtask of each slot sharing group).
#[cfg(test)]
pub(crate) const SHARED_SLOT_BYTES: usize = std::mem::size_of::<SharedSlot>();

/// One execution slot sharing group instance. Stored flat, one per (slot sharing group,
/// subtask), whether in use or not: `present` tells an instance in use (requested and not yet
/// given back) from one that is not, as the map of instances in use did before.
#[derive(Clone, Copy, Debug)]
struct SharedSlot {
    allocation: Option<AllocationId>,
    /// Vertices holding this slot.
    users: u32,
    /// Vertices waiting for the physical slot, first come first: the first and the last of a
    /// list linked through [`SlotPool::next_waiting`] ([`NONE`]: nobody waits).
    first_waiting: u32,
    last_waiting: u32,
    /// Whether it is in the queue.
    queued: bool,
    /// Whether it is in use (see the type's docs).
    present: bool,
}

impl SharedSlot {
    /// An instance not in use.
    const ABSENT: SharedSlot = SharedSlot {
        allocation: None,
        users: 0,
        first_waiting: NONE,
        last_waiting: NONE,
        queued: false,
        present: false,
    };

    fn nobody_waits(&self) -> bool {
        self.first_waiting == NONE
    }
}

/// A registered TaskManager: where it is (an index into [`SlotPool`]'s locations) and its slots.
#[derive(Clone, Copy, Debug)]
struct Registered {
    location: u32,
    slots: u32,
}

/// A map keyed by TaskManager ids, which the runtime assigns (no adversary picks them), hashed
/// with FNV-1a: SipHash's cost showed in every slot given back.
type IdMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<conflux_common::Fnv1a64>>;

/// A scheduled timeout check of one region's open slot request (Flink's
/// `PhysicalSlotRequestBulkWithTimestamp`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BulkCheck {
    /// When the check runs, virtual ms.
    pub(crate) due_ms: u64,
    /// The region whose request it checks.
    pub(crate) region: PipelinedRegionIndex,
    /// The request it checks (a region's request is opened anew after each restart).
    pub(crate) request: u32,
    /// Since when the request has been unfulfillable (`None`: fulfillable at the last check).
    /// A new request counts as unfulfillable from its creation, as in Flink.
    pub(crate) unfulfillable_since: Option<u64>,
}

/// The slots of the registered TaskManagers and the shared slots built on them.
#[derive(Debug)]
pub(crate) struct SlotPool {
    task_managers: IdMap<TaskManagerId, Registered>,
    /// Every location a TaskManager registered with, in order (append-only, so that a vertex
    /// keeps its location as an index after its TaskManager is gone).
    locations: Vec<TaskManagerLocation>,
    /// Free physical slots, lowest first: as (TaskManager, slot), so that TaskManagers fill up
    /// one after the other; or, spread out, as (slot, TaskManager), so that each TaskManager
    /// gives its first slot before any gives its second (see [`free_key`](Self::free_key)).
    free: BTreeSet<(u32, u32)>,
    /// Whether slots are spread out over the TaskManagers (Flink's
    /// `cluster.evenly-spread-out-slots`).
    spread: bool,
    /// Per vertex, its slot sharing group (numbered by first appearance in the job graph).
    sharing_group_of: IndexVec<ExecutionVertexIndex, u32>,
    /// Per slot sharing group, per subtask, its shared slot.
    shared: Vec<Vec<SharedSlot>>,
    /// Per vertex waiting for a shared slot, the next to wait for the same one ([`NONE`]: the
    /// last).
    next_waiting: IndexVec<ExecutionVertexIndex, u32>,
    /// Shared slots waiting for a physical slot, first come first served (in chunks: a
    /// million requests in one run never copy it).
    queue: ChunkedQueue<SharingKey>,
    /// Timeout checks of open requests, in due order (each is re-queued `slot.request.timeout`
    /// after it ran, so appending keeps the order; in chunks, as `queue`).
    bulk_checks: ChunkedQueue<BulkCheck>,
    /// Slots were freed or requested during the current call; the queue is served at its end,
    /// after cancellations and failovers, so that no slot goes to a task about to be cancelled.
    dirty: bool,
    /// TaskManagers that give no new slots (slow nodes blocked by speculative execution;
    /// always empty without it).
    blocked: HashSet<u32>,
    /// The free slots of blocked TaskManagers, keyed as `free`, kept out of it so that giving
    /// out a slot never walks past them.
    parked: BTreeSet<(u32, u32)>,
    /// Per registered TaskManager, its slots in `free` and `parked`.
    free_count: HashMap<TaskManagerId, u32>,
}

impl SlotPool {
    /// An empty pool for a graph's vertices; `spread`: take free slots round the TaskManagers
    /// rather than filling one after the other. O(N).
    pub(crate) fn new(graph: &ExecutionGraph, spread: bool) -> SlotPool {
        let mut names: Vec<&str> = Vec::new();
        // Per slot sharing group its largest parallelism: the shared slots it can ever have.
        let mut widths: Vec<u32> = Vec::new();
        let mut sharing_group_of = IndexVec::with_capacity(graph.num_execution_vertices() as usize);
        let job = graph.job_graph();
        for j in job.vertex_indices() {
            let (v, group) = (job.vertex(j), job.slot_sharing_group(j));
            let index = match names.iter().position(|s| *s == group) {
                Some(i) => i,
                None => {
                    names.push(group);
                    widths.push(0);
                    names.len() - 1
                }
            };
            widths[index] = widths[index].max(v.parallelism);
            // Vertices of a dynamic graph not yet initialised have no subtasks yet
            // ([`extend`](Self::extend) adds them).
            for _ in 0..graph.parallelism_of(j) {
                sharing_group_of.push(conflux_graph::index_u32(index));
            }
        }
        let n = sharing_group_of.len();
        SlotPool {
            task_managers: IdMap::default(),
            locations: Vec::new(),
            free: BTreeSet::new(),
            spread,
            sharing_group_of,
            // Sized for every shared slot at once: growing it while a call requests 100,000
            // slots would copy it inside that call.
            shared: widths
                .iter()
                .map(|&w| vec![SharedSlot::ABSENT; w as usize])
                .collect(),
            next_waiting: IndexVec::from_elem(NONE, n),
            queue: ChunkedQueue::new(),
            bulk_checks: ChunkedQueue::new(),
            dirty: false,
            blocked: HashSet::new(),
            parked: BTreeSet::new(),
            free_count: HashMap::new(),
        }
    }

    /// Adds the subtasks of a job vertex initialised at run time (adaptive batch), which come
    /// after every vertex the pool knows. O(V) to find its slot sharing group's number (groups
    /// are numbered by first appearance, as in [`new`](Self::new)) plus its subtasks.
    pub(crate) fn extend(
        &mut self,
        graph: &ExecutionGraph,
        job_vertex: conflux_graph::JobVertexIndex,
    ) {
        let job = graph.job_graph();
        let group = job.slot_sharing_group(job_vertex);
        let mut names: Vec<&str> = Vec::new();
        for j in job.vertex_indices() {
            let name = job.slot_sharing_group(j);
            if name == group {
                break;
            }
            if !names.contains(&name) {
                names.push(name);
            }
        }
        let index = conflux_graph::index_u32(names.len());
        let parallelism = graph.parallelism_of(job_vertex);
        for _ in 0..parallelism {
            self.sharing_group_of.push(index);
            self.next_waiting.push(NONE);
        }
        // Its shared slots, all at once (not while a later call requests them).
        if self.shared.len() <= index as usize {
            self.shared.resize_with(index as usize + 1, Vec::new);
        }
        let group = &mut self.shared[index as usize];
        if group.len() < parallelism as usize {
            group.resize(parallelism as usize, SharedSlot::ABSENT);
        }
    }

    /// The key of a free slot in `free`: (TaskManager, slot), or spread out (slot, TaskManager).
    fn free_key(&self, tm: u32, slot: u32) -> (u32, u32) {
        if self.spread {
            (slot, tm)
        } else {
            (tm, slot)
        }
    }

    /// A TaskManager offers `slots` slots.
    pub(crate) fn register(&mut self, location: TaskManagerLocation, slots: u32) {
        let index = conflux_graph::index_u32(self.locations.len());
        self.locations.push(location);
        self.task_managers.insert(
            location.id,
            Registered {
                location: index,
                slots,
            },
        );
        self.free_count.insert(location.id, slots);
        for s in 0..slots {
            self.free.insert(self.free_key(location.id.0, s));
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
        self.free_count.remove(&tm);
        let spread = self.spread;
        self.free
            .retain(|&(a, b)| (if spread { b } else { a }) != tm.0);
        self.parked
            .retain(|&(a, b)| (if spread { b } else { a }) != tm.0);
        self.blocked.remove(&tm.0);
        for shared in self.shared.iter_mut().flatten() {
            if shared.present && shared.allocation.is_some_and(|a| a.task_manager == tm) {
                shared.allocation = None;
                shared.users = 0;
            }
        }
        self.dirty = true;
    }

    /// When the next bulk check is due, virtual ms.
    pub(crate) fn next_check_due(&self) -> Option<u64> {
        self.bulk_checks.front().map(|c| c.due_ms)
    }

    /// The next check due at `now_ms`, if any.
    pub(crate) fn pop_due_check(&mut self, now_ms: u64) -> Option<BulkCheck> {
        if self.bulk_checks.front()?.due_ms > now_ms {
            return None;
        }
        self.bulk_checks.pop_front()
    }

    /// Schedules a check (due no earlier than every queued one).
    pub(crate) fn push_check(&mut self, check: BulkCheck) {
        debug_assert!(self
            .bulk_checks
            .back()
            .is_none_or(|c| c.due_ms <= check.due_ms));
        self.bulk_checks.push_back(check);
    }

    /// Slots offered by the registered TaskManagers, in use or free.
    pub(crate) fn total_slots(&self) -> u64 {
        self.task_managers
            .values()
            .map(|r| u64::from(r.slots))
            .sum()
    }

    /// Free physical slots.
    pub(crate) fn free_slots(&self) -> u64 {
        self.free.len() as u64
    }

    /// One more (`freed`) or one fewer free slot on `tm`.
    fn count_free(&mut self, tm: u32, freed: bool) {
        if let Some(n) = self.free_count.get_mut(&TaskManagerId(tm)) {
            *n = if freed { *n + 1 } else { n.saturating_sub(1) };
        }
    }

    /// Each registered TaskManager's slots and free slots. O(TaskManagers).
    pub(crate) fn task_manager_slots(&self) -> Vec<crate::api::TaskManagerSlots> {
        self.task_managers
            .iter()
            .map(|(id, registered)| crate::api::TaskManagerSlots {
                task_manager: *id,
                slots: registered.slots,
                free: self.free_count.get(id).copied().unwrap_or(0),
            })
            .collect()
    }

    /// Registered TaskManagers.
    pub(crate) fn task_manager_count(&self) -> usize {
        self.task_managers.len()
    }

    /// Whether slots were freed or requested since the last call; clears the flag.
    pub(crate) fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Drops every shared slot, waiting request and check (the job ended).
    pub(crate) fn clear_requests(&mut self) {
        for group in &mut self.shared {
            group.fill(SharedSlot::ABSENT);
        }
        self.next_waiting.fill(NONE);
        self.queue.clear();
        self.bulk_checks.clear();
    }

    /// Heap bytes of the per-vertex arrays and the shared slots (the free slots and locations
    /// grow with the TaskManagers, not with the graph, and are left out).
    pub(crate) fn heap_bytes(&self) -> usize {
        (self.sharing_group_of.capacity() + self.next_waiting.capacity())
            * std::mem::size_of::<u32>()
            + self
                .shared
                .iter()
                .map(|g| g.capacity() * std::mem::size_of::<SharedSlot>())
                .sum::<usize>()
    }

    /// The shared slot of `key`, made (not in use) if the group has no such subtask yet.
    fn shared_mut(&mut self, (group, subtask): SharingKey) -> &mut SharedSlot {
        let (g, s) = (group as usize, subtask as usize);
        if self.shared.len() <= g {
            self.shared.resize_with(g + 1, Vec::new);
        }
        let slots = &mut self.shared[g];
        if slots.len() <= s {
            slots.resize(s + 1, SharedSlot::ABSENT);
        }
        &mut slots[s]
    }

    /// The shared slot of `key` if it is in use.
    fn present_mut(&mut self, (group, subtask): SharingKey) -> Option<&mut SharedSlot> {
        self.shared
            .get_mut(group as usize)?
            .get_mut(subtask as usize)
            .filter(|s| s.present)
    }

    /// At most the heap bytes one waiting subtask takes in the request structures: its shared
    /// slot in the flat per-group array (one per subtask, whether in use or not), its link in
    /// the per-vertex waiting list and its place in `queue` (doubled for growth). When no slot is
    /// free, every subtask of the scheduled regions waits: N of them at `Start` for a job of
    /// source regions only.
    pub(crate) const fn waiting_slot_bytes_bound() -> usize {
        use std::mem::size_of;
        size_of::<SharedSlot>() + size_of::<u32>() + 2 * size_of::<SharingKey>()
    }

    /// At most the heap bytes one open region request's timeout check takes (doubled for the
    /// queue's growth).
    pub(crate) const fn bulk_check_bytes_bound() -> usize {
        2 * std::mem::size_of::<BulkCheck>()
    }

    /// The heap bytes the two queues (`queue`, `bulk_checks`) take beyond their entries, at
    /// most: each allocates whole chunks of [`CHUNK`](crate::chunked_queue::CHUNK) entries, a
    /// partly filled last one and a drained spare, however few entries it holds (a job of one
    /// region still has a chunk of bulk checks).
    pub(crate) const fn queue_chunk_bytes_bound() -> usize {
        use std::mem::size_of;
        2 * crate::chunked_queue::CHUNK * (size_of::<SharingKey>() + size_of::<BulkCheck>())
    }

    /// Requests the shared slot of `v`: its physical slot when the sharing group instance
    /// already holds one (one more user), else `v` waits and the instance is queued.
    pub(crate) fn request(
        &mut self,
        graph: &ExecutionGraph,
        v: ExecutionVertexIndex,
    ) -> Option<AllocationId> {
        let key = self.sharing_key(graph, v);
        let shared = self.shared_mut(key);
        shared.present = true;
        if let Some(allocation) = shared.allocation {
            shared.users += 1;
            return Some(allocation);
        }
        let last = std::mem::replace(&mut shared.last_waiting, v.0);
        if last == NONE {
            shared.first_waiting = v.0;
        }
        let newly_queued = !std::mem::replace(&mut shared.queued, true);
        if last != NONE {
            self.next_waiting[ExecutionVertexIndex(last)] = v.0;
        }
        if newly_queued {
            self.queue.push_back(key);
            self.dirty = true;
        }
        None
    }

    /// Gives a free slot to the first queued shared slot (first come first served). `None`: the
    /// queue is empty or no slot is free; `Some(None)`: the first entry was stale (its shared
    /// slot is gone or nobody waits any more) and was dropped; else the slot given, and the
    /// vertices that waited for it, in the order they came, replace `waiting`'s content.
    /// Calling it until `None` serves the whole queue; nothing else changes the pool in between,
    /// so serving it in several calls gives the same slots.
    pub(crate) fn serve_next(
        &mut self,
        waiting: &mut Vec<ExecutionVertexIndex>,
    ) -> Option<Option<AllocationId>> {
        let &key = self.queue.front()?;
        let &free = self.free.first()?;
        self.queue.pop_front();
        let spread = self.spread;
        let Some(shared) = self.present_mut(key) else {
            return Some(None);
        };
        shared.queued = false;
        if shared.nobody_waits() {
            return Some(None);
        }
        let (a, b) = free;
        let (tm, slot) = if spread { (b, a) } else { (a, b) };
        let allocation = AllocationId {
            task_manager: TaskManagerId(tm),
            slot,
        };
        shared.allocation = Some(allocation);
        let mut next = std::mem::replace(&mut shared.first_waiting, NONE);
        shared.last_waiting = NONE;
        waiting.clear();
        while next != NONE {
            let v = ExecutionVertexIndex(next);
            waiting.push(v);
            next = std::mem::replace(&mut self.next_waiting[v], NONE);
        }
        let shared = self.shared_mut(key);
        shared.users += conflux_graph::index_u32(waiting.len());
        self.free.remove(&free);
        self.count_free(tm, false);
        Some(Some(allocation))
    }

    /// Takes `v` out of the waiting list of `key`'s shared slot, if it is there.
    fn stop_waiting(&mut self, key: SharingKey, v: ExecutionVertexIndex) {
        let shared = self.shared_mut(key);
        let (mut previous, mut at) = (NONE, shared.first_waiting);
        while at != NONE && at != v.0 {
            previous = at;
            at = self.next_waiting[ExecutionVertexIndex(at)];
        }
        if at == NONE {
            return;
        }
        let next = std::mem::replace(&mut self.next_waiting[v], NONE);
        if previous == NONE {
            self.shared_mut(key).first_waiting = next;
        } else {
            self.next_waiting[ExecutionVertexIndex(previous)] = next;
        }
        let shared = self.shared_mut(key);
        if shared.last_waiting == v.0 {
            shared.last_waiting = previous;
        }
    }

    /// `v` gives up its logical slot (`had`: the physical slot it held, if any); the physical
    /// slot goes back to the free slots when no subtask of its sharing group uses or waits for
    /// it.
    pub(crate) fn release(
        &mut self,
        graph: &ExecutionGraph,
        v: ExecutionVertexIndex,
        had: Option<AllocationId>,
    ) {
        let key = self.sharing_key(graph, v);
        let Some(shared) = self.present_mut(key) else {
            return;
        };
        if had.is_some() && shared.allocation == had {
            shared.users = shared.users.saturating_sub(1);
        } else {
            self.stop_waiting(key, v);
        }
        let shared = self.shared_mut(key);
        if shared.users == 0 && shared.nobody_waits() {
            let queued = shared.queued;
            let allocation = shared.allocation.take();
            if !queued {
                *shared = SharedSlot::ABSENT;
            }
            if let Some(allocation) = allocation {
                if self.task_managers.contains_key(&allocation.task_manager) {
                    let (tm, slot) = (allocation.task_manager.0, allocation.slot);
                    self.insert_free(tm, slot);
                }
            }
            self.dirty = true;
        }
    }

    /// The shared slot `v` uses: (its slot sharing group, its subtask index).
    pub(crate) fn sharing_key(
        &self,
        graph: &ExecutionGraph,
        v: ExecutionVertexIndex,
    ) -> SharingKey {
        (
            self.sharing_group_of[v],
            graph.execution_vertex_id(v).subtask,
        )
    }

    /// Where a registered TaskManager is.
    pub(crate) fn location(&self, tm: TaskManagerId) -> Option<TaskManagerLocation> {
        self.location_index(tm).map(|i| self.locations[i as usize])
    }

    /// The index of a registered TaskManager's location (see [`location_at`](Self::location_at)).
    pub(crate) fn location_index(&self, tm: TaskManagerId) -> Option<u32> {
        self.task_managers.get(&tm).map(|r| r.location)
    }

    /// A location by its index: every index handed out stays valid.
    pub(crate) fn location_at(&self, index: u32) -> TaskManagerLocation {
        self.locations[index as usize]
    }

    /// The index of `location`: its TaskManager's current one if equal, else a new entry.
    pub(crate) fn intern_location(&mut self, location: TaskManagerLocation) -> u32 {
        match self.location_index(location.id) {
            Some(i) if self.locations[i as usize] == location => i,
            _ => {
                self.locations.push(location);
                conflux_graph::index_u32(self.locations.len() - 1)
            }
        }
    }
}

/// Speculative execution's side of the pool: blocked TaskManagers and the slots of speculative
/// attempts, which share with nobody (Flink gives them slots of their own).
impl SlotPool {
    /// A slot becomes free: parked while its TaskManager is blocked.
    fn insert_free(&mut self, tm: u32, slot: u32) {
        self.count_free(tm, true);
        let key = self.free_key(tm, slot);
        if self.blocked.contains(&tm) {
            self.parked.insert(key);
        } else {
            self.free.insert(key);
        }
    }

    /// Blocks or unblocks a TaskManager: while blocked, its free slots are parked and none is
    /// given out. Unblocking marks the pool for serving at the end of the call. O(free slots)
    /// when a TaskManager becomes blocked (its slots are found among the free ones), O(parked)
    /// when it is unblocked; nothing when its state does not change.
    pub(crate) fn set_blocked(&mut self, tm: TaskManagerId, blocked: bool) {
        let spread = self.spread;
        let of_tm = |&(a, b): &(u32, u32)| (if spread { b } else { a }) == tm.0;
        if blocked {
            if !self.blocked.insert(tm.0) {
                return;
            }
            let moved: Vec<(u32, u32)> = self.free.iter().filter(|k| of_tm(k)).copied().collect();
            for k in moved {
                self.free.remove(&k);
                self.parked.insert(k);
            }
        } else if self.blocked.remove(&tm.0) {
            let moved: Vec<(u32, u32)> = self.parked.iter().filter(|k| of_tm(k)).copied().collect();
            for k in moved {
                self.parked.remove(&k);
                self.free.insert(k);
            }
            self.dirty = true;
        }
    }

    /// Takes the lowest free slot (of a TaskManager that is not blocked), for a speculative
    /// attempt; `None` when there is none. The slot is shared with nobody;
    /// [`return_slot`](Self::return_slot) gives it back. O(log free slots).
    pub(crate) fn take_free_slot(&mut self) -> Option<AllocationId> {
        let key = self.free.pop_first()?;
        let (tm, slot) = if self.spread { (key.1, key.0) } else { key };
        self.count_free(tm, false);
        Some(AllocationId {
            task_manager: TaskManagerId(tm),
            slot,
        })
    }

    /// Gives back a slot [`take_free_slot`](Self::take_free_slot) handed out (dropped if its
    /// TaskManager is gone).
    pub(crate) fn return_slot(&mut self, allocation: AllocationId) {
        if self.task_managers.contains_key(&allocation.task_manager) {
            self.insert_free(allocation.task_manager.0, allocation.slot);
            self.dirty = true;
        }
    }
}
