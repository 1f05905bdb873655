//! `conflux-test-support`: what several crates' tests share, so it exists once. A
//! dev-dependency only; never published, never part of a product build.
//!
//! - [`S3sFs`]: an S3-compatible test server (`s3s-fs`) started on a free loopback port, killed
//!   and reaped on drop, with the [`S3Config`](conflux_object_store::S3Config) that reaches it.
//! - [`job_graphs`]: builders of small job graphs (vertices, edges, a built graph with its
//!   regions).
//! - [`reference`](mod@reference): the naive explicit-edge reference of the execution graph and region
//!   failover, and the seeded small job graphs the scheduler and simulator tests draw.
//! - [`json_shape`]: JSON documents compared key by key and type by type with Flink 1.20.3's
//!   captured REST answers (`fixtures/flink-rest/`).
//! - [`hosts`]: several test hosts on one machine (network namespaces on a bridge), the
//!   processes started inside them, and network faults (loss, cuts, rate limits, delay).
//! - [`host_cluster`]: a Conflux JobManager and TaskManagers started on such hosts, each
//!   bound to and advertising its own address.
//! - [`CountingAllocator`]: a global allocator counting live and peak heap bytes, for benches
//!   and memory tests.

mod counting_alloc;
pub mod host_cluster;
pub mod hosts;
pub mod job_graphs;
pub mod json_shape;
pub mod reference;
mod s3s_fs;

pub use counting_alloc::CountingAllocator;
pub use s3s_fs::{S3sFs, S3S_FS_ACCESS_KEY, S3S_FS_SECRET_KEY};
