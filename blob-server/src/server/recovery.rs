//! Start-up: rebuilding the index from the storage directory and the durable store.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use crate::layout::{self, blocking, io_err};
use crate::{BlobError, BlobKey, BlobKind};

use super::state::{Entry, ServerCore};

/// Reads `<root>/job_*/blob_*` and `<root>/no_job/blob_*` with their reference-count sidecars:
/// (key, size in bytes, references). Files whose name is not a blob of that folder are skipped.
fn scan_local(root: &Path) -> Result<Vec<(BlobKey, u64, u64)>, BlobError> {
    let mut blobs = Vec::new();
    let read_dir =
        |dir: &Path| fs::read_dir(dir).map_err(io_err(format!("listing {}", dir.display())));
    for dir in read_dir(root)? {
        let dir = dir.map_err(io_err(format!("listing {}", root.display())))?;
        let Some(job) = dir
            .file_name()
            .to_str()
            .and_then(layout::parse_job_dir_name)
        else {
            continue;
        };
        let dir_path = dir.path();
        if !dir_path.is_dir() {
            continue;
        }
        for file in read_dir(&dir_path)? {
            let file = file.map_err(io_err(format!("listing {}", dir_path.display())))?;
            let Some(key) = file
                .file_name()
                .to_str()
                .and_then(layout::parse_blob_file_name)
            else {
                continue;
            };
            if key.job != job {
                continue;
            }
            let size = file
                .metadata()
                .map_err(io_err(format!(
                    "reading metadata of {}",
                    file.path().display()
                )))?
                .len();
            let refs = fs::read_to_string(layout::refs_path(root, &key))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(1);
            blobs.push((key, size, refs));
        }
    }
    Ok(blobs)
}

impl ServerCore {
    /// Rebuilds the index from the storage directory and the durable store, uploading durable
    /// copies that are missing. Local blobs are counted as they are and checked on read.
    pub(super) async fn recover(self: &Arc<Self>) -> Result<(), BlobError> {
        let root = self.root.clone();
        let local = blocking(move || scan_local(&root)).await?;
        let now = self.clock.now_ms();
        let mut index: HashMap<BlobKey, Entry> = local
            .into_iter()
            .map(|(key, size, refs)| {
                (
                    key,
                    Entry {
                        refs,
                        size,
                        last_access_ms: now,
                    },
                )
            })
            .collect();
        let local_blobs = index.len();
        let mut from_durable = 0usize;
        if let Some(store) = &self.durable {
            let durable: HashMap<BlobKey, u64> = store.list().await?.into_iter().collect();
            for (key, size) in &durable {
                if index.contains_key(key) || key.kind != BlobKind::Permanent {
                    continue;
                }
                let refs = store.read_refs(key).await?.unwrap_or(1);
                index.insert(
                    *key,
                    Entry {
                        refs,
                        size: *size,
                        last_access_ms: now,
                    },
                );
                from_durable += 1;
            }
            for key in index.keys() {
                if key.kind != BlobKind::Permanent || durable.contains_key(key) {
                    continue;
                }
                tracing::warn!(key = %key, store = %store, "blob has no durable copy; uploading it");
                let path = layout::blob_path(&self.root, key);
                let k = *key;
                let uploaded = match blocking(move || layout::read_verified(&path, &k)).await {
                    Ok(bytes) => store.put(key, bytes).await,
                    Err(e) => Err(e),
                };
                if let Err(e) = uploaded {
                    tracing::error!(key = %key, error = %e, "cannot restore the durable copy");
                }
            }
        }
        tracing::info!(
            storage = %self.root.display(),
            local_blobs,
            from_durable,
            "blob server recovered its index"
        );
        *self.lock_index() = index;
        Ok(())
    }
}
