//! Time sources for TTLs: the system's monotonic clock, or one a test or simulation moves.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A source of milliseconds for transient-blob TTLs (Flink's `blob.service.cleanup.interval`).
///
/// The server and the cache read it on every access, so a [`ManualClock`] makes expiry
/// deterministic: advance it past the TTL and the next access or sweep expires the blob, with no
/// sleeping (the simulator drives it with virtual time).
pub trait Clock: Send + Sync + fmt::Debug {
    /// Milliseconds since an arbitrary origin fixed for this clock; never decreases.
    fn now_ms(&self) -> u64;
}

/// The monotonic system clock ([`Instant`]), counting from its creation.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose origin is now.
    pub fn new() -> SystemClock {
        SystemClock {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> SystemClock {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// A clock that moves only when told to (tests, simulations). Thread-safe.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ms: AtomicU64,
}

impl ManualClock {
    /// A clock that reads `start_ms` until advanced.
    pub fn new(start_ms: u64) -> ManualClock {
        ManualClock {
            now_ms: AtomicU64::new(start_ms),
        }
    }

    /// Moves the clock forward by `ms` milliseconds.
    pub fn advance(&self, ms: u64) {
        self.now_ms.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the clock to `ms` unless it already reads later (a clock never goes back).
    pub fn set(&self, ms: u64) {
        self.now_ms.fetch_max(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}
