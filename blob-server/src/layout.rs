//! The on-disk layout shared by the server and the cache (Flink's): `incoming/temp-<n>` for
//! writes in progress, `job_<job>/blob_<key>` and `no_job/blob_<key>` for stored blobs, and a
//! `blob_<key>.refs` sidecar holding the reference count when it is not 1.
//!
//! **Invariant: a blob file is only ever created by renaming a complete temporary file**, so a
//! reader sees the whole blob or none; content is still verified on every read, which also
//! covers files damaged after they were written.

use std::fs;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use conflux_blob_api::{BlobError, BlobKey, Digest, JobId};

/// The folder of uploads and downloads in progress.
pub(crate) const INCOMING: &str = "incoming";

/// `job_<job>` or `no_job`.
pub(crate) fn job_dir_name(job: Option<JobId>) -> String {
    match job {
        Some(job) => format!("job_{job}"),
        None => "no_job".to_owned(),
    }
}

/// The job a directory name stands for: `Some(Some(job))`, `Some(None)` for `no_job`, `None`
/// for any other name.
pub(crate) fn parse_job_dir_name(name: &str) -> Option<Option<JobId>> {
    if name == "no_job" {
        return Some(None);
    }
    name.strip_prefix("job_")?.parse().ok().map(Some)
}

/// `blob_<key>`.
pub(crate) fn blob_file_name(key: &BlobKey) -> String {
    format!("blob_{key}")
}

/// The key a file name stands for (`blob_<key>`, nothing else).
pub(crate) fn parse_blob_file_name(name: &str) -> Option<BlobKey> {
    name.strip_prefix("blob_")?.parse().ok()
}

/// `<root>/job_<job>/blob_<key>`.
pub(crate) fn blob_path(root: &Path, key: &BlobKey) -> PathBuf {
    root.join(job_dir_name(key.job)).join(blob_file_name(key))
}

/// `<root>/job_<job>/blob_<key>.refs`.
pub(crate) fn refs_path(root: &Path, key: &BlobKey) -> PathBuf {
    root.join(job_dir_name(key.job))
        .join(format!("{}.refs", blob_file_name(key)))
}

/// A closure turning an I/O error into [`BlobError::Io`] with `context`.
pub(crate) fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> BlobError {
    let context = context.into();
    move |source| BlobError::Io { context, source }
}

/// A file under `incoming/`, removed on drop unless renamed into place by [`TempFile::persist`].
#[derive(Debug)]
pub(crate) struct TempFile {
    path: PathBuf,
    persisted: bool,
}

impl TempFile {
    /// Creates `<incoming>/temp-<n>` for writing.
    pub(crate) fn create(
        incoming: &Path,
        counter: &AtomicU64,
    ) -> Result<(TempFile, fs::File), BlobError> {
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let path = incoming.join(format!("temp-{n}"));
        let file = fs::File::create(&path).map_err(io_err(format!(
            "creating temporary file {}",
            path.display()
        )))?;
        Ok((
            TempFile {
                path,
                persisted: false,
            },
            file,
        ))
    }

    /// The temporary file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the file to `target`, creating its directory. Atomic on one file system.
    pub(crate) fn persist(mut self, target: &Path) -> Result<(), BlobError> {
        if let Some(dir) = target.parent() {
            fs::create_dir_all(dir)
                .map_err(io_err(format!("creating directory {}", dir.display())))?;
        }
        fs::rename(&self.path, target).map_err(io_err(format!(
            "moving {} to {}",
            self.path.display(),
            target.display()
        )))?;
        self.persisted = true;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.persisted {
            if let Err(e) = fs::remove_file(&self.path) {
                if e.kind() != io::ErrorKind::NotFound {
                    tracing::warn!(path = %self.path.display(), error = %e, "cannot remove temporary file");
                }
            }
        }
    }
}

