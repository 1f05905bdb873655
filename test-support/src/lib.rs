//! `conflux-test-support`: helpers shared by the workspace's tests; a dev-dependency only,
//! never published.
//!
//! - [`S3sFs`]: an S3-compatible test server (`s3s-fs`) started on a free loopback port, killed
//!   and reaped on drop, with the [`S3Config`](conflux_object_store::S3Config) that reaches it.

mod s3s_fs;

pub use s3s_fs::{S3sFs, S3S_FS_ACCESS_KEY, S3S_FS_SECRET_KEY};
