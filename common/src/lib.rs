//! `conflux-common`: the few helpers every Conflux crate shares, so that each exists once.
//!
//! - [`SplitMix64`]: a seeded generator. Seeded runs (simulations, fault injection, synthetic
//!   data) must replay bit for bit on every platform, which rules out `rand`'s unstable
//!   algorithms and OS entropy.
//! - [`Fnv1a64`]: FNV-1a, for digests that must be stable across runs and platforms (trace
//!   digests, seeds derived from names). Not for hash tables fed by untrusted input.
//! - [`format`](mod@format): digit grouping and byte units for reports.
//! - [`key_groups`]: Flink's `KeyGroupRangeAssignment` (Java's `String.hashCode`, Flink's
//!   `murmurHash`, key groups and the ranges subtasks own), bit-exact with the JVM.
//!
//! Pure and dependency-free.

pub mod format;
mod hash;
pub mod key_groups;
mod rng;

pub use hash::Fnv1a64;
pub use rng::SplitMix64;
