//! A BLOCKING result partition on disk: one file per partition, its subpartitions addressable
//! by offset through an index at the end (as Flink's sort-merge blocking shuffle keeps one data
//! file and an index per partition), every buffer and the index checked by CRC-32.
//!
//! Layout: the data buffers as the producer filled them (each at most
//! [`MAX_BUFFER_BYTES`], whole records, subpartitions interleaved), then the index (per
//! subpartition the position of its first entry, `subpartitions + 1` little-endian `u64`s; then
//! per buffer `subpartition u32, length u32, offset u64, crc32 u32`, sorted by subpartition,
//! each subpartition's in written order), then a 40-byte footer: magic `CFXP`, version `u32`,
//! subpartitions `u32`, zero `u32`, entries `u64`, index offset `u64`, index CRC-32, footer
//! CRC-32 (of the 36 bytes before it). The file is written under a temporary name and renamed
//! when complete, so a reader never sees a partial partition.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::RangeInclusive;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::shuffle::quota::{DiskQuota, QuotaExceeded};

/// The largest buffer a partition file holds, bytes (a network buffer: Flink's
/// `taskmanager.memory.segment-size`, 32 KiB).
pub const MAX_BUFFER_BYTES: usize = 32 * 1024;

const MAGIC: [u8; 4] = *b"CFXP";
const VERSION: u32 = 1;
const FOOTER_BYTES: usize = 40;
const ENTRY_BYTES: usize = 20;

/// Why a partition file could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum PartitionFileError {
    /// The file system refused.
    #[error("partition file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The data directory's quota is spent: the write fails as on a full disk.
    #[error("partition file {path}: {source}{}", if *.alone { " (this file alone exceeds the quota: every attempt fails the same way)" } else { "" })]
    Quota {
        /// The file being written.
        path: PathBuf,
        /// The quota.
        #[source]
        source: QuotaExceeded,
        /// This file's own bytes with the write exceed the quota: no release of other
        /// partitions makes room, and a new attempt writes the same bytes.
        alone: bool,
    },
    /// The file is not what was written: damaged or truncated.
    #[error("partition file {path} is damaged at byte {offset}: {reason}")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// Where the damage was found.
        offset: u64,
        /// What is wrong there.
        reason: String,
    },
    /// A buffer above [`MAX_BUFFER_BYTES`] or a subpartition out of range (a caller's bug).
    #[error("partition file {path}: {reason}")]
    Invalid {
        /// The file being written.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
}

/// One buffer in the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferEntry {
    /// Its subpartition.
    pub subpartition: u32,
    /// Its length, bytes.
    pub len: u32,
    /// Its position in the file, bytes.
    pub offset: u64,
    /// CRC-32 of its bytes.
    pub crc: u32,
}

/// Writes one partition's file; dropped before [`finish`](Self::finish), it deletes what it
/// wrote and gives its bytes back to the quota.
#[derive(Debug)]
pub struct PartitionFileWriter {
    path: PathBuf,
    tmp: PathBuf,
    file: Option<BufWriter<File>>,
    subpartitions: u32,
    entries: Vec<BufferEntry>,
    offset: u64,
    quota: Arc<DiskQuota>,
    reserved: u64,
}

impl PartitionFileWriter {
    /// Starts `path` (written as `path.tmp` until finished) for `subpartitions` subpartitions.
    ///
    /// # Errors
    /// [`PartitionFileError::Io`] when the file cannot be created.
    pub fn create(
        path: PathBuf,
        subpartitions: u32,
        quota: Arc<DiskQuota>,
    ) -> Result<PartitionFileWriter, PartitionFileError> {
        let mut tmp = path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let file = File::create(&tmp).map_err(|source| PartitionFileError::Io {
            path: tmp.clone(),
            source,
        })?;
        Ok(PartitionFileWriter {
            path,
            tmp,
            file: Some(BufWriter::with_capacity(1 << 20, file)),
            subpartitions,
            entries: Vec::new(),
            offset: 0,
            quota,
            reserved: 0,
        })
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.offset
    }

    fn reserve(&mut self, bytes: u64) -> Result<(), PartitionFileError> {
        let own = self.reserved;
        self.quota
            .reserve(bytes)
            .map_err(|source| PartitionFileError::Quota {
                path: self.path.clone(),
                alone: own.saturating_add(bytes) > source.limit,
                source,
            })?;
        self.reserved += bytes;
        Ok(())
    }