/// Writes `bytes` to a temporary file and renames it to `target`.
pub(crate) fn write_atomically(
    incoming: &Path,
    counter: &AtomicU64,
    target: &Path,
    bytes: &[u8],
) -> Result<(), BlobError> {
    let (temp, mut file) = TempFile::create(incoming, counter)?;
    file.write_all(bytes)
        .map_err(io_err(format!("writing {}", temp.path().display())))?;
    drop(file);
    temp.persist(target)
}

/// Reads the blob file at `path` and checks it against `key`'s digest.
///
/// # Errors
/// [`BlobError::NotFound`] when there is no file, [`BlobError::DigestMismatch`] when its
/// content is not the key's, [`BlobError::Io`] otherwise.
pub(crate) fn read_verified(path: &Path, key: &BlobKey) -> Result<Bytes, BlobError> {
    let mut file = match fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(BlobError::NotFound(*key)),
        Err(e) => return Err(io_err(format!("opening {}", path.display()))(e)),
    };
    let len = file
        .metadata()
        .map_err(io_err(format!("reading metadata of {}", path.display())))?
        .len();
    let mut buf = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.read_to_end(&mut buf)
        .map_err(io_err(format!("reading {}", path.display())))?;
    if !key.matches(&buf) {
        return Err(BlobError::DigestMismatch { key: *key });
    }
    Ok(Bytes::from(buf))
}

/// The jobs with a `job_<job>` folder under `root`.
///
/// # Errors
/// [`BlobError::Io`] when `root` cannot be listed.
pub(crate) fn local_job_dirs(root: &Path) -> Result<Vec<JobId>, BlobError> {
    let mut jobs = Vec::new();
    for entry in fs::read_dir(root).map_err(io_err(format!("listing {}", root.display())))? {
        let entry = entry.map_err(io_err(format!("listing {}", root.display())))?;
        if let Some(Some(job)) = entry.file_name().to_str().and_then(parse_job_dir_name) {
            jobs.push(job);
        }
    }
    Ok(jobs)
}

/// Opens the file at `path` for serving `key`: hashes it through a small buffer (never the
/// whole blob in memory), checks the digest, and returns the file rewound to its start with
/// its length in bytes. Files are only replaced by renames, so the open file keeps the
/// verified content even if the path is rewritten meanwhile.
///
/// # Errors
/// [`BlobError::NotFound`] without a file, [`BlobError::DigestMismatch`] for damaged content,
/// [`BlobError::Io`] otherwise.
pub(crate) fn open_verified(path: &Path, key: &BlobKey) -> Result<(fs::File, u64), BlobError> {
    let mut file = match fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(BlobError::NotFound(*key)),
        Err(e) => return Err(io_err(format!("opening {}", path.display()))(e)),
    };
    let mut hasher = blake3::Hasher::new();
    let len = hasher
        .update_reader(&mut file)
        .map_err(io_err(format!("reading {}", path.display())))?
        .count();
    if Digest(*hasher.finalize().as_bytes()) != key.digest {
        return Err(BlobError::DigestMismatch { key: *key });
    }
    file.seek(io::SeekFrom::Start(0))
        .map_err(io_err(format!("rewinding {}", path.display())))?;
    Ok((file, len))
}

/// Removes a file; a missing file is not an error.
pub(crate) fn remove_file_if_exists(path: &Path) -> Result<(), BlobError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(format!("removing {}", path.display()))(e)),
    }
}

/// Removes a directory tree; a missing directory is not an error.
pub(crate) fn remove_dir_if_exists(path: &Path) -> Result<(), BlobError> {
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(format!("removing {}", path.display()))(e)),
    }
}

/// Empties (or creates) `<root>/incoming`: what a crash left there is never a blob.
pub(crate) fn reset_incoming(root: &Path) -> Result<PathBuf, BlobError> {
    let incoming = root.join(INCOMING);
    remove_dir_if_exists(&incoming)?;
    fs::create_dir_all(&incoming)
        .map_err(io_err(format!("creating directory {}", incoming.display())))?;
    Ok(incoming)
}

/// Runs blocking file work on tokio's blocking pool.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T, BlobError>
where
    F: FnOnce() -> Result<T, BlobError> + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(BlobError::Internal(format!("blocking file task: {e}"))),
    }
}
