//! The figures a simulation reports.

/// Misc (non-SST) bytes uploaded per completed checkpoint, over all subtasks.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct MiscBytes {
    /// Mean over the first 10% of checkpoints (at least one).
    pub first: f64,
    /// Mean over the last 10%.
    pub last: f64,
    /// Mean over all.
    pub mean: f64,
    /// Largest.
    pub max: u64,
}

/// Median, 95th percentile and maximum of a series.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Distribution {
    /// Median.
    pub median: f64,
    /// 95th percentile (nearest rank).
    pub p95: f64,
    /// Maximum.
    pub max: f64,
}

impl Distribution {
    /// The figures of `values` (all 0 when empty).
    pub fn of(values: &[f64]) -> Distribution {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Distribution::default();
        }
        v.sort_by(f64::total_cmp);
        // Nearest rank: the smallest index whose share of the values reaches q.
        let rank = |q: f64| {
            let n = v.len();
            let i = (1..=n).find(|&i| i as f64 >= q * n as f64).unwrap_or(n);
            v[i - 1]
        };
        Distribution {
            median: rank(0.5),
            p95: rank(0.95),
            max: v[v.len() - 1],
        }
    }
}

/// The figures of one run (merged or unmerged).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ModeReport {
    /// Objects created in the store.
    pub objects_created: u64,
    /// PUT requests.
    pub put_requests: u64,
    /// DELETE requests.
    pub delete_requests: u64,
    /// LIST calls.
    pub list_requests: u64,
    /// GET and HEAD requests (restores, compaction).
    pub get_requests: u64,
    /// Bytes sent by PUTs.
    pub bytes_written: u64,
    /// Objects in the store at the end.
    pub live_objects: u64,
    /// Bytes in the store at the end (physical).
    pub live_bytes: u64,
    /// Bytes of distinct state reachable from retained checkpoints at the end (logical).
    pub logical_bytes: u64,
    /// `live_bytes / logical_bytes` at the end.
    pub space_amplification: f64,
    /// Amplification of the managers' owned files after each completion in the second half of
    /// the run (steady state; 1.0 without merging).
    pub steady_space_amplification: Distribution,
    /// Misc bytes per checkpoint.
    pub misc_bytes_per_checkpoint: MiscBytes,
    /// Files that failed to restore with the right bytes (missing, corrupt, different).
    pub restore_failures: u64,
    /// Files restored and checked.
    pub restored_files_checked: u64,
    /// Checkpoints completed.
    pub checkpoints_completed: u64,
    /// Checkpoints aborted (explicitly, or by a newer completion).
    pub checkpoints_aborted: u64,
    /// Job-manager failovers.
    pub failovers: u64,
    /// Objects deleted by orphan sweeps.
    pub orphans_swept: u64,
    /// Background compaction runs that rewrote something.
    pub compactions: u64,
    /// Bytes copied by compaction.
    pub compaction_bytes: u64,
    /// First restore failure, if any.
    pub first_failure: Option<String>,
}

/// Both runs.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct SimReport {
    /// With file merging.
    pub merged: ModeReport,
    /// Without.
    pub unmerged: ModeReport,
    /// `unmerged.objects_created / merged.objects_created`.
    pub objects_ratio: f64,
}
