//! The TaskManager's data server (Flink's `NettyServer` with its `PartitionRequestServerHandler`):
//! the address its produced partitions' ShuffleDescriptors carry. Consumers open one
//! connection per consumer task and ask for channels on it ([`DataRequest`]); each channel
//! streams its subpartitions' buffers as the consumer's credit allows.
//!
//! Bounds: at most `max_connections` connections (more wait in the kernel's backlog), frames of
//! [`MAX_DATA_FRAME_BYTES`], a hello within the handshake timeout, at most
//! [`MAX_CHANNELS_PER_CONNECTION`] channels per connection, and a connection idle (no channel
//! open, no frame) for `idle_timeout` is closed. A bad frame closes its connection only.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use conflux_blob_api::JobId;
use conflux_deploy::ResultPartitionId;
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};

use crate::connection::{decode, encode_with_capacity, framed, next_frame, RpcError};
use crate::shuffle::partition_file::PartitionFile;
use crate::shuffle::partitions::{Partition, PipelinedItem, ResultPartitionManager};
use crate::shuffle::protocol::{
    DataRequest, DataResponse, DATA_PROTOCOL_VERSION, MAX_DATA_FRAME_BYTES,
};

/// Channels one connection may open.
pub(crate) const MAX_CHANNELS_PER_CONNECTION: usize = 1 << 16;

/// The limits of a data server.
#[derive(Clone, Debug)]
pub(crate) struct DataServerLimits {
    pub(crate) max_connections: usize,
    pub(crate) handshake_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) token: Option<String>,
}

/// The running server; dropping it stops it.
pub(crate) struct DataServer {
    pub(crate) address: SocketAddr,
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
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let limits = Arc::new(limits);
    let task = tokio::spawn(async move {
        loop {
            let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
                return;
            };
            match listener.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let partitions = Arc::clone(&partitions);
                    let limits = Arc::clone(&limits);
                    tokio::spawn(async move {
                        if let Err(e) = serve(stream, peer, partitions, &limits).await {
                            tracing::debug!(%peer, "data connection closed: {e}");
                        }
                        drop(permit);
                    });
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    });
    Ok(DataServer { address, task })
}

async fn serve(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    partitions: Arc<ResultPartitionManager>,
    limits: &DataServerLimits,
) -> Result<(), RpcError> {
    let peer = peer.to_string();
    let refused = |reason: String| RpcError::Refused {
        peer: peer.clone(),
        reason,
    };
    let (mut sink, mut frames) = framed(stream, MAX_DATA_FRAME_BYTES).split();
    let hello = next_frame(
        &mut frames,
        &peer,
        0,
        "data hello",
        limits.handshake_timeout,
    )
    .await?;
    match decode::<DataRequest>(&hello, &peer, 0, "DataRequest::Hello")? {
        DataRequest::Hello { version, token } if version == DATA_PROTOCOL_VERSION => {
            if token != limits.token {
                return Err(refused("wrong or missing token".into()));
            }
        }
        DataRequest::Hello { version, .. } => {
            return Err(refused(format!(
                "data protocol version {version}, this TaskManager speaks {DATA_PROTOCOL_VERSION}"
            )))
        }
        other => {
            return Err(refused(format!("expected a hello, got {other:?}")));
        }
    }
    // Channel tasks send through one writer; its queue is bounded by the credit they hold.
    let (out, mut outgoing) = mpsc::channel::<Bytes>(256);
    let writer = tokio::spawn(async move {
        while let Some(frame) = outgoing.recv().await {
            if sink.send(frame).await.is_err() {
                return;
            }
        }
    });
    let mut credits: HashMap<u32, Arc<Semaphore>> = HashMap::new();
    let mut tasks = tokio::task::JoinSet::new();
    let mut frame = 0u64;
    let result = loop {
        frame += 1;
        // Finished channels give their slot back.
        while tasks.try_join_next().is_some() {}
        let timeout = if tasks.is_empty() {
            limits.idle_timeout
        } else {
            Duration::from_secs(24 * 3600)
        };
        let body = match next_frame(&mut frames, &peer, frame, "data request", timeout).await {
            Ok(body) => body,
            Err(RpcError::Closed(_)) => break Ok(()),
            Err(e) => break Err(e),
        };
        match decode::<DataRequest>(&body, &peer, frame, "DataRequest") {
            Ok(DataRequest::Request {
                channel,
                job,
                partition,
                subpartitions,
                credit,
            }) => {
                if credits.len() >= MAX_CHANNELS_PER_CONNECTION {
                    break Err(refused(format!(
                        "more than {MAX_CHANNELS_PER_CONNECTION} channels on one connection"
                    )));
                }
                let permits = Arc::new(Semaphore::new(credit as usize));
                credits.insert(channel, Arc::clone(&permits));
                let stream = ChannelStream {
                    channel,
                    job,
                    partition,
                    subpartitions,
                    permits,
                    out: out.clone(),
                };
                tasks.spawn(stream.run(Arc::clone(&partitions)));
            }
            Ok(DataRequest::Credit { channel, credit }) => {
                if let Some(permits) = credits.get(&channel) {
                    permits.add_permits((credit as usize).min(Semaphore::MAX_PERMITS / 2));
                }
            }
            Ok(DataRequest::Hello { .. }) => {
                break Err(refused("a second hello".into()));
            }
            Err(e) => break Err(e),
        }
    };
    tasks.abort_all();
    drop(out);
    let _ = writer.await;
    result
}

