//! The keyed exchange on the producer side: route each word to its consumer subtask (its
//! subpartition) and pack its record into that subpartition's buffer, handing full buffers on.

use crate::record::{encode, EncodeError};

/// A source subtask's output: one buffer of `buffer_size` bytes per subpartition (consumer
/// subtask), each filled with whole records and handed to a callback when the next record
/// does not fit (as Flink's `RecordWriter` fills its `BufferBuilder`s). One record per word,
/// no pre-aggregation. Memory: `subpartitions * buffer_size` bytes.
#[derive(Debug)]
pub struct KeyedWriter {
    buffers: Vec<Box<[u8]>>,
    lens: Vec<usize>,
    bytes: u64,
    records: u64,
}

impl KeyedWriter {
    /// A writer into buffers of `buffer_size` bytes, one per subpartition in
    /// `0..subpartitions`; the caller routes each word (its consumer subtask is its
    /// subpartition, as [`Vocabulary::routes`](crate::Vocabulary::routes) or
    /// [`RoutedVocabulary`](crate::RoutedVocabulary) give it).
    pub fn new(subpartitions: u32, buffer_size: usize) -> KeyedWriter {
        KeyedWriter {
            buffers: (0..subpartitions)
                .map(|_| vec![0u8; buffer_size].into_boxed_slice())
                .collect(),
            lens: vec![0; subpartitions as usize],
            bytes: 0,
            records: 0,
        }
    }

    /// Appends an encoded record (from [`RoutedVocabulary::record`]) to subpartition `sub`'s
    /// buffer; when it does not fit, `full` gets the buffer first and the record starts the
    /// next.
    ///
    /// # Errors
    /// [`EncodeError::BufferFull`] when the record is larger than a whole buffer; `full`'s.
    ///
    /// # Panics
    /// When `sub` is not below the subpartition count.
    ///
    /// [`RoutedVocabulary::record`]: crate::RoutedVocabulary::record
    #[inline]
    pub fn write_record<E: From<EncodeError>>(
        &mut self,
        sub: u32,
        record: &[u8],
        full: &mut (impl FnMut(u32, &[u8]) -> Result<(), E> + ?Sized),
    ) -> Result<(), E> {
        let s = sub as usize;
        let n = record.len();
        let buffer = &mut self.buffers[s];
        if self.lens[s] + n > buffer.len() {
            if n > buffer.len() {
                return Err(EncodeError::BufferFull {
                    needed: n,
                    available: buffer.len(),
                }
                .into());
            }
            full(sub, &buffer[..self.lens[s]])?;
            self.lens[s] = 0;
        }
        copy_short(&mut buffer[self.lens[s]..self.lens[s] + n], record);
        self.lens[s] += n;
        self.bytes += n as u64;
        self.records += 1;
        Ok(())
    }

    /// Writes the record of `word` into subpartition `sub`'s buffer; when it does not fit,
    /// first calls `full(sub, records)` with the buffer's bytes.
    ///
    /// # Errors
    /// [`EncodeError::WordTooLong`] for a word longer than
    /// [`MAX_WORD_BYTES`](crate::MAX_WORD_BYTES) and [`EncodeError::BufferFull`] for a record
    /// larger than a whole buffer; the error of `full` as is.
    ///
    /// # Panics
    /// When `sub` is not below the subpartition count.
    #[inline]
    pub fn write<E: From<EncodeError>>(
        &mut self,
        sub: u32,
        word: &str,
        full: &mut (impl FnMut(u32, &[u8]) -> Result<(), E> + ?Sized),
    ) -> Result<(), E> {
        let s = sub as usize;
        let n = match encode(word, &mut self.buffers[s][self.lens[s]..]) {
            Ok(n) => n,
            Err(EncodeError::BufferFull { .. }) if self.lens[s] > 0 => {
                full(sub, &self.buffers[s][..self.lens[s]])?;
                self.lens[s] = 0;
                encode(word, &mut self.buffers[s])?
            }
            Err(e) => return Err(e.into()),
        };
        self.lens[s] += n;
        self.bytes += n as u64;
        self.records += 1;
        Ok(())
    }

    /// Hands every non-empty buffer to `full`, in subpartition order (the end of the input).
    ///
    /// # Errors
    /// The error of `full` as is.
    pub fn flush<E>(
        &mut self,
        full: &mut (impl FnMut(u32, &[u8]) -> Result<(), E> + ?Sized),
    ) -> Result<(), E> {
        for (s, buf) in self.buffers.iter().enumerate() {
            if self.lens[s] > 0 {
                // s < subpartitions, a u32.
                let sub = u32::try_from(s).unwrap_or(u32::MAX);
                full(sub, &buf[..self.lens[s]])?;
                self.lens[s] = 0;
            }
        }
        Ok(())
    }

