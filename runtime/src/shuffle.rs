//! The data plane: result partitions on the TaskManager and the protocol by which consumers
//! read them.
//!
//! - [`partition_file`]: a BLOCKING partition's file (subpartitions by offset, CRC-32 per
//!   buffer and index), written whole or not at all.
//! - [`quota`]: the data directory's byte quota.
//! - [`protocol`]: the data connection's messages (requests with credit, buffers, ends,
//!   not-found).
//! - `partitions`: the partitions a TaskManager holds; `input`: a consumer's reading side. The
//!   data server itself is the TaskManager's.

pub(crate) mod input;
pub mod partition_file;
pub(crate) mod partitions;
pub mod protocol;
pub mod quota;
