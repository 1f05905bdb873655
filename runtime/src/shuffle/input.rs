//! A consumer's side of the data plane (Flink's `PartitionRequestClient` and
//! `RemoteInputChannel`): one connection per producer TaskManager, every input channel a
//! logical channel on it with its own credit; buffers go to the task's thread, which gives
//! each credit back once it has consumed the buffer, so at most `credit` buffers per channel
//! are ever on their way or waiting.
//!
//! A consumer never waits without bound: a producer's data server must welcome it within the
//! welcome timeout (one that is saturated, or not a data server, does not), on each of its
//! connection attempts; after the last the channel fails naming its partition, and with it the
//! task, so that the scheduler can act. A refusal (token, the job's secret, a request the
//! protocol does not allow) fails it at once with the server's reason.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use conflux_blob_api::JobId;
use conflux_deploy::ResultPartitionId;
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::connection::{decode, encode, framed, FramedStream};
use crate::secret::Secret;
use crate::shuffle::protocol::{
    DataRequest, DataResponse, DATA_PROTOCOL_VERSION, MAX_DATA_FRAME_BYTES,
};

/// One input channel: a producer's partition, where it is, which subpartitions to read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InputChannel {
    pub(crate) partition: ResultPartitionId,
    pub(crate) address: SocketAddr,
    pub(crate) subpartitions: (u32, u32),
    /// A pipelined producer may not have registered its partition yet: "not found" is retried.
    pub(crate) pipelined: bool,
}

/// How a consumer reads.
#[derive(Clone, Debug)]
pub(crate) struct InputSettings {
    pub(crate) job: JobId,
    /// The job's data secret, which producers' data servers ask for.
    pub(crate) secret: Secret,
    pub(crate) token: Option<String>,
    /// Buffers per channel in flight (Flink's exclusive buffers per channel).
    pub(crate) credit: u32,
    /// Connection attempts, and "not found" retries of pipelined channels, before failing.
    pub(crate) attempts: u32,
    /// The first back-off; it doubles per attempt.
    pub(crate) backoff: Duration,
    /// How long one attempt waits for the connection and the server's welcome.
    pub(crate) welcome_timeout: Duration,
}

/// What the reading tasks tell the consumer's thread.
#[derive(Debug)]
pub(crate) enum InputEvent {
    /// A buffer; give its credit back once consumed.
    Buffer {
        /// Whole records.
        data: Bytes,
        /// Its channel's credit.
        credit: CreditReturn,
    },
    /// One channel read everything.
    ChannelEnded,
    /// A channel cannot be read: the consumer fails with partition-not-found.
    Failed {
        /// The partition.
        partition: ResultPartitionId,
        /// Why.
        reason: String,
    },
}

/// A consumed buffer's credit, for its channel.
#[derive(Debug)]
pub(crate) struct CreditReturn {
    to: mpsc::UnboundedSender<u32>,
    channel: u32,
}

impl CreditReturn {
    /// Gives the credit back (the buffer was consumed).
    pub(crate) fn give_back(self) {
        let _ = self.to.send(self.channel);
    }
}

/// Starts reading `channels`; events go to `events` until every channel ended or one failed.
/// The returned set aborts the readers when dropped.
pub(crate) fn spawn_readers(
    channels: Vec<InputChannel>,
    settings: Arc<InputSettings>,
    events: mpsc::Sender<InputEvent>,
) -> tokio::task::JoinSet<()> {
    let mut by_address: HashMap<SocketAddr, Vec<InputChannel>> = HashMap::new();
    for c in channels {
        by_address.entry(c.address).or_default().push(c);
    }
    let mut set = tokio::task::JoinSet::new();
    for (address, channels) in by_address {
        let settings = Arc::clone(&settings);
        let events = events.clone();
        set.spawn(async move {
            if let Err((partition, reason)) =
                read_from(address, &channels, &settings, &events).await
            {
                let _ = events.send(InputEvent::Failed { partition, reason }).await;
            }
        });
    }
    set
}

/// Why a connection attempt failed.
enum Attempt {
    /// Worth another attempt (refused by the kernel, timed out, closed before the welcome).
    Retry(String),
    /// The server refused the hello, and why: another attempt would be refused too.
    Refused(String),
}

/// One attempt: connects, says hello and waits for the welcome, within the welcome timeout.
async fn attempt(address: SocketAddr, settings: &InputSettings) -> Result<FramedStream, Attempt> {
    let peer = address.to_string();
    let attempt = async {
        let stream = TcpStream::connect(address)
            .await
            .map_err(|e| Attempt::Retry(e.to_string()))?;
        let _ = stream.set_nodelay(true);
        let mut conn = framed(stream, MAX_DATA_FRAME_BYTES);
        let hello = DataRequest::Hello {
            version: DATA_PROTOCOL_VERSION,
            token: settings.token.clone(),
            job: settings.job,
            secret: settings.secret,
        };
        let hello = encode(&hello).map_err(|e| Attempt::Refused(e.to_string()))?;
        conn.send(hello)
            .await
            .map_err(|e| Attempt::Retry(e.to_string()))?;
        let answer = match conn.next().await {
            Some(Ok(body)) => body,
            Some(Err(e)) => return Err(Attempt::Retry(e.to_string())),
            None => return Err(Attempt::Retry("closed before its welcome".into())),
        };
        match decode::<DataResponse>(&answer, &peer, 0, "data welcome") {
            Ok(DataResponse::Welcome) => Ok(conn),
            Ok(DataResponse::Refused { reason }) => Err(Attempt::Refused(reason)),
            Ok(other) => Err(Attempt::Refused(format!(
                "answered the hello with {other:?} instead of a welcome"
            ))),
            Err(e) => Err(Attempt::Refused(e.to_string())),
        }
    };
    match tokio::time::timeout(settings.welcome_timeout, attempt).await {
        Ok(result) => result,
        Err(_) => Err(Attempt::Retry(format!(
            "no welcome within {} ms",
            settings.welcome_timeout.as_millis()
        ))),
    }
}

