//! Frames on a TCP connection: `tokio-util`'s length-delimited codec (a 4-byte big-endian
//! length, then the body) with a bounded frame size, MessagePack bodies, and the version
//! handshake every connection starts with.

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

use crate::protocol::{HandshakeReply, Hello, HANDSHAKE_MAGIC, PROTOCOL_VERSION};

/// A connection carrying length-delimited frames.
pub type FramedStream = Framed<TcpStream, LengthDelimitedCodec>;

/// Largest handshake frame, bytes: a hello is a few hundred bytes.
pub const MAX_HANDSHAKE_FRAME_BYTES: usize = 64 * 1024;

/// Why a connection failed. Each closes that connection only.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RpcError {
    /// The socket failed.
    #[error("connection to {peer}: {source}")]
    Io {
        /// The peer's address.
        peer: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The peer closed the connection.
    #[error("{0} closed the connection")]
    Closed(String),
    /// A frame could not be read: longer than the limit, or cut short.
    #[error("frame {frame} from {peer}: {reason}")]
    BadFrame {
        /// The peer.
        peer: String,
        /// Number of the frame on this connection, from 0 (the handshake).
        frame: u64,
        /// What is wrong.
        reason: String,
    },
    /// A frame that does not decode as the expected message.
    #[error("frame {frame} from {peer} is not a valid {expected}: {reason}")]
    Malformed {
        /// The peer.
        peer: String,
        /// Number of the frame, from 0.
        frame: u64,
        /// The expected message type.
        expected: &'static str,
        /// The decoder's complaint.
        reason: String,
    },
    /// The peer speaks another protocol version.
    #[error("protocol version mismatch: {peer} speaks version {theirs}, this process speaks version {ours}")]
    VersionMismatch {
        /// The peer.
        peer: String,
        /// Its version.
        theirs: u32,
        /// Ours.
        ours: u32,
    },
    /// The other side refused the handshake.
    #[error("refused by {peer}: {reason}")]
    Refused {
        /// The peer.
        peer: String,
        /// Its reason.
        reason: String,
    },
    /// A message that does not encode (a path that is not UTF-8, say): it is not sent.
    #[error("a {message} does not encode: {reason}")]
    Encode {
        /// The message's type, e.g. `ToTaskManager`.
        message: &'static str,
        /// The encoder's complaint.
        reason: String,
    },
    /// Nothing arrived in time.
    #[error("{what} from {peer}: nothing within {ms} ms")]
    Timeout {
        /// The peer.
        peer: String,
        /// What was awaited.
        what: &'static str,
        /// The timeout, ms.
        ms: u64,
    },
}

/// Whole milliseconds of `d`, saturating.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Frames `stream` with frames of at most `max_frame_bytes`.
pub fn framed(stream: TcpStream, max_frame_bytes: usize) -> FramedStream {
    let codec = LengthDelimitedCodec::builder()
        .max_frame_length(max_frame_bytes)
        .new_codec();
    Framed::new(stream, codec)
}

/// The MessagePack body of a message.
///
/// # Errors
/// [`RpcError::Encode`] naming the message type when it does not encode: a path that is not
/// UTF-8 (MessagePack strings are UTF-8), a map key that is not a string. The command line
/// refuses such paths before anything starts; a library caller gets this error, never a panic.
pub fn encode<T: Serialize>(message: &T) -> Result<Bytes, RpcError> {
    encode_with_capacity(message, 0)
}

/// [`encode`] into a body allocated for `capacity` bytes: a message carrying a 32 KiB buffer
/// is written without growing its body a dozen times (and copying it each time).
///
/// # Errors
/// As [`encode`].
pub fn encode_with_capacity<T: Serialize>(message: &T, capacity: usize) -> Result<Bytes, RpcError> {
    let mut body = Vec::with_capacity(capacity);
    rmp_serde::encode::write(&mut body, message)
        .map(|()| Bytes::from(body))
        .map_err(|e| RpcError::Encode {
            message: short_type_name::<T>(),
            reason: e.to_string(),
        })
}

/// `ToTaskManager` of `conflux_runtime::protocol::ToTaskManager`.
fn short_type_name<T>() -> &'static str {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}

