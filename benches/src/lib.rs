//! Shared helpers for the Conflux benchmarks: the counting global allocator (kept in
//! `conflux-test-support`, which the graph crate's memory test also uses), so that benches
//! measure heap bytes rather than estimate them.

pub use conflux_test_support::CountingAllocator;
