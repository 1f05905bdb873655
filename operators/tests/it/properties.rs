//! Property tests against simple references: the record format round-trips and never panics
//! on bytes, counts sum to the words counted, sink files round-trip.

use std::collections::BTreeMap;

use conflux_operators::record::{decode, RecordWriter};
use conflux_operators::{read_counts, write_counts, WordCounter, MAX_WORD_BYTES};
use proptest::prelude::*;

proptest! {
    #[test]
    fn decode_inverts_encode(words in proptest::collection::vec("\\PC{0,40}", 0..50), big in 0usize..300) {
        let mut words = words;
        words.push("w".repeat(big));
        let mut buf = vec![0u8; 1 << 16];
        let mut w = RecordWriter::new(&mut buf);
        for word in &words {
            w.push(word).expect("fits");
        }
        let expected_len: usize = words.iter().map(|w| w.len() + if w.len() < 128 { 1 } else { 2 }).sum();
        prop_assert_eq!(w.len(), expected_len);
        let bytes = w.written().to_vec();
        let back: Vec<&str> = decode(&bytes).collect::<Result<_, _>>().expect("valid");
        prop_assert_eq!(back, words.iter().map(String::as_str).collect::<Vec<_>>());
    }

    #[test]
    fn arbitrary_bytes_decode_or_fail_at_a_record_start(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        // Never panics; the words decoded before an error re-encode to exactly the bytes
        // before its offset, and the error's offset is that record's start.
        let mut re = vec![0u8; 1 << 16];
        let mut w = RecordWriter::new(&mut re);
        let mut error = None;
        for r in decode(&bytes) {
            match r {
                Ok(word) => {
                    prop_assert!(word.len() <= MAX_WORD_BYTES);
                    w.push(word).expect("fits");
                }
                Err(e) => error = Some(e),
            }
        }
        match error {
            None => prop_assert_eq!(w.written(), &bytes[..]),
            Some(e) => {
                prop_assert_eq!(e.offset, w.len());
                prop_assert_eq!(w.written(), &bytes[..e.offset]);
                prop_assert!(e.offset < bytes.len());
            }
        }
    }

    #[test]
    fn counts_sum_to_words(words in proptest::collection::vec("[a-dé]{0,3}", 0..300)) {
        let mut c = WordCounter::new();
        let mut reference: BTreeMap<&str, u64> = BTreeMap::new();
        for w in &words {
            c.add(w);
            *reference.entry(w.as_str()).or_default() += 1;
        }
        prop_assert_eq!(c.total(), words.len() as u64);
        prop_assert_eq!(c.sorted().iter().map(|(_, n)| n).sum::<u64>(), words.len() as u64);
        let sorted: Vec<(&str, u64)> = reference.into_iter().collect();
        prop_assert_eq!(c.sorted(), sorted);
    }

    #[test]
    fn sink_files_round_trip(words in proptest::collection::btree_map("[^\t\n\r]{0,8}", any::<u64>(), 0..40)) {
        let dir = tempfile::tempdir().expect("temp dir");
        let entries: Vec<(&str, u64)> = words.iter().map(|(w, &c)| (w.as_str(), c)).collect();
        let (path, _) = write_counts(dir.path(), 1, &entries).expect("writes");
        let back = read_counts(&path).expect("reads");
        prop_assert_eq!(back, words.into_iter().collect::<Vec<_>>());
    }
}
