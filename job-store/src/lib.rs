//! `conflux-job-store`: what a JobManager writes to its high-availability storage directory
//! (Flink's `high-availability.storageDir`) so that another JobManager can take its jobs over.
//!
//! - [`record`]: length-prefixed, CRC-32-checked records, the framing of every file here; a
//!   torn or truncated file is an error naming the byte offset, never a panic.
//! - [`event`]: [`JobEvent`], what a batch job's event log holds (Flink 1.20's FLIP-383: a
//!   task finished with its partitions and bytes, a vertex initialised with its decided
//!   parallelism, a restart).
//! - [`replay`]: [`RecoveredJob`], the state the events replay into, and compaction (the
//!   shortest event list that replays into the same state).
//! - [`storage_dir`]: the file I/O at the edge: [`StorageDir`] with per job a job store entry,
//!   a JobResultStore entry once it ended and its event log ([`EventLogWriter`]), each written
//!   durably (temporary file, fsync, rename).
//!
//! Synchronous and without an async runtime: a JobManager calls it off its scheduler's thread.

pub mod event;
pub mod record;
pub mod replay;
pub mod storage_dir;

pub use event::{FinishedExecution, JobEvent};
pub use record::RecordError;
pub use replay::RecoveredJob;
pub use storage_dir::{
    EventLogWriter, JobResultEntry, JobStoreEntry, StorageDir, StoreError, EVENT_LOG_LIMIT_BYTES,
};
