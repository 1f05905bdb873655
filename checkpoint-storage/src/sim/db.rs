//! The synthetic RocksDB-like database each subtask checkpoints, and its deterministic bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use crate::upload_plan::{LocalFile, LocalSnapshot};

/// Bytes of one MANIFEST version edit in the synthetic database.
const EDIT_BYTES: u64 = 48;

/// SplitMix64, seeded: every random choice of the simulation.
pub type SimRng = conflux_common::SplitMix64;

/// Deterministic content: byte `i` of stream `seed`, generated in 8-byte blocks so any prefix
/// of a stream is the stream's prefix (the MANIFEST grows by appending).
pub fn content(seed: u64, range: Range<u64>) -> Vec<u8> {
    let mut out = Vec::with_capacity(usize::try_from(range.end - range.start).unwrap_or(0));
    let mut i = range.start;
    while i < range.end {
        let block = i / 8;
        let mut r = SimRng::new(seed ^ block.wrapping_mul(0x2545_F491_4F6C_DD1D));
        let bytes = r.next_u64().to_le_bytes();
        let from = usize::try_from(i % 8).unwrap_or(0);
        let take = usize::try_from((8 - i % 8).min(range.end - i)).unwrap_or(0);
        out.extend_from_slice(&bytes[from..from + take]);
        i += take as u64;
    }
    out
}

fn name_seed(subtask: u32, name: &str) -> u64 {
    let mut h = conflux_common::Fnv1a64::with_state(
        conflux_common::Fnv1a64::OFFSET_BASIS ^ u64::from(subtask),
    );
    h.write_bytes(name.as_bytes());
    h.digest()
}

/// A RocksDB-like local database: what a checkpoint snapshots.
#[derive(Clone, Debug)]
pub(super) struct LocalDb {
    pub(super) index: u32,
    pub(super) next_file: u64,
    /// Live SST files: name -> size.
    pub(super) live: BTreeMap<String, u64>,
    pub(super) manifest_number: u64,
    pub(super) manifest_len: u64,
    pub(super) options_number: u64,
    pub(super) log_len: u64,
}

/// What a checkpoint captured of a database: enough to check a restore and to reopen.
#[derive(Clone, Debug)]
pub(super) struct DbImage {
    pub(super) files: BTreeMap<String, u64>,
    pub(super) live: BTreeMap<String, u64>,
}

impl LocalDb {
    pub(super) fn new(index: u32) -> LocalDb {
        let mut db = LocalDb {
            index,
            next_file: 1,
            live: BTreeMap::new(),
            manifest_number: 0,
            manifest_len: 0,
            options_number: 0,
            log_len: 0,
        };
        db.reopen();
        db
    }

    /// A reopen writes a fresh, compact MANIFEST and a new OPTIONS file, as RocksDB does.
    pub(super) fn reopen(&mut self) {
        self.manifest_number = self.next_file;
        self.options_number = self.next_file + 1;
        self.next_file += 2;
        self.manifest_len = 64 + EDIT_BYTES * self.live.len() as u64;
    }

    fn manifest_name(&self) -> String {
        format!("MANIFEST-{:06}", self.manifest_number)
    }

    /// One checkpoint interval: flushes `new_files` SST files and, past `max_live`, compacts
    /// away as many old ones; the MANIFEST records every change and rolls past `roll`.
    pub(super) fn advance(
        &mut self,
        rng: &mut SimRng,
        new_files: u32,
        size: Range<u64>,
        max_live: u32,
        roll: u64,
    ) {
        for _ in 0..new_files {
            let name = format!("{:06}.sst", self.next_file);
            self.next_file += 1;
            self.live.insert(name, rng.range(size.clone()));
        }
        let mut edits = u64::from(new_files);
        let max_live = usize::try_from(max_live).unwrap_or(usize::MAX);
        let excess = self.live.len().saturating_sub(max_live);
        if excess > 0 {
            // LSM-like victims (file names are in creation order): two thirds among the newest
            // third of the files (young level-0 / level-1 files are compacted soon), the rest
            // as runs of up to 16 files written together, anywhere (a deeper level's
            // compaction takes a key range, whose files were written by one earlier
            // compaction). Holes so appear in old merged files too.
            let names: Vec<String> = self.live.keys().cloned().collect();
            let n = names.len() as u64;
            let mut victims = BTreeSet::new();
            let young = u64::try_from(excess).unwrap_or(0) * 2 / 3;
            let mut guard = 0;
            while victims.len() < excess && guard < 100 * excess {
                guard += 1;
                if (victims.len() as u64) < young {
                    victims.insert(rng.range(n - n.div_ceil(3)..n));
                } else {
                    let start = rng.range(0..n);
                    let run = rng.range(1..17);
                    for v in start..(start + run).min(n) {
                        if victims.len() < excess {
                            victims.insert(v);
                        }
                    }
                }
            }
            for v in victims {
                if let Some(name) = names.get(usize::try_from(v).unwrap_or(usize::MAX)) {
                    self.live.remove(name);
                    edits += 1;
                }
            }
        }
        self.manifest_len += edits * EDIT_BYTES;
        if self.manifest_len > roll {
            self.manifest_number = self.next_file;
            self.next_file += 1;
            self.manifest_len = 64 + EDIT_BYTES * self.live.len() as u64;
        }
        self.log_len += 2048;
    }

    fn files(&self) -> BTreeMap<String, u64> {
        let mut files = self.live.clone();
        files.insert(self.manifest_name(), self.manifest_len);
        files.insert("CURRENT".to_owned(), self.current().len() as u64);
        files.insert(format!("OPTIONS-{:06}", self.options_number), 1024);
        files.insert("LOG".to_owned(), self.log_len);
        files
    }

    fn current(&self) -> String {
        format!("{}\n", self.manifest_name())
    }

    pub(super) fn snapshot(&self) -> LocalSnapshot {
        LocalSnapshot {
            files: self
                .files()
                .into_iter()
                .map(|(name, size)| LocalFile { name, size })
                .collect(),
        }
    }

    pub(super) fn image(&self) -> DbImage {
        DbImage {
            files: self.files(),
            live: self.live.clone(),
        }
    }

    pub(super) fn read(&self, name: &str, range: Range<u64>) -> Vec<u8> {
        expected_bytes(self.index, name, &self.current(), range)
    }
}

/// The bytes a file of subtask `index` holds in `range` (every file's content is a function of
/// its name; CURRENT's is given).
pub(super) fn expected_bytes(index: u32, name: &str, current: &str, range: Range<u64>) -> Vec<u8> {
    if name == "CURRENT" {
        let bytes = current.as_bytes();
        let s = usize::try_from(range.start)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        let e = usize::try_from(range.end)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        return bytes[s..e].to_vec();
    }
    content(name_seed(index, name), range)
}
