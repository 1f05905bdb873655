//! The storage directory on a local file system (Flink's `high-availability.storageDir`): the
//! file I/O at the edge of this crate. Layout under the root:
//!
//! - `job-store/<job>.entry`: the job store entry of every job not yet ended (Flink's
//!   `JobGraphStore`), written before the submission is acknowledged;
//! - `job-results/<job>.json`: the JobResultStore entry of every ended job (Flink's
//!   `FileSystemJobResultStore`), so that a recovered leader never runs it again;
//! - `event-logs/<job>.log`: the job's event log (FLIP-383's `FileSystemJobEventStore`).
//!
//! Every whole-file write goes to a temporary file beside its target, is fsynced and renamed
//! over it, and the directory is fsynced: a reader sees the old file or the new one, never a
//! part. Appends to an event log are fsynced per batch; a torn tail is reported as such.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::event::JobEvent;
use crate::record::{self, RecordError};
use crate::replay::RecoveredJob;

const ENTRY_MAGIC: &[u8; 8] = b"CFXJOBS1";
const LOG_MAGIC: &[u8; 8] = b"CFXEVLG1";

/// An event log is compacted (rewritten as the snapshot of its state) once it exceeds this
/// many bytes and twice its last snapshot: 1 MiB. Its size stays below the larger of this and
/// twice the snapshot, plus one batch.
pub const EVENT_LOG_LIMIT_BYTES: u64 = 1 << 20;

/// Events per record of a snapshot (a batch is one record).
const SNAPSHOT_CHUNK: usize = 4_096;

/// Why the storage directory cannot be read or written. Each names the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file system operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A file is torn, truncated or corrupted (its records do not check).
    #[error("{path}: {source}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the byte offset.
        #[source]
        source: RecordError,
    },
}

impl StoreError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            StoreError::Io { path, .. } | StoreError::Corrupt { path, .. } => path,
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn corrupt(path: &Path) -> impl FnOnce(RecordError) -> StoreError + '_ {
    move |source| StoreError::Corrupt {
        path: path.to_path_buf(),
        source,
    }
}

/// A job store entry: what a JobManager needs to run a submitted job again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobStoreEntry {
    /// The job id (32 hexadecimal digits).
    pub job: String,
    /// The job's name, for messages.
    pub name: String,
    /// The submission as the JobManager encodes it (its job graph bytes, options and secrets);
    /// opaque here.
    pub payload: Vec<u8>,
}

/// A JobResultStore entry: how a job ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobResultEntry {
    /// The job id.
    pub job: String,
    /// `FINISHED`, `FAILED` or `CANCELED`.
    pub status: String,
    /// Why it failed, when it did.
    pub reason: Option<String>,
}

/// A storage directory. Cheap to clone; every method does its own I/O.
#[derive(Clone, Debug)]
pub struct StorageDir {
    root: PathBuf,
}

/// Job ids are file names: 1-64 ASCII letters, digits, `-` or `_`.
fn checked(job: &str) -> Result<&str, StoreError> {
    if !job.is_empty()
        && job.len() <= 64
        && job
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        Ok(job)
    } else {
        Err(StoreError::Io {
            path: PathBuf::from(job),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a job id"),
        })
    }
}

/// Writes `bytes` to `path` durably: a temporary file beside it, fsync, rename, fsync of the
/// directory.
fn write_durably(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let tmp = path.with_extension("tmp");
    let mut file = File::create(&tmp).map_err(io(&tmp))?;
    file.write_all(bytes).map_err(io(&tmp))?;
    file.sync_all().map_err(io(&tmp))?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(io(path))?;
    sync_dir(path)
}

fn sync_dir(path: &Path) -> Result<(), StoreError> {
    if let Some(dir) = path.parent() {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io(dir))?;
    }
    Ok(())
}

fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, StoreError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

fn remove_optional(path: &Path) -> Result<(), StoreError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(path)(e)),
    }
}

/// Parses an event log's bytes into its events.
///
/// # Errors
/// [`RecordError`] naming the byte offset of the first bad record.
pub fn parse_event_log(bytes: &[u8]) -> Result<Vec<JobEvent>, RecordError> {
    let mut events = Vec::new();
    for (offset, payload) in record::read_records(bytes, LOG_MAGIC, "event log")? {
        let batch: Vec<JobEvent> = record::decode(payload, offset)?;
        events.extend(batch);
    }
    Ok(events)
}

