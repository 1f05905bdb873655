//! The counter: what a count subtask does with the words it receives (Flink's keyed `sum`,
//! with all of one word's records at one subtask).

use std::hash::Hasher;

use hashbrown::HashTable;
use rustc_hash::FxHasher;

use crate::record::{decode_raw, DecodeError, Malformed};

/// Counts per word. Memory is O(distinct words); a word is copied once, when first seen.
///
/// A record's word is hashed and compared as bytes, and checked to be UTF-8 only when it is
/// new (a word seen before was checked then); comparisons of short words are inlined rather
/// than calls to `memcmp` (which cost more than comparing 5 bytes).
#[derive(Clone, Debug, Default)]
pub struct WordCounter {
    counts: HashTable<(Box<str>, u64)>,
    total: u64,
}

/// The hash of a word's bytes (Fx: the words come from our own sources, so resistance to
/// collisions chosen by an attacker is not needed).
#[inline]
fn hash_of(bytes: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(bytes);
    h.finish()
}

/// The first `N` bytes of `s` as an integer.
#[inline]
fn load<const N: usize>(s: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&s[..N]);
    a
}

/// `a == b`, with the few bytes of a word compared by two overlapping fixed-size loads.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        8..=16 => load::<8>(a) == load::<8>(b) && load::<8>(&a[n - 8..]) == load::<8>(&b[n - 8..]),
        4..=7 => load::<4>(a) == load::<4>(b) && load::<4>(&a[n - 4..]) == load::<4>(&b[n - 4..]),
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        0 => true,
        _ => a == b,
    }
}

impl WordCounter {
    /// An empty counter.
    pub fn new() -> WordCounter {
        WordCounter::default()
    }

    /// Counts one occurrence of `word`.
    #[inline]
    pub fn add(&mut self, word: &str) {
        self.add_n(word, 1);
    }

    /// Counts `n` occurrences of `word`.
    #[inline]
    pub fn add_n(&mut self, word: &str, n: u64) {
        let counted: Result<(), std::convert::Infallible> =
            self.count(word.as_bytes(), n, || Ok(word));
        let Ok(()) = counted;
        self.total += n;
    }

    /// Adds `n` to the count of the word whose bytes are `bytes`; a new word is `word()`
    /// (which checks it is UTF-8) and copied.
    #[inline]
    fn count<'w, E>(
        &mut self,
        bytes: &'w [u8],
        n: u64,
        word: impl FnOnce() -> Result<&'w str, E>,
    ) -> Result<(), E> {
        let hash = hash_of(bytes);
        if let Some(entry) = self
            .counts
            .find_mut(hash, |e| same_bytes(e.0.as_bytes(), bytes))
        {
            entry.1 += n;
        } else {
            self.counts
                .insert_unique(hash, (word()?.into(), n), |e| hash_of(e.0.as_bytes()));
        }
        Ok(())
    }

    /// Counts every record of a buffer of records; returns how many it counted.
    ///
    /// # Errors
    /// The first malformed record's [`DecodeError`]; the records before it are counted.
    pub fn add_records(&mut self, buf: &[u8]) -> Result<u64, DecodeError> {
        let mut n = 0;
        for record in decode_raw(buf) {
            let (offset, bytes) = record?;
            self.count(bytes, 1, || {
                std::str::from_utf8(bytes).map_err(|_| DecodeError {
                    offset,
                    kind: Malformed::InvalidUtf8,
                })
            })?;
            self.total += 1;
            n += 1;
        }
        Ok(n)
    }

    /// The count of `word` (0 if never seen).
    pub fn get(&self, word: &str) -> u64 {
        let bytes = word.as_bytes();
        self.counts
            .find(hash_of(bytes), |e| same_bytes(e.0.as_bytes(), bytes))
            .map_or(0, |e| e.1)
    }

    /// Words counted, with repetitions: the sum of all counts.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Distinct words counted.
    pub fn distinct(&self) -> usize {
        self.counts.len()
    }

    /// The counts sorted by word (byte order of the UTF-8, as `str`'s `Ord`), as the sink
    /// writes them. O(d log d) for d distinct words.
    pub fn sorted(&self) -> Vec<(&str, u64)> {
        let mut v: Vec<(&str, u64)> = self.counts.iter().map(|(w, c)| (&**w, *c)).collect();
        v.sort_unstable_by(|a, b| a.0.cmp(b.0));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RecordWriter;

    #[test]
    fn counts_words_and_records() {
        let mut c = WordCounter::new();
        for w in ["to", "be", "or", "not", "to", "be"] {
            c.add(w);
        }
        c.add_n("be", 3);
        assert_eq!(
            (c.get("to"), c.get("be"), c.get("or"), c.get("x")),
            (2, 5, 1, 0)
        );
        assert_eq!((c.total(), c.distinct()), (9, 4));
        assert_eq!(c.sorted(), [("be", 5), ("not", 1), ("or", 1), ("to", 2)]);

        let mut buf = [0u8; 64];
        let mut w = RecordWriter::new(&mut buf);
        for word in ["é", "to", "é"] {
            w.push(word).expect("fits");
        }
        let n = w.len();
        assert_eq!(c.add_records(&buf[..n]), Ok(3));
        assert_eq!((c.get("é"), c.get("to"), c.total()), (2, 3, 12));
        // A malformed tail: the records before it count, the error names its offset.
        let mut bad = buf[..n].to_vec();
        bad.push(5);
        assert_eq!(c.add_records(&bad).map_err(|e| e.offset), Err(n));
        assert_eq!(c.total(), 15);
        // A record that is not UTF-8 (a lone continuation byte) after a known word: the
        // error names its offset and kind, the word before it counts.
        let not_utf8 = [2, b't', b'o', 1, 0x80];
        assert_eq!(
            c.add_records(&not_utf8),
            Err(DecodeError {
                offset: 3,
                kind: Malformed::InvalidUtf8
            })
        );
        assert_eq!((c.get("to"), c.total(), c.distinct()), (5, 16, 5));
    }

    #[test]
    fn short_comparisons_agree_with_slices() {
        let words: Vec<Vec<u8>> = (0..=20)
            .flat_map(|n: usize| {
                let base: Vec<u8> = (b'a'..=b'z').cycle().take(n).collect();
                // The word, and it with one byte changed at the start, middle and end.
                let mut variants = vec![base.clone()];
                for at in [0, n / 2, n.saturating_sub(1)] {
                    if n > 0 {
                        let mut v = base.clone();
                        v[at] ^= 1;
                        variants.push(v);
                    }
                }
                variants
            })
            .collect();
        for a in &words {
            for b in &words {
                assert_eq!(same_bytes(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }
}
