//! What the handlers share: the settings, the plan store, and the limit on expensive
//! computations, which run on blocking threads so that the async workers stay free for cheap
//! requests such as `/health`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::Semaphore;

use super::api_error::ApiError;
use super::config::ServiceConfig;
use super::store::{Evicted, Store};

/// The service's shared state.
#[derive(Debug)]
pub(super) struct AppState {
    pub(super) config: ServiceConfig,
    store: Mutex<Store>,
    computations: Semaphore,
    next_id: AtomicU64,
}

impl AppState {
    pub(super) fn new(config: ServiceConfig) -> AppState {
        AppState {
            store: Mutex::new(Store::new(config.max_store_bytes, config.max_plans)),
            computations: Semaphore::new(config.max_concurrent_computations.max(1)),
            next_id: AtomicU64::new(1),
            config,
        }
    }

    /// The store, locked. Hold it only for bookkeeping: nothing expensive runs under it.
    pub(super) fn store(&self) -> MutexGuard<'_, Store> {
        // A panic while holding the lock cannot leave a plan half-edited (edits are computed
        // outside it and added whole), so a poisoned store is still consistent.
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh plan id: `p1`, `p2`, ...
    pub(super) fn next_id(&self) -> String {
        format!("p{}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Runs an expensive computation on a blocking thread once one of the
    /// `max_concurrent_computations` slots is free.
    ///
    /// # Errors
    /// A 500 `bug` when the computation panicked.
    pub(super) async fn compute<T, F>(&self, what: &'static str, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let _slot = self
            .computations
            .acquire()
            .await
            .map_err(|_| ApiError::bug("bug: the computation limit was closed"))?;
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| ApiError::bug(format!("bug: {what} failed: {e}")))
    }
}

/// Drops evicted plans on a blocking thread: freeing a large plan takes milliseconds.
pub(super) fn release(evicted: Evicted) {
    if !evicted.is_empty() {
        drop(tokio::task::spawn_blocking(move || drop(evicted)));
    }
}
