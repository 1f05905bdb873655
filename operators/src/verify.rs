//! Verification: the counts a word count must produce, computed from its seeds without the
//! engine (every source's stream summed, each word routed to its count subtask), compared with
//! the sink files of an output directory.

use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::config::WordCountConfig;
use crate::error::OperatorError;
use crate::sink::{read_counts, sink_file_name};
use crate::source::{WordSource, Zipf};
use crate::vocabulary::{check_parallelism, Vocabulary};

/// A word count job's shape: its parameters and the parallelisms of its two vertices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WordCountJob {
    /// Seeds, vocabulary size, words per source.
    pub config: WordCountConfig,
    /// Parallelism of the source vertex.
    pub sources: u32,
    /// Parallelism of the count vertex.
    pub counters: u32,
    /// Max parallelism of the count vertex: its number of key groups.
    pub max_parallelism: u32,
    /// Per count subtask, the key groups `(first, last)` it reads, when its parallelism was
    /// decided at run time (the adaptive batch scheduler's subpartition ranges, one subpartition
    /// per key group; contiguous, in subtask order, covering `0..max_parallelism`); `None`: the
    /// ranges of Flink's `KeyGroupRangeAssignment` for `counters`.
    pub key_group_ranges: Option<Vec<(u32, u32)>>,
}

impl WordCountJob {
    /// Words the job counts: `sources * words_per_source` (saturating).
    pub fn words(&self) -> u64 {
        u64::from(self.sources).saturating_mul(self.config.words_per_source)
    }

    /// The expected counts. O(words + vocabulary) time, O(vocabulary) memory: 100 M words
    /// take about a second.
    ///
    /// # Errors
    /// [`OperatorError`] for a vocabulary size, source parallelism or count parallelism out of
    /// range.
    pub fn expected(&self) -> Result<ExpectedCounts, OperatorError> {
        if self.sources == 0 {
            return Err(OperatorError::NoSources);
        }
        check_parallelism(self.counters, self.max_parallelism)?;
        let vocabulary = Vocabulary::new(self.config.seed, self.config.vocabulary)?;
        let zipf = Zipf::new(self.config.vocabulary)?;
        let mut counts = vec![0u64; vocabulary.len() as usize];
        for subtask in 0..self.sources {
            let source = WordSource::new(
                &zipf,
                self.config.seed,
                subtask,
                self.config.words_per_source,
            );
            for id in source {
                counts[id as usize] += 1;
            }
        }
        let routes = match &self.key_group_ranges {
            None => vocabulary.routes(self.counters, self.max_parallelism)?,
            Some(ranges) => {
                check_ranges(ranges, self.counters, self.max_parallelism)?;
                // With as many operators as key groups, the operator index is the key group.
                let key_groups = vocabulary.routes(self.max_parallelism, self.max_parallelism)?;
                key_groups
                    .into_iter()
                    .map(|kg| {
                        let at = ranges.partition_point(|&(_, last)| last < kg);
                        u32::try_from(at).unwrap_or(u32::MAX)
                    })
                    .collect()
            }
        };
        let mut per_subtask: Vec<Vec<(u32, u64)>> = vec![Vec::new(); self.counters as usize];
        for (id, (&count, &route)) in (0u32..).zip(counts.iter().zip(&routes)) {
            if count > 0 {
                per_subtask[route as usize].push((id, count));
            }
        }
        for entries in &mut per_subtask {
            entries.sort_unstable_by(|a, b| vocabulary.word(a.0).cmp(vocabulary.word(b.0)));
        }
        Ok(ExpectedCounts {
            vocabulary,
            per_subtask,
            words: counts.iter().sum(),
        })
    }
}

/// Checks run-time key group ranges: one per count subtask, contiguous from 0 to
/// `max_parallelism - 1`.
fn check_ranges(ranges: &[(u32, u32)], counters: u32, max: u32) -> Result<(), OperatorError> {
    let bad = |reason: String| OperatorError::KeyGroupRanges { reason };
    if ranges.len() != counters as usize {
        return Err(bad(format!(
            "{} ranges for {counters} count subtasks",
            ranges.len()
        )));
    }
    let mut next = 0u32;
    for (i, &(first, last)) in ranges.iter().enumerate() {
        if first != next || last < first {
            return Err(bad(format!(
                "subtask {i} reads key groups {first}..={last}, expected a range from {next}"
            )));
        }
        next = last.saturating_add(1);
    }
    if next != max {
        return Err(bad(format!(
            "the ranges end at key group {}, the max parallelism is {max}",
            next.saturating_sub(1)
        )));
    }
    Ok(())
}

/// The counts each count subtask must write, sorted by word as its sink file is.
#[derive(Clone, Debug)]
pub struct ExpectedCounts {
    vocabulary: Vocabulary,
    /// Per count subtask, `(word id, count)` for each word it receives, sorted by word.
    per_subtask: Vec<Vec<(u32, u64)>>,
    words: u64,
}

impl ExpectedCounts {
    /// Words in total (the sum of all counts).
    pub fn words(&self) -> u64 {
        self.words
    }

    /// Number of count subtasks.
    pub fn subtasks(&self) -> u32 {
        // One entry per count subtask, a u32 parallelism.
        u32::try_from(self.per_subtask.len()).unwrap_or(u32::MAX)
    }

