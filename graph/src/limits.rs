//! Bounds on the simulated cluster a job runs on, shared by every front end (the CLI's `run`,
//! simulation scripts) so that a typo such as `--slots 4294967295` is refused at once instead of
//! growing per-slot state to gigabytes.

use thiserror::Error;

use crate::MAX_EXECUTION_VERTICES;

/// The most slots one TaskManager may offer: 65,536. Flink's `taskmanager.numberOfTaskSlots`
/// has no upper bound, but a TaskManager with more slots than this is not a real machine.
pub const MAX_SLOTS_PER_TASK_MANAGER: u32 = 65_536;

/// The most TaskManagers of a cluster: 1,000,000.
pub const MAX_TASK_MANAGERS: u32 = 1_000_000;

/// The most slots of the whole cluster, TaskManagers x slots per TaskManager: 2^26 =
/// 67,108,864, [`MAX_EXECUTION_VERTICES`], since a job never needs more slots than subtasks.
pub const MAX_TOTAL_SLOTS: u64 = MAX_EXECUTION_VERTICES;

/// A cluster size outside the limits above; each variant names the value given.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClusterSizeError {
    /// Slots per TaskManager not in `1..=MAX_SLOTS_PER_TASK_MANAGER`.
    #[error("{slots} slots per TaskManager is outside 1..={MAX_SLOTS_PER_TASK_MANAGER}")]
    SlotsPerTaskManager {
        /// The value given.
        slots: u32,
    },
    /// A TaskManager count not in `1..=MAX_TASK_MANAGERS`.
    #[error("{task_managers} TaskManagers is outside 1..={MAX_TASK_MANAGERS}")]
    TaskManagers {
        /// The value given.
        task_managers: u32,
    },
    /// TaskManagers x slots above [`MAX_TOTAL_SLOTS`].
    #[error(
        "{task_managers} TaskManagers x {slots} slots = {total} slots, above the limit of {MAX_TOTAL_SLOTS}"
    )]
    TotalSlots {
        /// The TaskManagers given.
        task_managers: u32,
        /// The slots per TaskManager given.
        slots: u32,
        /// Their product.
        total: u64,
    },
}

/// Checks a cluster size: `task_managers` (`None`: as many as the job needs, which the job's
/// own size bounds) and slots per TaskManager. O(1), before anything is allocated.
///
/// # Errors
/// The first [`ClusterSizeError`] found: slots, then TaskManagers, then their product.
pub fn check_cluster(
    task_managers: Option<u32>,
    slots_per_task_manager: u32,
) -> Result<(), ClusterSizeError> {
    if !(1..=MAX_SLOTS_PER_TASK_MANAGER).contains(&slots_per_task_manager) {
        return Err(ClusterSizeError::SlotsPerTaskManager {
            slots: slots_per_task_manager,
        });
    }
    if let Some(task_managers) = task_managers {
        if !(1..=MAX_TASK_MANAGERS).contains(&task_managers) {
            return Err(ClusterSizeError::TaskManagers { task_managers });
        }
        let total = u64::from(task_managers) * u64::from(slots_per_task_manager);
        if total > MAX_TOTAL_SLOTS {
            return Err(ClusterSizeError::TotalSlots {
                task_managers,
                slots: slots_per_task_manager,
                total,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_inclusive_and_name_the_value() {
        assert_eq!(check_cluster(None, 1), Ok(()));
        assert_eq!(check_cluster(Some(1), MAX_SLOTS_PER_TASK_MANAGER), Ok(()));
        assert_eq!(check_cluster(Some(1024), 65_536), Ok(()));
        assert_eq!(check_cluster(Some(MAX_TASK_MANAGERS), 67), Ok(()));
        let e = check_cluster(None, 0).unwrap_err();
        assert_eq!(e, ClusterSizeError::SlotsPerTaskManager { slots: 0 });
        let e = check_cluster(None, u32::MAX).unwrap_err().to_string();
        assert!(e.contains("4294967295") && e.contains("65536"), "{e}");
        let e = check_cluster(Some(0), 10).unwrap_err();
        assert_eq!(e, ClusterSizeError::TaskManagers { task_managers: 0 });
        let e = check_cluster(Some(MAX_TASK_MANAGERS + 1), 1).unwrap_err();
        assert_eq!(
            e,
            ClusterSizeError::TaskManagers {
                task_managers: 1_000_001
            }
        );
        let e = check_cluster(Some(1025), 65_536).unwrap_err();
        assert_eq!(
            e,
            ClusterSizeError::TotalSlots {
                task_managers: 1025,
                slots: 65_536,
                total: 67_174_400
            }
        );
    }
}
