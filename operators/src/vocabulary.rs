//! The seeded vocabulary: V distinct words, word `i` being the `i`-th most frequent of the
//! source's Zipf distribution.

use conflux_common::key_groups::operator_index_for_str;
use conflux_common::SplitMix64;

use crate::error::OperatorError;
use crate::record::MAX_WORD_BYTES;
use crate::vocabulary_limit::MAX_VOCABULARY_SIZE;

/// The default number of words in the vocabulary.
pub const DEFAULT_VOCABULARY_SIZE: u32 = 100_000;

/// Consonants of the syllables: mostly ASCII, some Latin letters outside ASCII (two UTF-8
/// bytes, one UTF-16 unit) and one outside the Basic Multilingual Plane (four UTF-8 bytes, two
/// UTF-16 units), so that routing exercises every case of Java's `String.hashCode`.
const CONSONANTS: [char; 23] = [
    'b', 'c', 'd', 'f', 'g', 'h', 'j', 'k', 'l', 'm', 'n', 'p', 'q', 'r', 's', 't', 'v', 'w', 'x',
    'z', 'ç', 'ñ', '𐐷',
];

/// Vowels of the syllables, two of them outside ASCII.
const VOWELS: [char; 8] = ['a', 'e', 'i', 'o', 'u', 'y', 'é', 'ü'];

/// The words of a word count: `len()` distinct words, seeded, each short (at most 3 syllables
/// for the default size) and free of whitespace. Stored as one string and an end offset per
/// word: 100,000 words take about 1.2 MB.
///
/// Word `i` is the bijective base-184 numeral of `i` whose digits are syllables (a consonant
/// then a vowel, so the syllables of a word parse back uniquely and words are distinct); the
/// seed shuffles the syllable table, so another seed gives other words in another order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vocabulary {
    seed: u64,
    text: String,
    /// `ends[i]` is the byte offset in `text` where word `i` ends; word `i` starts at
    /// `ends[i - 1]` (0 for the first).
    ends: Vec<u32>,
}

impl Vocabulary {
    /// The vocabulary of `size` words for `seed`. O(size) time and memory.
    ///
    /// # Errors
    /// [`OperatorError::Vocabulary`] when `size` is 0 or above [`MAX_VOCABULARY_SIZE`].
    pub fn new(seed: u64, size: u32) -> Result<Vocabulary, OperatorError> {
        if size == 0 || size > MAX_VOCABULARY_SIZE {
            return Err(OperatorError::Vocabulary { size });
        }
        let mut syllables: Vec<String> = CONSONANTS
            .iter()
            .flat_map(|&c| VOWELS.iter().map(move |&v| [c, v].iter().collect()))
            .collect();
        // Fisher-Yates with the seed: the same table on every platform.
        let mut rng = SplitMix64::new(seed);
        for i in (1..syllables.len()).rev() {
            let j = rng.index(i + 1);
            syllables.swap(i, j);
        }
        let base = syllables.len() as u64;
        let mut text = String::new();
        let mut ends = Vec::with_capacity(size as usize);
        let mut digits = Vec::new();
        for i in 0..u64::from(size) {
            // Bijective numeration: every i has its own digit string, the shortest first.
            digits.clear();
            let mut n = i + 1;
            while n > 0 {
                n -= 1;
                digits.push(n % base);
                n /= base;
            }
            for &d in digits.iter().rev() {
                let d = usize::try_from(d).unwrap_or(0);
                text.push_str(&syllables[d]);
            }
            // Bounded: at most 4 syllables of at most 5 bytes below MAX_VOCABULARY_SIZE.
            ends.push(u32::try_from(text.len()).map_err(|_| OperatorError::Vocabulary { size })?);
        }
        debug_assert!(ends
            .windows(2)
            .all(|w| ((w[1] - w[0]) as usize) <= MAX_WORD_BYTES));
        Ok(Vocabulary { seed, text, ends })
    }

