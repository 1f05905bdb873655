//! `conflux-test-support`: what several crates' tests share, so it exists once. A
//! dev-dependency only; never part of a product build.
//!
//! - [`reference`]: the naive explicit-edge reference of the execution graph and region
//!   failover, and the seeded small job graphs the scheduler and simulator tests draw.

pub mod reference;
