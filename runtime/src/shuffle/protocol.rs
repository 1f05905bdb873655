//! The data protocol between a consumer and a producer's TaskManager (Flink's
//! `PartitionRequest`, `AddCredit`, `BufferResponse`, `ErrorResponse`, reduced): one TCP
//! connection per consumer task and producer TaskManager, on which every input channel the
//! consumer reads from that TaskManager is a numbered logical channel with its own credit.
//!
//! Frames are those of [`connection`](crate::connection) (4-byte length, MessagePack body),
//! bounded at [`MAX_DATA_FRAME_BYTES`]. The first frame is a [`DataRequest::Hello`].

use bytes::Bytes;
use conflux_blob_api::JobId;
use conflux_deploy::ResultPartitionId;
use serde::{Deserialize, Serialize};

use crate::shuffle::partition_file::MAX_BUFFER_BYTES;

/// The data protocol's version.
pub const DATA_PROTOCOL_VERSION: u32 = 1;

/// The largest data frame, bytes: a full buffer and its header.
pub const MAX_DATA_FRAME_BYTES: usize = MAX_BUFFER_BYTES + 1024;

/// Consumer to producer TaskManager.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DataRequest {
    /// The first frame: the protocol version and the cluster's token, if it has one.
    Hello {
        /// [`DATA_PROTOCOL_VERSION`].
        version: u32,
        /// The shared secret.
        token: Option<String>,
    },
    /// Open logical channel `channel` on subpartitions `subpartitions` (inclusive) of a
    /// partition, with `credit` buffers the consumer can take at once (Flink's
    /// `PartitionRequest` with its initial credit).
    Request {
        /// The consumer's number for the channel, unique on the connection.
        channel: u32,
        /// The job.
        job: JobId,
        /// The partition and its producing attempt.
        partition: ResultPartitionId,
        /// First and last subpartition.
        subpartitions: (u32, u32),
        /// Buffers the producer may send before it hears more credit.
        credit: u32,
    },
    /// The consumer took `credit` more buffers of `channel` (Flink's `AddCredit`).
    Credit {
        /// The channel.
        channel: u32,
        /// Buffers freed.
        credit: u32,
    },
}

/// Producer TaskManager to consumer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DataResponse {
    /// One buffer of whole records (at most [`MAX_BUFFER_BYTES`]).
    Buffer {
        /// The channel.
        channel: u32,
        /// The records.
        data: Bytes,
    },
    /// The channel's subpartitions are complete.
    End {
        /// The channel.
        channel: u32,
    },
    /// The partition cannot be read: not here (lost, released, never produced), its file
    /// damaged, or its producer failed (Flink's `PartitionNotFoundException` on the consumer).
    NotFound {
        /// The channel.
        channel: u32,
        /// Why.
        reason: String,
    },
}
