//! `DeployError`: why a deployment descriptor could not be built or loaded. Below the factory
//! and the TaskManager side that return it and the crate root that re-exports it.

use crate::shuffle::ExecutionState;
use crate::wire::WireError;

/// Why a deployment descriptor could not be built or loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeployError {
    /// A streaming consumer reads a partition whose producer is not deployed (Flink: "Trying to
    /// consume an input partition whose producer is not ready" / "has been canceled or failed").
    #[error("partition {partition}: its producer is {state:?}, so a streaming consumer cannot be deployed (the partition must be known)", state = state.as_str())]
    ProducerNotReady {
        /// The partition, e.g. `A#0`.
        partition: String,
        /// The producer's state.
        state: ExecutionState,
    },
    /// A TDD was requested before its consumed groups were prepared (a bug of the caller).
    #[error("bug: consumed partition group {group} of {vertex} was not prepared")]
    GroupNotPrepared {
        /// The group.
        group: u32,
        /// The consumer, e.g. `B#3`.
        vertex: String,
    },
    /// A TDD was requested from a factory made by
    /// [`TaskDeploymentDescriptorFactory::for_groups`](crate::TaskDeploymentDescriptorFactory::for_groups),
    /// which serialises no task information (a bug of the caller).
    #[error("bug: {vertex}: a factory for shuffle descriptor groups only creates no deployment descriptors")]
    GroupsOnly {
        /// The execution vertex, e.g. `B#3`.
        vertex: String,
    },
    /// A run-time decision names partitions outside the consumed partition group (a bug of the
    /// scheduler that decided it).
    #[error("bug: {vertex} reads partitions {first}..={last} of its input {input}, outside its consumed partition group {group} (partitions {group_start}..{group_end})")]
    InputInfoOutsideGroup {
        /// The consumer, e.g. `B#3`.
        vertex: String,
        /// The input (in input order).
        input: usize,
        /// The group.
        group: u32,
        /// First and last partition the decision names.
        first: u32,
        /// See `first`.
        last: u32,
        /// The group's partitions, `group_start..group_end`.
        group_start: u32,
        /// See `group_start`.
        group_end: u32,
    },
    /// Serialised data could not be read.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// A blob could not be fetched.
    #[error(transparent)]
    Blob(#[from] conflux_blob_api::BlobError),
    /// A descriptor group overwrote a known descriptor.
    #[error("consumed partition group {group}: position {position} is set twice with a known descriptor")]
    ChannelConflict {
        /// The group.
        group: u32,
        /// The input channel.
        position: u32,
    },
    /// A descriptor group names a position past the gate's channels.
    #[error(
        "consumed partition group {group}: position {position} is past its {channels} channels"
    )]
    ChannelOutOfRange {
        /// The group.
        group: u32,
        /// The position.
        position: u32,
        /// Number of channels.
        channels: u32,
    },
    /// Channels without any descriptor after all groups were applied.
    #[error("consumed partition group {group}: {missing} channel(s) have no descriptor")]
    MissingChannels {
        /// The group.
        group: u32,
        /// How many.
        missing: usize,
    },
}