    /// Subtask `subtask`'s expected `(word, count)` entries, sorted by word.
    ///
    /// # Panics
    /// When `subtask >= subtasks()`.
    pub fn subtask(&self, subtask: u32) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.per_subtask[subtask as usize]
            .iter()
            .map(|&(id, c)| (self.vocabulary.word(id), c))
    }

    /// Compares with the sink files in `dir`: one [`sink_file_name`] per count subtask, and no
    /// other part file. Reads one file at a time; O(words in the files) time.
    ///
    /// # Errors
    /// [`VerifyError::Dir`] when `dir` cannot be listed. A missing, unreadable or malformed
    /// file is not an error but a [`Difference`].
    pub fn verify_dir(&self, dir: &Path) -> Result<Verification, VerifyError> {
        let mut first: Option<Difference> = None;
        let mut found_words = 0u64;
        for subtask in 0..self.subtasks() {
            let path = dir.join(sink_file_name(subtask));
            if !path.exists() {
                first.get_or_insert(Difference::MissingFile { subtask, path });
                continue;
            }
            let found = match read_counts(&path) {
                Ok(f) => f,
                Err(e) => {
                    first.get_or_insert(Difference::Unreadable {
                        subtask,
                        error: e.to_string(),
                    });
                    continue;
                }
            };
            found_words = found
                .iter()
                .fold(found_words, |acc, (_, c)| acc.saturating_add(*c));
            if first.is_none() {
                first = first_difference(subtask, self.subtask(subtask), &found);
            }
        }
        if first.is_none() {
            first = unexpected_file(dir, self.subtasks())?;
        }
        Ok(Verification {
            words_expected: self.words,
            words_found: found_words,
            first_difference: first,
        })
    }
}

/// The first word, in file order, whose expected and found counts differ (a word on one side
/// only counts 0 on the other).
fn first_difference<'a>(
    subtask: u32,
    expected: impl Iterator<Item = (&'a str, u64)>,
    found: &[(String, u64)],
) -> Option<Difference> {
    let mut expected = expected.peekable();
    let mut found = found.iter().map(|(w, c)| (w.as_str(), *c)).peekable();
    loop {
        let diff = |word: &str, expected: u64, found: u64| {
            Some(Difference::Count {
                subtask,
                word: word.to_owned(),
                expected,
                found,
            })
        };
        match (expected.peek().copied(), found.peek().copied()) {
            (None, None) => return None,
            (Some((w, e)), None) => return diff(w, e, 0),
            (None, Some((w, f))) => return diff(w, 0, f),
            (Some((we, e)), Some((wf, f))) => match we.cmp(wf) {
                std::cmp::Ordering::Less => return diff(we, e, 0),
                std::cmp::Ordering::Greater => return diff(wf, 0, f),
                std::cmp::Ordering::Equal if e != f => return diff(we, e, f),
                std::cmp::Ordering::Equal => {
                    expected.next();
                    found.next();
                }
            },
        }
    }
}

/// A part file of a subtask at or above `subtasks`, if any (the first by name).
fn unexpected_file(dir: &Path, subtasks: u32) -> Result<Option<Difference>, VerifyError> {
    let dir_err = |source| VerifyError::Dir {
        path: dir.to_path_buf(),
        source,
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(dir_err)? {
        let name = entry.map_err(dir_err)?.file_name();
        let Some(name) = name.to_str() else { continue };
        let index = name
            .strip_prefix("part-")
            .and_then(|n| n.strip_suffix(".tsv"))
            .and_then(|n| n.parse::<u64>().ok());
        if index.is_some_and(|i| i >= u64::from(subtasks)) {
            names.push(name.to_owned());
        }
    }
    names.sort();
    Ok(names
        .into_iter()
        .next()
        .map(|name| Difference::UnexpectedFile {
            path: dir.join(name),
        }))
}

/// The outcome of comparing an output directory with the expected counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verification {
    /// Words the job must count.
    pub words_expected: u64,
    /// Words the readable sink files count (the sum of their counts).
    pub words_found: u64,
    /// The first difference, by subtask then word; `None` when the output is right.
    pub first_difference: Option<Difference>,
}

impl Verification {
    /// Whether the output is exactly the expected counts.
    pub fn verified(&self) -> bool {
        self.first_difference.is_none() && self.words_expected == self.words_found
    }
}

/// How an output directory differs from the expected counts.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum Difference {
    /// A word's count differs (0 for a word missing on that side).
    #[error("subtask {subtask}: word {word:?}: expected {expected}, found {found}")]
    Count {
        /// The count subtask.
        subtask: u32,
        /// The word.
        word: String,
        /// Its expected count.
        expected: u64,
        /// Its count in the file.
        found: u64,
    },
    /// A count subtask wrote no file.
    #[error("subtask {subtask}: no file {path}")]
    MissingFile {
        /// The count subtask.
        subtask: u32,
        /// The file expected.
        path: PathBuf,
    },
    /// A count subtask's file cannot be read or is malformed.
    #[error("subtask {subtask}: {error}")]
    Unreadable {
        /// The count subtask.
        subtask: u32,
        /// The [`SinkError`](crate::SinkError), as text.
        error: String,
    },
    /// A part file of a subtask the job does not have.
    #[error("unexpected file {path}")]
    UnexpectedFile {
        /// The file.
        path: PathBuf,
    },
}

/// Why verification could not run.
#[derive(Debug, Error)]
pub enum VerifyError {
    /// A parameter is out of range.
    #[error(transparent)]
    Operator(#[from] OperatorError),
    /// The output directory cannot be listed.
    #[error("output directory {path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// Computes the expected counts of `job` and compares them with the sink files in `dir`.
///
/// # Errors
/// As [`WordCountJob::expected`] and [`ExpectedCounts::verify_dir`].
pub fn verify_output(job: &WordCountJob, dir: &Path) -> Result<Verification, VerifyError> {
    job.expected()?.verify_dir(dir)
}
