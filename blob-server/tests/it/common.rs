//! Shared helpers: servers on temporary directories, clients, deterministic content.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use conflux_blob::{
    BlobClient, BlobServer, BlobServerConfig, BlobStore, DurableStoreConfig, JobId, ManualClock,
};
use tempfile::TempDir;

/// A server with its storage and durable directories (removed on drop, after the server).
pub(crate) struct Fixture {
    pub(crate) server: BlobServer,
    pub(crate) storage: TempDir,
    pub(crate) durable: TempDir,
}

impl Fixture {
    /// A client of this server without a token.
    pub(crate) fn client(&self) -> BlobClient {
        BlobClient::new(self.server.url(), None).unwrap()
    }

    /// The durable store the server writes to, opened independently.
    pub(crate) fn durable_store(&self) -> BlobStore {
        BlobStore::local(self.durable.path()).unwrap()
    }
}

/// Default configuration on these directories (durable copy in a local directory).
pub(crate) fn config(storage: &Path, durable: &Path) -> BlobServerConfig {
    let mut config = BlobServerConfig::new(storage);
    config.durable = DurableStoreConfig::Local {
        dir: durable.to_path_buf(),
    };
    config
}

/// A server with default settings, changed by `tweak`.
pub(crate) async fn start_with(tweak: impl FnOnce(&mut BlobServerConfig)) -> Fixture {
    let storage = TempDir::new().unwrap();
    let durable = TempDir::new().unwrap();
    let mut config = config(storage.path(), durable.path());
    tweak(&mut config);
    let server = BlobServer::start(config).await.unwrap();
    Fixture {
        server,
        storage,
        durable,
    }
}

/// A server with default settings.
pub(crate) async fn start() -> Fixture {
    start_with(|_| {}).await
}

/// A manual clock for TTL tests.
pub(crate) fn manual_clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(1_000))
}

/// Job number `n`.
pub(crate) fn job(n: u8) -> JobId {
    JobId([n; 16])
}

/// `len` deterministic pseudo-random bytes (different seeds give different content).
pub(crate) fn content(seed: u64, len: usize) -> Vec<u8> {
    conflux_common::SplitMix64::new(seed).bytes(len)
}

/// A plain HTTP client for requests the typed client would not send.
pub(crate) fn raw() -> reqwest::Client {
    reqwest::Client::new()
}

/// Files under `dir`, recursively.
pub(crate) fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}
