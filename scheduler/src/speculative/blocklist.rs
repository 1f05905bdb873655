//! Blocked slow nodes, as Flink's blocklist with its `MARK_BLOCKED` action: a TaskManager that
//! ran a slow task gives no new slots until its block ends; tasks already there keep running.
//! Here a node is a TaskManager (Flink blocks a node id, the host of possibly several
//! TaskManagers).

use std::collections::BTreeMap;

use conflux_deploy::TaskManagerId;

/// TaskManagers blocked until a virtual time.
#[derive(Debug, Default)]
pub(crate) struct Blocklist {
    /// Per blocked TaskManager, when its block ends, ms (ordered, so that expiry is
    /// deterministic).
    until: BTreeMap<TaskManagerId, u64>,
}

impl Blocklist {
    /// Blocks `tm` until `end_ms`; a later end extends an earlier block, never shortens it
    /// (Flink merges a node blocked again the same way).
    pub(crate) fn block(&mut self, tm: TaskManagerId, end_ms: u64) {
        let end = self.until.entry(tm).or_insert(end_ms);
        *end = (*end).max(end_ms);
    }

    /// Whether `tm` is blocked now (before [`expire`](Self::expire) runs for a later time).
    pub(crate) fn is_blocked(&self, tm: TaskManagerId) -> bool {
        self.until.contains_key(&tm)
    }

    /// Ends the blocks due at `now_ms` and returns the TaskManagers they freed, in id order.
    /// O(blocked).
    pub(crate) fn expire(&mut self, now_ms: u64) -> Vec<TaskManagerId> {
        let freed: Vec<TaskManagerId> = self
            .until
            .iter()
            .filter(|(_, &end)| end <= now_ms)
            .map(|(&tm, _)| tm)
            .collect();
        for tm in &freed {
            self.until.remove(tm);
        }
        freed
    }

    /// Forgets a TaskManager that is gone.
    pub(crate) fn remove(&mut self, tm: TaskManagerId) {
        self.until.remove(&tm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_lasts_until_its_end_and_a_second_one_extends_it() {
        let mut b = Blocklist::default();
        b.block(TaskManagerId(3), 61_000);
        b.block(TaskManagerId(1), 62_000);
        b.block(TaskManagerId(3), 50_000);
        assert!(b.is_blocked(TaskManagerId(3)));
        assert!(b.expire(60_999).is_empty());
        assert_eq!(b.expire(61_000), [TaskManagerId(3)]);
        assert!(!b.is_blocked(TaskManagerId(3)));
        b.block(TaskManagerId(1), 70_000);
        assert!(b.expire(62_000).is_empty());
        assert!(b.is_blocked(TaskManagerId(1)));
        b.remove(TaskManagerId(1));
        assert!(!b.is_blocked(TaskManagerId(1)));
        assert!(b.expire(u64::MAX).is_empty());
    }
}