/// Decodes frame number `frame` from `peer` as a `T`.
///
/// # Errors
/// [`RpcError::Malformed`] naming the frame and the expected type.
pub fn decode<T: DeserializeOwned>(
    body: &[u8],
    peer: &str,
    frame: u64,
    expected: &'static str,
) -> Result<T, RpcError> {
    rmp_serde::from_slice(body).map_err(|e| RpcError::Malformed {
        peer: peer.to_owned(),
        frame,
        expected,
        reason: e.to_string(),
    })
}

/// Reads the next frame, waiting at most `timeout`.
///
/// # Errors
/// [`RpcError::Timeout`], [`RpcError::Closed`], [`RpcError::BadFrame`] (too long, truncated).
pub async fn next_frame(
    stream: &mut (impl StreamExt<Item = std::io::Result<BytesMut>> + Unpin),
    peer: &str,
    frame: u64,
    what: &'static str,
    timeout: Duration,
) -> Result<BytesMut, RpcError> {
    match tokio::time::timeout(timeout, stream.next()).await {
        Err(_) => Err(RpcError::Timeout {
            peer: peer.to_owned(),
            what,
            ms: millis(timeout),
        }),
        Ok(None) => Err(RpcError::Closed(peer.to_owned())),
        Ok(Some(Err(e))) => Err(RpcError::BadFrame {
            peer: peer.to_owned(),
            frame,
            reason: e.to_string(),
        }),
        Ok(Some(Ok(body))) => Ok(body),
    }
}

/// The body of a handshake frame: the fixed prefix (magic, version), then `message`.
///
/// # Errors
/// As [`encode`].
pub fn handshake_frame<T: Serialize>(message: &T) -> Result<Bytes, RpcError> {
    let body = encode(message)?;
    let mut out = BytesMut::with_capacity(8 + body.len());
    out.put_slice(&HANDSHAKE_MAGIC);
    out.put_u32_le(PROTOCOL_VERSION);
    out.put_slice(&body);
    Ok(out.freeze())
}

fn strip_prefix<'a>(body: &'a [u8], peer: &str) -> Result<&'a [u8], RpcError> {
    if body.len() < 8 || body[..4] != HANDSHAKE_MAGIC {
        return Err(RpcError::BadFrame {
            peer: peer.to_owned(),
            frame: 0,
            reason: format!(
                "handshake does not start with {:?}: not a Conflux peer",
                std::str::from_utf8(&HANDSHAKE_MAGIC).unwrap_or("CFXR")
            ),
        });
    }
    let theirs = u32::from_le_bytes([body[4], body[5], body[6], body[7]]);
    if theirs != PROTOCOL_VERSION {
        return Err(RpcError::VersionMismatch {
            peer: peer.to_owned(),
            theirs,
            ours: PROTOCOL_VERSION,
        });
    }
    Ok(&body[8..])
}

fn io_error(peer: &str, source: std::io::Error) -> RpcError {
    RpcError::Io {
        peer: peer.to_owned(),
        source,
    }
}

/// Connects to `address`, sends `hello` and waits at most `timeout` for the answer. Returns the
/// framed connection (frames up to `max_frame_bytes`) and the welcome.
///
/// # Errors
/// [`RpcError::Refused`] with the JobManager's reason (wrong token, version), and the errors of
/// a connection.
pub async fn connect(
    address: &str,
    hello: &Hello,
    max_frame_bytes: usize,
    timeout: Duration,
) -> Result<(FramedStream, crate::protocol::Welcome), RpcError> {
    let stream = tokio::time::timeout(timeout, TcpStream::connect(address))
        .await
        .map_err(|_| RpcError::Timeout {
            peer: address.to_owned(),
            what: "connect",
            ms: millis(timeout),
        })?
        .map_err(|e| io_error(address, e))?;
    // Heartbeats and acknowledgements are small: send them at once.
    stream.set_nodelay(true).map_err(|e| io_error(address, e))?;
    let mut conn = framed(stream, MAX_HANDSHAKE_FRAME_BYTES);
    conn.send(handshake_frame(hello)?)
        .await
        .map_err(|e| io_error(address, e))?;
    let body = next_frame(&mut conn, address, 0, "handshake reply", timeout).await?;
    let reply: HandshakeReply =
        decode(strip_prefix(&body, address)?, address, 0, "handshake reply")?;
    match reply {
        HandshakeReply::Welcome(welcome) => {
            conn.codec_mut().set_max_frame_length(max_frame_bytes);
            Ok((conn, welcome))
        }
        HandshakeReply::Refused(reason) => Err(RpcError::Refused {
            peer: address.to_owned(),
            reason,
        }),
    }
}

