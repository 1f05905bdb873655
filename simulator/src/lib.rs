//! `conflux-sim`: drives the deterministic [`conflux_scheduler::Scheduler`] without a real
//! cluster.
//!
//! - [`cluster`]: a cluster in virtual time. N TaskManagers of S slots, seeded task durations and
//!   faults, real deployment descriptors built in batches on rayon outside the scheduler's
//!   handler, and one blob reader and descriptor cache per TaskManager. Behind `conflux run`.
//! - [`script`]: a scripted replay of events on small graphs, behind `conflux simulate`.
//!
//! Both are deterministic: the same seed or script gives the same scheduler trace.

mod adaptive_report;
pub mod cluster;
mod cpu_time;
mod event_queue;
mod produced_bytes;
pub mod script;
pub mod slow;

pub use adaptive_report::{decided_keys, AdaptiveReport};
pub use produced_bytes::{
    spread_bytes, weights_seed, BytesModel, ProducedBytes, DEFAULT_SOURCE_BYTES,
};

pub use cluster::{
    job_id_of, simulate, simulate_adaptive, slot_demand, BlobEnvironment, Faults,
    MemoryBlobEnvironment, Observer, SimulationConfig, SimulationReport, TaskManagerStats,
};
pub use slow::SlowTaskManagers;
