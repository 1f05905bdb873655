//! What a driver's views need beyond commands: every execution state change, in order, and the
//! slots of each TaskManager. A REST view keeps per-vertex counts from the changes in O(1)
//! each instead of walking every vertex.

use conflux_deploy::ExecutionState;
use conflux_graph::ExecutionVertexIndex;

use crate::api::{StateTransition, TaskManagerSlots};
use crate::scheduler::Scheduler;

impl Scheduler {
    /// Sets a vertex's state, logging the change when a driver records them.
    pub(crate) fn set_state(&mut self, v: ExecutionVertexIndex, state: ExecutionState) {
        self.state[v] = state;
        if let Some(log) = &mut self.transitions {
            log.push(StateTransition { vertex: v, state });
        }
    }

    /// From now on, records every execution state change for
    /// [`take_transitions`](Self::take_transitions). Changes nothing else: commands and the
    /// trace digest are the same with or without it. Memory: one entry per change until taken
    /// (a driver takes them after each call; one call changes at most O(N) states, when a job is
    /// cancelled or fully restarted).
    pub fn record_transitions(&mut self) {
        self.transitions.get_or_insert_with(Vec::new);
    }

    /// The state changes since the last call, in order, into `out` (cleared first); nothing
    /// unless [`record_transitions`](Self::record_transitions) was called. Swaps buffers, so a
    /// driver that passes the same vector back allocates nothing in the steady state.
    pub fn take_transitions(&mut self, out: &mut Vec<StateTransition>) {
        out.clear();
        if let Some(log) = &mut self.transitions {
            std::mem::swap(log, out);
        }
    }

    /// The registered TaskManagers' slots, in no particular order. O(TaskManagers).
    pub fn task_manager_slots(&self) -> Vec<TaskManagerSlots> {
        self.slots.task_manager_slots()
    }
}
