//! Space control: compaction of wasteful files (Alibaba's design) or their exclusion from reuse
//! (FLINK-32088).

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use object_store::path::Path;

use super::config::SpaceControl;
use super::files::{LogicalFile, PhysicalFile};
use super::manager::FileMergingSnapshotManager;
use crate::error::{CheckpointError, Result};
use crate::handle::{LogicalFileId, Scope, SubtaskKey};

/// What one [`FileMergingSnapshotManager::control_space`] run did.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct SpaceControlReport {
    /// Amplification before the run.
    pub amplification_before: f64,
    /// Files rewritten (compaction) or excluded from reuse.
    pub files_selected: u64,
    /// Segments copied by compaction.
    pub segments_copied: u64,
    /// Bytes copied by compaction.
    pub bytes_copied: u64,
}

impl FileMergingSnapshotManager {
    /// Enforces the space-amplification limit, measured against what later checkpoints still
    /// need: a segment counts as live only if the newest checkpoint that reused segments of its
    /// subtask (or a later one) uses it, or it is newer; the others die as soon as that
    /// checkpoint completes, and copying them would only move their waste into the copies.
    /// (Several checkpoints may be planned between two completions; each completion then
    /// realises the churn those plans already decided, so measuring only what is dead now lets
    /// the files the newest checkpoint references carry the waste of every plan since.)
    ///
    /// When those projected physical bytes exceed `limit x projected live bytes`, owned files
    /// not being written whose own projected amplification exceeds the limit are taken by most
    /// waste first, until the projected total is within the limit. An idle file of the
    /// across-boundary pool among them is sealed first (closed, out of the pool): appending to
    /// it would keep its dead bytes until it fills up. They are compacted (their segments later
    /// checkpoints still need are copied to new files, and [`Self::try_reuse`] hands out the
    /// copies from the next checkpoint on) or excluded from reuse, per
    /// [`FileMergingConfig::space_control`](super::FileMergingConfig::space_control).
    /// O(segments + bytes copied). Meant to run in the background between checkpoints.
    ///
    /// # Errors
    /// [`CheckpointError::Store`] when reading a file or writing a copy fails; the copies made
    /// so far stay usable.
    pub async fn control_space(&mut self) -> Result<SpaceControlReport> {
        let stats = self.space_stats();
        let mut report = SpaceControlReport {
            amplification_before: stats.amplification(),
            ..SpaceControlReport::default()
        };
        let Some(target) = self.space_target() else {
            return Ok(report);
        };
        let needed = self.needed_bytes();
        let needed_in = |p: &Path| needed.get(p).copied().unwrap_or(0);
        // A closed file nothing needs goes once its segments die: it is no waste to control.
        let doomed =
            |p: &Path, f: &PhysicalFile| f.closed && f.lease.is_none() && needed_in(p) == 0;
        let (physical, logical) = self
            .files
            .iter()
            .filter(|(p, f)| f.owned && !doomed(p, f))
            .fold((0u64, 0u64), |(s, l), (p, f)| {
                (s + f.size, l + needed_in(p))
            });
        let goal = logical as f64 * target;
        if physical as f64 <= goal {
            return Ok(report);
        }
        let mut candidates: Vec<(u64, Path)> = self
            .files
            .iter()
            .filter(|(p, f)| {
                // Closed, or idle in the across-boundary pool (not leased nor parked).
                (f.closed || (f.lease.is_none() && self.is_idle(p)))
                    && f.owned
                    && f.lease.is_none()
                    && f.reuse_allowed
                    && !f.compacted
                    && f.pool.1 == Scope::Shared
                    && !doomed(p, f)
                    && f.size as f64 > needed_in(p) as f64 * target
            })
            .map(|(p, f)| (f.size - needed_in(p).min(f.size), p.clone()))
            .collect();
        candidates.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let mut projected = physical as f64;
        let mut chosen = Vec::new();
        for (waste, path) in candidates {
            if projected <= goal {
                break;
            }
            projected -= waste as f64;
            chosen.push(path);
        }
        report.files_selected = chosen.len() as u64;
        let sealed = self.seal_idle_files(&chosen);
        match self.config.space_control {
            SpaceControl::ExcludeFromReuse => {
                for path in &chosen {
                    if let Some(f) = self.files.get_mut(path) {
                        f.reuse_allowed = false;
                    }
                }
            }
            SpaceControl::Compaction => {
                let (segments, bytes) = self.compact(&chosen).await?;
                report.segments_copied = segments;
                report.bytes_copied = bytes;
            }
        }
        // A sealed file whose segments had all died goes now.
        self.delete_unused(sealed).await?;
        Ok(report)
    }

    /// The amplification space control aims at (physical / live bytes, overall and per file
    /// selected); `None` when merging or space control is off.
    pub(super) fn space_target(&self) -> Option<f64> {
        let limit = self.config.max_space_amplification;
        if !self.config.enabled || limit < 1.0 {
            return None;
        }
        // Compaction aims at a third of the allowed overhead: the waste one checkpoint's churn
        // adds before the next run, and the originals that a checkpoint pending during the run
        // keeps alive one completion longer, then stay within the limit. Exclusion acts at the
        // limit, as Flink's space control does.
        Some(match self.config.space_control {
            SpaceControl::Compaction => 1.0 + (limit - 1.0) / 3.0,
            SpaceControl::ExcludeFromReuse => limit,
        })
    }