    /// Serialised bytes written so far (records, framing included).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }
}

/// `dst.copy_from_slice(src)` for the few bytes of a record: two overlapping fixed-size moves
/// instead of a call to `memcpy`, which costs more than the copy for a 5-byte record (it was
/// a sixth of a source's time).
///
/// # Panics
/// When the lengths differ.
#[inline]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    assert_eq!(dst.len(), n, "copy_short: lengths differ");
    match n {
        8..=16 => {
            dst[..8].copy_from_slice(&src[..8]);
            dst[n - 8..].copy_from_slice(&src[n - 8..]);
        }
        4..=7 => {
            dst[..4].copy_from_slice(&src[..4]);
            dst[n - 4..].copy_from_slice(&src[n - 4..]);
        }
        1..=3 => {
            dst[0] = src[0];
            dst[n / 2] = src[n / 2];
            dst[n - 1] = src[n - 1];
        }
        0 => {}
        _ => dst.copy_from_slice(src),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::decode;

    #[test]
    fn routes_and_packs_whole_records() {
        let routes = [1, 0, 1];
        let words = ["aa", "b", "cc"];
        let mut w = KeyedWriter::new(2, 6);
        let mut out: Vec<(u32, Vec<u8>)> = Vec::new();
        let mut full = |s: u32, b: &[u8]| -> Result<(), EncodeError> {
            out.push((s, b.to_vec()));
            Ok(())
        };
        for id in [0u32, 2, 1, 0, 2] {
            w.write(routes[id as usize], words[id as usize], &mut full)
                .expect("fits");
        }
        w.flush(&mut full).expect("flushes");
        // Subpartition 1 gets "aa", "cc" (6 bytes, full), then "aa", "cc" again.
        assert_eq!(
            out,
            [
                (1, vec![2, b'a', b'a', 2, b'c', b'c']),
                (0, vec![1, b'b']),
                (1, vec![2, b'a', b'a', 2, b'c', b'c']),
            ]
        );
        assert_eq!((w.bytes(), w.records()), (14, 5));
        let words: Vec<&str> = decode(&out[1].1).collect::<Result<_, _>>().expect("valid");
        assert_eq!(words, ["b"]);
        // A record larger than a buffer is an error, not a loop.
        let mut w = KeyedWriter::new(2, 2);
        let mut never = |_: u32, _: &[u8]| -> Result<(), EncodeError> { Ok(()) };
        let e = w.write(routes[0], "aaa", &mut never).expect_err("too big");
        assert_eq!(
            e,
            EncodeError::BufferFull {
                needed: 4,
                available: 2
            }
        );
    }

    #[test]
    fn encoded_records_pack_as_words_do() {
        let vocabulary = crate::Vocabulary::new(3, 500).expect("vocabulary");
        let routed = crate::RoutedVocabulary::new(&vocabulary, 4, 128).expect("routed");
        let routes = vocabulary.routes(4, 128).expect("routes");
        let ids: Vec<u32> = (0..2_000u32).map(|i| (i * 7919) % 500).collect();
        let run = |by_record: bool| {
            let mut w = KeyedWriter::new(4, 64);
            let mut out: Vec<(u32, Vec<u8>)> = Vec::new();
            let mut full = |s: u32, b: &[u8]| -> Result<(), EncodeError> {
                out.push((s, b.to_vec()));
                Ok(())
            };
            for &id in &ids {
                if by_record {
                    let (sub, record) = routed.record(id);
                    w.write_record(sub, record, &mut full).expect("fits");
                } else {
                    w.write(routes[id as usize], vocabulary.word(id), &mut full)
                        .expect("fits");
                }
            }
            w.flush(&mut full).expect("flushes");
            (out, w.bytes(), w.records())
        };
        let (by_record, by_word) = (run(true), run(false));
        assert_eq!(by_record.2, 2_000);
        assert!(by_record.0.len() > 4, "buffers were handed on when full");
        assert_eq!(by_record, by_word);
        let mut w = KeyedWriter::new(4, 2);
        let mut never = |_: u32, _: &[u8]| -> Result<(), EncodeError> { Ok(()) };
        assert_eq!(
            w.write_record(0, &[3, b'a', b'b', b'c'], &mut never),
            Err(EncodeError::BufferFull {
                needed: 4,
                available: 2
            })
        );
    }

    #[test]
    fn short_copies_copy_every_length() {
        let src: Vec<u8> = (1..=40).collect();
        for n in 0..=40 {
            let mut dst = vec![0u8; n];
            copy_short(&mut dst, &src[..n]);
            assert_eq!(dst, src[..n], "{n} bytes");
        }
    }
}
