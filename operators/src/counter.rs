//! The counter: what a count subtask does with the words it receives (Flink's keyed `sum`,
//! with all of one word's records at one subtask).

use rustc_hash::FxHashMap;

use crate::record::{decode, DecodeError};

/// Counts per word. Memory is O(distinct words); a word is copied once, when first seen.
#[derive(Clone, Debug, Default)]
pub struct WordCounter {
    counts: FxHashMap<Box<str>, u64>,
    total: u64,
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
        if let Some(c) = self.counts.get_mut(word) {
            *c += n;
        } else {
            self.counts.insert(word.into(), n);
        }
        self.total += n;
    }

    /// Counts every record of a buffer of records; returns how many it counted.
    ///
    /// # Errors
    /// The first malformed record's [`DecodeError`]; the records before it are counted.
    pub fn add_records(&mut self, buf: &[u8]) -> Result<u64, DecodeError> {
        let mut n = 0;
        for word in decode(buf) {
            self.add(word?);
            n += 1;
        }
        Ok(n)
    }

    /// The count of `word` (0 if never seen).
    pub fn get(&self, word: &str) -> u64 {
        self.counts.get(word).copied().unwrap_or(0)
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
        let mut v: Vec<(&str, u64)> = self.counts.iter().map(|(w, &c)| (&**w, c)).collect();
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
    }
}
