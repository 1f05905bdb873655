//! Integration tests of `conflux-checkpoint`: one binary, one module per area (every test binary
//! is a link step).

// clippy.toml allows `unwrap` in `#[test]` functions only; the helpers and model drivers here
// are test code too, where a panic is the wanted failure.
#![allow(clippy::unwrap_used)]

mod common;
mod model;
mod placement;
mod s3;
mod scenarios;
mod script;
mod sim;
mod upload_plan;
