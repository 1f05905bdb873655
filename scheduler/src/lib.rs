//! `conflux-scheduler`: Flink 1.20's pipelined-region scheduling, failover and partition release
//! as a deterministic core.
//!
//! [`Scheduler`] is a state machine: [`Event`]s in (task state changes, slots offered,
//! TaskManagers lost, time passing), [`Command`]s out (deploy a region's tasks, cancel, restart,
//! release partition groups). It does no I/O, owns no threads and reads no clock, so every run
//! replays exactly from its events. Building deployment descriptors happens outside it (the
//! scheduler implements [`conflux_deploy::ProducerStates`] for that).

mod failover;
mod scheduler;
pub mod script;
pub mod sim;
mod topology;

pub use failover::{
    tasks_to_restart, FailoverStrategy, PartitionAvailability, RestartStrategy, FLINK_MAX_ATTEMPTS,
};
pub use scheduler::{
    Command, Event, FailureCause, JobStatus, Scheduler, SchedulerConfig, SchedulerError,
    DEFAULT_SLOT_REQUEST_TIMEOUT_MS,
};
