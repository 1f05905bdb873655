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
use std::sync::atomic::{AtomicU64, Ordering};
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
    /// Connection attempts, and "not found" retries of pipelined channels, before failing
    /// ([`attempts_for`] derives them from Flink's back-off settings).
    pub(crate) attempts: u32,
    /// The first back-off; it doubles per attempt, up to `max_backoff`.
    pub(crate) backoff: Duration,
    /// The longest back-off.
    pub(crate) max_backoff: Duration,
    /// Counts every retry (a connection attempt after the first, a pipelined channel's request
    /// sent again): the task's `partition_request_retries`.
    pub(crate) retries: Arc<AtomicU64>,
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

/// How many tries a partition request gets under Flink's back-off
/// (`taskmanager.network.request-backoff.initial` / `.max`): the first, then one after each
/// wait of `initial`, `2 x initial`, ... doubling up to `max`, the last retry being the one
/// after a wait of `max` (as Flink's `RemoteInputChannel.increaseBackoff`). An `initial` of 0
/// tries once. E.g. Flink's defaults 100 ms / 10,000 ms: 1 + 8 tries (waits 100, 200, 400, 800,
/// 1,600, 3,200, 6,400 and 10,000 ms).
pub(crate) fn attempts_for(initial: Duration, max: Duration) -> u32 {
    if initial.is_zero() {
        return 1;
    }
    let mut attempts = 1u32;
    let mut wait = initial;
    loop {
        attempts += 1;
        if wait >= max || attempts >= 64 {
            return attempts;
        }
        wait = (wait * 2).min(max);
    }
}

/// The wait before retry `n` (1 for the first retry): `initial x 2^(n-1)`, at most `max`.
fn backoff_before(settings: &InputSettings, n: u32) -> Duration {
    let doubled = settings
        .backoff
        .saturating_mul(1u32 << n.saturating_sub(1).min(20));
    doubled.min(settings.max_backoff.max(settings.backoff))
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
    let mut last = String::new();
    for n in 0..settings.attempts.max(1) {
        if n > 0 {
            tokio::time::sleep(backoff_before(settings, n)).await;
            settings.retries.fetch_add(1, Ordering::Relaxed);
            tracing::info!(%address, retry = n, "partition request retried: connecting again after {last}");
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
                        tokio::time::sleep(backoff_before(settings, retries[i])).await;
                        settings.retries.fetch_add(1, Ordering::Relaxed);
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

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a panic is the wanted failure in tests
mod tests {
    use super::*;

    /// Flink's defaults (100 ms, 10 s) give the waits 100, 200, ..., 6,400 and 10,000 ms.
    #[test]
    fn the_back_off_doubles_up_to_its_maximum() {
        let ms = Duration::from_millis;
        assert_eq!(attempts_for(ms(100), ms(10_000)), 9);
        assert_eq!(attempts_for(ms(0), ms(10_000)), 1);
        assert_eq!(attempts_for(ms(100), ms(100)), 2);
        assert_eq!(attempts_for(ms(100), ms(50)), 2);
        assert_eq!(attempts_for(ms(50), ms(800)), 6);
        let settings = InputSettings {
            job: JobId([0; 16]),
            secret: Secret([0; 16]),
            token: None,
            credit: 1,
            attempts: 9,
            backoff: ms(100),
            max_backoff: ms(10_000),
            retries: Arc::default(),
            welcome_timeout: ms(1),
        };
        let waits: Vec<Duration> = (1..9).map(|n| backoff_before(&settings, n)).collect();
        let expected = [100, 200, 400, 800, 1_600, 3_200, 6_400, 10_000].map(ms);
        assert_eq!(waits, expected);
    }

    /// A producer nobody listens for: every try after the first is a counted retry, and the
    /// failure names how many tries failed.
    #[test]
    fn retries_are_counted_and_the_last_failure_named() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // A port that was free a moment ago: connections are refused.
        let address = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let ms = Duration::from_millis;
        let settings = InputSettings {
            job: JobId([0; 16]),
            secret: Secret([0; 16]),
            token: None,
            credit: 1,
            attempts: attempts_for(ms(1), ms(4)),
            backoff: ms(1),
            max_backoff: ms(4),
            retries: Arc::default(),
            welcome_timeout: ms(500),
        };
        let failure = runtime
            .block_on(connect(address, &settings))
            .map(|_| ())
            .unwrap_err();
        assert!(
            failure.starts_with(&format!("connection to {address} failed 4 times: ")),
            "{failure}"
        );
        assert_eq!(settings.retries.load(Ordering::Relaxed), 3);
    }
}
