//! The sink: each count subtask's output file, and a reader for it.
//!
//! A file is `part-NNNNN.tsv` (the subtask index, five digits or more) in the output directory,
//! one line per word, sorted by word (UTF-8 byte order, no duplicates):
//!
//! ```text
//! word\tcount\n
//! ```
//!
//! It is written to a hidden temporary file in the same directory, synced, then renamed, so a
//! reader sees a whole file or none (as Flink's `FileSink` commits its pending part files).

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::record::MAX_WORD_BYTES;

/// Why a sink file could not be written or read.
#[derive(Debug, Error)]
pub enum SinkError {
    /// The file system failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A word cannot be written: it has a tab or line break, or is not after the previous one.
    #[error("cannot write word {word:?}: {reason}")]
    Word {
        /// The word.
        word: String,
        /// Why.
        reason: &'static str,
    },
    /// A line of a sink file is malformed.
    #[error("{path}: line {line}: {reason}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The line, counted from 1.
        line: u64,
        /// What is wrong.
        reason: String,
    },
}

/// The marker of a complete output: an empty file the JobManager writes into the output
/// directory when the job FINISHED, and removes when a job starts writing there (Hadoop's
/// `FileOutputCommitter` marker, which Flink's Hadoop output formats write on the JobManager).
/// An output directory without it is incomplete: its job failed, was cancelled or still runs,
/// whatever part files it holds.
pub const SUCCESS_FILE_NAME: &str = "_SUCCESS";

/// Marks the output in `dir` complete: creates (or truncates) its [`SUCCESS_FILE_NAME`].
///
/// # Errors
/// [`SinkError::Io`] when the file cannot be written.
pub fn mark_success(dir: &Path) -> Result<(), SinkError> {
    let path = dir.join(SUCCESS_FILE_NAME);
    File::create(&path)
        .and_then(|f| f.sync_all())
        .map_err(|source| SinkError::Io { path, source })
}

/// Marks the output in `dir` incomplete: removes its [`SUCCESS_FILE_NAME`] if there is one.
///
/// # Errors
/// [`SinkError::Io`] when an existing marker cannot be removed.
pub fn clear_success(dir: &Path) -> Result<(), SinkError> {
    let path = dir.join(SUCCESS_FILE_NAME);
    match fs::remove_file(&path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(SinkError::Io { path, source: e }),
        _ => Ok(()),
    }
}

/// The name of subtask `subtask`'s file: `part-00003.tsv` for 3.
pub fn sink_file_name(subtask: u32) -> String {
    format!("part-{subtask:05}.tsv")
}

/// Writes subtask `subtask`'s counts, sorted by word as [`WordCounter::sorted`] gives them,
/// to [`sink_file_name`] in `dir` (which must exist), atomically (temporary file, sync,
/// rename). Returns the file's path and size in bytes. O(entries).
///
/// [`WordCounter::sorted`]: crate::WordCounter::sorted
///
/// # Errors
/// [`SinkError::Word`] for a word with a tab, `\n` or `\r`, or not strictly after the previous
/// word (nothing is left behind then); [`SinkError::Io`] when writing fails.
pub fn write_counts(
    dir: &Path,
    subtask: u32,
    counts: &[(&str, u64)],
) -> Result<(PathBuf, u64), SinkError> {
    let mut prev: Option<&str> = None;
    for &(word, _) in counts {
        if word.contains(['\t', '\n', '\r']) {
            return Err(SinkError::Word {
                word: word.to_owned(),
                reason: "it has a tab or a line break",
            });
        }
        if prev.is_some_and(|p| p >= word) {
            return Err(SinkError::Word {
                word: word.to_owned(),
                reason: "words must be sorted and distinct",
            });
        }
        prev = Some(word);
    }
    let path = dir.join(sink_file_name(subtask));
    let tmp = dir.join(format!(".{}.tmp", sink_file_name(subtask)));
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SinkError::Io { path, source }
    };
    let write = || -> io::Result<u64> {
        let file = File::create(&tmp)?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        let mut bytes = 0u64;
        let mut num = itoa_buf();
        for &(word, count) in counts {
            let digits = format_u64(count, &mut num);
            out.write_all(word.as_bytes())?;
            out.write_all(b"\t")?;
            out.write_all(digits)?;
            out.write_all(b"\n")?;
            bytes += (word.len() + digits.len() + 2) as u64;
        }
        let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.sync_all()?;
        Ok(bytes)
    };
    let bytes = match write() {
        Ok(b) => b,
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            return Err(io_err(&tmp)(e));
        }
    };
    fs::rename(&tmp, &path).map_err(io_err(&path))?;
    Ok((path, bytes))
}

fn itoa_buf() -> [u8; 20] {
    [0; 20]
}

