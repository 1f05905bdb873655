//! Descriptors, blobs and injected faults.

use serde::{Deserialize, Serialize};

/// What the deployment descriptor factory did (Flink's shuffle descriptor cache and offload).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DescriptorsReport {
    /// The offload rule, e.g. `descriptors x consumers >= 4194304`.
    pub offload_rule: String,
    /// Consumed partition groups serialised (each once per cache entry).
    pub groups_serialized: u64,
    /// Descriptor groups taken from the factory's cache.
    pub cache_hits: u64,
    /// Descriptor groups computed because the cache had none.
    pub cache_misses: u64,
    /// Serialised bytes before compression.
    pub raw_bytes: u64,
    /// Compressed bytes carried inline in TDDs.
    pub inline_bytes: u64,
    /// Compressed bytes offloaded to the blob server.
    pub offloaded_bytes: u64,
    /// Blobs uploaded.
    pub blobs_uploaded: u64,
    /// Uploads that failed (the group then went inline).
    pub upload_failures: u64,
    /// Blobs deleted (groups invalidated or released).
    pub blobs_deleted: u64,
}

/// `run`'s embedded blob server and where the TaskManagers' caches found blobs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobServerReport {
    /// Its URL.
    pub url: String,
    /// Blobs the caches fetched from the server.
    pub server_fetches: u64,
    /// Blobs the caches read from the durable store.
    pub durable_fetches: u64,
    /// Blobs the caches found locally.
    pub local_hits: u64,
}

/// The faults `run` injected (seeded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultsInjected {
    /// Running tasks failed (`--task-failure-rate`).
    pub task_failures: u64,
    /// Tasks failed reading an input partition (`--partition-not-found-rate`).
    pub partition_not_found: u64,
    /// TaskManagers lost (`--task-manager-losses`).
    pub task_manager_losses: u64,
    /// Blob server restarts (`--blob-server-restarts`).
    pub blob_server_restarts: u64,
}
