//! `conflux-deploy`: task deployment descriptors whose shuffle descriptors are serialised once
//! per ConsumedPartitionGroup, compressed, cached, and offloaded to the blob server past a
//! threshold, after Flink 1.14+ (FLINK-23005, FLINK-23218, FLINK-23833, FLINK-29768,
//! FLINK-32201, FLINK-32386).
//!
//! - JobManager side: [`TaskDeploymentDescriptorFactory`] builds [`TaskDeploymentDescriptor`]s
//!   from an [`ExecutionGraph`](conflux_graph::ExecutionGraph) and the producers' states
//!   ([`ProducerStates`]), caching per group and invalidating on producer reset or group
//!   release.
//! - TaskManager side: [`load_input_gate`] with a [`ShuffleDescriptorsCache`] bounded in bytes.
//! - [`wire`]: the versioned, checksummed, compressed format of serialised descriptor data.
//!
//! The crate does no I/O of its own: offloading goes through a
//! [`conflux_blob_api::BlobWriter`], fetching through a [`conflux_blob_api::BlobReader`].

mod error;
mod factory;
mod ids;
mod input_info_store;
mod offload;
mod shuffle;
mod task_manager;
mod tdd;
mod tdd_wire;
pub mod wire;

pub use error::DeployError;
pub use factory::{
    partition_name, AllProducersFinished, BlobFailure, DeploymentConfig, DeploymentStats,
    ProducerStates, TaskDeploymentDescriptorFactory,
};
pub use ids::{
    AllocationId, ExecutionAttemptId, ResultPartitionId, TaskManagerId, TaskManagerLocation,
};
pub use input_info_store::{StaticGraph, VertexInputInfoStore};
pub use offload::{
    MaybeOffloaded, OffloadRule, DEFAULT_OFFLOAD_MIN_SIZE, DEFAULT_OFFLOAD_THRESHOLD_NUM,
};
pub use shuffle::{
    shuffle_descriptor_for, ConsumptionPolicy, ExecutionState, PartitionLocationConstraint,
    ProducerView, ShuffleDescriptor,
};
pub use task_manager::{
    load_input_gate, CacheStats, LoadedInputGate, SharedDecodedGroups, ShuffleDescriptorsCache,
    DEFAULT_CACHE_BYTES,
};
pub use tdd::{
    InputGateDeploymentDescriptor, JobInformation, ResultPartitionDeploymentDescriptor,
    ShuffleDescriptorGroup, TaskDeploymentDescriptor, TaskInformation,
};
pub use tdd_wire::{decode_tdd, encode_tdd};
pub use wire::WireError;
