//! Integration tests of `conflux-planner`, by area.

mod compat;
mod compiled;
mod conventions;
mod edits;
mod picture;
mod rescale;
mod service;
mod stats;

use std::path::PathBuf;

use conflux_graph::json::JobGraphJson;
use conflux_graph::load::{parse, LoadOptions};

/// `fixtures/flink-plans/<name>`.
pub(crate) fn flink_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/flink-plans")
        .join(name)
}

/// Reads a job graph or Flink plan fixture.
pub(crate) fn load_fixture(path: &std::path::Path, parallelism: Option<u32>) -> JobGraphJson {
    let bytes = std::fs::read(path).expect("fixture");
    let options = LoadOptions {
        parallelism,
        ..LoadOptions::default()
    };
    parse(&bytes, &options).expect("plan parses").0
}

/// A plan from JSON text.
pub(crate) fn plan(text: &str) -> JobGraphJson {
    JobGraphJson::parse(text.as_bytes()).expect("test plan parses")
}
