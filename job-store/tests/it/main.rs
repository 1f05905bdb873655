//! Tests of `conflux-job-store`: records, replay and compaction, the storage directory.

mod records;
mod replay;
mod storage;
