//! `conflux-runtime`: real JobManager and TaskManager processes around the Conflux scheduler.
//!
//! - [`JobManager`]: accepts TaskManagers and clients over TCP, sends heartbeats and declares
//!   silent TaskManagers lost, runs each job's [`Scheduler`](conflux_scheduler::Scheduler) in
//!   an event loop of its own, builds task deployment descriptors on rayon and ships them, and
//!   serves offloaded descriptor data from an embedded blob server.
//! - [`TaskManager`]: registers its slots, answers heartbeats, runs synthetic tasks (their input
//!   gates loaded through its `BlobCache`, decoded once per TaskManager), registers again when
//!   its JobManager is lost.
//! - [`JobManagerClient`]: submit, list, cancel, wait.
//! - [`protocol`] and [`connection`]: the typed, versioned messages and their bounded frames.
//!
//! The scheduler core stays pure: this crate only translates messages into events and commands
//! into messages.

pub mod client;
pub mod config;
pub mod connection;
mod cpu_time;
mod heartbeat_thread;
pub mod high_availability;
mod jobmanager;
mod metrics;
pub mod protocol;
pub mod report;
mod rss;
pub mod secret;
pub mod shuffle;
mod taskmanager;
pub mod thread_priority;

pub use client::{ClientError, JobManagerClient};
pub use config::{
    HeartbeatConfig, JobHistory, JobManagerConfig, RpcConfig, RpcFaults, TaskManagerConfig,
};
pub use heartbeat_thread::start_heartbeat_thread;
pub use jobmanager::{
    word_count_job, word_count_job_as_run, JobManager, JobManagerError, TaskManagerInfo,
};
pub use report::JobReport;
pub use rss::peak_rss_bytes;
pub use taskmanager::{TaskManager, TaskManagerError};
