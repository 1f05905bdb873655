//! Benchmarks of conflux-planner (being built).

fn main() {}
