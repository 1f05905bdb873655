//! Helpers: an in-process JobManager and TaskManagers on loopback, jobs, raw frames, deadlines.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use conflux_graph::{generate, ResultPartitionType};
use conflux_runtime::protocol::{JobOptions, JobSubmission, HANDSHAKE_MAGIC, PROTOCOL_VERSION};
use conflux_runtime::{
    HeartbeatConfig, JobManager, JobManagerConfig, JobReport, TaskManager, TaskManagerConfig,
    TaskManagerError,
};
use conflux_scheduler::RestartStrategy;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A JobManager on 127.0.0.1:0 with blobs under `dir`, fast heartbeats (100 ms, lost after
/// 1 s) and fast restarts (50 ms), so that failures are seen and recovered within a test.
pub(crate) fn jm_config(dir: &Path) -> JobManagerConfig {
    let mut config =
        JobManagerConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)), dir.join("blobs"));
    config.heartbeat = HeartbeatConfig {
        interval_ms: 100,
        timeout_ms: 1_000,
    };
    config.scheduler.restart = RestartStrategy::FixedDelay {
        attempts: 20,
        delay_ms: 50,
    };
    config
}

/// Starts a JobManager.
pub(crate) async fn start_jm(config: JobManagerConfig) -> JobManager {
    JobManager::start(config)
        .await
        .expect("the JobManager starts")
}

/// A TaskManager of `jobmanager` with `slots` slots working in `dir`, retrying registration
/// every 50 ms.
pub(crate) fn tm_config(jobmanager: &str, slots: u32, dir: &Path) -> TaskManagerConfig {
    let mut config = TaskManagerConfig::new(jobmanager, slots, dir);
    config.retry_interval_ms = 50;
    config.connect_timeout_ms = 2_000;
    config
}

/// An in-process TaskManager on the test's runtime. Dropping it stops it and aborts its task.
pub(crate) struct Tm {
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), TaskManagerError>>>,
}

impl Tm {
    /// Spawns `TaskManager::run(config, <until stopped>)`.
    pub(crate) fn spawn(config: TaskManagerConfig) -> Tm {
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(TaskManager::run(config, async move {
            let _ = stopped.await;
        }));
        Tm {
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Resolves its shutdown future and waits (at most 5 s) for `run` to return.
    pub(crate) async fn stop(&mut self) -> Result<(), TaskManagerError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let task = self.task.take().expect("not stopped yet");
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("TaskManager::run returns within 5 s of its shutdown")
            .expect("TaskManager::run does not panic")
    }
}

impl Drop for Tm {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Polls `condition` every 10 ms; panics naming `what` when it is still false after `limit`.
pub(crate) async fn wait_until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "{what}: not within {} ms",
            limit.as_millis()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until exactly `n` TaskManagers are registered (at most 10 s).
pub(crate) async fn wait_for_task_managers(jm: &JobManager, n: usize) {
    wait_until(
        &format!("{n} TaskManagers registered"),
        Duration::from_secs(10),
        || jm.task_managers().len() == n,
    )
    .await;
}

/// `future`, or a panic naming `what` after `limit`.
pub(crate) async fn within<T>(what: &str, limit: Duration, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, future).await {
        Ok(value) => value,
        Err(_) => panic!("{what}: not within {} ms", limit.as_millis()),
    }
}

/// The generated word count (`2 x parallelism` tasks) as job graph JSON.
pub(crate) fn word_count(parallelism: u32, partition_type: ResultPartitionType) -> Bytes {
    Bytes::from(generate::word_count(parallelism, partition_type).to_json_pretty())
}

/// The generated word count's name.
pub(crate) fn word_count_name(parallelism: u32, partition_type: ResultPartitionType) -> String {
    generate::word_count(parallelism, partition_type).name
}

/// A submission of `job` whose tasks last `duration_ms` (inclusive range).
pub(crate) fn submission(job: Bytes, duration_ms: (u64, u64)) -> JobSubmission {
    JobSubmission {
        job,
        source: "test.json".into(),
        options: JobOptions {
            seed: 7,
            task_duration_ms: duration_ms,
            ..JobOptions::default()
        },
    }
}

/// Submits `submission` and waits (at most `limit`) for its report.
pub(crate) async fn run_job(
    jm: &JobManager,
    submission: JobSubmission,
    limit: Duration,
) -> JobReport {
    let job = jm.submit(submission).await.expect("the job is accepted");
    within("the job's end", limit, jm.wait(job))
        .await
        .expect("the job has a report")
}

/// A handshake frame's body: the fixed prefix with `version`, then `rest`.
pub(crate) fn prefixed(version: u32, rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + rest.len());
    out.extend_from_slice(&HANDSHAKE_MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(rest);
    out
}

/// A raw frame: 4-byte big-endian length, then `body`.
pub(crate) fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = BytesMut::with_capacity(4 + body.len());
    out.put_u32(u32::try_from(body.len()).expect("small frame"));
    out.put_slice(body);
    out.to_vec()
}

