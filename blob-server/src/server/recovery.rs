//! Start-up: rebuilding the index from the storage directory and the durable store.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use conflux_blob_api::{BlobError, BlobKey, BlobKind};

use crate::layout::{self, blocking, io_err};

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

/// Whether `name` is a staging file of `object_store`'s local store: `<object>#<digits>`,
/// written before being renamed into place (a crash leaves it behind).
fn is_staging_file(name: &str) -> bool {
    name.rsplit_once('#').is_some_and(|(object, suffix)| {
        !object.is_empty() && !suffix.is_empty() && suffix.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Removes the staging files a killed server left in the local durable directory `dir` (in
/// its `job_<job>/` and `no_job/` folders), and the job folders that are then empty; returns
/// how many files were removed. `object_store` skips such files when listing, so neither
/// recovery nor a job's cleanup would ever remove them. Run before the store is opened: the
/// server must be the directory's only writer while it starts.
///
/// # Errors
/// [`BlobError::Io`] when a folder cannot be listed or a file removed.
pub(super) fn sweep_staging(dir: &Path) -> Result<usize, BlobError> {
    let read_dir =
        |dir: &Path| fs::read_dir(dir).map_err(io_err(format!("listing {}", dir.display())));
    if !dir.is_dir() {
        return Ok(0);
    }
    let mut swept = 0;
    for folder in read_dir(dir)? {
        let folder = folder.map_err(io_err(format!("listing {}", dir.display())))?;
        let is_blob_folder = folder
            .file_name()
            .to_str()
            .and_then(layout::parse_job_dir_name)
            .is_some();
        let folder = folder.path();
        if !is_blob_folder || !folder.is_dir() {
            continue;
        }
        for file in read_dir(&folder)? {
            let file = file.map_err(io_err(format!("listing {}", folder.display())))?;
            if file.file_name().to_str().is_some_and(is_staging_file) {
                layout::remove_file_if_exists(&file.path())?;
                swept += 1;
            }
        }
        // Empty now: gone, as the store removes a job's folder with its last blob.
        if read_dir(&folder)?.next().is_none() {
            layout::remove_dir_if_exists(&folder)?;
        }
    }
    if swept > 0 {
        tracing::warn!(dir = %dir.display(), files = swept, "removed staging files of interrupted durable writes");
    }
    Ok(swept)
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

#[cfg(test)]
mod tests {
    use super::is_staging_file;

    #[test]
    fn staging_files_are_told_from_blobs() {
        assert!(is_staging_file("p-00ff#1"));
        assert!(is_staging_file("p-00ff.refs#12"));
        assert!(!is_staging_file("p-00ff"));
        assert!(!is_staging_file("p-00ff#"));
        assert!(!is_staging_file("#1"));
        assert!(!is_staging_file("p-00ff#1a"));
    }
}
