//! What the handlers share: the settings, the plan store, and the limit on expensive
//! computations, which run on blocking threads so that the async workers stay free for cheap
//! requests such as `/health`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use axum::body::Bytes;
use tokio::sync::Semaphore;

use super::api_error::ApiError;
use super::config::ServiceConfig;
use super::store::{Evicted, Store};

/// The service's shared state.
#[derive(Debug)]
pub(super) struct AppState {
    pub(super) config: ServiceConfig,
    store: Mutex<Store>,
    computations: Arc<Semaphore>,
    next_id: AtomicU64,
    /// The OpenAPI document, serialised once when the router is built.
    pub(super) openapi: OnceLock<Bytes>,
}

impl AppState {
    pub(super) fn new(config: ServiceConfig) -> AppState {
        AppState {
            store: Mutex::new(Store::new(config.max_store_bytes, config.max_plans)),
            computations: Arc::new(Semaphore::new(
                config
                    .max_concurrent_computations
                    .clamp(1, Semaphore::MAX_PERMITS),
            )),
            next_id: AtomicU64::new(1),
            openapi: OnceLock::new(),
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
    /// `max_concurrent_computations` slots is free. The computation keeps its slot until it
    /// ends, also when the request is dropped meanwhile (a client that gives up), so abandoned
    /// work still counts against the limit.
    ///
    /// # Errors
    /// A 500 `bug` when the computation panicked.
    pub(super) async fn compute<T, F>(&self, what: &'static str, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let slot = Arc::clone(&self.computations)
            .acquire_owned()
            .await
            .map_err(|_| ApiError::bug("bug: the computation limit was closed"))?;
        tokio::task::spawn_blocking(move || {
            let result = f();
            drop(slot);
            result
        })
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

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    /// A computation whose request was dropped (a client that gave up) kept running on its
    /// blocking thread but gave its slot back, so abandoned work could exceed the limit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_abandoned_computation_keeps_its_slot_until_it_ends() {
        let state = Arc::new(AppState::new(ServiceConfig {
            max_concurrent_computations: 1,
            ..ServiceConfig::default()
        }));
        let (started, running) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let shared = Arc::clone(&state);
        let request = tokio::spawn(async move {
            shared
                .compute("a test computation", move || {
                    let _ = started.send(());
                    let _ = released.recv();
                })
                .await
        });
        tokio::task::spawn_blocking(move || running.recv())
            .await
            .expect("join")
            .expect("started");
        request.abort();
        assert!(request.await.is_err(), "the request was dropped");
        assert_eq!(state.computations.available_permits(), 0);
        release.send(()).expect("release");
        let mut waited = Duration::ZERO;
        while state.computations.available_permits() == 0 && waited < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(10)).await;
            waited += Duration::from_millis(10);
        }
        assert_eq!(state.computations.available_permits(), 1);
    }
}