/// One channel: a partition's subpartitions streamed under credit.
struct ChannelStream {
    channel: u32,
    job: JobId,
    partition: ResultPartitionId,
    subpartitions: (u32, u32),
    permits: Arc<Semaphore>,
    out: mpsc::Sender<Bytes>,
}

impl ChannelStream {
    async fn send(&self, response: &DataResponse) -> bool {
        // A buffer's body: its bytes plus a few of framing (tag, channel, bin header).
        let capacity = match response {
            DataResponse::Buffer { data, .. } => data.len() + 32,
            _ => 0,
        };
        match encode_with_capacity(response, capacity) {
            Ok(frame) => self.out.send(frame).await.is_ok(),
            Err(e) => {
                tracing::error!("data response not sent: {e}");
                false
            }
        }
    }

    /// Waits for one credit; false when the connection is gone.
    async fn credit(&self) -> bool {
        match self.permits.acquire().await {
            Ok(p) => {
                p.forget();
                true
            }
            Err(_) => false,
        }
    }

    async fn not_found(&self, reason: String) {
        let channel = self.channel;
        self.send(&DataResponse::NotFound { channel, reason }).await;
    }

    async fn run(self, partitions: Arc<ResultPartitionManager>) {
        let (first, last) = self.subpartitions;
        let channel = self.channel;
        match partitions.get(self.job, self.partition) {
            None => {
                self.not_found(format!(
                    "partition {} of result {} (attempt {}) is not on this TaskManager",
                    self.partition.partition,
                    self.partition.result,
                    self.partition.producer.attempt
                ))
                .await;
            }
            Some(Partition::Blocking(path)) => {
                // Reads come from the page cache, 32 KiB at a time: short enough for a worker.
                let file = match PartitionFile::open(&path) {
                    Ok(file) => file,
                    Err(e) => return self.not_found(e.to_string()).await,
                };
                let Some(entries) = file.buffers(first..=last) else {
                    return self
                        .not_found(format!(
                            "subpartitions {first}..={last} are not in {} of {}",
                            path.display(),
                            file.subpartitions()
                        ))
                        .await;
                };
                for entry in entries {
                    if !self.credit().await {
                        return;
                    }
                    let data = match file.read(entry) {
                        Ok(data) => Bytes::from(data),
                        Err(e) => return self.not_found(e.to_string()).await,
                    };
                    if !self.send(&DataResponse::Buffer { channel, data }).await {
                        return;
                    }
                }
                self.send(&DataResponse::End { channel }).await;
            }
            Some(Partition::Pipelined(pipelined)) => {
                for s in first..=last {
                    let Some(mut queue) = pipelined.take(s) else {
                        return self
                            .not_found(format!(
                                "pipelined subpartition {s} is gone or already read"
                            ))
                            .await;
                    };
                    loop {
                        if !self.credit().await {
                            return;
                        }
                        match queue.recv().await {
                            Some(PipelinedItem::Buffer(data)) => {
                                pipelined.dequeued(data.len() as u64);
                                if !self.send(&DataResponse::Buffer { channel, data }).await {
                                    return;
                                }
                            }
                            Some(PipelinedItem::End) => {
                                // The credit taken for it was not used.
                                self.permits.add_permits(1);
                                break;
                            }
                            None => {
                                return self
                                    .not_found("its producer failed or was cancelled".into())
                                    .await;
                            }
                        }
                    }
                }
                self.send(&DataResponse::End { channel }).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::shuffle::input::{spawn_readers, InputChannel, InputEvent, InputSettings};
    use crate::shuffle::partition_file::PartitionFileWriter;
    use crate::shuffle::partitions::tests::partition;
    use crate::shuffle::quota::DiskQuota;

    const JOB: JobId = JobId([3; 16]);

    /// A manager holding partition 0: 2 subpartitions, three buffers in subpartition 1.
    fn manager(dir: &std::path::Path) -> (Arc<ResultPartitionManager>, PathBuf) {
        let manager = Arc::new(ResultPartitionManager::new(
            dir,
            Arc::new(DiskQuota::new(None)),
        ));
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

    async fn serve(manager: Arc<ResultPartitionManager>) -> DataServer {
        let limits = DataServerLimits {
            max_connections: 4,
            handshake_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(5),
            token: None,
        };
        start(IpAddr::from([127, 0, 0, 1]), manager, limits)
            .await
            .unwrap()
    }

    /// Reads `channels` to their end: the buffers, or the first failure.
    async fn read(
        channels: Vec<InputChannel>,
    ) -> Result<Vec<Vec<u8>>, (ResultPartitionId, String)> {
        let settings = Arc::new(InputSettings {
            job: JOB,
            token: None,
            credit: 1,
            attempts: 2,
            backoff: Duration::from_millis(10),
        });
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
        // Files of a job the JobManager does not run are swept at registration.
        let (earlier, path) = manager(dir.path());
        drop(earlier);
        let fresh = ResultPartitionManager::new(dir.path(), Arc::new(DiskQuota::new(None)));
        assert_eq!(fresh.sweep(&[JOB]), 0);
        assert!(path.exists());
        assert_eq!(fresh.sweep(&[JobId([9; 16])]), 1);
        assert!(!path.exists());
    }
}
