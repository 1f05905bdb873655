//! Benchmarks of conflux-checkpoint (being built).

fn main() {}