/// Connects to a producer's data server, with retries and back-off.
async fn connect(address: SocketAddr, settings: &InputSettings) -> Result<FramedStream, String> {
    let mut backoff = settings.backoff;
    let mut last = String::new();
    for n in 0..settings.attempts.max(1) {
        if n > 0 {
            tokio::time::sleep(backoff).await;
            backoff *= 2;
        }
        match attempt(address, settings).await {
            Ok(conn) => return Ok(conn),
            Err(Attempt::Refused(reason)) => return Err(format!("refused by {address}: {reason}")),
            Err(Attempt::Retry(reason)) => last = reason,
        }
    }
    Err(format!(
        "connection to {address} failed {} times: {last}",
        settings.attempts.max(1)
    ))
}

fn request(settings: &InputSettings, channel: u32, c: &InputChannel) -> DataRequest {
    DataRequest::Request {
        channel,
        partition: c.partition,
        subpartitions: c.subpartitions,
        credit: settings.credit,
    }
}

async fn read_from(
    address: SocketAddr,
    channels: &[InputChannel],
    settings: &InputSettings,
    events: &mpsc::Sender<InputEvent>,
) -> Result<(), (ResultPartitionId, String)> {
    let first = channels[0].partition;
    let conn = connect(address, settings).await.map_err(|e| (first, e))?;
    let (mut sink, mut frames) = conn.split();
    let lost = |e: String| (first, format!("data connection to {address}: {e}"));
    for (i, c) in channels.iter().enumerate() {
        let channel = u32::try_from(i).unwrap_or(u32::MAX);
        let frame = encode(&request(settings, channel, c)).map_err(|e| lost(e.to_string()))?;
        sink.send(frame).await.map_err(|e| lost(e.to_string()))?;
    }
    let (credit_tx, mut credit_rx) = mpsc::unbounded_channel::<u32>();
    let mut open = channels.len();
    let mut done = vec![false; channels.len()];
    let mut retries = vec![0u32; channels.len()];
    let peer = address.to_string();
    let mut frame = 0u64;
    // The partition of the first channel still open: what a lost connection fails.
    let open_partition = |done: &[bool]| {
        done.iter()
            .position(|d| !d)
            .map_or(first, |i| channels[i].partition)
    };
    while open > 0 {
        tokio::select! {
            Some(channel) = credit_rx.recv() => {
                // Coalesce what else was given back.
                let mut freed: HashMap<u32, u32> = HashMap::from([(channel, 1)]);
                while let Ok(c) = credit_rx.try_recv() {
                    *freed.entry(c).or_default() += 1;
                }
                for (channel, credit) in freed {
                    let frame = encode(&DataRequest::Credit { channel, credit }).map_err(|e| (open_partition(&done), e.to_string()))?;
                    if sink.send(frame).await.is_err() {
                        return Err((open_partition(&done), format!("data connection to {address} lost")));
                    }
                }
            }
            next = frames.next() => {
                frame += 1;
                let body = match next {
                    Some(Ok(body)) => body,
                    Some(Err(e)) => return Err((open_partition(&done), format!("data connection to {address}: {e}"))),
                    None => return Err((open_partition(&done), format!("data connection to {address} closed"))),
                };
                let response: DataResponse = decode(&body, &peer, frame, "DataResponse")
                    .map_err(|e| (open_partition(&done), e.to_string()))?;
                let index = |channel: u32| {
                    let i = channel as usize;
                    (i < channels.len()).then_some(i)
                };
                match response {
                    DataResponse::Refused { reason } => {
                        return Err((open_partition(&done), format!("refused by {address}: {reason}")));
                    }
                    DataResponse::Welcome => {
                        return Err((open_partition(&done), format!("{address} sent a second welcome")));
                    }
                    DataResponse::Buffer { channel, data } => {
                        if index(channel).is_none() {
                            return Err((first, format!("{address} sent a buffer of unknown channel {channel}")));
                        }
                        let credit = CreditReturn { to: credit_tx.clone(), channel };
                        if events.send(InputEvent::Buffer { data, credit }).await.is_err() {
                            return Ok(());
                        }
                    }
                    DataResponse::End { channel } => {
                        let Some(i) = index(channel) else { continue };
                        if !done[i] {
                            done[i] = true;
                            open -= 1;
                            if events.send(InputEvent::ChannelEnded).await.is_err() {
                                return Ok(());
                            }
                        }
                    }
                    DataResponse::NotFound { channel, reason } => {
                        let Some(i) = index(channel) else { continue };
                        let c = &channels[i];
                        retries[i] += 1;
                        if !c.pipelined || retries[i] >= settings.attempts {
                            return Err((c.partition, format!("{address}: {reason}")));
                        }
                        tokio::time::sleep(settings.backoff * (1 << retries[i].min(10))).await;
                        let frame = encode(&request(settings, channel, c)).map_err(|e| (c.partition, e.to_string()))?;
                        if sink.send(frame).await.is_err() {
                            return Err((c.partition, format!("data connection to {address} lost")));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}
