//! The data protocol between a consumer and a producer's TaskManager (Flink's
//! `PartitionRequest`, `AddCredit`, `BufferResponse`, `ErrorResponse`, reduced): one TCP
//! connection per consumer task and producer TaskManager, on which every input channel the
//! consumer reads from that TaskManager is a numbered logical channel with its own credit.
//!
//! Frames are those of [`connection`](crate::connection) (4-byte length, MessagePack body),
//! bounded at [`MAX_DATA_FRAME_BYTES`]. The first frame is a [`DataRequest::Hello`] naming the
//! job and carrying its [`Secret`] (consumers get it with their task); the server answers
//! [`DataResponse::Welcome`], or [`DataResponse::Refused`] with the reason and closes. A
//! request the server will not serve (a channel or partition already open on the connection,
//! credit out of `1..=`[`MAX_CREDIT`], another job's secret) is refused the same way.

use bytes::Bytes;
use conflux_blob_api::JobId;
use conflux_deploy::ResultPartitionId;
use serde::{Deserialize, Serialize};

pub use crate::protocol::MAX_CREDIT;
use crate::secret::Secret;
use crate::shuffle::partition_file::MAX_BUFFER_BYTES;

/// The data protocol's version (2: the hello names the job and its secret and is answered).
pub const DATA_PROTOCOL_VERSION: u32 = 2;

/// The largest data frame, bytes: a full buffer and its header.
pub const MAX_DATA_FRAME_BYTES: usize = MAX_BUFFER_BYTES + 1024;

/// Consumer to producer TaskManager.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DataRequest {
    /// The first frame: the protocol version, the cluster's token if it has one, and the job
    /// whose partitions the connection reads with that job's secret.
    Hello {
        /// [`DATA_PROTOCOL_VERSION`].
        version: u32,
        /// The shared secret of the cluster (`--token`).
        token: Option<String>,
        /// The job.
        job: JobId,
        /// The job's secret, as the consumer's task submission carried it.
        secret: Secret,
    },
    /// Open logical channel `channel` on subpartitions `subpartitions` (inclusive) of a
    /// partition of the hello's job, with `credit` buffers the consumer can take at once
    /// (Flink's `PartitionRequest` with its initial credit), 1 to [`MAX_CREDIT`]. A channel
    /// number or partition already open on the connection is refused; one that ended (its
    /// `End` or `NotFound` sent) may be asked for again.
    Request {
        /// The consumer's number for the channel, unique among its open channels.
        channel: u32,
        /// The partition and its producing attempt.
        partition: ResultPartitionId,
        /// First and last subpartition.
        subpartitions: (u32, u32),
        /// Buffers the producer may send before it hears more credit.
        credit: u32,
    },
    /// The consumer took `credit` more buffers of `channel` (Flink's `AddCredit`). Credit for
    /// a channel that is not open is ignored; a channel never holds more than [`MAX_CREDIT`].
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
    /// The hello is accepted: requests may follow.
    Welcome,
    /// The hello or a request is refused, and why (protocol version, token, the job's secret,
    /// a request the protocol does not allow, an idle connection). The connection closes after
    /// it.
    Refused {
        /// Why.
        reason: String,
    },
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
