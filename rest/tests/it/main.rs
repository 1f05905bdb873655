//! Integration tests of the REST API: its answers against Flink 1.20.3's captured ones, key by
//! key; errors; the recorder against a recount; the OpenAPI document.

mod api;
mod fake;
mod recorder;
