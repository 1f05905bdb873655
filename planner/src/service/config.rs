//! Settings of the planning service.

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use crate::stats::StatsConfig;

/// Settings of the service. Every bound has a default that keeps one service within a few GiB
/// and a few dozen descriptors whatever its clients do.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// Where to listen; port 0 picks a free port. Default `127.0.0.1:8088` (loopback only).
    pub address: SocketAddr,
    /// Largest request body accepted, in bytes (default 16 MiB); larger bodies get 413.
    pub max_body_bytes: usize,
    /// Most plans kept (default 1,000); submitting more gets 507.
    pub max_plans: usize,
    /// Memory budget of the stored plans, their versions and their cached statistics, in bytes
    /// of (estimated) heap (default 1 GiB). When a new plan, version or statistics would go
    /// above it, the least recently used other plans are evicted (they answer 404 afterwards);
    /// what does not fit even alone gets 507 `over_memory_budget` naming the budget.
    pub max_store_bytes: usize,
    /// Most expensive computations at once: parsing and validating a submitted plan, edits,
    /// statistics, diffs, compatibility analyses, compiled-plan edits and whole-plan answers
    /// (default: the number of CPUs). They run on blocking threads; requests beyond the limit
    /// wait for a slot. Identical statistics requests share one computation.
    pub max_concurrent_computations: usize,
    /// Longest time a connection may take to send a request's headers, counted from when the
    /// service starts waiting for them (a new connection, or the previous answer sent), in
    /// hyper's sense (default 10 s). Slow or silent clients are disconnected.
    pub header_read_timeout: Duration,
    /// A connection that moves no byte for this long while none of its requests is being
    /// handled is closed (default 30 s): idle keep-alive connections, and clients that stop
    /// reading their answer.
    pub idle_timeout: Duration,
    /// Most open connections (default 64). A new connection beyond it closes the open one
    /// that moved no byte for the longest time and handles no request; when all handle
    /// requests, it waits (holding one more descriptor) and the connections behind it wait in
    /// the listen backlog, holding none of the service's.
    pub max_connections: usize,
    /// Settings of the statistics.
    pub stats: StatsConfig,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            address: SocketAddr::from(([127, 0, 0, 1], 8088)),
            max_body_bytes: 16 << 20,
            max_plans: 1000,
            max_store_bytes: 1 << 30,
            max_concurrent_computations: std::thread::available_parallelism()
                .map_or(2, NonZeroUsize::get),
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            max_connections: 64,
            stats: StatsConfig::default(),
        }
    }
}
