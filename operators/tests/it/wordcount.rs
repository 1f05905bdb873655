//! A small word count in process: sources -> keyed exchange in 32 KiB buffers -> counters ->
//! sinks -> verification from the seeds.

use std::path::Path;

use conflux_common::key_groups::operator_index_for_str;
use conflux_operators::{
    read_counts, sink_file_name, verify_output, write_counts, Difference, EncodeError, KeyedWriter,
    RoutedVocabulary, Vocabulary, WordCountConfig, WordCountJob, WordCounter, WordSource, Zipf,
};

/// Runs the job as the engine would, with every buffer handed straight to its consumer.
/// Returns the shuffle bytes.
fn run(job: &WordCountJob, out: &Path) -> u64 {
    let c = job.config;
    let vocabulary = Vocabulary::new(c.seed, c.vocabulary).expect("valid");
    let zipf = Zipf::new(c.vocabulary).expect("valid");
    let routed =
        RoutedVocabulary::new(&vocabulary, job.counters, job.max_parallelism).expect("valid");
    let mut counters: Vec<WordCounter> = (0..job.counters).map(|_| WordCounter::new()).collect();
    let mut shuffle_bytes = 0;
    for subtask in 0..job.sources {
        let mut writer = KeyedWriter::new(job.counters, 32 * 1024);
        let mut deliver = |consumer: u32, buf: &[u8]| -> Result<(), EncodeError> {
            counters[consumer as usize]
                .add_records(buf)
                .expect("valid records");
            Ok(())
        };
        for id in WordSource::new(&zipf, c.seed, subtask, c.words_per_source) {
            let (consumer, record) = routed.record(id);
            writer
                .write_record(consumer, record, &mut deliver)
                .expect("fits");
        }
        writer.flush(&mut deliver).expect("flushes");
        shuffle_bytes += writer.bytes();
    }
    for (subtask, counter) in counters.iter().enumerate() {
        let subtask = u32::try_from(subtask).expect("small");
        // Every word a counter saw is one the key-group chain routes to it.
        for (word, _) in counter.sorted() {
            assert_eq!(
                operator_index_for_str(word, job.max_parallelism, job.counters),
                subtask
            );
        }
        write_counts(out, subtask, &counter.sorted()).expect("writes");
    }
    shuffle_bytes
}

fn job() -> WordCountJob {
    WordCountJob {
        config: WordCountConfig {
            seed: 11,
            vocabulary: 5_000,
            words_per_source: 20_000,
        },
        sources: 3,
        counters: 5,
        max_parallelism: 128,
        key_group_ranges: None,
    }
}

#[test]
fn a_small_word_count_verifies() {
    let dir = tempfile::tempdir().expect("temp dir");
    let job = job();
    let shuffle_bytes = run(&job, dir.path());
    let v = verify_output(&job, dir.path()).expect("runs");
    assert_eq!(v.first_difference, None);
    assert!(v.verified());
    assert_eq!((v.words_expected, v.words_found), (60_000, 60_000));
    // At least one byte of framing and two of word per record.
    assert!(shuffle_bytes >= 3 * 60_000, "{shuffle_bytes}");
    let expected = job.expected().expect("valid");
    assert_eq!(expected.subtasks(), 5);
    let per_file: u64 = (0..5)
        .map(|s| {
            let f = read_counts(&dir.path().join(sink_file_name(s))).expect("reads");
            f.iter().map(|(_, c)| c).sum::<u64>()
        })
        .sum();
    assert_eq!(per_file, 60_000);
}

#[test]
fn differences_are_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let job = job();
    run(&job, dir.path());
    let expected = job.expected().expect("valid");
    // One count off by one in subtask 2: that word is named.
    let path = dir.path().join(sink_file_name(2));
    let mut entries = read_counts(&path).expect("reads");
    let (word, count) = entries[3].clone();
    entries[3].1 += 1;
    let refs: Vec<(&str, u64)> = entries.iter().map(|(w, c)| (w.as_str(), *c)).collect();
    write_counts(dir.path(), 2, &refs).expect("writes");
    let v = expected.verify_dir(dir.path()).expect("runs");
    assert!(!v.verified());
    assert_eq!(v.words_found, 60_001);
    assert_eq!(
        v.first_difference,
        Some(Difference::Count {
            subtask: 2,
            word,
            expected: count,
            found: count + 1
        })
    );
    // A missing file comes first when it is an earlier subtask.
    std::fs::remove_file(dir.path().join(sink_file_name(0))).expect("removes");
    let v = expected.verify_dir(dir.path()).expect("runs");
    assert!(matches!(
        v.first_difference,
        Some(Difference::MissingFile { subtask: 0, .. })
    ));
    // A job with fewer count subtasks than files: the extra file is named.
    let dir = tempfile::tempdir().expect("temp dir");
    run(&job, dir.path());
    write_counts(dir.path(), 7, &[("x", 1)]).expect("writes");
    let v = expected.verify_dir(dir.path()).expect("runs");
    assert_eq!(
        v.first_difference,
        Some(Difference::UnexpectedFile {
            path: dir.path().join("part-00007.tsv")
        })
    );
    // A malformed file is a difference naming its line.
    std::fs::write(dir.path().join(sink_file_name(1)), "a\t1\nb").expect("writes");
    let v = expected.verify_dir(dir.path()).expect("runs");
    match v.first_difference {
        Some(Difference::Unreadable { subtask: 1, error }) => {
            assert!(
                error.ends_with("line 2: no newline at the end of the file"),
                "{error}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_parameters_are_errors() {
    let mut j = job();
    j.counters = 129;
    assert!(j.expected().is_err());
    j.counters = 4;
    j.sources = 0;
    assert!(j.expected().is_err());
}