fn encode_log(batches: &[&[JobEvent]]) -> Result<Vec<u8>, RecordError> {
    let mut out = LOG_MAGIC.to_vec();
    for batch in batches {
        record::write_record(&mut out, &record::encode(batch)?)?;
    }
    Ok(out)
}

impl StorageDir {
    /// The storage directory at `root`, creating it and its three subdirectories.
    ///
    /// # Errors
    /// [`StoreError::Io`] naming the directory that cannot be created.
    pub fn open(root: impl Into<PathBuf>) -> Result<StorageDir, StoreError> {
        let dir = StorageDir { root: root.into() };
        for sub in [dir.jobs_dir(), dir.results_dir(), dir.logs_dir()] {
            std::fs::create_dir_all(&sub).map_err(io(&sub))?;
        }
        Ok(dir)
    }

    /// Its root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn jobs_dir(&self) -> PathBuf {
        self.root.join("job-store")
    }

    fn results_dir(&self) -> PathBuf {
        self.root.join("job-results")
    }

    fn logs_dir(&self) -> PathBuf {
        self.root.join("event-logs")
    }

    /// Where a job's store entry is.
    pub fn job_path(&self, job: &str) -> PathBuf {
        self.jobs_dir().join(format!("{job}.entry"))
    }

    /// Where a job's JobResultStore entry is.
    pub fn result_path(&self, job: &str) -> PathBuf {
        self.results_dir().join(format!("{job}.json"))
    }

    /// Where a job's event log is.
    pub fn event_log_path(&self, job: &str) -> PathBuf {
        self.logs_dir().join(format!("{job}.log"))
    }

    /// Writes a job store entry durably (before the submission is acknowledged).
    ///
    /// # Errors
    /// [`StoreError::Io`] naming the file; [`StoreError::Corrupt`] for an entry too large to
    /// encode (over 64 MiB).
    pub fn put_job(&self, entry: &JobStoreEntry) -> Result<(), StoreError> {
        let path = self.job_path(checked(&entry.job)?);
        let mut bytes = ENTRY_MAGIC.to_vec();
        record::encode(entry)
            .and_then(|payload| record::write_record(&mut bytes, &payload))
            .map_err(corrupt(&path))?;
        write_durably(&path, &bytes)
    }

    /// The ids of the jobs with a store entry, sorted.
    ///
    /// # Errors
    /// [`StoreError::Io`] when the directory cannot be listed.
    pub fn jobs(&self) -> Result<Vec<String>, StoreError> {
        let dir = self.jobs_dir();
        let mut jobs = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(io(&dir))? {
            let entry = entry.map_err(io(&dir))?;
            let name = entry.file_name();
            if let Some(job) = name.to_str().and_then(|n| n.strip_suffix(".entry")) {
                jobs.push(job.to_string());
            }
        }
        jobs.sort();
        Ok(jobs)
    }

    /// A job's store entry.
    ///
    /// # Errors
    /// [`StoreError::Io`] (a missing entry included), [`StoreError::Corrupt`] for a torn,
    /// truncated or corrupted entry; both name the file.
    pub fn read_job(&self, job: &str) -> Result<JobStoreEntry, StoreError> {
        let path = self.job_path(checked(job)?);
        let bytes = std::fs::read(&path).map_err(io(&path))?;
        let records =
            record::read_records(&bytes, ENTRY_MAGIC, "job store entry").map_err(corrupt(&path))?;
        match records.as_slice() {
            [(offset, payload)] => record::decode(payload, *offset).map_err(corrupt(&path)),
            _ => Err(corrupt(&path)(RecordError::Decode {
                offset: ENTRY_MAGIC.len() as u64,
                reason: format!("{} records where one was expected", records.len()),
            })),
        }
    }

    /// Removes a job's store entry and event log (after its result is recorded: Flink's
    /// cleanup of a globally terminated job).
    ///
    /// # Errors
    /// [`StoreError::Io`] naming the file that cannot be removed.
    pub fn remove_job(&self, job: &str) -> Result<(), StoreError> {
        let job = checked(job)?;
        remove_optional(&self.job_path(job))?;
        remove_optional(&self.event_log_path(job))
    }

    /// Records how a job ended, durably (Flink's JobResultStore).
    ///
    /// # Errors
    /// [`StoreError::Io`] naming the file.
    pub fn put_result(&self, result: &JobResultEntry) -> Result<(), StoreError> {
        let path = self.result_path(checked(&result.job)?);
        let bytes = serde_json::to_vec_pretty(result).map_err(|e| StoreError::Io {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        write_durably(&path, &bytes)
    }

    /// How a job ended, if it did.
    ///
    /// # Errors
    /// [`StoreError::Io`] naming the file when it cannot be read, [`StoreError::Corrupt`] when
    /// it is not a result.
    pub fn read_result(&self, job: &str) -> Result<Option<JobResultEntry>, StoreError> {
        let path = self.result_path(checked(job)?);
        let Some(bytes) = read_optional(&path)? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            corrupt(&path)(RecordError::Decode {
                offset: 0,
                reason: e.to_string(),
            })
        })
    }

    /// The events of a job's log (none when it has no log).
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] naming the file and the byte offset of a torn, truncated or
    /// corrupted record; [`StoreError::Io`].
    pub fn read_events(&self, job: &str) -> Result<Vec<JobEvent>, StoreError> {
        let path = self.event_log_path(checked(job)?);
        match read_optional(&path)? {
            None => Ok(Vec::new()),
            Some(bytes) => parse_event_log(&bytes).map_err(corrupt(&path)),
        }
    }

    /// An appender to a job's event log, continuing `recovered` (the state its existing events
    /// replay into: the snapshot a compaction writes). A job that has no log gets an empty one.
    ///
    /// # Errors
    /// [`StoreError::Io`] naming the file.
    pub fn event_log(
        &self,
        job: &str,
        recovered: RecoveredJob,
    ) -> Result<EventLogWriter, StoreError> {
        let path = self.event_log_path(checked(job)?);
        let mut writer = EventLogWriter {
            path,
            file: None,
            bytes: 0,
            snapshot_bytes: 0,
            state: recovered,
            limit: EVENT_LOG_LIMIT_BYTES,
        };
        // Start from the snapshot: the log is whole and compact whatever it was.
        writer.compact()?;
        Ok(writer)
    }
}

