//! The shuffle record format: one record per word, its UTF-8 length as a LEB128 varint of one
//! or two bytes, then its UTF-8 bytes. Records are written into and read from byte buffers the
//! caller owns (the runtime's 32 KiB network buffers); a record never spans two buffers.
//!
//! ```text
//! record = len (1 byte if len < 128, else 2: low 7 bits | 0x80, then len >> 7) , utf8[len]
//! ```
//!
//! A word of up to 127 bytes (every vocabulary word) costs one byte of framing. The encoding
//! is canonical: the decoder refuses a two-byte length below 128, so a valid buffer has
//! exactly one decoding and `encode(decode(b)) == b`.

use thiserror::Error;

/// The longest word a record holds, in UTF-8 bytes: what a two-byte length can say.
pub const MAX_WORD_BYTES: usize = (1 << 14) - 1;

/// The bytes a record of `word` takes: 1 or 2 bytes of length, then the word.
#[inline]
pub fn encoded_len(word: &str) -> usize {
    word.len() + if word.len() < 0x80 { 1 } else { 2 }
}

/// Why a word could not be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum EncodeError {
    /// The word is longer than [`MAX_WORD_BYTES`].
    #[error("word of {len} bytes is longer than a record holds ({MAX_WORD_BYTES} bytes)")]
    WordTooLong {
        /// Its length in UTF-8 bytes.
        len: usize,
    },
    /// The buffer has no room for the record: the caller sends the buffer and writes the
    /// record into the next one.
    #[error("record of {needed} bytes does not fit in the {available} bytes left in the buffer")]
    BufferFull {
        /// The record's size in bytes.
        needed: usize,
        /// The free bytes in the buffer.
        available: usize,
    },
}

/// Writes the record of `word` at the start of `out`, returning its size in bytes.
///
/// # Errors
/// [`EncodeError::WordTooLong`] above [`MAX_WORD_BYTES`]; [`EncodeError::BufferFull`] when
/// `out` is shorter than the record (nothing is written then).
#[inline]
pub fn encode(word: &str, out: &mut [u8]) -> Result<usize, EncodeError> {
    let len = word.len();
    if len > MAX_WORD_BYTES {
        return Err(EncodeError::WordTooLong { len });
    }
    let needed = encoded_len(word);
    let Some(out) = out.get_mut(..needed) else {
        return Err(EncodeError::BufferFull {
            needed,
            available: out.len(),
        });
    };
    // len <= MAX_WORD_BYTES < 2^14: the casts keep every bit.
    #[allow(clippy::cast_possible_truncation)]
    let header = if len < 0x80 {
        out[0] = len as u8;
        1
    } else {
        out[0] = (len & 0x7f) as u8 | 0x80;
        out[1] = (len >> 7) as u8;
        2
    };
    out[header..].copy_from_slice(word.as_bytes());
    Ok(needed)
}

/// A caller's buffer being filled with records, front to back.
#[derive(Debug)]
pub struct RecordWriter<'b> {
    buf: &'b mut [u8],
    len: usize,
    records: u64,
}

impl<'b> RecordWriter<'b> {
    /// An empty writer over all of `buf`.
    pub fn new(buf: &'b mut [u8]) -> RecordWriter<'b> {
        RecordWriter {
            buf,
            len: 0,
            records: 0,
        }
    }

    /// Appends the record of `word`.
    ///
    /// # Errors
    /// As [`encode`]: when the record does not fit in the space left, nothing is written and
    /// the caller starts a new buffer.
    #[inline]
    pub fn push(&mut self, word: &str) -> Result<(), EncodeError> {
        let n = encode(word, &mut self.buf[self.len..])?;
        self.len += n;
        self.records += 1;
        Ok(())
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is written yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Bytes still free.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.len
    }

    /// The records written, as bytes.
    pub fn written(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// What is wrong with a malformed record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// The buffer ends inside a two-byte length.
    TruncatedLength,
    /// A two-byte length whose second byte has the continuation bit (a third byte is never
    /// needed).
    LengthTooLong,
    /// A two-byte length of a value below 128 (not canonical).
    NonCanonicalLength,
    /// The buffer ends inside the word: `len` bytes announced, `available` left.
    TruncatedWord {
        /// Announced bytes.
        len: usize,
        /// Bytes left in the buffer after the length.
        available: usize,
    },
    /// The word's bytes are not UTF-8.
    InvalidUtf8,
}

/// A malformed record: what is wrong and the byte offset in the buffer where its record
/// starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("malformed record at byte {offset}: {kind}")]
pub struct DecodeError {
    /// Byte offset of the record's first byte in the buffer.
    pub offset: usize,
    /// What is wrong.
    pub kind: Malformed,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Malformed::TruncatedLength => write!(f, "buffer ends inside the length"),
            Malformed::LengthTooLong => write!(f, "length is longer than 2 bytes"),
            Malformed::NonCanonicalLength => write!(f, "two-byte length below 128"),
            Malformed::TruncatedWord { len, available } => {
                write!(f, "word of {len} bytes but {available} bytes left")
            }
            Malformed::InvalidUtf8 => write!(f, "word is not UTF-8"),
        }
    }
}

/// The records of a buffer, in order: yields each word, or one [`DecodeError`] and then
/// nothing (a malformed record leaves no way to find the next). Never panics, allocates
/// nothing; O(bytes).
#[derive(Clone, Debug)]
pub struct Records<'b> {
    raw: RawRecords<'b>,
}

/// The records of `buf` (a whole number of records, as a [`RecordWriter`] left it).
pub fn decode(buf: &[u8]) -> Records<'_> {
    Records {
        raw: decode_raw(buf),
    }
}