    /// Whether later checkpoints may still reference `l`: not retired, and last used at or
    /// after both the latest confirmed checkpoint of its subtask (older segments are only
    /// referenced by older retained checkpoints) and the newest checkpoint that reused segments
    /// of its subtask (its plan dropped the older ones; state files never come back).
    fn needed(&self, l: &LogicalFile) -> bool {
        let confirmed = self.last_confirmed.get(&l.subtask).copied();
        let newest = self.newest_reuse.get(&l.subtask).copied();
        !l.retiring && confirmed.max(newest).is_none_or(|c| l.last_used >= c)
    }

    /// Bytes of the segments later checkpoints may still reference ([`Self::needed`]), per
    /// physical file. O(segments).
    fn needed_bytes(&self) -> HashMap<Path, u64> {
        let mut needed: HashMap<Path, u64> = HashMap::new();
        for l in self.logical.values().filter(|l| self.needed(l)) {
            *needed.entry(l.path.clone()).or_default() += l.length;
        }
        needed
    }

    /// Copies the reusable live segments of `paths` into new files, one output stream per
    /// subtask, and records the old -> new mapping.
    async fn compact(&mut self, paths: &[Path]) -> Result<(u64, u64)> {
        // The copies are "last used" by the newest checkpoint seen, pending ones included, so
        // they survive until a checkpoint after it is subsumed (a pending checkpoint planned
        // before the copies existed may complete first); an abort of that checkpoint does not
        // discard them (they are not its uploads). The next checkpoint's reuse advances them.
        let stamp = self.max_seen;
        let mut by_file: BTreeMap<Path, Vec<LogicalFileId>> = BTreeMap::new();
        for (id, l) in &self.logical {
            if !paths.contains(&l.path) || self.remap.contains_key(id) || l.retiring {
                continue;
            }
            // The others are referenced only by checkpoints a newer one supersedes: they die
            // without a copy. Should that newer one abort, a later checkpoint uploads what it
            // still needs of them again (the originals are excluded from reuse).
            if self.needed(l) {
                by_file.entry(l.path.clone()).or_default().push(id.clone());
            }
        }
        let mut outputs: BTreeMap<SubtaskKey, (Path, Vec<u8>)> = BTreeMap::new();
        let mut copies: Vec<(LogicalFileId, LogicalFileId, LogicalFile)> = Vec::new();
        let mut sealed: Vec<(Path, Vec<u8>, SubtaskKey)> = Vec::new();
        let (mut segments, mut bytes_copied) = (0u64, 0u64);
        for (path, mut ids) in by_file {
            ids.sort_by_key(|id| self.logical.get(id).map_or(0, |l| l.offset));
            let content = self.storage.read(&path).await?;
            for id in ids {
                let Some(l) = self.logical.get(&id) else {
                    continue;
                };
                let (start, end) = (l.offset, l.offset + l.length);
                let data = usize::try_from(start)
                    .ok()
                    .zip(usize::try_from(end).ok())
                    .and_then(|(s, e)| content.get(s..e))
                    .ok_or_else(|| CheckpointError::Corrupt {
                        handle: format!("{path}[{start}..{end}]"),
                        reason: format!("file has {} bytes", content.len()),
                    })?
                    .to_vec();
                let subtask = l.subtask.clone();
                let length = l.length;
                let new_id = self.new_logical_id();
                let out_full = outputs.get(&subtask).is_some_and(|(_, b)| {
                    !b.is_empty()
                        && (b.len() as u64).saturating_add(length) > self.config.max_file_size
                });
                if out_full {
                    if let Some((p, b)) = outputs.remove(&subtask) {
                        sealed.push((p, b, subtask.clone()));
                    }
                }
                if !outputs.contains_key(&subtask) {
                    let p = self.new_path(&subtask, Scope::Shared, stamp);
                    outputs.insert(subtask.clone(), (p, Vec::new()));
                }
                let Some((out_path, buffer)) = outputs.get_mut(&subtask) else {
                    continue;
                };
                let offset = buffer.len() as u64;
                buffer.extend_from_slice(&data);
                copies.push((
                    id,
                    new_id,
                    LogicalFile {
                        path: out_path.clone(),
                        offset,
                        length,
                        subtask,
                        scope: Scope::Shared,
                        last_used: stamp,
                        copy: true,
                        retiring: false,
                    },
                ));
                segments += 1;
                bytes_copied += length;
            }
            if let Some(f) = self.files.get_mut(&path) {
                f.compacted = true;
            }
        }
        sealed.extend(outputs.into_iter().map(|(s, (p, b))| (p, b, s)));
        for (path, buffer, subtask) in sealed {
            let size = buffer.len() as u64;
            self.put(None, &path, Bytes::from(buffer), true).await?;
            self.files.insert(
                path,
                PhysicalFile {
                    pool: (subtask, Scope::Shared),
                    buffer: None,
                    size,
                    synced: size,
                    put_attempted: true,
                    live_segments: 0,
                    live_bytes: 0,
                    closed: true,
                    owned: true,
                    reuse_allowed: true,
                    compacted: false,
                    lease: None,
                },
            );
        }
        for (old, new, l) in copies {
            if let Some(f) = self.files.get_mut(&l.path) {
                f.live_segments += 1;
                f.live_bytes += l.length;
            }
            self.uploaded
                .entry(l.subtask.clone())
                .or_default()
                .entry(stamp)
                .or_default()
                .push(new.clone());
            self.logical.insert(new.clone(), l);
            self.remap.insert(old, new);
        }
        Ok((segments, bytes_copied))
    }
}
