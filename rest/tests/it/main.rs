//! Integration tests of the REST API: its answers against Flink 1.20.3's captured ones, key by
//! key; errors; the recorder against a recount; the OpenAPI document.

// clippy.toml allows `unwrap` in `#[test]` functions only; the helpers and the fake backend here
// are test code too, where a panic is the wanted failure.
#![allow(clippy::unwrap_used)]

mod api;
mod fake;
mod recorder;
