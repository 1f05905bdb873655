//! Space statistics (FLINK-32087's `SpaceStat`) and per-file figures.

use std::collections::HashSet;

use object_store::path::Path;

use super::manager::FileMergingSnapshotManager;

/// Space statistics of the files a manager owns (FLINK-32087's `SpaceStat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SpaceStats {
    /// Physical files not yet deleted.
    pub physical_files: u64,
    /// Their bytes.
    pub physical_bytes: u64,
    /// Live logical files (segments) in them.
    pub logical_files: u64,
    /// Their bytes.
    pub logical_bytes: u64,
}

impl SpaceStats {
    /// Physical bytes / live logical bytes: 1.0 when both are 0, infinite when only the
    /// logical bytes are.
    pub fn amplification(&self) -> f64 {
        amplification(self.physical_bytes, self.logical_bytes)
    }
}

/// `physical / logical`, with 0 / 0 = 1.
pub fn amplification(physical: u64, logical: u64) -> f64 {
    if logical == 0 {
        if physical == 0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        physical as f64 / logical as f64
    }
}

/// One physical file's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct PhysicalFileStats {
    /// The object.
    pub path: Path,
    /// Bytes in the file.
    pub size: u64,
    /// Bytes of live segments.
    pub live_bytes: u64,
    /// Live segments.
    pub live_segments: u32,
    /// Closed (no more segments).
    pub closed: bool,
    /// Deletable by this manager.
    pub owned: bool,
    /// `size / live_bytes`.
    pub amplification: f64,
}

impl FileMergingSnapshotManager {
    /// Space statistics over the owned files not yet deleted. O(files).
    pub fn space_stats(&self) -> SpaceStats {
        let mut s = SpaceStats::default();
        for f in self.files.values().filter(|f| f.owned) {
            s.physical_files += 1;
            s.physical_bytes += f.size;
            s.logical_files += u64::from(f.live_segments);
            s.logical_bytes += f.live_bytes;
        }
        s
    }

    /// Per-file figures of every known file, by path. O(files).
    pub fn file_stats(&self) -> Vec<PhysicalFileStats> {
        self.files
            .iter()
            .map(|(path, f)| PhysicalFileStats {
                path: path.clone(),
                size: f.size,
                live_bytes: f.live_bytes,
                live_segments: f.live_segments,
                closed: f.closed,
                owned: f.owned,
                amplification: amplification(f.size, f.live_bytes),
            })
            .collect()
    }

    /// Every object this manager may still write or reference: files not yet deleted and
    /// unfinished uploads. The orphan sweep must spare them.
    pub fn protected_paths(&self) -> HashSet<String> {
        self.files
            .keys()
            .map(ToString::to_string)
            .chain(self.unfinished.values().flatten().map(ToString::to_string))
            .collect()
    }
}
