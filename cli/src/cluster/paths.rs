//! Path flags of the cluster commands. Their values travel to other processes (inside protocol
//! messages, as TaskManager arguments) and into reports, as UTF-8 text (MessagePack strings
//! are UTF-8), so a path that is not UTF-8 is refused when the command line is parsed: exit 2
//! naming the flag, before any process starts.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use clap::error::ErrorKind;

use crate::Failure;

/// clap's parser of a path flag whose value must be UTF-8 (`value_parser = Utf8Path`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Utf8Path;

impl clap::builder::TypedValueParser for Utf8Path {
    type Value = PathBuf;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<PathBuf, clap::Error> {
        match value.to_str() {
            Some(text) => Ok(PathBuf::from(text)),
            None => {
                let flag = arg
                    .and_then(clap::Arg::get_long)
                    .map_or_else(|| "a path".to_owned(), |long| format!("--{long}"));
                let message = format!("{flag} {}: {NOT_UTF8}\n", Path::new(value).display());
                Err(clap::Error::raw(ErrorKind::InvalidUtf8, message).with_cmd(cmd))
            }
        }
    }
}

/// Why a path that is not UTF-8 is refused.
const NOT_UTF8: &str = "the path is not valid UTF-8 (Conflux sends paths to its other \
    processes as UTF-8 text): choose a UTF-8 name";

/// `path`, which a process of the cluster made from the environment (the temporary directory),
/// checked as the flags are: an input failure naming `what` when it is not UTF-8.
pub(crate) fn check_utf8(path: &Path, what: &str) -> Result<(), Failure> {
    if path.to_str().is_some() {
        Ok(())
    } else {
        Err(Failure::input(anyhow!(
            "{what} {}: {NOT_UTF8}",
            path.display()
        )))
    }
}

/// Checks up front that the existing directory `dir` (the value of `flag`) takes new files, by
/// creating and removing a hidden probe file: a read-only directory would fail every attempt
/// of every task writing there.
pub(crate) fn check_writable(dir: &Path, flag: &str) -> Result<(), Failure> {
    tempfile::Builder::new()
        .prefix(".conflux-write-check-")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| {
            Failure::input(anyhow!(
                "{flag} {}: the directory is not writable: {e}",
                dir.display()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::builder::TypedValueParser;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn a_path_that_is_not_utf8_is_refused_naming_the_flag() {
        let cmd = clap::Command::new("conflux");
        let arg = clap::Arg::new("output_dir").long("output-dir");
        let bad = OsStr::from_bytes(b"/tmp/o\xff");
        let e = Utf8Path.parse_ref(&cmd, Some(&arg), bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidUtf8);
        let text = e.to_string();
        assert!(
            text.contains("--output-dir /tmp/o\u{fffd}: the path is not valid UTF-8"),
            "{text}"
        );
        let good = Utf8Path
            .parse_ref(&cmd, Some(&arg), OsStr::new("/tmp/ö"))
            .unwrap();
        assert_eq!(good, PathBuf::from("/tmp/ö"));
        assert!(check_utf8(Path::new(OsStr::from_bytes(b"/tmp/\xfe")), "TMPDIR").is_err());
        assert!(check_utf8(Path::new("/tmp"), "TMPDIR").is_ok());
    }
}
