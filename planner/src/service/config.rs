//! Settings of the planning service.

use std::net::SocketAddr;

use crate::stats::StatsConfig;

/// Settings of the service.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// Where to listen; port 0 picks a free port. Default `127.0.0.1:8088` (loopback only).
    pub address: SocketAddr,
    /// Largest request body accepted, in bytes (default 16 MiB); larger bodies get 413.
    pub max_body_bytes: usize,
    /// Most plans kept (default 1,000); submitting more gets 507.
    pub max_plans: usize,
    /// Settings of the statistics.
    pub stats: StatsConfig,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            address: SocketAddr::from(([127, 0, 0, 1], 8088)),
            max_body_bytes: 16 << 20,
            max_plans: 1000,
            stats: StatsConfig::default(),
        }
    }
}