/// Reads a peer's hello (at most `timeout`). A peer of another version, or whose hello does not
/// decode, is answered with a refusal naming the problem before the error is returned.
///
/// # Errors
/// [`RpcError::VersionMismatch`], [`RpcError::BadFrame`], [`RpcError::Malformed`],
/// [`RpcError::Timeout`], [`RpcError::Closed`].
pub async fn accept_hello(
    conn: &mut FramedStream,
    peer: &str,
    timeout: Duration,
) -> Result<Hello, RpcError> {
    let body = next_frame(conn, peer, 0, "handshake", timeout).await?;
    let result = strip_prefix(&body, peer).and_then(|rest| decode(rest, peer, 0, "hello"));
    if let Err(e) = &result {
        let _ = send_reply(conn, &HandshakeReply::Refused(e.to_string())).await;
    }
    result
}

/// Sends the answer to a hello.
///
/// # Errors
/// [`RpcError::Io`] when the socket fails.
pub async fn send_reply(conn: &mut FramedStream, reply: &HandshakeReply) -> Result<(), RpcError> {
    let peer = conn
        .get_ref()
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    conn.send(handshake_frame(reply)?)
        .await
        .map_err(|e| io_error(&peer, e))
}

/// The injected RPC faults of one outgoing stream: a delay before every message and seeded
/// drops. Default: none.
#[derive(Debug)]
pub(crate) struct FaultInjector {
    faults: crate::config::RpcFaults,
    rng: conflux_common::SplitMix64,
}

impl FaultInjector {
    /// Faults for the stream numbered `stream` (its drops are seeded by `faults.seed` and it).
    pub(crate) fn new(faults: crate::config::RpcFaults, stream: u64) -> FaultInjector {
        FaultInjector {
            faults,
            rng: conflux_common::SplitMix64::new(
                faults.seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ),
        }
    }

    /// Waits the injected delay; false when the message is to be dropped.
    pub(crate) async fn pass(&mut self) -> bool {
        if self.faults.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(self.faults.delay_ms)).await;
        }
        !(self.faults.drop_rate > 0.0 && self.rng.chance(self.faults.drop_rate))
    }
}

/// Writes queued frames to `sink` until both queues are closed or the socket fails: `priority`
/// first, and a flush only when nothing else is queued, so that bursts go out in few writes.
pub(crate) async fn write_prioritized(
    mut sink: futures_util::stream::SplitSink<FramedStream, Bytes>,
    mut priority: tokio::sync::mpsc::UnboundedReceiver<Bytes>,
    mut normal: tokio::sync::mpsc::UnboundedReceiver<Bytes>,
    mut faults: FaultInjector,
    fence: Option<conflux_ha::LeaseHandle>,
) {
    loop {
        let frame = tokio::select! {
            biased;
            Some(frame) = priority.recv() => frame,
            Some(frame) = normal.recv() => frame,
            else => return,
        };
        // A deposed leader (lease over) writes nothing more: the connection closes, and the
        // TaskManager looks for the new leader.
        if fence.as_ref().is_some_and(|lease| !lease.is_valid()) {
            tracing::error!("no longer the leader (lease over): closing the connection unsent");
            return;
        }
        if !faults.pass().await {
            tracing::debug!("injected fault: message dropped");
            continue;
        }
        if let Err(e) = sink.feed(frame).await {
            tracing::debug!("write failed: {e}");
            return;
        }
        if priority.is_empty() && normal.is_empty() && sink.flush().await.is_err() {
            return;
        }
    }
}
