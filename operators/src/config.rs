//! A word count's parameters, read from a job vertex's task configuration (the job graph's
//! `config` map, as Flink's `TaskConfig`).

use crate::error::OperatorError;
use crate::vocabulary::DEFAULT_VOCABULARY_SIZE;

/// The task name (job graph `invokable`) of the word count's source vertex.
pub const INVOKABLE_SOURCE: &str = "wordcount-source";
/// The task name (job graph `invokable`) of the word count's count-and-sink vertex.
pub const INVOKABLE_COUNT: &str = "wordcount-count";

/// Config key: words each source subtask emits (required).
pub const KEY_WORDS_PER_SOURCE: &str = "words-per-source";
/// Config key: number of words in the vocabulary (default [`DEFAULT_VOCABULARY_SIZE`]).
pub const KEY_VOCABULARY: &str = "vocabulary";
/// Config key: the seed of the vocabulary and of every source stream (default [`DEFAULT_SEED`]).
pub const KEY_SEED: &str = "seed";

/// The seed when the config gives none.
pub const DEFAULT_SEED: u64 = 1;

/// What a word count's tasks need beyond the graph's parallelisms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WordCountConfig {
    /// The seed of the vocabulary and of every source stream.
    pub seed: u64,
    /// Words in the vocabulary.
    pub vocabulary: u32,
    /// Words each source subtask emits.
    pub words_per_source: u64,
}

impl WordCountConfig {
    /// Reads the config map's entries (`(key, value)` pairs, other keys ignored): decimal
    /// `words-per-source` (required), `vocabulary` and `seed` (defaults
    /// [`DEFAULT_VOCABULARY_SIZE`], [`DEFAULT_SEED`]).
    ///
    /// # Errors
    /// [`OperatorError::Config`] naming the key that is missing or not a number in range.
    pub fn from_config<'a>(
        entries: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<WordCountConfig, OperatorError> {
        let (mut words, mut vocabulary, mut seed) = (None, None, None);
        for (key, value) in entries {
            let bad = |reason: &str| OperatorError::Config {
                key: key.to_owned(),
                reason: format!("{value:?} {reason}"),
            };
            match key {
                KEY_WORDS_PER_SOURCE => {
                    words = Some(value.parse::<u64>().map_err(|_| bad("is not a u64"))?);
                }
                KEY_VOCABULARY => {
                    let v = value.parse::<u32>().map_err(|_| bad("is not a u32"))?;
                    if v == 0 || v > crate::MAX_VOCABULARY_SIZE {
                        return Err(bad(&format!(
                            "is not in 1..={}",
                            crate::MAX_VOCABULARY_SIZE
                        )));
                    }
                    vocabulary = Some(v);
                }
                KEY_SEED => seed = Some(value.parse::<u64>().map_err(|_| bad("is not a u64"))?),
                _ => {}
            }
        }
        Ok(WordCountConfig {
            seed: seed.unwrap_or(DEFAULT_SEED),
            vocabulary: vocabulary.unwrap_or(DEFAULT_VOCABULARY_SIZE),
            words_per_source: words.ok_or_else(|| OperatorError::Config {
                key: KEY_WORDS_PER_SOURCE.to_owned(),
                reason: "missing".to_owned(),
            })?,
        })
    }

    /// The config map's entries for these parameters, keys in sorted order.
    pub fn to_config(&self) -> [(&'static str, String); 3] {
        [
            (KEY_SEED, self.seed.to_string()),
            (KEY_VOCABULARY, self.vocabulary.to_string()),
            (KEY_WORDS_PER_SOURCE, self.words_per_source.to_string()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_the_config_map() {
        let c = WordCountConfig::from_config([("words-per-source", "1562500"), ("x", "y")])
            .expect("valid");
        assert_eq!(
            c,
            WordCountConfig {
                seed: DEFAULT_SEED,
                vocabulary: 100_000,
                words_per_source: 1_562_500
            }
        );
        let pairs = c.to_config();
        let back = WordCountConfig::from_config(pairs.iter().map(|(k, v)| (*k, v.as_str())));
        assert_eq!(back, Ok(c));
        let e = WordCountConfig::from_config([("vocabulary", "10")]).expect_err("missing");
        assert_eq!(e.to_string(), "task config key 'words-per-source': missing");
        let e = WordCountConfig::from_config([("words-per-source", "1"), ("vocabulary", "0")])
            .expect_err("zero");
        assert_eq!(
            e.to_string(),
            "task config key 'vocabulary': \"0\" is not in 1..=16777216"
        );
        let e = WordCountConfig::from_config([("words-per-source", "-1")]).expect_err("neg");
        assert_eq!(
            e.to_string(),
            "task config key 'words-per-source': \"-1\" is not a u64"
        );
    }
}