    fn write_all(&mut self, bytes: &[u8]) -> Result<(), PartitionFileError> {
        let Some(file) = self.file.as_mut() else {
            return Err(PartitionFileError::Invalid {
                path: self.path.clone(),
                reason: "written after it was finished".into(),
            });
        };
        file.write_all(bytes)
            .map_err(|source| PartitionFileError::Io {
                path: self.tmp.clone(),
                source,
            })?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Appends one buffer of `subpartition` (whole records, at most [`MAX_BUFFER_BYTES`]).
    ///
    /// # Errors
    /// [`PartitionFileError::Quota`] past the quota, [`PartitionFileError::Io`] when the write
    /// fails, [`PartitionFileError::Invalid`] for an oversized buffer or a subpartition out of
    /// range.
    pub fn append(&mut self, subpartition: u32, buffer: &[u8]) -> Result<(), PartitionFileError> {
        if buffer.len() > MAX_BUFFER_BYTES || subpartition >= self.subpartitions {
            return Err(PartitionFileError::Invalid {
                path: self.path.clone(),
                reason: format!(
                    "buffer of {} bytes for subpartition {subpartition} of {}",
                    buffer.len(),
                    self.subpartitions
                ),
            });
        }
        self.reserve(buffer.len() as u64)?;
        let offset = self.offset;
        self.write_all(buffer)?;
        self.entries.push(BufferEntry {
            subpartition,
            // At most MAX_BUFFER_BYTES.
            len: u32::try_from(buffer.len()).unwrap_or(u32::MAX),
            offset,
            crc: crc32fast::hash(buffer),
        });
        Ok(())
    }

    /// Writes the index and footer and renames the file into place; returns its size, bytes.
    ///
    /// # Errors
    /// As [`append`](Self::append); the temporary file is deleted.
    pub fn finish(mut self) -> Result<u64, PartitionFileError> {
        // Stable: each subpartition's buffers stay in written order.
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_by_key(|e| e.subpartition);
        let n = self.subpartitions as usize;
        let mut index = Vec::with_capacity((n + 1) * 8 + entries.len() * ENTRY_BYTES);
        let mut next = 0usize;
        for s in 0..=n {
            while next < entries.len() && (entries[next].subpartition as usize) < s {
                next += 1;
            }
            index.extend_from_slice(&(next as u64).to_le_bytes());
        }
        for e in &entries {
            index.extend_from_slice(&e.subpartition.to_le_bytes());
            index.extend_from_slice(&e.len.to_le_bytes());
            index.extend_from_slice(&e.offset.to_le_bytes());
            index.extend_from_slice(&e.crc.to_le_bytes());
        }
        let index_offset = self.offset;
        let mut footer = Vec::with_capacity(FOOTER_BYTES);
        footer.extend_from_slice(&MAGIC);
        footer.extend_from_slice(&VERSION.to_le_bytes());
        footer.extend_from_slice(&self.subpartitions.to_le_bytes());
        footer.extend_from_slice(&0u32.to_le_bytes());
        footer.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        footer.extend_from_slice(&index_offset.to_le_bytes());
        footer.extend_from_slice(&crc32fast::hash(&index).to_le_bytes());
        let footer_crc = crc32fast::hash(&footer);
        footer.extend_from_slice(&footer_crc.to_le_bytes());
        self.reserve((index.len() + footer.len()) as u64)?;
        self.write_all(&index)?;
        self.write_all(&footer)?;
        let file = self.file.take();
        let tmp = self.tmp.clone();
        let io = |source| PartitionFileError::Io {
            path: tmp.clone(),
            source,
        };
        if let Some(file) = file {
            file.into_inner().map_err(|e| io(e.into_error()))?;
        }
        std::fs::rename(&self.tmp, &self.path).map_err(io)?;
        let size = self.offset;
        // Kept: the file's bytes now belong to the partition (released when it is deleted).
        self.reserved = 0;
        Ok(size)
    }
}

impl Drop for PartitionFileWriter {
    fn drop(&mut self) {
        if self.reserved > 0 {
            drop(self.file.take());
            let _ = std::fs::remove_file(&self.tmp);
            self.quota.release(self.reserved);
        }
    }
}

/// A finished partition file, its index read and checked.
#[derive(Debug)]
pub struct PartitionFile {
    path: PathBuf,
    file: File,
    starts: Vec<u64>,
    entries: Vec<BufferEntry>,
}

fn le_u32(b: &[u8]) -> u32 {
    let mut a = [0; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

impl PartitionFile {
    /// Opens `path` and checks its footer and index.
    ///
    /// # Errors
    /// [`PartitionFileError::Io`] when it cannot be read (missing: `NotFound`),
    /// [`PartitionFileError::Damaged`] naming the byte where it is not what was written.
    pub fn open(path: &Path) -> Result<PartitionFile, PartitionFileError> {
        let io = |source| PartitionFileError::Io {
            path: path.to_owned(),
            source,
        };
        let damaged = |offset: u64, reason: String| PartitionFileError::Damaged {
            path: path.to_owned(),
            offset,
            reason,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len < FOOTER_BYTES as u64 {
            return Err(damaged(0, format!("{len} bytes, shorter than a footer")));
        }
        let footer_at = len - FOOTER_BYTES as u64;
        let mut footer = [0u8; FOOTER_BYTES];
        file.read_exact_at(&mut footer, footer_at).map_err(io)?;
        if crc32fast::hash(&footer[..36]) != le_u32(&footer[36..]) {
            return Err(damaged(footer_at, "footer checksum mismatch".into()));
        }
        if footer[..4] != MAGIC || le_u32(&footer[4..]) != VERSION {
            return Err(damaged(
                footer_at,
                "not a partition file of version 1".into(),
            ));
        }
        let subpartitions = u64::from(le_u32(&footer[8..]));
        let entries = le_u64(&footer[16..]);
        let index_offset = le_u64(&footer[24..]);
        let index_len = (subpartitions + 1).checked_mul(8).and_then(|t| {
            entries
                .checked_mul(ENTRY_BYTES as u64)
                .and_then(|e| e.checked_add(t))
        });
        if index_len.and_then(|l| l.checked_add(index_offset)) != Some(footer_at) {
            return Err(damaged(
                footer_at,
                format!("index of {entries} entries at {index_offset} does not end at the footer"),
            ));
        }
        let index_len = usize::try_from(footer_at - index_offset)
            .map_err(|_| damaged(index_offset, "index too large".into()))?;
        let mut index = vec![0u8; index_len];
        file.read_exact_at(&mut index, index_offset).map_err(io)?;
        if crc32fast::hash(&index) != le_u32(&footer[32..]) {
            return Err(damaged(index_offset, "index checksum mismatch".into()));
        }
        // At most the index's length, which fits in memory (read above).
        let table = usize::try_from((subpartitions + 1) * 8).unwrap_or(usize::MAX);
        let starts: Vec<u64> = index[..table].chunks_exact(8).map(le_u64).collect();
        let entries: Vec<BufferEntry> = index[table..]
            .chunks_exact(ENTRY_BYTES)
            .map(|e| BufferEntry {
                subpartition: le_u32(e),
                len: le_u32(&e[4..]),
                offset: le_u64(&e[8..]),
                crc: le_u32(&e[16..]),
            })
            .collect();
        if starts.windows(2).any(|w| w[0] > w[1]) || starts.last() != Some(&(entries.len() as u64))
        {
            return Err(damaged(
                index_offset,
                "subpartition table out of order".into(),
            ));
        }
        for (i, e) in entries.iter().enumerate() {
            let in_data = e
                .offset
                .checked_add(u64::from(e.len))
                .is_some_and(|end| end <= index_offset);
            if !in_data || e.len as usize > MAX_BUFFER_BYTES {
                return Err(damaged(
                    index_offset + table as u64 + (i * ENTRY_BYTES) as u64,
                    format!(
                        "entry {i}: {} bytes at {} outside the data",
                        e.len, e.offset
                    ),
                ));
            }
        }
        Ok(PartitionFile {
            path: path.to_owned(),
            file,
            starts,
            entries,
        })
    }

    /// Number of subpartitions.
    pub fn subpartitions(&self) -> u32 {
        u32::try_from(self.starts.len().saturating_sub(1)).unwrap_or(u32::MAX)
    }

    /// The buffers of `subpartitions`, in order (each subpartition's in written order), or
    /// `None` when the range is not within the file's subpartitions.
    pub fn buffers(&self, subpartitions: RangeInclusive<u32>) -> Option<&[BufferEntry]> {
        let (start, end) = (
            *subpartitions.start() as usize,
            *subpartitions.end() as usize,
        );
        if start > end || end + 1 >= self.starts.len() {
            return None;
        }
        let from = usize::try_from(self.starts[start]).ok()?;
        let to = usize::try_from(self.starts[end + 1]).ok()?;
        self.entries.get(from..to)
    }

    /// Reads one buffer and checks its CRC.
    ///
    /// # Errors
    /// [`PartitionFileError::Io`] when it cannot be read, [`PartitionFileError::Damaged`] when
    /// its checksum does not match.
    pub fn read(&self, entry: &BufferEntry) -> Result<Vec<u8>, PartitionFileError> {
        let mut buf = vec![0u8; entry.len as usize];
        self.file
            .read_exact_at(&mut buf, entry.offset)
            .map_err(|source| PartitionFileError::Io {
                path: self.path.clone(),
                source,
            })?;
        if crc32fast::hash(&buf) != entry.crc {
            return Err(PartitionFileError::Damaged {
                path: self.path.clone(),
                offset: entry.offset,
                reason: format!("buffer of {} bytes: checksum mismatch", entry.len),
            });
        }
        Ok(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, quota: &Arc<DiskQuota>) -> PathBuf {
        let path = dir.join("p.part");
        let mut w = PartitionFileWriter::create(path.clone(), 3, Arc::clone(quota)).unwrap();
        w.append(2, b"c1").unwrap();
        w.append(0, b"a1").unwrap();
        w.append(2, b"c2").unwrap();
        w.append(0, b"a2").unwrap();
        let size = w.finish().unwrap();
        assert_eq!(size, std::fs::metadata(&path).unwrap().len());
        assert_eq!(quota.used(), size);
        path
    }

    fn contents(file: &PartitionFile, range: RangeInclusive<u32>) -> Vec<Vec<u8>> {
        file.buffers(range)
            .unwrap()
            .iter()
            .map(|e| file.read(e).unwrap())
            .collect()
    }

    #[test]
    fn subpartitions_read_back_in_written_order() {
        let dir = tempfile::tempdir().unwrap();
        let quota = Arc::new(DiskQuota::new(None));
        let path = write(dir.path(), &quota);
        // 8 data bytes, a table of 4 u64s, 4 entries of 20 bytes, the footer.
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 8 + 32 + 80 + 40);
        let file = PartitionFile::open(&path).unwrap();
        assert_eq!(file.subpartitions(), 3);
        assert_eq!(contents(&file, 0..=0), [b"a1".to_vec(), b"a2".to_vec()]);
        assert!(contents(&file, 1..=1).is_empty());
        assert_eq!(contents(&file, 2..=2), [b"c1".to_vec(), b"c2".to_vec()]);
        assert_eq!(contents(&file, 0..=2).len(), 4);
        assert!(file.buffers(0..=3).is_none());
        assert!(!dir.path().join("p.part.tmp").exists());
    }

    #[test]
    fn every_damaged_byte_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let quota = Arc::new(DiskQuota::new(None));
        let path = write(dir.path(), &quota);
        let good = std::fs::read(&path).unwrap();
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x40;
            std::fs::write(&path, &bad).unwrap();
            let outcome = PartitionFile::open(&path).and_then(|f| {
                for e in f.buffers(0..=2).unwrap_or(&[]) {
                    f.read(e)?;
                }
                Ok(())
            });
            // The zero field of the footer is covered by the footer's CRC too.
            match outcome {
                Err(PartitionFileError::Damaged { .. }) => {}
                other => panic!("byte {at} flipped: {other:?}"),
            }
        }
        std::fs::write(&path, &good[..good.len() - 1]).unwrap();
        assert!(matches!(
            PartitionFile::open(&path),
            Err(PartitionFileError::Damaged { .. })
        ));
    }

    #[test]
    fn a_write_past_the_quota_fails_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let quota = Arc::new(DiskQuota::new(Some(100)));
        let path = dir.path().join("q.part");
        let mut w = PartitionFileWriter::create(path.clone(), 1, Arc::clone(&quota)).unwrap();
        w.append(0, &[7; 60]).unwrap();
        let err = w.append(0, &[7; 60]).unwrap_err();
        assert!(matches!(err, PartitionFileError::Quota { .. }), "{err}");
        assert!(
            err.to_string().contains("quota of 100 bytes exceeded"),
            "{err}"
        );
        drop(w);
        assert_eq!(quota.used(), 0);
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
