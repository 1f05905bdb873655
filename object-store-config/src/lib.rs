//! `conflux-object-store`: the one configuration of an S3-compatible bucket ([`S3Config`]) and
//! the one builder of its `object_store` client ([`S3Config::build`]), shared by the durable
//! blob store (`conflux-blob`, Flink's HA `BlobStore`) and checkpoint storage
//! (`conflux-checkpoint`, Flink's checkpoint storage on S3), so both talk to a bucket alike:
//! path-style requests, bounded retries and timeouts, an optional key prefix.

mod s3;

pub use s3::{S3Config, S3ConfigError};
