//! A cap on open connections that makes room instead of locking clients out: when a new
//! connection finds every slot taken, the open connection that made no progress for the
//! longest time is asked to close, idle ones first; where the server allows it, a busy one that
//! made no progress for a while (a trickling upload) comes next. When none can go, the new
//! connection waits for a slot (and the ones behind it wait in the listen backlog, holding no
//! descriptor of the server).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::Activity;

/// How often a connection waiting for a slot asks again for one to close.
pub const RETRY: Duration = Duration::from_millis(100);

/// The open connections of one server and its slots.
#[derive(Debug)]
pub struct ConnectionCap {
    slots: Arc<Semaphore>,
    max_connections: usize,
    open: Arc<Mutex<Open>>,
    shed_busy_after: Option<Duration>,
}

#[derive(Debug, Default)]
struct Open {
    next_id: u64,
    connections: HashMap<u64, (Arc<Activity>, Arc<Notify>)>,
}

fn lock(open: &Mutex<Open>) -> MutexGuard<'_, Open> {
    // Entries are inserted and removed whole: a poisoned registry is consistent.
    open.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An open connection's slot and its entry in the registry; both are given back when it is
/// dropped.
#[derive(Debug)]
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    open: Arc<Mutex<Open>>,
    id: u64,
    close: Arc<Notify>,
}

impl Slot {
    /// Resolves when the cap asks this connection to close to make room (also when it asked
    /// before this is awaited).
    pub async fn close_requested(&self) {
        self.close.notified().await;
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.open).connections.remove(&self.id);
    }
}

impl ConnectionCap {
    /// At most `max_connections` open at once (at least 1; tokio's semaphore takes at most
    /// [`Semaphore::MAX_PERMITS`]); only idle connections are closed to make room.
    pub fn new(max_connections: usize) -> ConnectionCap {
        let max_connections = max_connections.clamp(1, Semaphore::MAX_PERMITS);
        ConnectionCap {
            slots: Arc::new(Semaphore::new(max_connections)),
            max_connections,
            open: Arc::new(Mutex::new(Open::default())),
            shed_busy_after: None,
        }
    }

    /// Also closes, when no idle connection is left, a busy connection that made no progress
    /// for `after` (a client trickling its upload), oldest progress first.
    pub fn shedding_stalled(mut self, after: Duration) -> ConnectionCap {
        self.shed_busy_after = Some(after);
        self
    }

    /// The cap.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.max_connections - self.slots.available_permits()
    }

    fn register(&self, permit: OwnedSemaphorePermit, activity: Arc<Activity>) -> Slot {
        let close = Arc::new(Notify::new());
        let mut open = lock(&self.open);
        let id = open.next_id;
        open.next_id += 1;
        open.connections.insert(id, (activity, Arc::clone(&close)));
        Slot {
            _permit: permit,
            open: Arc::clone(&self.open),
            id,
            close,
        }
    }

    /// A slot for a new connection doing `activity`. At the cap, the connection that made no
    /// progress for the longest time is asked to close (see [`ConnectionCap`]) and this waits
    /// for its slot; when none can be asked, it asks again every [`RETRY`] (a connection may
    /// have gone idle or stalled meanwhile) until a slot is free.
    pub async fn admit(&self, activity: Arc<Activity>) -> Slot {
        loop {
            if let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() {
                return self.register(permit, activity);
            }
            self.close_least_active();
            tokio::select! {
                permit = Arc::clone(&self.slots).acquire_owned() => {
                    let Ok(permit) = permit else {
                        // The semaphore is never closed; were it, no slot would ever come.
                        return std::future::pending().await;
                    };
                    return self.register(permit, activity);
                }
                () = tokio::time::sleep(RETRY) => {}
            }
        }
    }

    /// Asks the connection that made no progress for the longest time to close: idle ones
    /// first, then (when shedding stalled ones) busy ones without progress for the set time.
    /// Returns whether one was asked. O(open connections).
    pub fn close_least_active(&self) -> bool {
        let mut open = lock(&self.open);
        let idle = open
            .connections
            .iter()
            .filter(|(_, (activity, _))| !activity.is_busy())
            .min_by_key(|(_, (activity, _))| activity.last())
            .map(|(id, _)| *id);
        let victim = idle.or_else(|| {
            let after = self.shed_busy_after?;
            open.connections
                .iter()
                .filter(|(_, (activity, _))| activity.last().elapsed() >= after)
                .min_by_key(|(_, (activity, _))| activity.last())
                .map(|(id, _)| *id)
        });
        match victim.and_then(|id| open.connections.remove(&id)) {
            Some((_, close)) => {
                close.notify_one();
                true
            }
            None => false,
        }
    }

    /// Waits until every connection has given its slot back (for a shutdown).
    pub async fn all_closed(&self) {
        let all = u32::try_from(self.max_connections).unwrap_or(u32::MAX);
        let _ = self.slots.acquire_many(all).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Busy;

    #[tokio::test]
    async fn the_least_active_idle_connection_makes_room_first() {
        let cap = ConnectionCap::new(3);
        let (old, busy, new) = (
            Arc::new(Activity::new()),
            Arc::new(Activity::new()),
            Arc::new(Activity::new()),
        );
        let old_slot = cap.admit(Arc::clone(&old)).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        let _busy_slot = cap.admit(Arc::clone(&busy)).await;
        let _working = Busy::begin(&busy);
        let new_slot = cap.admit(Arc::clone(&new)).await;
        new.touch();
        assert_eq!(cap.open(), 3);
        let fourth = tokio::spawn({
            let cap = Arc::new(cap);
            async move {
                let slot = cap.admit(Arc::new(Activity::new())).await;
                (cap, slot)
            }
        });
        // The oldest idle connection is asked, not the busy one nor the newer one.
        tokio::time::timeout(Duration::from_secs(5), old_slot.close_requested())
            .await
            .expect("the oldest idle connection is asked to close");
        drop(old_slot);
        let (cap, _fourth) = tokio::time::timeout(Duration::from_secs(5), fourth)
            .await
            .expect("admitted")
            .expect("no panic");
        assert_eq!(cap.open(), 3);
        // Busy connections are not shed without `shedding_stalled`.
        drop(new_slot);
        assert_eq!(cap.open(), 2);
    }

    #[tokio::test]
    async fn a_stalled_busy_connection_is_shed_only_when_asked() {
        let activity = Arc::new(Activity::new());
        let _working = Busy::begin(&activity);
        let strict = ConnectionCap::new(1);
        let _slot = strict.admit(Arc::clone(&activity)).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!strict.close_least_active(), "a busy connection stays");

        let shedding = ConnectionCap::new(1).shedding_stalled(Duration::from_millis(10));
        let slot = shedding.admit(Arc::clone(&activity)).await;
        activity.touch();
        assert!(
            !shedding.close_least_active(),
            "progress within the last 10 ms protects it"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(shedding.close_least_active());
        tokio::time::timeout(Duration::from_secs(1), slot.close_requested())
            .await
            .expect("asked to close");
    }
}
