//! The TaskManager's data directory quota (`--data-dir-max-bytes`): partition writes past it
//! fail as a full disk would.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of partition data a TaskManager may keep on disk at once, shared by its tasks.
#[derive(Debug)]
pub struct DiskQuota {
    limit: Option<u64>,
    used: AtomicU64,
}

/// A write would take the data directory past its quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("data directory quota of {limit} bytes exceeded ({used} bytes in use, {wanted} more wanted): no space left")]
pub struct QuotaExceeded {
    /// The quota, bytes.
    pub limit: u64,
    /// Bytes in use before the write.
    pub used: u64,
    /// Bytes the write wanted.
    pub wanted: u64,
}

impl DiskQuota {
    /// A quota of `limit` bytes; `None`: unlimited (only the disk itself bounds writes).
    pub fn new(limit: Option<u64>) -> DiskQuota {
        DiskQuota {
            limit,
            used: AtomicU64::new(0),
        }
    }

    /// Takes `bytes` of the quota before they are written.
    ///
    /// # Errors
    /// [`QuotaExceeded`] when they do not fit; nothing is taken then.
    pub fn reserve(&self, bytes: u64) -> Result<(), QuotaExceeded> {
        let Some(limit) = self.limit else {
            self.used.fetch_add(bytes, Ordering::Relaxed);
            return Ok(());
        };
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&total| total <= limit)
            })
            .map(|_| ())
            .map_err(|used| QuotaExceeded {
                limit,
                used,
                wanted: bytes,
            })
    }

    /// Gives back `bytes` (a deleted or abandoned file).
    pub fn release(&self, bytes: u64) {
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                Some(used.saturating_sub(bytes))
            });
    }

    /// Bytes in use.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_stop_at_the_limit_and_come_back_on_release() {
        let quota = DiskQuota::new(Some(100));
        quota.reserve(60).unwrap();
        assert_eq!(
            quota.reserve(41),
            Err(QuotaExceeded {
                limit: 100,
                used: 60,
                wanted: 41
            })
        );
        quota.reserve(40).unwrap();
        assert_eq!(quota.used(), 100);
        quota.release(70);
        quota.reserve(70).unwrap();
        assert_eq!(quota.used(), 100);
        let unlimited = DiskQuota::new(None);
        unlimited.reserve(u64::MAX / 2).unwrap();
        assert_eq!(unlimited.used(), u64::MAX / 2);
    }
}
