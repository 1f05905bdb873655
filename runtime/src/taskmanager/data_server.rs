//! The TaskManager's data server (Flink's `NettyServer` with its `PartitionRequestServerHandler`):
//! the address its produced partitions' ShuffleDescriptors carry. Consumers open one
//! connection per consumer task, prove with its hello that they read for a job this
//! TaskManager runs (the job's secret), and ask for channels on it ([`DataRequest`]); each
//! channel streams its subpartitions' buffers as the consumer's credit allows.
//!
//! Every resource of a connection is bounded by what its peer is owed, not by what it asks:
//! - connections: at most `max_connections`; when a new one finds them all taken, the one that
//!   did nothing useful for the longest time and has no channel open is closed to make room
//!   (`conflux-connections`' cap), so idle sockets cannot lock consumers out;
//! - channels (one task each): one per partition held here and open at once, a channel number
//!   or partition already open is refused, at most [`MAX_CHANNELS_PER_CONNECTION`]; a request
//!   for a partition not held is answered at once, with no task;
//! - bytes: channels read a buffer only within the connection's budget of
//!   [`MAX_BUFFERED_BYTES_PER_CONNECTION`] bytes read and not yet written to the socket,
//!   whatever credit the consumer gives (at most [`MAX_CREDIT`] per channel);
//! - time: a hello within the handshake timeout; a connection with no channel open and no
//!   useful frame (a request that opened a channel, credit for an open channel) for
//!   `idle_timeout` is closed: frames that do nothing (credit for an unknown channel) do not
//!   keep it open.
//!
//! A refused hello or request (version, token, secret, a request the protocol does not allow) is
//! answered with [`DataResponse::Refused`] naming the reason before the connection closes; a
//! bad frame closes its connection only.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use conflux_connections::{Activity, Busy, ConnectionCap, Slot};
use conflux_deploy::ResultPartitionId;
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use crate::connection::{decode, encode, encode_with_capacity, framed, next_frame, RpcError};
use crate::shuffle::partition_file::{PartitionFile, MAX_BUFFER_BYTES};
use crate::shuffle::partitions::{Partition, PipelinedItem, ResultPartitionManager};
use crate::shuffle::protocol::{
    DataRequest, DataResponse, DATA_PROTOCOL_VERSION, MAX_CREDIT, MAX_DATA_FRAME_BYTES,
};

/// Channels one connection may have open at once.
pub(crate) const MAX_CHANNELS_PER_CONNECTION: usize = 1 << 16;

/// Bytes of buffers one connection's channels may have read and not yet written to its
/// socket: 2 MiB, 64 full buffers, enough to keep a socket busy.
pub(crate) const MAX_BUFFERED_BYTES_PER_CONNECTION: usize = 2 << 20;

/// Frames (beyond the buffers the byte budget bounds) queued for one connection's socket.
const OUTGOING_FRAMES: usize = 256;

/// How long a refusal may take to reach a peer before its connection is closed anyway.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// The limits of a data server.
#[derive(Clone, Debug)]
pub(crate) struct DataServerLimits {
    pub(crate) max_connections: usize,
    pub(crate) handshake_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) token: Option<String>,
}

/// What a data server holds now, and the most it held: the hook by which tests check that
/// memory stays bounded whatever peers send.
#[derive(Debug, Default)]
pub(crate) struct DataServerStats {
    /// Connections open now.
    pub(crate) connections: AtomicU64,
    /// Channel tasks alive now, and the most at once.
    pub(crate) channels: AtomicU64,
    pub(crate) peak_channels: AtomicU64,
    /// Bytes of buffers read and not yet written to a socket now, and the most at once.
    pub(crate) buffered_bytes: AtomicU64,
    pub(crate) peak_buffered_bytes: AtomicU64,
    /// Hellos and requests refused.
    pub(crate) refused: AtomicU64,
    /// Connections closed for doing nothing useful: after the idle timeout or to make room.
    pub(crate) closed_idle: AtomicU64,
}

impl DataServerStats {
    fn add(now: &AtomicU64, peak: &AtomicU64, n: u64) {
        let v = now.fetch_add(n, Ordering::Relaxed) + n;
        peak.fetch_max(v, Ordering::Relaxed);
    }
}

