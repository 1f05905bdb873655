//! Every vocabulary word's record, encoded once, beside its consumer subtask: what a source
//! copies per word, so that emitting a word is one table read and one copy (the word's route,
//! its bytes' place and its length side by side, rather than in three arrays and a string).

use crate::error::OperatorError;
use crate::record::{encode, encoded_len};
use crate::vocabulary::Vocabulary;

/// One word's record: where it is in [`RoutedVocabulary`]'s bytes, and its consumer subtask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    start: u32,
    len: u32,
    subtask: u32,
}

/// The records of a [`Vocabulary`]'s words (as [`encode`] writes them), each with its consumer
/// subtask for a keyed exchange into `parallelism` subtasks with `max_parallelism` key groups
/// ([`Vocabulary::routes`]). O(words) time and memory: 100,000 words take about 1.5 MB.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutedVocabulary {
    bytes: Vec<u8>,
    entries: Vec<Entry>,
}

impl RoutedVocabulary {
    /// The records and routes of every word of `vocabulary`.
    ///
    /// # Errors
    /// [`OperatorError::Parallelism`] when `parallelism` is 0 or above `max_parallelism`;
    /// [`OperatorError::Vocabulary`] when the records do not fit in 4 GiB (never for a
    /// vocabulary of at most [`MAX_VOCABULARY_SIZE`](crate::MAX_VOCABULARY_SIZE) words).
    pub fn new(
        vocabulary: &Vocabulary,
        parallelism: u32,
        max_parallelism: u32,
    ) -> Result<RoutedVocabulary, OperatorError> {
        let routes = vocabulary.routes(parallelism, max_parallelism)?;
        let too_big = || OperatorError::Vocabulary {
            size: vocabulary.len(),
        };
        let mut bytes = Vec::new();
        let mut entries = Vec::with_capacity(routes.len());
        for (word, subtask) in vocabulary.iter().zip(routes) {
            let start = bytes.len();
            bytes.resize(start + encoded_len(word), 0);
            // Vocabulary words are at most MAX_WORD_BYTES long: encoding cannot fail.
            let len = encode(word, &mut bytes[start..]).map_err(|_| too_big())?;
            entries.push(Entry {
                start: u32::try_from(start).map_err(|_| too_big())?,
                len: u32::try_from(len).map_err(|_| too_big())?,
                subtask,
            });
        }
        u32::try_from(bytes.len()).map_err(|_| too_big())?;
        Ok(RoutedVocabulary { bytes, entries })
    }

    /// Word `id`'s consumer subtask and record.
    ///
    /// # Panics
    /// When `id` is not a word of the vocabulary.
    #[inline]
    pub fn record(&self, id: u32) -> (u32, &[u8]) {
        let e = self.entries[id as usize];
        let start = e.start as usize;
        (e.subtask, &self.bytes[start..start + e.len as usize])
    }

    /// Number of words.
    pub fn len(&self) -> u32 {
        u32::try_from(self.entries.len()).unwrap_or(u32::MAX)
    }

    /// Whether it has no words (never for a [`Vocabulary`]).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::decode;

    #[test]
    fn each_word_is_its_record_and_its_route() {
        let vocabulary = Vocabulary::new(7, 1_000).expect("vocabulary");
        let routed = RoutedVocabulary::new(&vocabulary, 12, 128).expect("routed");
        let routes = vocabulary.routes(12, 128).expect("routes");
        assert_eq!(routed.len(), 1_000);
        for id in 0..1_000 {
            let (subtask, record) = routed.record(id);
            assert_eq!(subtask, routes[id as usize], "word {id}");
            let words: Vec<&str> = decode(record).collect::<Result<_, _>>().expect("a record");
            assert_eq!(words, [vocabulary.word(id)], "word {id}");
        }
        assert!(matches!(
            RoutedVocabulary::new(&vocabulary, 129, 128),
            Err(OperatorError::Parallelism { .. })
        ));
    }
}
