//! The server's counters and their snapshot, [`ServerStats`].

use std::sync::atomic::{AtomicU64, Ordering};

/// Event counters, updated without locks.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) puts: AtomicU64,
    pub(super) gets: AtomicU64,
    pub(super) deletes: AtomicU64,
    pub(super) bytes_received: AtomicU64,
    pub(super) bytes_served: AtomicU64,
    pub(super) durable_fetches: AtomicU64,
    pub(super) digest_mismatches: AtomicU64,
    pub(super) expired: AtomicU64,
    pub(super) rejected: AtomicU64,
    /// Connections open now (a gauge).
    pub(super) open_connections: AtomicU64,
}

/// Adds `by` to `counter`.
pub(super) fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

/// Counters of a [`BlobServer`](crate::BlobServer) since it started, and what it holds now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Successful stores (HTTP PUT and [`BlobWriter::put_permanent`](crate::BlobWriter::put_permanent)), new content or not.
    pub puts: u64,
    /// Read requests (HTTP GET and local reads), found or not.
    pub gets: u64,
    /// Delete requests (one reference each).
    pub deletes: u64,
    /// Bytes of content stored by successful puts.
    pub bytes_received: u64,
    /// Bytes of content served.
    pub bytes_served: u64,
    /// Reads served from the durable copy because the local file was missing or damaged.
    pub durable_fetches: u64,
    /// Local files found not to match their digest (never served).
    pub digest_mismatches: u64,
    /// Transient blobs dropped after their TTL.
    pub expired: u64,
    /// Uploads rejected for exceeding the size cap.
    pub rejected: u64,
    /// Distinct blobs held now.
    pub blobs: u64,
    /// Bytes of the distinct blobs held now.
    pub stored_bytes: u64,
    /// HTTP connections open now (at most [`BlobServerConfig::max_connections`](crate::BlobServerConfig::max_connections)).
    pub open_connections: u64,
}

impl Counters {
    /// The counters now, with what the index holds: `blobs` distinct blobs of `stored_bytes`
    /// bytes.
    pub(super) fn snapshot(&self, blobs: u64, stored_bytes: u64) -> ServerStats {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ServerStats {
            puts: get(&self.puts),
            gets: get(&self.gets),
            deletes: get(&self.deletes),
            bytes_received: get(&self.bytes_received),
            bytes_served: get(&self.bytes_served),
            durable_fetches: get(&self.durable_fetches),
            digest_mismatches: get(&self.digest_mismatches),
            expired: get(&self.expired),
            rejected: get(&self.rejected),
            blobs,
            stored_bytes,
            open_connections: get(&self.open_connections),
        }
    }
}