/// The MessagePack body of a protocol message.
pub(crate) fn msgpack<T: serde::Serialize>(message: &T) -> Vec<u8> {
    conflux_runtime::connection::encode(message)
        .expect("the message encodes")
        .to_vec()
}

/// A handshake frame of this protocol version carrying `message`.
pub(crate) fn hello_frame<T: serde::Serialize>(message: &T) -> Vec<u8> {
    frame(&prefixed(PROTOCOL_VERSION, &msgpack(message)))
}

/// Reads one raw frame (at most 5 s); `None` when the peer closed the connection first.
pub(crate) async fn read_frame(stream: &mut TcpStream) -> Option<Vec<u8>> {
    within(
        "a frame or the end of the connection",
        Duration::from_secs(5),
        async {
            let mut len = [0u8; 4];
            if stream.read_exact(&mut len).await.is_err() {
                return None;
            }
            let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
            stream.read_exact(&mut body).await.ok()?;
            Some(body)
        },
    )
    .await
}

/// Reads and discards until the peer closes the connection (EOF or reset); panics when it is
/// still open after `limit`. Returns how long that took.
pub(crate) async fn until_closed(stream: &mut TcpStream, limit: Duration) -> Duration {
    let started = Instant::now();
    within("the JobManager closes the connection", limit, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    started.elapsed()
}

/// Connects to `address` and writes `bytes` (write errors ignored: the peer may have closed).
pub(crate) async fn connect_and_send(address: SocketAddr, bytes: &[u8]) -> TcpStream {
    let mut stream = within(
        "connect",
        Duration::from_secs(5),
        TcpStream::connect(address),
    )
    .await
    .expect("connects");
    let _ = stream.write_all(bytes).await;
    let _ = stream.flush().await;
    stream
}

/// A word count job with data (`wordcount-source` -> `wordcount-count`, all-to-all, keyed by
/// word), and the counts it must write.
#[derive(Clone, Copy)]
pub(crate) struct WordCount {
    pub(crate) sources: u32,
    /// The count vertex's parallelism; `None`: undecided (`-1`).
    pub(crate) counters: Option<u32>,
    pub(crate) words_per_source: u64,
    pub(crate) vocabulary: u32,
    pub(crate) seed: u64,
    /// `batch` or `streaming`.
    pub(crate) job_type: &'static str,
    /// The edge's result partition type.
    pub(crate) partition_type: &'static str,
}

impl WordCount {
    /// A batch job over a blocking edge.
    pub(crate) fn blocking(
        sources: u32,
        counters: Option<u32>,
        words_per_source: u64,
        vocabulary: u32,
        seed: u64,
    ) -> WordCount {
        WordCount {
            sources,
            counters,
            words_per_source,
            vocabulary,
            seed,
            job_type: "batch",
            partition_type: "blocking",
        }
    }

    /// Its job graph JSON.
    pub(crate) fn job(&self) -> Bytes {
        let WordCount {
            sources,
            words_per_source,
            vocabulary,
            seed,
            job_type,
            partition_type,
            ..
        } = *self;
        let counters = self.counters.map_or(-1, i64::from);
        Bytes::from(format!(
            r#"{{"name":"word count","job_type":"{job_type}","vertices":[
            {{"id":"source","parallelism":{sources},"invokable":"wordcount-source",
              "config":{{"words-per-source":"{words_per_source}","vocabulary":"{vocabulary}","seed":"{seed}"}}}},
            {{"id":"count","parallelism":{counters},"invokable":"wordcount-count"}}],
          "edges":[{{"source":"source","target":"count","distribution_pattern":"all_to_all",
              "result_partition_type":"{partition_type}","ship_strategy":"HASH[word]"}}]}}"#
        ))
    }

    /// Every word the sources emit.
    pub(crate) fn words(&self) -> u64 {
        u64::from(self.sources) * self.words_per_source
    }

    /// What its sinks must hold, with Flink's key groups for a count vertex of a fixed
    /// parallelism at most 128 (128 key groups).
    ///
    /// # Panics
    /// For an undecided count vertex (its ranges come from the run's report).
    pub(crate) fn expected(&self) -> conflux_operators::WordCountJob {
        conflux_operators::WordCountJob {
            config: conflux_operators::WordCountConfig {
                seed: self.seed,
                vocabulary: self.vocabulary,
                words_per_source: self.words_per_source,
            },
            sources: self.sources,
            counters: self.counters.expect("a fixed count parallelism"),
            max_parallelism: 128,
            key_group_ranges: None,
        }
    }
}