/// `n` in decimal, in the tail of `buf` (20 digits hold any u64).
fn format_u64(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        // n % 10 < 10.
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

/// Reads a sink file: its `(word, count)` lines in order. Memory is bounded by the entries:
/// a line longer than a word, a tab and a count can be is refused before it is read whole.
///
/// # Errors
/// [`SinkError::Io`] when the file cannot be read; [`SinkError::Malformed`] naming the first
/// bad line: too long, not UTF-8, no tab, a count that is not a decimal u64, a word not
/// strictly after the previous one, or a last line without its `\n`.
pub fn read_counts(path: &Path) -> Result<Vec<(String, u64)>, SinkError> {
    let io_err = |source| SinkError::Io {
        path: path.to_path_buf(),
        source,
    };
    let malformed = |line: u64, reason: String| SinkError::Malformed {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let mut reader = BufReader::with_capacity(1 << 16, File::open(path).map_err(io_err)?);
    // A word, a tab, 20 digits and the newline.
    let max_line = (MAX_WORD_BYTES + 22) as u64;
    let mut out: Vec<(String, u64)> = Vec::new();
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        let n = (&mut reader)
            .take(max_line + 1)
            .read_until(b'\n', &mut line)
            .map_err(io_err)?;
        if n == 0 {
            return Ok(out);
        }
        number += 1;
        if line.last() != Some(&b'\n') {
            let reason = if n as u64 > max_line {
                format!("longer than {max_line} bytes")
            } else {
                "no newline at the end of the file".to_owned()
            };
            return Err(malformed(number, reason));
        }
        line.pop();
        let text = std::str::from_utf8(&line)
            .map_err(|e| malformed(number, format!("not UTF-8 ({e})")))?;
        let Some((word, count)) = text.split_once('\t') else {
            return Err(malformed(
                number,
                "no tab between word and count".to_owned(),
            ));
        };
        if !count.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed(
                number,
                format!("count {count:?} is not a number"),
            ));
        }
        let count: u64 = count
            .parse()
            .map_err(|e| malformed(number, format!("count {count:?}: {e}")))?;
        if let Some((prev, _)) = out.last() {
            if prev.as_str() >= word {
                return Err(malformed(
                    number,
                    format!("word {word:?} is not after {prev:?} (the file must be sorted)"),
                ));
            }
        }
        out.push((word.to_owned(), count));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_reads_back() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (path, bytes) =
            write_counts(dir.path(), 3, &[("a", 10), ("é", 0), ("ü", u64::MAX)]).expect("writes");
        assert_eq!(path, dir.path().join("part-00003.tsv"));
        let text = fs::read_to_string(&path).expect("readable");
        assert_eq!(text, "a\t10\né\t0\nü\t18446744073709551615\n");
        assert_eq!(bytes, text.len() as u64);
        assert_eq!(
            read_counts(&path).expect("valid"),
            [
                ("a".to_owned(), 10),
                ("é".to_owned(), 0),
                ("ü".to_owned(), u64::MAX)
            ]
        );
        // No temporary file left.
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 1);
        assert_eq!(sink_file_name(123_456), "part-123456.tsv");
    }

    #[test]
    fn bad_words_are_refused_before_writing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let e = write_counts(dir.path(), 0, &[("a\tb", 1)]).expect_err("tab");
        assert!(matches!(e, SinkError::Word { .. }));
        let e = write_counts(dir.path(), 0, &[("b", 1), ("a", 1)]).expect_err("unsorted");
        assert_eq!(
            e.to_string(),
            "cannot write word \"a\": words must be sorted and distinct"
        );
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 0);
    }

    #[test]
    fn malformed_lines_are_named() {
        let dir = tempfile::tempdir().expect("temp dir");
        let check = |content: &[u8], line: u64, reason: &str| {
            let path = dir.path().join("f.tsv");
            fs::write(&path, content).expect("write");
            match read_counts(&path) {
                Err(SinkError::Malformed {
                    line: l, reason: r, ..
                }) => {
                    assert_eq!((l, r.as_str()), (line, reason));
                }
                other => panic!("{content:?}: {other:?}"),
            }
        };
        check(b"a\t1\nb 2\n", 2, "no tab between word and count");
        check(b"a\t1\nb\t2", 2, "no newline at the end of the file");
        check(b"a\t-1\n", 1, "count \"-1\" is not a number");
        check(
            b"a\t\n",
            1,
            "count \"\": cannot parse integer from empty string",
        );
        check(
            b"a\t99999999999999999999\n",
            1,
            "count \"99999999999999999999\": number too large to fit in target type",
        );
        check(
            b"b\t1\na\t1\n",
            2,
            "word \"a\" is not after \"b\" (the file must be sorted)",
        );
        check(
            b"a\t1\na\t1\n",
            2,
            "word \"a\" is not after \"a\" (the file must be sorted)",
        );
        check(
            b"\xff\t1\n",
            1,
            "not UTF-8 (invalid utf-8 sequence of 1 bytes from index 0)",
        );
        let long = vec![b'x'; MAX_WORD_BYTES + 40];
        check(
            &long,
            1,
            &format!("longer than {} bytes", MAX_WORD_BYTES + 22),
        );
        let path = dir.path().join("missing.tsv");
        assert!(matches!(read_counts(&path), Err(SinkError::Io { .. })));
        fs::write(dir.path().join("empty.tsv"), b"").expect("write");
        assert!(read_counts(&dir.path().join("empty.tsv"))
            .expect("valid")
            .is_empty());
    }
}
