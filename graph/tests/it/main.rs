//! Integration tests of `conflux-graph`, one binary with a module per area.

// Test graphs are tiny: index casts cannot truncate.
#![allow(clippy::cast_possible_truncation)]

mod dynamic;
mod edges;
mod flink_fixtures;
mod forward_groups;
mod reference;
mod regions;
mod support;
mod validation;
