//! Reading a command's input files, bounded by [`MAX_JOB_FILE_BYTES`] before anything is read.

use std::io::Read;
use std::path::Path;

use anyhow::{anyhow, Context};
use conflux_graph::load::MAX_JOB_FILE_BYTES;

use crate::Failure;

/// Reads a file, or standard input for `-`, of at most [`MAX_JOB_FILE_BYTES`] (256 MiB): the
/// bound of every input of the CLI (jobs, plans, scripts).
///
/// # Errors
/// [`Failure::Input`] naming the file when it cannot be read or is larger than the limit (a
/// file's size is checked before it is read; standard input stops one byte past the limit).
pub(crate) fn read_input(path: &Path) -> Result<Vec<u8>, Failure> {
    let too_large = |what: &str, size: Option<u64>| {
        Failure::Input(anyhow!(
            "{what} is {}, above the limit of {MAX_JOB_FILE_BYTES} bytes (256 MiB) for an input",
            size.map_or_else(|| "larger".to_owned(), |s| format!("{s} bytes"))
        ))
    };
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .lock()
            .take(MAX_JOB_FILE_BYTES + 1)
            .read_to_end(&mut buf)
            .context("reading standard input")
            .map_err(Failure::Input)?;
        if buf.len() as u64 > MAX_JOB_FILE_BYTES {
            return Err(too_large("standard input", None));
        }
        return Ok(buf);
    }
    let mut file = std::fs::File::open(path)
        .with_context(|| format!("reading {}", path.display()))
        .map_err(Failure::Input)?;
    let size = file
        .metadata()
        .with_context(|| format!("reading {}", path.display()))
        .map_err(Failure::Input)?
        .len();
    if size > MAX_JOB_FILE_BYTES {
        return Err(too_large(&path.display().to_string(), Some(size)));
    }
    let mut buf = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // `take` also bounds a file that grows while it is read (or reports size 0, as /proc does).
    (&mut file)
        .take(MAX_JOB_FILE_BYTES + 1)
        .read_to_end(&mut buf)
        .with_context(|| format!("reading {}", path.display()))
        .map_err(Failure::Input)?;
    if buf.len() as u64 > MAX_JOB_FILE_BYTES {
        return Err(too_large(&path.display().to_string(), None));
    }
    Ok(buf)
}
