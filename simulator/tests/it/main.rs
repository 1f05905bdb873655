//! Integration tests of `conflux-sim`, one binary with a module per area.

// Test graphs are tiny: index casts cannot truncate.
#![allow(clippy::cast_possible_truncation)]

mod adaptive;
mod flink_semantics;
mod replay;
mod simulation;
mod speculative;
