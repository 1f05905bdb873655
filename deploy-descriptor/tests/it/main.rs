//! Integration tests of `conflux-deploy`, one binary with a module per area.

// Test graphs are tiny: index casts cannot truncate.
#![allow(clippy::cast_possible_truncation)]

mod factory;
mod support;
mod task_manager;
mod wire;
