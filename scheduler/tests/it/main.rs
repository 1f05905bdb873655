//! Integration tests of `conflux-scheduler`, one binary with a module per area.

// Test graphs are tiny: index casts cannot truncate.
#![allow(clippy::cast_possible_truncation)]

mod adaptive;
mod budget;
mod events;
mod failover_reference;
mod input_bytes;
mod recovery;
mod slots;
mod speculative;
mod transitions;
