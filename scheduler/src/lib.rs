//! `conflux-scheduler`: Flink 1.20's pipelined-region scheduling, failover and partition release
//! as a deterministic core.
//!
//! [`Scheduler`] is a state machine: [`Event`]s in (task state changes, slots offered,
//! TaskManagers lost, time passing), [`Command`]s out (deploy a region's tasks, cancel, restart,
//! release partition groups). It does no I/O, owns no threads and reads no clock, so every run
//! replays exactly from its events. Building deployment descriptors happens outside it (the
//! scheduler implements [`conflux_deploy::ProducerStates`] for that); the simulator and the
//! runtime that drive it live in other crates.
//!
//! The modules follow Flink's components: [`api`] (events, commands, settings, errors), the
//! scheduler's state and dispatch, the scheduling strategy, the slot pool, partition release,
//! failure handling over the failover strategy and the restart back-off (with the restart
//! strategy chosen from Flink's options), speculative execution
//! of slow tasks in batch jobs (Flink's `SpeculativeScheduler`; off by default), and the trace
//! digest, and batch job recovery (restoring finished executions before the start, FLIP-383).

mod adaptive;
pub mod api;
mod continuation;
mod failover_strategy;
mod failure_handling;
mod input_info_store;
mod memory_estimate;
mod partition_release;
mod recovery;
mod restart_backoff;
mod restart_options;
mod scheduler;
mod scheduling_strategy;
mod slot_assignment;
mod slot_pool;
mod speculative;
mod trace;
mod transitions;

pub use adaptive::{AdaptiveError, VertexDecision};
pub use api::{
    Command, Event, FailureCause, JobStatus, SchedulerConfig, SchedulerError,
    DEFAULT_SLOT_REQUEST_TIMEOUT_MS, DEFAULT_WORK_BUDGET,
};
pub use failover_strategy::{tasks_to_restart, FailoverStrategy, PartitionAvailability};
pub use memory_estimate::JobMemoryEstimate;
pub use recovery::RestoredExecution;
pub use restart_backoff::{RestartStrategy, FLINK_MAX_ATTEMPTS};
pub use restart_options::{
    RestartOption, RestartOptionsError, RestartStrategyOptions, RestartStrategyType,
};
pub use scheduler::Scheduler;
pub use speculative::{SpeculativeExecutionOptions, SpeculativeOptionsError, SpeculativeStats};
pub use transitions::{StateTransition, TaskManagerSlots};