    /// The seed it was made with.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Number of words.
    pub fn len(&self) -> u32 {
        // At most MAX_VOCABULARY_SIZE words, checked in `new`.
        u32::try_from(self.ends.len()).unwrap_or(u32::MAX)
    }

    /// Whether it has no words (never: `new` refuses size 0).
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Word `id` (its rank in the Zipf distribution, 0 the most frequent).
    ///
    /// # Panics
    /// When `id >= len()`.
    pub fn word(&self, id: u32) -> &str {
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    /// The words in id order.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len()).map(|id| self.word(id))
    }

    /// The consumer subtask of every word, indexed by word id, for a keyed exchange into
    /// `parallelism` subtasks with `max_parallelism` key groups, as Flink's
    /// `KeyGroupRangeAssignment` routes a `String` key. Computed once per (parallelism, max
    /// parallelism) so that routing a word is one array read. O(len) time and memory.
    ///
    /// # Errors
    /// [`OperatorError::Parallelism`] when `parallelism` is 0 or above `max_parallelism`.
    pub fn routes(
        &self,
        parallelism: u32,
        max_parallelism: u32,
    ) -> Result<Vec<u32>, OperatorError> {
        check_parallelism(parallelism, max_parallelism)?;
        Ok(self
            .iter()
            .map(|w| operator_index_for_str(w, max_parallelism, parallelism))
            .collect())
    }
}

/// Checks a keyed exchange's parallelism against its max parallelism (Flink requires
/// `1 <= parallelism <= max_parallelism`).
pub(crate) fn check_parallelism(
    parallelism: u32,
    max_parallelism: u32,
) -> Result<(), OperatorError> {
    if parallelism == 0 || parallelism > max_parallelism {
        return Err(OperatorError::Parallelism {
            parallelism,
            max_parallelism,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_distinct_short_and_seeded() {
        let v = Vocabulary::new(7, 40_000).expect("valid size");
        assert_eq!(v.len(), 40_000);
        let mut seen = std::collections::HashSet::new();
        for w in v.iter() {
            assert!(!w.is_empty() && w.chars().count() <= 6, "{w:?}");
            assert!(!w.contains(char::is_whitespace));
            assert!(seen.insert(w.to_owned()), "duplicate {w:?}");
        }
        // Some words are not ASCII; some need UTF-16 surrogates.
        assert!(v.iter().any(|w| !w.is_ascii()));
        assert!(v.iter().any(|w| w.chars().any(|c| u32::from(c) > 0xFFFF)));
        // The first 184 words are the single syllables; then two syllables.
        assert_eq!(v.word(0).chars().count(), 2);
        assert_eq!(v.word(183).chars().count(), 2);
        assert_eq!(v.word(184).chars().count(), 4);
        assert_eq!(Vocabulary::new(7, 40_000).expect("valid"), v);
        assert_ne!(
            Vocabulary::new(8, 40_000).expect("valid").word(0),
            v.word(0)
        );
    }

    #[test]
    fn sizes_out_of_range_are_refused() {
        assert!(matches!(
            Vocabulary::new(1, 0),
            Err(OperatorError::Vocabulary { size: 0 })
        ));
        assert!(Vocabulary::new(1, MAX_VOCABULARY_SIZE + 1).is_err());
        assert!(Vocabulary::new(1, 1).is_ok());
    }

    #[test]
    fn routes_follow_the_key_group_chain() {
        let v = Vocabulary::new(3, 1000).expect("valid");
        let routes = v.routes(7, 256).expect("valid");
        for (id, &r) in routes.iter().enumerate() {
            let id = u32::try_from(id).expect("small");
            assert_eq!(r, operator_index_for_str(v.word(id), 256, 7));
            assert!(r < 7);
        }
        // All 7 subtasks get words.
        for s in 0..7 {
            assert!(routes.contains(&s));
        }
        assert!(v.routes(0, 128).is_err());
        assert!(v.routes(129, 128).is_err());
    }
}
