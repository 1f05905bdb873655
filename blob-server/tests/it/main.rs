//! Integration tests of `conflux-blob`, all against real servers over loopback (127.0.0.1,
//! port 0). One binary, one module per area: every test binary is a link step.

// clippy.toml allows `unwrap` in `#[test]` functions only; the helpers and spawned tasks here
// are test code too, where a panic is the wanted failure.
#![allow(clippy::unwrap_used)]

mod cache;
mod cleanup;
mod common;
mod concurrency;
mod connections;
mod corruption;
mod limits;
mod logging;
mod refcount;
mod restart;
mod roundtrip;
mod s3;
mod store;
mod streaming;
mod transient;
