//! Asynchronous cancellation of an aborted checkpoint's uploads (FLINK-8871: aborts reach the
//! tasks, which stop the asynchronous part of the snapshot instead of flooding the store with
//! stale uploads).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::handle::CheckpointId;

#[derive(Debug, Default)]
struct State {
    aborted: BTreeSet<CheckpointId>,
    /// Every checkpoint up to this id is finished (subsumed): refused like an aborted one, and
    /// no longer listed in `aborted`, which so stays small.
    floor: Option<CheckpointId>,
}

/// A shared switch board of aborted checkpoints. Clones share state: the task thread that
/// receives the abort notification calls [`Canceller::abort`] while uploads of that checkpoint,
/// awaiting [`Canceller::cancelled`], stop at once.
#[derive(Clone, Debug, Default)]
pub struct Canceller {
    state: Arc<Mutex<State>>,
    notify: Arc<Notify>,
}

impl Canceller {
    /// A board with nothing aborted.
    pub fn new() -> Canceller {
        Canceller::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding this lock leaves a consistent set: keep using it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks `checkpoint` aborted and wakes every upload waiting on it.
    pub fn abort(&self, checkpoint: CheckpointId) {
        let mut state = self.lock();
        if state.floor.is_none_or(|f| checkpoint > f) {
            state.aborted.insert(checkpoint);
        }
        drop(state);
        self.notify.notify_waiters();
    }

    /// Every checkpoint up to `checkpoint` is over (subsumed): later writes for them are refused.
    pub fn finish_up_to(&self, checkpoint: CheckpointId) {
        let mut state = self.lock();
        if state.floor.is_none_or(|f| checkpoint > f) {
            state.floor = Some(checkpoint);
        }
        state.aborted.retain(|c| *c > checkpoint);
    }

    /// Whether uploads of `checkpoint` must stop.
    pub fn is_aborted(&self, checkpoint: CheckpointId) -> bool {
        let state = self.lock();
        state.floor.is_some_and(|f| checkpoint <= f) || state.aborted.contains(&checkpoint)
    }

    /// Completes when `checkpoint` is aborted.
    pub async fn cancelled(&self, checkpoint: CheckpointId) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Register interest before checking, so an abort in between is not missed.
            notified.as_mut().enable();
            if self.is_aborted(checkpoint) {
                return;
            }
            notified.await;
        }
    }
}