/// Appends batches of events to one job's event log, fsynced per batch, and compacts it once it
/// exceeds its limit (Flink's `JobEventManager` over a `FileSystemJobEventStore`).
#[derive(Debug)]
pub struct EventLogWriter {
    path: PathBuf,
    file: Option<File>,
    bytes: u64,
    snapshot_bytes: u64,
    state: RecoveredJob,
    limit: u64,
}

impl EventLogWriter {
    /// The log's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The log's size now, bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The state the log replays into.
    pub fn state(&self) -> &RecoveredJob {
        &self.state
    }

    /// Sets the size past which the log is compacted (tests), bytes.
    pub fn set_limit(&mut self, limit: u64) {
        self.limit = limit;
    }

    /// Appends `events` as one record and fsyncs; compacts when the log exceeds its limit.
    /// Nothing is written for no events.
    ///
    /// # Errors
    /// [`StoreError::Io`] naming the file.
    pub fn append(&mut self, events: &[JobEvent]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut bytes = Vec::new();
        record::encode(&events)
            .and_then(|payload| record::write_record(&mut bytes, &payload))
            .map_err(corrupt(&self.path))?;
        let path = self.path.clone();
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(
                OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .map_err(io(&path))?,
            ),
        };
        file.write_all(&bytes).map_err(io(&path))?;
        file.sync_data().map_err(io(&path))?;
        self.bytes += bytes.len() as u64;
        for e in events {
            self.state.apply(e);
        }
        if self.bytes > self.limit && self.bytes > 2 * self.snapshot_bytes {
            self.compact()?;
        }
        Ok(())
    }

    /// Rewrites the log as the snapshot of its state, durably.
    ///
    /// # Errors
    /// [`StoreError::Io`] naming the file.
    pub fn compact(&mut self) -> Result<(), StoreError> {
        let snapshot = self.state.snapshot();
        let chunks: Vec<&[JobEvent]> = snapshot.chunks(SNAPSHOT_CHUNK).collect();
        let bytes = encode_log(&chunks).map_err(corrupt(&self.path))?;
        self.file = None;
        write_durably(&self.path, &bytes)?;
        self.bytes = bytes.len() as u64;
        self.snapshot_bytes = self.bytes;
        Ok(())
    }
}
