//! Orphan sweep: objects that no retained or pending checkpoint can reach (uploads of
//! checkpoints that never completed, files left by a crashed TaskManager or a job-manager
//! failover) are found by listing and deleted.
//!
//! An object is deleted only if all hold:
//! - it is older than `min_age` (an upload in progress is young);
//! - it is not protected: not reachable from a retained checkpoint or an acknowledged upload of
//!   a pending one, not an open or tracked file of a live file-merging manager;
//! - its creating checkpoint (in its name, `cp<id>-...`) is below the in-flight watermark, the
//!   oldest checkpoint that may still upload.
//!
//! The protection is collected *after* the listing (RisingWave's rule): an upload that starts
//! after the LIST is not in the listing, and one that started before is covered by the
//! protection taken later.

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use object_store::path::Path;

use crate::error::Result;
use crate::handle::{created_by, CheckpointId};
use crate::storage::CheckpointStorage;

/// What must survive a sweep, collected after the listing.
#[derive(Clone, Debug, Default)]
pub struct Protection {
    /// Objects that must stay (by path).
    pub paths: HashSet<String>,
    /// Objects created by this checkpoint or later stay (the oldest checkpoint that may still
    /// upload); `None`: no checkpoint is in flight.
    pub in_flight_watermark: Option<CheckpointId>,
}

/// What a sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SweepReport {
    /// Objects listed.
    pub listed: u64,
    /// Objects deleted, by path.
    pub deleted: Vec<String>,
    /// Unprotected objects spared because they are younger than `min_age`.
    pub kept_young: u64,
    /// Unprotected objects spared by the in-flight watermark.
    pub kept_in_flight: u64,
}

/// Lists `prefix` (everything for `None`), then asks `protect` what must stay, then deletes the
/// rest that is at least `min_age` old. O(objects listed).
///
/// # Errors
/// [`crate::CheckpointError::Store`] when the listing or a delete fails.
pub async fn sweep_orphans(
    storage: &CheckpointStorage,
    prefix: Option<&Path>,
    min_age: Duration,
    protect: impl FnOnce() -> Protection,
) -> Result<SweepReport> {
    let listed = storage.list(prefix).await?;
    let protection = protect();
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let min_age_ms = i64::try_from(min_age.as_millis()).unwrap_or(i64::MAX);
    let mut report = SweepReport {
        listed: listed.len() as u64,
        ..SweepReport::default()
    };
    for meta in listed {
        let path = meta.location;
        if protection.paths.contains(path.as_ref()) {
            continue;
        }
        if protection
            .in_flight_watermark
            .is_some_and(|w| created_at_or_after(&path, w))
        {
            report.kept_in_flight += 1;
            continue;
        }
        if now_ms.saturating_sub(meta.last_modified.timestamp_millis()) < min_age_ms {
            report.kept_young += 1;
            continue;
        }
        storage.delete(&path).await?;
        report.deleted.push(path.to_string());
    }
    Ok(report)
}

/// Whether `path` was created by a checkpoint at or after `watermark` (by its name).
fn created_at_or_after(path: &Path, watermark: CheckpointId) -> bool {
    created_by(path).is_some_and(|c| c >= watermark)
}