impl Records<'_> {
    /// Byte offset of the next record.
    pub fn offset(&self) -> usize {
        self.raw.pos
    }
}

impl<'b> Iterator for Records<'b> {
    type Item = Result<&'b str, DecodeError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        Some(self.raw.next()?.and_then(|(offset, bytes)| {
            std::str::from_utf8(bytes).map_err(|_| {
                self.raw.failed = true;
                DecodeError {
                    offset,
                    kind: Malformed::InvalidUtf8,
                }
            })
        }))
    }
}

impl std::iter::FusedIterator for Records<'_> {}

/// The records of a buffer as bytes, each with the offset of its record: [`Records`] without
/// the UTF-8 check, for a consumer that checks only what it keeps (the counter checks a word
/// when it first sees it, not each of its occurrences). Same errors otherwise, never
/// [`Malformed::InvalidUtf8`]; never panics, allocates nothing; O(bytes).
#[derive(Clone, Debug)]
pub struct RawRecords<'b> {
    buf: &'b [u8],
    pos: usize,
    failed: bool,
}

/// The records of `buf` as `(offset of the record, word bytes)`.
pub fn decode_raw(buf: &[u8]) -> RawRecords<'_> {
    RawRecords {
        buf,
        pos: 0,
        failed: false,
    }
}

impl<'b> RawRecords<'b> {
    fn fail(&mut self, kind: Malformed) -> Option<Result<(usize, &'b [u8]), DecodeError>> {
        self.failed = true;
        Some(Err(DecodeError {
            offset: self.pos,
            kind,
        }))
    }
}

impl<'b> Iterator for RawRecords<'b> {
    type Item = Result<(usize, &'b [u8]), DecodeError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = self.buf.get(self.pos..)?;
        let (&b0, _) = rest.split_first()?;
        let (len, header) = if b0 < 0x80 {
            (usize::from(b0), 1)
        } else {
            let Some(&b1) = rest.get(1) else {
                return self.fail(Malformed::TruncatedLength);
            };
            if b1 >= 0x80 {
                return self.fail(Malformed::LengthTooLong);
            }
            if b1 == 0 {
                return self.fail(Malformed::NonCanonicalLength);
            }
            (usize::from(b0 & 0x7f) | usize::from(b1) << 7, 2)
        };
        let Some(bytes) = rest.get(header..header + len) else {
            return self.fail(Malformed::TruncatedWord {
                len,
                available: rest.len() - header,
            });
        };
        let offset = self.pos;
        self.pos += header + len;
        Some(Ok((offset, bytes)))
    }
}

impl std::iter::FusedIterator for RawRecords<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(words: &[&str]) -> Vec<u8> {
        let mut buf = vec![0u8; 1 << 16];
        let mut w = RecordWriter::new(&mut buf);
        for word in words {
            w.push(word).expect("fits");
        }
        w.written().to_vec()
    }

    #[test]
    fn worked_examples() {
        assert_eq!(encoded(&["ab", ""]), [2, b'a', b'b', 0]);
        assert_eq!(encoded(&["é"]), [2, 0xc3, 0xa9]);
        let long = "x".repeat(300);
        let bytes = encoded(&[&long]);
        // 300 = 0b10_0101100: low 7 bits 44 | 0x80, then 2.
        assert_eq!(&bytes[..2], &[44 | 0x80, 2]);
        assert_eq!(bytes.len(), 302);
        assert_eq!(encoded_len(&long), 302);
        let words: Vec<&str> = decode(&bytes).collect::<Result<_, _>>().expect("valid");
        assert_eq!(words, [long.as_str()]);
    }

    #[test]
    fn malformed_records_name_their_offset() {
        let check = |buf: &[u8], words: usize, offset: usize, kind: Malformed| {
            let mut r = decode(buf);
            for _ in 0..words {
                assert!(matches!(r.next(), Some(Ok(_))));
            }
            assert_eq!(r.next(), Some(Err(DecodeError { offset, kind })));
            assert_eq!(r.next(), None);
        };
        check(&[1, b'a', 0x85], 1, 2, Malformed::TruncatedLength);
        check(&[0, 0x85, 0x80, 1], 1, 1, Malformed::LengthTooLong);
        check(&[0x85, 0x00], 0, 0, Malformed::NonCanonicalLength);
        check(
            &[1, b'a', 3, b'b'],
            1,
            2,
            Malformed::TruncatedWord {
                len: 3,
                available: 1,
            },
        );
        check(&[2, 0xc3, 0x28], 0, 0, Malformed::InvalidUtf8);
        assert_eq!(
            DecodeError {
                offset: 7,
                kind: Malformed::TruncatedWord {
                    len: 3,
                    available: 1
                }
            }
            .to_string(),
            "malformed record at byte 7: word of 3 bytes but 1 bytes left"
        );
    }

    #[test]
    fn full_buffers_and_long_words_are_refused() {
        let mut buf = [0u8; 4];
        let mut w = RecordWriter::new(&mut buf);
        w.push("abc").expect("4 bytes fit");
        assert_eq!(
            w.push("d"),
            Err(EncodeError::BufferFull {
                needed: 2,
                available: 0
            })
        );
        assert_eq!((w.len(), w.records(), w.remaining()), (4, 1, 0));
        let long = "y".repeat(MAX_WORD_BYTES + 1);
        assert_eq!(
            encode(&long, &mut [0u8; 1 << 15]),
            Err(EncodeError::WordTooLong {
                len: MAX_WORD_BYTES + 1
            })
        );
        assert!(encode(&long[1..], &mut [0u8; 1 << 15]).is_ok());
    }
}
