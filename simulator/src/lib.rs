//! `conflux-sim`: drives the deterministic [`conflux_scheduler::Scheduler`] without a real
//! cluster.
//!
//! - [`cluster`]: a cluster in virtual time. N TaskManagers of S slots, seeded task durations and
//!   faults, real deployment descriptors built in batches on rayon outside the scheduler's
//!   handler, and one blob reader and descriptor cache per TaskManager. Behind `conflux run`.
//! - [`script`]: a scripted replay of events on small graphs, behind `conflux simulate`.
//!
//! Both are deterministic: the same seed or script gives the same scheduler trace.

pub mod cluster;
pub mod script;
pub mod slow;

pub use cluster::{
    job_id_of, simulate, slot_demand, BlobEnvironment, Faults, MemoryBlobEnvironment, Observer,
    SimulationConfig, SimulationReport, TaskManagerStats,
};
pub use slow::SlowTaskManagers;