/// The running server; dropping it stops it.
pub(crate) struct DataServer {
    pub(crate) address: SocketAddr,
    /// What it holds: read by the tests, which check the bounds.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) stats: Arc<DataServerStats>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for DataServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Binds `host` on a free port and serves `partitions` in the background.
pub(crate) async fn start(
    host: IpAddr,
    partitions: Arc<ResultPartitionManager>,
    limits: DataServerLimits,
) -> std::io::Result<DataServer> {
    let listener = TcpListener::bind(SocketAddr::new(host, 0)).await?;
    let address = listener.local_addr()?;
    let cap = ConnectionCap::new(limits.max_connections);
    let limits = Arc::new(limits);
    let stats = Arc::new(DataServerStats::default());
    let server_stats = Arc::clone(&stats);
    let task = tokio::spawn(async move {
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors and the like: wait instead of spinning.
                    tracing::warn!("data server: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let activity = Arc::new(Activity::new());
            if cap.open() >= cap.max_connections() {
                tracing::debug!(%peer, "data server at its connection cap: closing the longest idle connection");
            }
            let slot = cap.admit(Arc::clone(&activity)).await;
            let _ = stream.set_nodelay(true);
            let connection = Connection {
                peer: peer.to_string(),
                partitions: Arc::clone(&partitions),
                limits: Arc::clone(&limits),
                stats: Arc::clone(&server_stats),
                activity,
                slot,
            };
            tokio::spawn(async move {
                connection.stats.connections.fetch_add(1, Ordering::Relaxed);
                let stats = Arc::clone(&connection.stats);
                if let Err(e) = connection.serve(stream).await {
                    tracing::debug!(%peer, "data connection closed: {e}");
                }
                stats.connections.fetch_sub(1, Ordering::Relaxed);
            });
        }
    });
    Ok(DataServer {
        address,
        stats,
        task,
    })
}

/// A frame for the socket, and the budget its buffer holds until it is written.
struct Outgoing {
    frame: Bytes,
    held: Option<HeldBytes>,
}

/// Bytes of a connection's budget held by a buffer read and not yet written.
struct HeldBytes {
    _permit: OwnedSemaphorePermit,
    bytes: u64,
    stats: Arc<DataServerStats>,
}

impl Drop for HeldBytes {
    fn drop(&mut self) {
        self.stats
            .buffered_bytes
            .fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// A channel task counted in [`DataServerStats::channels`] while it lives.
struct ChannelAlive(Arc<DataServerStats>);

impl ChannelAlive {
    fn new(stats: Arc<DataServerStats>) -> ChannelAlive {
        DataServerStats::add(&stats.channels, &stats.peak_channels, 1);
        ChannelAlive(stats)
    }
}

impl Drop for ChannelAlive {
    fn drop(&mut self) {
        self.0.channels.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One open channel as the connection sees it.
struct ChannelState {
    /// Credit the consumer gave and the channel has not used.
    credit: Semaphore,
    /// Set before the channel's last frame (`End`, `NotFound`) is queued: the number and the
    /// partition may be asked for again from then on.
    ended: AtomicBool,
}

struct OpenChannel {
    state: Arc<ChannelState>,
    partition: ResultPartitionId,
}

/// Why a connection stops reading.
enum Stop {
    /// The peer closed it.
    Closed,
    /// It is refused (or closed for idleness), and why: the reason goes to the peer.
    Refuse(String),
    /// It failed (a bad frame, a socket error).
    Failed(RpcError),
}

/// A connection's context.
struct Connection {
    peer: String,
    partitions: Arc<ResultPartitionManager>,
    limits: Arc<DataServerLimits>,
    stats: Arc<DataServerStats>,
    activity: Arc<Activity>,
    slot: Slot,
}

impl Connection {
    async fn serve(self, stream: tokio::net::TcpStream) -> Result<(), RpcError> {
        let (mut sink, mut frames) = framed(stream, MAX_DATA_FRAME_BYTES).split();
        // Channel tasks send through one writer: control frames queue (bounded), buffers also
        // hold the connection's byte budget until they are written.
        let (out, mut outgoing) = mpsc::channel::<Outgoing>(OUTGOING_FRAMES);
        let mut writer = tokio::spawn(async move {
            let mut written = Vec::new();
            while let Some(next) = outgoing.recv().await {
                if sink.feed(next.frame).await.is_err() {
                    return;
                }
                written.extend(next.held);
                if outgoing.is_empty() {
                    if sink.flush().await.is_err() {
                        return;
                    }
                    written.clear();
                }
            }
            let _ = sink.flush().await;
        });
        let stop = self.read(&mut frames, &out).await;
        let result = match stop {
            Stop::Closed => Ok(()),
            Stop::Refuse(reason) => {
                self.stats.refused.fetch_add(1, Ordering::Relaxed);
                if let Ok(frame) = encode(&DataResponse::Refused {
                    reason: reason.clone(),
                }) {
                    let refusal = Outgoing { frame, held: None };
                    let _ = tokio::time::timeout(REFUSAL_LINGER, out.send(refusal)).await;
                }
                Err(RpcError::Refused {
                    peer: self.peer.clone(),
                    reason,
                })
            }
            Stop::Failed(e) => Err(e),
        };
        drop(out);
        if tokio::time::timeout(REFUSAL_LINGER, &mut writer)
            .await
            .is_err()
        {
            writer.abort();
        }
        result
    }

    /// Reads the hello and then requests until the connection stops; every channel task is
    /// aborted when this returns.
    async fn read(
        &self,
        frames: &mut (impl StreamExt<Item = std::io::Result<bytes::BytesMut>> + Unpin),
        out: &mpsc::Sender<Outgoing>,
    ) -> Stop {
        let peer = self.peer.as_str();
        let hello = tokio::select! {
            hello = next_frame(frames, peer, 0, "data hello", self.limits.handshake_timeout) => hello,
            () = self.slot.close_requested() => return self.closed_idle("closed to make room for another connection"),
        };
        let hello = match hello {
            Ok(hello) => hello,
            Err(RpcError::Closed(_)) => return Stop::Closed,
            Err(e) => return Stop::Failed(e),
        };
        let (job, secret) = match decode::<DataRequest>(&hello, peer, 0, "DataRequest::Hello") {
            Ok(DataRequest::Hello { version, .. }) if version != DATA_PROTOCOL_VERSION => {
                return Stop::Refuse(format!(
                    "data protocol version {version}, this TaskManager speaks {DATA_PROTOCOL_VERSION}"
                ))
            }
            Ok(DataRequest::Hello {
                token, job, secret, ..
            }) => {
                if token != self.limits.token {
                    return Stop::Refuse(match token {
                        None => "this TaskManager requires a token".into(),
                        Some(_) => "wrong token".into(),
                    });
                }
                (job, secret)
            }
            Ok(other) => return Stop::Refuse(format!("expected a hello, got {}", kind(&other))),
            Err(e) => {
                return Stop::Refuse(format!(
                    "expected a hello of data protocol version {DATA_PROTOCOL_VERSION}: {e}"
                ))
            }
        };
        if self
            .partitions
            .job_secret(job)
            .is_some_and(|s| !s.matches(&secret))
        {
            return Stop::Refuse(format!("wrong secret for job {job}"));
        }
        let frame = match encode(&DataResponse::Welcome) {
            Ok(frame) => frame,
            Err(e) => return Stop::Failed(e),
        };
        if out.send(Outgoing { frame, held: None }).await.is_err() {
            return Stop::Closed;
        }
        let budget = Arc::new(Semaphore::new(MAX_BUFFERED_BYTES_PER_CONNECTION));
        let mut channels: HashMap<u32, OpenChannel> = HashMap::new();
        let mut by_partition: HashMap<ResultPartitionId, u32> = HashMap::new();
        let mut tasks = tokio::task::JoinSet::new();
        let idle = self.limits.idle_timeout;
        let mut frame = 0u64;
        let stop = loop {
            frame += 1;
            // Finished channels' tasks are reaped, and their entries dropped: the maps hold the
            // open channels (and those ended since the last frame).
            while let Some(ended) = tasks.try_join_next() {
                let Ok(channel) = ended else { continue };
                if let Some(open) = channels.get(&channel) {
                    if open.state.ended.load(Ordering::Acquire) {
                        by_partition.remove(&open.partition);
                        channels.remove(&channel);
                    }
                }
            }
            let deadline = self.activity.idle_deadline(idle);
            let body = tokio::select! {
                body = frames.next() => body,
                () = tokio::time::sleep_until(deadline.into()) => {
                    if self.activity.is_idle(idle) {
                        break self.closed_idle(&format!(
                            "no channel open and nothing useful for {} ms",
                            idle.as_millis()
                        ));
                    }
                    frame -= 1;
                    continue;
                }
                () = self.slot.close_requested() => {
                    break self.closed_idle("closed to make room for another connection");
                }
            };
            let body = match body {
                None => break Stop::Closed,
                Some(Ok(body)) => body,
                Some(Err(e)) => {
                    break Stop::Failed(RpcError::BadFrame {
                        peer: self.peer.clone(),
                        frame,
                        reason: e.to_string(),
                    })
                }
            };
            let request = match decode::<DataRequest>(&body, peer, frame, "DataRequest") {
                Ok(request) => request,
                Err(e) => break Stop::Failed(e),
            };
            match request {
                DataRequest::Request {
                    channel,
                    partition,
                    subpartitions,
                    credit,
                } => {
                    if !(1..=MAX_CREDIT).contains(&credit) {
                        break Stop::Refuse(format!(
                            "channel {channel}: credit {credit} is not within 1..={MAX_CREDIT}"
                        ));
                    }
                    if let Some(open) = channels.get(&channel) {
                        if !open.state.ended.load(Ordering::Acquire) {
                            break Stop::Refuse(format!("channel {channel} is already open"));
                        }
                        by_partition.remove(&open.partition);
                        channels.remove(&channel);
                    }
                    if let Some(&other) = by_partition.get(&partition) {
                        if channels
                            .get(&other)
                            .is_some_and(|o| !o.state.ended.load(Ordering::Acquire))
                        {
                            break Stop::Refuse(format!(
                                "{} is already open on channel {other}",
                                describe(&partition)
                            ));
                        }
                        by_partition.remove(&partition);
                        channels.remove(&other);
                    }
                    if channels.len() >= MAX_CHANNELS_PER_CONNECTION {
                        channels.retain(|_, o| !o.state.ended.load(Ordering::Acquire));
                        by_partition.retain(|_, c| channels.contains_key(c));
                        if channels.len() >= MAX_CHANNELS_PER_CONNECTION {
                            break Stop::Refuse(format!(
                                "more than {MAX_CHANNELS_PER_CONNECTION} channels open on one connection"
                            ));
                        }
                    }
                    // The secret is checked again: the job may have become known here since
                    // the hello (a pipelined consumer can connect before its producer starts).
                    let held = match self.partitions.get_checked(job, &secret, partition) {
                        Err(()) => break Stop::Refuse(format!("wrong secret for job {job}")),
                        Ok(held) => held,
                    };
                    let Some(held) = held else {
                        // Answered at once, with no task: not something the peer is owed.
                        let not_found = DataResponse::NotFound {
                            channel,
                            reason: format!("{} is not on this TaskManager", describe(&partition)),
                        };
                        let frame = match encode(&not_found) {
                            Ok(frame) => frame,
                            Err(e) => break Stop::Failed(e),
                        };
                        if out.send(Outgoing { frame, held: None }).await.is_err() {
                            break Stop::Closed;
                        }
                        continue;
                    };
                    self.activity.touch();
                    let state = Arc::new(ChannelState {
                        credit: Semaphore::new(credit as usize),
                        ended: AtomicBool::new(false),
                    });
                    channels.insert(
                        channel,
                        OpenChannel {
                            state: Arc::clone(&state),
                            partition,
                        },
                    );
                    by_partition.insert(partition, channel);
                    let stream = ChannelStream {
                        channel,
                        partition,
                        subpartitions,
                        state,
                        budget: Arc::clone(&budget),
                        out: out.clone(),
                        stats: Arc::clone(&self.stats),
                    };
                    // Both given back when the task ends or is aborted.
                    let alive = (
                        Busy::begin(&self.activity),
                        ChannelAlive::new(Arc::clone(&self.stats)),
                    );
                    tasks.spawn(async move {
                        stream.run(held).await;
                        drop(alive);
                        channel
                    });
                }
                DataRequest::Credit { channel, credit } => {
                    let Some(open) = channels.get(&channel) else {
                        // Credit for no open channel does nothing, and keeps nothing open.
                        continue;
                    };
                    if open.state.ended.load(Ordering::Acquire) || credit == 0 {
                        continue;
                    }
                    let room =
                        (MAX_CREDIT as usize).saturating_sub(open.state.credit.available_permits());
                    open.state.credit.add_permits((credit as usize).min(room));
                    self.activity.touch();
                }
                DataRequest::Hello { .. } => break Stop::Refuse("a second hello".into()),
            }
        };
        tasks.abort_all();
        stop
    }

    fn closed_idle(&self, reason: &str) -> Stop {
        self.stats.closed_idle.fetch_add(1, Ordering::Relaxed);
        Stop::Refuse(reason.to_owned())
    }
}

/// A request's kind, for a refusal (never its secret).
fn kind(request: &DataRequest) -> &'static str {
    match request {
        DataRequest::Hello { .. } => "Hello",
        DataRequest::Request { .. } => "Request",
        DataRequest::Credit { .. } => "Credit",
    }
}

fn describe(p: &ResultPartitionId) -> String {
    format!(
        "partition {} of result {} (attempt {})",
        p.partition, p.result, p.producer.attempt
    )
}

/// One channel: a partition's subpartitions streamed under credit and the connection's byte
/// budget.
struct ChannelStream {
    channel: u32,
    partition: ResultPartitionId,
    subpartitions: (u32, u32),
    state: Arc<ChannelState>,
    budget: Arc<Semaphore>,
    out: mpsc::Sender<Outgoing>,
    stats: Arc<DataServerStats>,
}

impl ChannelStream {
    /// Waits for one credit; false when the connection is gone.
    async fn credit(&self) -> bool {
        match self.state.credit.acquire().await {
            Ok(permit) => {
                permit.forget();
                true
            }
            Err(_) => false,
        }
    }

    /// Waits for `bytes` of the connection's budget; `None` when the connection is gone.
    async fn reserve(&self, bytes: usize) -> Option<HeldBytes> {
        let permits = u32::try_from(bytes.clamp(1, MAX_BUFFER_BYTES)).unwrap_or(1);
        let permit = Arc::clone(&self.budget)
            .acquire_many_owned(permits)
            .await
            .ok()?;
        let bytes = u64::from(permits);
        DataServerStats::add(
            &self.stats.buffered_bytes,
            &self.stats.peak_buffered_bytes,
            bytes,
        );
        Some(HeldBytes {
            _permit: permit,
            bytes,
            stats: Arc::clone(&self.stats),
        })
    }

    async fn send_buffer(&self, data: Bytes, held: HeldBytes) -> bool {
        // A buffer's body: its bytes plus a few of framing (tag, channel, bin header).
        let capacity = data.len() + 32;
        let response = DataResponse::Buffer {
            channel: self.channel,
            data,
        };
        let frame = match encode_with_capacity(&response, capacity) {
            Ok(frame) => frame,
            Err(e) => {
                tracing::error!("data response not sent: {e}");
                return false;
            }
        };
        self.out
            .send(Outgoing {
                frame,
                held: Some(held),
            })
            .await
            .is_ok()
    }

    /// Streams the channel and queues its last frame (after marking it ended).
    async fn run(self, partition: Partition) {
        let last = match self.stream(partition).await {
            Some(last) => last,
            None => return,
        };
        self.state.ended.store(true, Ordering::Release);
        match encode(&last) {
            Ok(frame) => {
                let _ = self.out.send(Outgoing { frame, held: None }).await;
            }
            Err(e) => tracing::error!("data response not sent: {e}"),
        }
    }

    /// The channel's buffers; returns its last frame (`End`, `NotFound`), or `None` when the
    /// connection is gone.
    async fn stream(&self, partition: Partition) -> Option<DataResponse> {
        let (first, last) = self.subpartitions;
        let channel = self.channel;
        let not_found = |reason: String| Some(DataResponse::NotFound { channel, reason });
        match partition {
            Partition::Blocking(path) => {
                // Reads come from the page cache, 32 KiB at a time: short enough for a worker.
                let file = match PartitionFile::open(&path) {
                    Ok(file) => file,
                    Err(e) => return not_found(e.to_string()),
                };
                let Some(entries) = file.buffers(first..=last) else {
                    return not_found(format!(
                        "subpartitions {first}..={last} are not in {} of {}",
                        path.display(),
                        file.subpartitions()
                    ));
                };
                for entry in entries {
                    if !self.credit().await {
                        return None;
                    }
                    let held = self.reserve(entry.len as usize).await?;
                    let data = match file.read(entry) {
                        Ok(data) => Bytes::from(data),
                        Err(e) => return not_found(e.to_string()),
                    };
                    if !self.send_buffer(data, held).await {
                        return None;
                    }
                }
                Some(DataResponse::End { channel })
            }
            Partition::Pipelined(pipelined) => {
                for s in first..=last {
                    let Some(mut queue) = pipelined.take(s) else {
                        return not_found(format!(
                            "pipelined subpartition {s} of {} is gone or already read",
                            describe(&self.partition)
                        ));
                    };
                    loop {
                        if !self.credit().await {
                            return None;
                        }
                        // No budget is held while waiting for the producer: channels waiting on
                        // producers that wait on other connections' channels could otherwise
                        // hold it all. The buffer taken is the producer's, within its bound.
                        match queue.recv().await {
                            Some(PipelinedItem::Buffer(data)) => {
                                pipelined.dequeued(data.len() as u64);
                                let held = self.reserve(data.len()).await?;
                                if !self.send_buffer(data, held).await {
                                    return None;
                                }
                            }
                            Some(PipelinedItem::End) => {
                                // The credit taken for it was not used.
                                self.state.credit.add_permits(1);
                                break;
                            }
                            None => {
                                return not_found("its producer failed or was cancelled".into());
                            }
                        }
                    }
                }
                Some(DataResponse::End { channel })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;
    use crate::secret::Secret;
    use crate::shuffle::input::{spawn_readers, InputChannel, InputEvent, InputSettings};
    use crate::shuffle::partition_file::PartitionFileWriter;
    use crate::shuffle::partitions::tests::partition;
    use crate::shuffle::quota::DiskQuota;
    use conflux_blob_api::JobId;

    const JOB: JobId = JobId([3; 16]);
    const SECRET: Secret = Secret([7; 16]);

    /// A manager holding partition 0 of [`JOB`]: 2 subpartitions, three buffers in subpartition
    /// 1, one in subpartition 0.
    fn manager(dir: &std::path::Path) -> (Arc<ResultPartitionManager>, PathBuf) {
        let manager = Arc::new(ResultPartitionManager::new(
            dir,
            Arc::new(DiskQuota::new(None)),
        ));
        manager.job_started(JOB, SECRET);
        let path = manager.blocking_path(JOB, partition(0)).unwrap();
        let quota = Arc::clone(manager.quota());
        let mut writer = PartitionFileWriter::create(path.clone(), 2, quota).unwrap();
        for b in [b"one".as_slice(), b"two", b"three"] {
            writer.append(1, b).unwrap();
        }
        writer.append(0, b"other").unwrap();
        let size = writer.finish().unwrap();
        manager
            .register_blocking(JOB, partition(0), path.clone(), size)
            .expect("registered");
        (manager, path)
    }

    /// Adds partition `p` of [`JOB`]: one subpartition of `buffers` full buffers.
    fn add_big_partition(manager: &ResultPartitionManager, p: u32, buffers: usize) {
        let path = manager.blocking_path(JOB, partition(p)).unwrap();
        let quota = Arc::clone(manager.quota());
        let mut writer = PartitionFileWriter::create(path.clone(), 1, quota).unwrap();
        let buffer = vec![b'x'; MAX_BUFFER_BYTES];
        for _ in 0..buffers {
            writer.append(0, &buffer).unwrap();
        }
        let size = writer.finish().unwrap();
        manager
            .register_blocking(JOB, partition(p), path, size)
            .expect("registered");
    }

    fn limits(max_connections: usize, idle_ms: u64) -> DataServerLimits {
        DataServerLimits {
            max_connections,
            handshake_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_millis(idle_ms),
            token: None,
        }
    }

    async fn serve(manager: Arc<ResultPartitionManager>) -> DataServer {
        serve_with(manager, limits(4, 5_000)).await
    }

    async fn serve_with(
        manager: Arc<ResultPartitionManager>,
        limits: DataServerLimits,
    ) -> DataServer {
        start(IpAddr::from([127, 0, 0, 1]), manager, limits)
            .await
            .unwrap()
    }

    fn settings(secret: Secret) -> Arc<InputSettings> {
        Arc::new(InputSettings {
            job: JOB,
            secret,
            token: None,
            credit: 1,
            attempts: 2,
            backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(10),
            retries: Arc::default(),
            welcome_timeout: Duration::from_millis(500),
        })
    }

    /// Reads `channels` to their end: the buffers, or the first failure.
    async fn read(
        channels: Vec<InputChannel>,
    ) -> Result<Vec<Vec<u8>>, (ResultPartitionId, String)> {
        read_with(channels, settings(SECRET)).await
    }

    async fn read_with(
        channels: Vec<InputChannel>,
        settings: Arc<InputSettings>,
    ) -> Result<Vec<Vec<u8>>, (ResultPartitionId, String)> {
        let n = channels.len();
        let (tx, mut rx) = mpsc::channel(8);
        let _readers = spawn_readers(channels, settings, tx);
        let (mut buffers, mut ended) = (Vec::new(), 0);
        while ended < n {
            match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
                Ok(Some(InputEvent::Buffer { data, credit })) => {
                    buffers.push(data.to_vec());
                    credit.give_back();
                }
                Ok(Some(InputEvent::ChannelEnded)) => ended += 1,
                Ok(Some(InputEvent::Failed { partition, reason })) => {
                    return Err((partition, reason))
                }
                other => panic!("the readers stopped: {other:?}"),
            }
        }
        Ok(buffers)
    }

    fn channel(address: SocketAddr, p: u32, subpartition: u32) -> InputChannel {
        InputChannel {
            partition: partition(p),
            address,
            subpartitions: (subpartition, subpartition),
            pipelined: false,
        }
    }

    /// A raw frame: 4-byte big-endian length, then the MessagePack body of `message`.
    fn frame(message: &DataRequest) -> Vec<u8> {
        let body = encode(message).unwrap();
        let mut out = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
        out.extend_from_slice(&body);
        out
    }

    fn hello(secret: Secret) -> DataRequest {
        DataRequest::Hello {
            version: DATA_PROTOCOL_VERSION,
            token: None,
            job: JOB,
            secret,
        }
    }

    fn request(channel: u32, p: u32, credit: u32) -> DataRequest {
        DataRequest::Request {
            channel,
            partition: partition(p),
            subpartitions: (0, 0),
            credit,
        }
    }

    /// Reads one response (at most 5 s); `None` at the end of the connection.
    async fn response(stream: &mut TcpStream) -> Option<DataResponse> {
        tokio::time::timeout(Duration::from_secs(5), async {
            let mut len = [0u8; 4];
            stream.read_exact(&mut len).await.ok()?;
            let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
            stream.read_exact(&mut body).await.ok()?;
            Some(decode::<DataResponse>(&body, "server", 0, "response").expect("a response"))
        })
        .await
        .expect("a response or the end within 5 s")
    }

    /// Responses until the connection ends; returns the refusal's reason.
    async fn refusal(stream: &mut TcpStream) -> String {
        loop {
            match response(stream).await {
                Some(DataResponse::Refused { reason }) => return reason,
                Some(_) => {}
                None => panic!("closed without a reason"),
            }
        }
    }

    /// Connects and says hello; returns the welcomed connection.
    async fn welcomed(address: SocketAddr) -> TcpStream {
        let mut stream = TcpStream::connect(address).await.expect("connects");
        stream
            .write_all(&frame(&hello(SECRET)))
            .await
            .expect("hello");
        assert_eq!(response(&mut stream).await, Some(DataResponse::Welcome));
        stream
    }

    fn stat(a: &AtomicU64) -> u64 {
        a.load(Ordering::Relaxed)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_subpartition_is_served_in_order_one_credit_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let (manager, _) = manager(dir.path());
        let server = serve(manager).await;
        let buffers = read(vec![channel(server.address, 0, 1)]).await.unwrap();
        assert_eq!(
            buffers,
            [b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]
        );
        let other = read(vec![channel(server.address, 0, 0)]).await.unwrap();
        assert_eq!(other, [b"other".to_vec()]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_damaged_file_is_a_lost_partition() {
        let dir = tempfile::tempdir().unwrap();
        let (manager, path) = manager(dir.path());
        let mut bytes = std::fs::read(&path).unwrap();
        // "two" starts at byte 3.
        bytes[4] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
        let server = serve(manager).await;
        let (lost, reason) = read(vec![channel(server.address, 0, 1)]).await.unwrap_err();
        assert_eq!(lost, partition(0));
        assert!(reason.contains("is damaged at byte 3"), "{reason}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_missing_or_unknown_partition_is_not_found_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let (manager, path) = manager(dir.path());
        std::fs::remove_file(&path).unwrap();
        let server = serve(Arc::clone(&manager)).await;
        let (lost, reason) = read(vec![channel(server.address, 0, 1)]).await.unwrap_err();
        assert_eq!(lost, partition(0));
        assert!(reason.contains("No such file"), "{reason}");
        let (lost, reason) = read(vec![channel(server.address, 5, 0)]).await.unwrap_err();
        assert_eq!(lost, partition(5));
        assert!(
            reason.contains("partition 5 of result 0 (attempt 0) is not on this TaskManager"),
            "{reason}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refused_connection_fails_after_its_retries() {
        // A port nothing listens on: bound, then closed.
        let address = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let (lost, reason) = read(vec![channel(address, 2, 0)]).await.unwrap_err();
        assert_eq!(lost, partition(2));
        assert!(reason.contains("failed 2 times"), "{reason}");
    }

    /// Regression: a consumer whose producer's data server accepted its connection but never
    /// served it (saturated, or not a data server) waited forever. It now fails naming the
    /// partition after its attempts, each bounded by the welcome timeout.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_consumer_that_is_never_welcomed_fails_naming_the_partition() {
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = silent.local_addr().unwrap();
        let hold = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = silent.accept().await {
                held.push(stream);
            }
        });
        let started = std::time::Instant::now();
        let (lost, reason) = read(vec![channel(address, 4, 0)]).await.unwrap_err();
        assert_eq!(lost, partition(4));
        assert!(
            reason.contains("failed 2 times: no welcome within 500 ms"),
            "{reason}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        hold.abort();
    }

    /// Regression: a wrong version, token or secret closed the connection with no reason. Each
    /// is refused with a reason frame, and the consumer reports it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn refusals_say_why_and_the_consumer_reports_them() {
        let dir = tempfile::tempdir().unwrap();
        let (manager, _) = manager(dir.path());
        let mut with_token = limits(8, 5_000);
        with_token.token = Some("s3cret".into());
        let server = serve_with(Arc::clone(&manager), with_token).await;
        let cases = [
            (
                DataRequest::Hello {
                    version: 99,
                    token: Some("s3cret".into()),
                    job: JOB,
                    secret: SECRET,
                },
                "data protocol version 99, this TaskManager speaks 2",
            ),
            (hello(SECRET), "this TaskManager requires a token"),
            (
                DataRequest::Hello {
                    version: DATA_PROTOCOL_VERSION,
                    token: Some("guess".into()),
                    job: JOB,
                    secret: SECRET,
                },
                "wrong token",
            ),
            (
                DataRequest::Hello {
                    version: DATA_PROTOCOL_VERSION,
                    token: Some("s3cret".into()),
                    job: JOB,
                    secret: Secret([8; 16]),
                },
                "wrong secret for job",
            ),
            (request(0, 0, 1), "expected a hello, got Request"),
        ];
        for (hello, expected) in cases {
            let mut stream = TcpStream::connect(server.address).await.unwrap();
            stream.write_all(&frame(&hello)).await.unwrap();
            let reason = refusal(&mut stream).await;
            assert!(reason.contains(expected), "{reason} vs {expected}");
            assert_eq!(response(&mut stream).await, None, "closed after the reason");
        }
        // Garbage instead of a hello.
        let mut stream = TcpStream::connect(server.address).await.unwrap();
        stream.write_all(&[0, 0, 0, 1, 0xc1]).await.unwrap();
        let reason = refusal(&mut stream).await;
        assert!(
            reason.contains("expected a hello of data protocol version 2"),
            "{reason}"
        );

        // The consumer's side: the reason, naming the partition.
        let server = serve(manager).await;
        let (lost, reason) = read_with(
            vec![channel(server.address, 0, 1)],
            settings(Secret([8; 16])),
        )
        .await
        .unwrap_err();
        assert_eq!(lost, partition(0));
        assert!(
            reason.contains(&format!(
                "refused by {}: wrong secret for job",
                server.address
            )),
            "{reason}"
        );
    }

    /// Regression: resending one channel's request spawned a task per request (2 M requests:
    /// 2.4 GiB). A channel number or partition already open is refused with a reason, and a
    /// flood of requests for partitions not held spawns nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_flood_of_requests_holds_one_channel_at_most() {
        let dir = tempfile::tempdir().unwrap();
        let (manager, _) = manager(dir.path());
        add_big_partition(&manager, 1, 8);
        let server = serve(manager).await;
        let stats = Arc::clone(&server.stats);

        // The same channel, 100,000 times, with credit 1 (the first holds one buffer and waits).
        let mut stream = welcomed(server.address).await;
        let flood: Vec<u8> = (0..100_000)
            .flat_map(|_| frame(&request(0, 1, 1)))
            .collect();
        let _ = stream.write_all(&flood).await;
        let reason = refusal(&mut stream).await;
        assert_eq!(reason, "channel 0 is already open");
        // Another channel number for the same partition.
        let mut stream = welcomed(server.address).await;
        let flood: Vec<u8> = (0..10_000u32)
            .flat_map(|c| frame(&request(c, 1, 1)))
            .collect();
        let _ = stream.write_all(&flood).await;
        let reason = refusal(&mut stream).await;
        assert_eq!(
            reason,
            "partition 1 of result 0 (attempt 0) is already open on channel 0"
        );
        assert!(stat(&stats.peak_channels) <= 2, "{stats:?}");

        // Partitions not held: answered, no task.
        let mut stream = welcomed(server.address).await;
        let flood: Vec<u8> = (0..10_000u32)
            .flat_map(|c| frame(&request(c, 100 + c, 1)))
            .collect();
        let writer = tokio::spawn(async move {
            let _ = stream.write_all(&flood).await;
            stream
        });
        let mut stream = writer.await.unwrap();
        for _ in 0..10_000 {
            assert!(matches!(
                response(&mut stream).await,
                Some(DataResponse::NotFound { .. })
            ));
        }
        assert!(stat(&stats.peak_channels) <= 2, "{stats:?}");
        drop(stream);
        wait_for("every connection closed", || stat(&stats.connections) == 0).await;
        assert_eq!(stat(&stats.channels), 0);
    }

    /// Regression: with credit u32::MAX on a real blocking partition, every channel read its
    /// buffers while the consumer read nothing (40,000 requests: +970 MiB). Credit is refused
    /// outside 1..=1024, and whatever the credit, a connection's channels hold at most its byte
    /// budget of buffers not yet written; everything goes when the consumer leaves.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn credit_never_buffers_more_than_the_connection_budget() {
        let dir = tempfile::tempdir().unwrap();
        let (manager, _) = manager(dir.path());
        // 8 partitions of 48 full buffers: 12 MiB in all, six times the budget.
        for p in 1..=8 {
            add_big_partition(&manager, p, 48);
        }
        let server = serve(manager).await;
        let stats = Arc::clone(&server.stats);

        let mut stream = welcomed(server.address).await;
        stream
            .write_all(&frame(&request(0, 1, u32::MAX)))
            .await
            .unwrap();
        assert_eq!(
            refusal(&mut stream).await,
            "channel 0: credit 4294967295 is not within 1..=1024"
        );
        let mut stream = welcomed(server.address).await;
        stream.write_all(&frame(&request(0, 1, 0))).await.unwrap();
        assert_eq!(
            refusal(&mut stream).await,
            "channel 0: credit 0 is not within 1..=1024"
        );

        // Two consumers that never read, each with every partition at the most credit, and
        // credit given again and again (it never adds up past the most).
        let mut stalled = Vec::new();
        for _ in 0..2 {
            let mut stream = welcomed(server.address).await;
            let mut frames: Vec<u8> = (1..=8u32)
                .flat_map(|p| frame(&request(p, p, MAX_CREDIT)))
                .collect();
            for _ in 0..1_000 {
                frames.extend((1..=8u32).flat_map(|c| {
                    frame(&DataRequest::Credit {
                        channel: c,
                        credit: u32::MAX,
                    })
                }));
            }
            stream.write_all(&frames).await.unwrap();
            stalled.push(stream);
        }
        // The channels read until the sockets and the budgets are full.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let budget = MAX_BUFFERED_BYTES_PER_CONNECTION as u64;
        assert!(stat(&stats.peak_buffered_bytes) <= 2 * budget, "{stats:?}");
        assert!(stat(&stats.buffered_bytes) > 0, "{stats:?}");
        // (Channels whose partition fitted in the sockets' buffers have ended.)
        assert!(stat(&stats.peak_channels) <= 16, "{stats:?}");
        drop(stalled);
        // A connection's count goes when it closes, its channels' as their tasks are reaped
        // just after: all three reach zero, the last a moment after the first.
        wait_for("every connection, channel and buffer gone", || {
            stat(&stats.connections) == 0
                && stat(&stats.channels) == 0
                && stat(&stats.buffered_bytes) == 0
        })
        .await;
    }

    /// Regression: any frame reset the idle timer, so connections sending credit for unknown
    /// channels held the connection cap forever and consumers waited behind them. Such frames
    /// keep nothing open, and at the cap the connection idle the longest makes room.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn useless_connections_are_closed_and_make_room() {
        let dir = tempfile::tempdir().unwrap();
        let (manager, _) = manager(dir.path());
        let server = serve_with(manager, limits(4, 400)).await;
        let stats = Arc::clone(&server.stats);

        // Credit for a channel that is not open, every 50 ms: closed after the idle timeout.
        let mut stream = welcomed(server.address).await;
        let started = std::time::Instant::now();
        let reason = loop {
            let credit = frame(&DataRequest::Credit {
                channel: 7,
                credit: 1,
            });
            let _ = stream.write_all(&credit).await;
            match tokio::time::timeout(Duration::from_millis(50), response(&mut stream)).await {
                Ok(Some(DataResponse::Refused { reason })) => break reason,
                Ok(other) => panic!("{other:?}"),
                Err(_) => assert!(started.elapsed() < Duration::from_secs(3), "still open"),
            }
        };
        assert_eq!(reason, "no channel open and nothing useful for 400 ms");

        // Four useless connections hold the cap; a consumer still gets its data, at once.
        let mut useless = Vec::new();
        for _ in 0..4 {
            useless.push(welcomed(server.address).await);
        }
        let started = std::time::Instant::now();
        let buffers = read(vec![channel(server.address, 0, 1)]).await.unwrap();
        assert_eq!(buffers.len(), 3);
        assert!(
            started.elapsed() < Duration::from_millis(400),
            "{:?}",
            started.elapsed()
        );
        assert!(stat(&stats.closed_idle) >= 2, "{stats:?}");
        // The oldest useless connection was the one closed.
        assert_eq!(
            refusal(&mut useless[0]).await,
            "closed to make room for another connection"
        );
    }

    async fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !condition() {
            assert!(
                std::time::Instant::now() < deadline,
                "{what}: not within 5 s"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn released_partitions_and_ended_jobs_lose_their_files() {
        let dir = tempfile::tempdir().unwrap();
        let (held, path) = manager(dir.path());
        assert!(held.quota().used() > 0);
        let released = held.release(
            JOB,
            &[crate::protocol::PartitionRef {
                result: 0,
                partition: 0,
            }],
        );
        assert_eq!(released, 1);
        assert!(!path.exists());
        assert_eq!(held.quota().used(), 0);
        // Files of a job the JobManager does not recover are deleted at registration: those
        // left by an earlier life of this TaskManager ...
        let (earlier, path) = manager(dir.path());
        drop(earlier);
        let fresh = ResultPartitionManager::new(dir.path(), Arc::new(DiskQuota::new(None)));
        assert_eq!(fresh.release_jobs_except(&[JOB]), 0);
        assert!(path.exists());
        assert_eq!(fresh.release_jobs_except(&[JobId([9; 16])]), 1);
        assert!(!path.exists());
    }

    /// Regression: partitions of a job still in the partition table were kept when the
    /// TaskManager registered with a new JobManager (the old one killed mid-job), and served
    /// through later jobs. Registration releases every job the JobManager does not recover:
    /// the files go, nothing is served, and the job's secret is forgotten.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn registration_releases_held_partitions_of_jobs_not_recovered() {
        let dir = tempfile::tempdir().unwrap();
        let (manager, path) = manager(dir.path());
        let server = serve(Arc::clone(&manager)).await;
        assert_eq!(
            read(vec![channel(server.address, 0, 0)])
                .await
                .unwrap()
                .len(),
            1
        );
        assert_eq!(manager.release_jobs_except(&[]), 1);
        assert!(!path.exists());
        assert_eq!(manager.job_secret(JOB), None);
        let (lost, reason) = read(vec![channel(server.address, 0, 0)]).await.unwrap_err();
        assert_eq!(lost, partition(0));
        assert!(reason.contains("is not on this TaskManager"), "{reason}");
        assert_eq!(manager.quota().used(), 0);
        // A job that runs on (the same JobManager deploys to it again) may write again.
        manager.job_started(JOB, SECRET);
        assert!(manager.blocking_path(JOB, partition(1)).is_ok());
    }
}
