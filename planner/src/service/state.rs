//! The service's in-memory store: plans with their versions, and per version the statistics
//! computed once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::body::Bytes;

use super::config::ServiceConfig;
use crate::versions::VersionedPlan;

/// Statistics and regions of one version, serialised once.
#[derive(Debug)]
pub(super) struct Cached {
    /// `GET /plans/{id}/stats`.
    pub(super) stats: Bytes,
    /// `GET /plans/{id}/regions`.
    pub(super) regions: Bytes,
}

/// A stored plan and its cached statistics by version number.
#[derive(Debug)]
pub(super) struct Stored {
    pub(super) plan: VersionedPlan,
    pub(super) cache: HashMap<u32, Arc<Cached>>,
}

/// What the handlers share.
#[derive(Debug)]
pub(super) struct AppState {
    pub(super) config: ServiceConfig,
    plans: Mutex<HashMap<String, Stored>>,
    next_id: Mutex<u64>,
}

impl AppState {
    pub(super) fn new(config: ServiceConfig) -> AppState {
        AppState {
            config,
            plans: Mutex::new(HashMap::new()),
            next_id: Mutex::new(1),
        }
    }

    /// The plans, locked.
    pub(super) fn plans(&self) -> MutexGuard<'_, HashMap<String, Stored>> {
        // A panic while holding the lock cannot leave a plan half-edited (edits build a new
        // version before pushing it), so a poisoned map is still consistent.
        self.plans.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh plan id: `p1`, `p2`, ...
    pub(super) fn next_id(&self) -> String {
        let mut next = self.next_id.lock().unwrap_or_else(PoisonError::into_inner);
        let id = format!("p{}", *next);
        *next += 1;
        id
    }
}
