//! The counter: what a count subtask does with the words it receives (Flink's keyed `sum`,
//! with all of one word's records at one subtask).

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

use rustc_hash::FxHashMap;

use crate::record::{decode_raw, DecodeError, Malformed};

/// Counts per word. Memory is O(distinct words); a word is copied once, when first seen.
#[derive(Clone, Debug, Default)]
pub struct WordCounter {
    counts: FxHashMap<Word, u64>,
    total: u64,
}

/// A counted word, looked up by its bytes: a record's word is hashed and compared as bytes,
/// and checked to be UTF-8 only when it is new (a word seen before was checked then).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Word(Box<str>);

impl Hash for Word {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As `[u8]` hashes, so that a lookup by bytes finds it (`Borrow` requires equal hashes).
        self.0.as_bytes().hash(state);
    }
}

impl Borrow<[u8]> for Word {
    fn borrow(&self) -> &[u8] {
        self.0.as_bytes()
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
        // One lookup for a word already seen (the common case under Zipf); the copy only for
        // a new one.
        if let Some(c) = self.counts.get_mut(word.as_bytes()) {
            *c += n;
        } else {
            self.counts.insert(Word(word.into()), n);
        }
        self.total += n;
    }

    /// Counts every record of a buffer of records; returns how many it counted.
    ///
    /// # Errors
    /// The first malformed record's [`DecodeError`]; the records before it are counted.
    pub fn add_records(&mut self, buf: &[u8]) -> Result<u64, DecodeError> {
        let mut n = 0;
        for record in decode_raw(buf) {
            let (offset, bytes) = record?;
            if let Some(c) = self.counts.get_mut(bytes) {
                *c += 1;
            } else {
                let word = std::str::from_utf8(bytes).map_err(|_| DecodeError {
                    offset,
                    kind: Malformed::InvalidUtf8,
                })?;
                self.counts.insert(Word(word.into()), 1);
            }
            self.total += 1;
            n += 1;
        }
        Ok(n)
    }

    /// The count of `word` (0 if never seen).
    pub fn get(&self, word: &str) -> u64 {
        self.counts.get(word.as_bytes()).copied().unwrap_or(0)
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
        let mut v: Vec<(&str, u64)> = self.counts.iter().map(|(w, &c)| (&*w.0, c)).collect();
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
}
