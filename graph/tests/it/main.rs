//! Integration tests of `conflux-graph`, one binary with a module per area.

mod edges;
mod flink_fixtures;
mod reference;
mod regions;
mod support;
mod validation;
