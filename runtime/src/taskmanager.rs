//! The TaskManager (Flink's `TaskExecutor`): registers its slots with a JobManager, answers its
//! heartbeats, runs the tasks it is sent, and registers again when it loses its JobManager.
//!
//! One session per registration: a reader that answers heartbeats at once and starts tasks, and
//! a writer that sends heartbeat answers before queued task states; heartbeats come on a
//! connection of their own, answered on a thread of their own (deployment work cannot delay
//! them). Tasks run on tokio; loading their input gates (blob fetch and decode) runs on one
//! loader thread.

mod commit_lease;
mod data_server;
mod gate_loader;
mod metrics_server;
mod registration_log;
mod session;
mod sync;
mod task;
mod wordcount;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use conflux_blob::{BlobCache, BlobCacheConfig};
use conflux_deploy::decode_tdd;
use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::config::RpcFaults;
use crate::config::TaskManagerConfig;
use crate::connection::{
    connect, decode, encode, next_frame, write_prioritized, FaultInjector, FramedStream, RpcError,
};
use crate::metrics::TaskManagerMetrics;
use crate::protocol::{Hello, Role, TaskManagerRegistration, ToJobManager, ToTaskManager, Welcome};
use crate::secret::Secret;
use crate::shuffle::partitions::ResultPartitionManager;
use crate::shuffle::quota::DiskQuota;
use data_server::DataServerLimits;
use gate_loader::GateLoader;
use session::{Counters, SessionContext};
use sync::lock;
use wordcount::{WordCountContext, WordCountShared};

/// Why a TaskManager stopped for good.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskManagerError {
    /// Its data directory or data server could not be set up, or its configuration is out of
    /// range (a slowdown below 1).
    #[error("TaskManager set-up: {0}")]
    Setup(String),
    /// The JobManager refused it for a reason retrying cannot fix (protocol version, token).
    #[error("{0}")]
    Refused(RpcError),
}

/// A TaskManager process's main loop.
#[derive(Debug)]
pub struct TaskManager;

impl TaskManager {
    /// Runs until `shutdown` completes: binds the data server, registers with the JobManager,
    /// serves it, and registers again (with back-off) whenever the connection or the heartbeats
    /// stop. Must be called within a multi-thread tokio runtime.
    ///
    /// # Errors
    /// [`TaskManagerError::Setup`] when the data directory or data server cannot be set up, or
    /// the slowdown is not a factor of at least 1;
    /// [`TaskManagerError::Refused`] when the JobManager speaks another protocol version or
    /// refuses the token.
    pub async fn run(
        config: TaskManagerConfig,
        shutdown: impl std::future::Future<Output = ()>,
    ) -> Result<(), TaskManagerError> {
        tokio::pin!(shutdown);
        if !(config.slowdown >= 1.0 && config.slowdown.is_finite()) {
            return Err(TaskManagerError::Setup(format!(
                "slowdown {} is not a factor of at least 1",
                config.slowdown
            )));
        }
        std::fs::create_dir_all(&config.data_dir).map_err(|e| {
            TaskManagerError::Setup(format!("data directory {}: {e}", config.data_dir.display()))
        })?;
        let partitions = Arc::new(ResultPartitionManager::new(
            &config.data_dir,
            Arc::new(DiskQuota::new(config.data_dir_max_bytes)),
        ));
        let limits = DataServerLimits {
            max_connections: config.data_max_connections,
            handshake_timeout: Duration::from_millis(config.connect_timeout_ms.max(1)),
            idle_timeout: Duration::from_millis(config.data_idle_timeout_ms.max(1)),
            token: config.token.clone(),
        };
        // Stopped when `run` returns or is dropped.
        let data_server =
            data_server::start(config.advertised_host, Arc::clone(&partitions), limits)
                .await
                .map_err(|e| TaskManagerError::Setup(format!("data server: {e}")))?;
        let shared = Arc::new(WordCountShared::default());
        let data_address = data_server.address;
        let counters = Arc::new(Counters::default());
        let metrics = Arc::new(TaskManagerMetrics::new());
        // Stopped when `run` returns or is dropped.
        let metrics_server = match config.metrics_address {
            Some(address) => Some(
                metrics_server::start(address, Arc::clone(&metrics), Arc::clone(&counters))
                    .await
                    .map_err(|e| TaskManagerError::Setup(format!("metrics on {address}: {e}")))?,
            ),
            None => None,
        };
        let metrics_url = metrics_server.as_ref().map_or_else(
            || "off".to_owned(),
            |m| format!("http://{}/metrics", m.address),
        );
        tracing::info!(
            data_address = %data_address,
            metrics = %metrics_url,
            jobmanager = %config.jobmanager,
            slots = config.slots,
            "TaskManager started: data server on {data_address}, metrics {metrics_url}; \
             registering with the JobManager at {}",
            config.jobmanager
        );
        let gates = GateLoader::start()
            .map_err(|e| TaskManagerError::Setup(format!("gate loader thread: {e}")))?;
        let hello = Hello {
            token: config.token.clone(),
            role: Role::TaskManager(TaskManagerRegistration {
                slots: config.slots,
                data_address,
                pid: std::process::id(),
                held_partitions: Vec::new(),
            }),
        };
        let result = serve(
            &config,
            &hello,
            shared,
            Arc::clone(&partitions),
            gates,
            counters,
            metrics,
            shutdown.as_mut(),
        )
        .await;
        // What the TaskManager made in its data directory goes with it.
        drop(data_server);
        drop(metrics_server);
        partitions.release_all();
        result
    }
}

/// Registers (again, with back-off, after every lost session) until `shutdown` completes or the
/// JobManager refuses for good. Failed attempts are logged once, then every
/// [`registration_log::REPEAT_INTERVAL`] while they go on.
#[allow(clippy::too_many_arguments)] // what every session shares, handed down
async fn serve(
    config: &TaskManagerConfig,
    hello: &Hello,
    shared: Arc<WordCountShared>,
    partitions: Arc<ResultPartitionManager>,
    gates: GateLoader,
    counters: Arc<Counters>,
    metrics: Arc<TaskManagerMetrics>,
    mut shutdown: std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
) -> Result<(), TaskManagerError> {
    let timeout = Duration::from_millis(config.connect_timeout_ms);
    let mut backoff = config.retry_interval_ms.max(1);
    let max_backoff = config.retry_interval_ms.max(1) * 10;
    let mut log = registration_log::RegistrationLog::default();
    let outer_config = config;
    // The highest fencing token seen (high availability): a JobManager below it is deposed.
    let mut highest_token = 0u64;
    // Since when it has had no JobManager while holding partitions (a session lost): past
    // `partitions_kept_without_jobmanager_ms` they are released.
    let mut without_jobmanager: Option<std::time::Instant> = None;
    let kept = Duration::from_millis(outer_config.partitions_kept_without_jobmanager_ms);
    loop {
        if let Some(since) = without_jobmanager {
            if since.elapsed() >= kept {
                let released = partitions.release_jobs_except(&[]);
                tracing::info!(
                    jobs = released,
                    "no JobManager for {} ms: released the partitions kept for a recovery",
                    kept.as_millis()
                );
                without_jobmanager = None;
            }
        }
        // Under high availability: the leader ZooKeeper publishes, waited for (waking to
        // release the kept partitions when that time comes first).
        let (session_config, leader_token) = match &outer_config.leader {
            None => (outer_config.clone(), None),
            Some(leader) => {
                let mut leader = leader.clone();
                let release_at = without_jobmanager.map(|since| since + kept);
                let info = tokio::select! {
                    info = leader.wait_for(|l| l.as_ref().is_some_and(|l| l.fencing_token >= highest_token)) => {
                        info.ok().and_then(|i| i.clone())
                    }
                    () = sleep_until(release_at) => continue,
                    () = &mut shutdown => return Ok(()),
                };
                let Some(info) = info else {
                    // The retrieval stopped: nothing more to follow.
                    return Ok(());
                };
                let mut c = outer_config.clone();
                c.jobmanager = info.rpc_address;
                (c, Some(info.fencing_token))
            }
        };
        let config = &session_config;
        // Before the hello: the JobManager registers this TaskManager (and starts its heartbeat
        // timeout) later.
        let registering_since = std::time::Instant::now();
        // The registration lists the finished partitions held now (batch job recovery).
        let hello = with_held_partitions(hello, partitions.held_blocking());
        let attempt = tokio::select! {
            attempt = connect(&config.jobmanager, &hello, config.max_frame_bytes, timeout) => attempt,
            // A leader that stopped answering was replaced: register with the new one.
            () = leader_other_than(&config.leader, leader_token) => continue,
            () = &mut shutdown => return Ok(()),
        };
        let attempt = match (attempt, leader_token) {
            (Ok((_, welcome)), Some(_)) if welcome.fencing_token.unwrap_or(0) < highest_token => {
                tracing::warn!(
                    jobmanager = %config.jobmanager,
                    token = ?welcome.fencing_token,
                    highest_token,
                    "refusing a deposed leader (its fencing token is below one already seen)"
                );
                Err(RpcError::Closed(config.jobmanager.clone()))
            }
            (attempt, _) => attempt,
        };
        match attempt {
            Ok((conn, welcome)) => {
                highest_token = highest_token.max(welcome.fencing_token.unwrap_or(0));
                // Another leader published: this session ends and the TaskManager follows.
                let moved = leader_other_than(&config.leader, welcome.fencing_token);
                tokio::pin!(moved);
                without_jobmanager = None;
                backoff = config.retry_interval_ms.max(1);
                if let Some((attempts, took)) = log.succeeded(std::time::Instant::now()) {
                    tracing::info!(
                        jobmanager = %config.jobmanager,
                        "registered after {attempts} failed attempts over {} s",
                        took.as_secs()
                    );
                }
                let heartbeat_timeout = Duration::from_millis(
                    config
                        .heartbeat_timeout_ms
                        .unwrap_or(welcome.heartbeat_timeout_ms)
                        .max(1),
                );
                let wordcount = WordCountContext {
                    shared: Arc::clone(&shared),
                    partitions: Arc::clone(&partitions),
                    token: config.token.clone(),
                    welcome_timeout: Duration::from_millis(
                        config.partition_request_timeout_ms.max(1),
                    ),
                    backoff: (
                        Duration::from_millis(config.partition_request_backoff_initial_ms),
                        Duration::from_millis(config.partition_request_backoff_max_ms),
                    ),
                    lease: Arc::new(commit_lease::CommitLease::new(
                        heartbeat_timeout,
                        registering_since,
                    )),
                };
                let end = session(
                    conn,
                    welcome,
                    config,
                    gates.clone(),
                    Arc::clone(&counters),
                    Arc::clone(&metrics),
                    wordcount,
                    shutdown.as_mut(),
                    moved.as_mut(),
                )
                .await;
                match end {
                    SessionEnd::Disconnected(reason) => {
                        tracing::info!(jobmanager = %config.jobmanager, "disconnected by the JobManager ({reason}); registering again")
                    }
                    SessionEnd::Lost(reason) => {
                        without_jobmanager = Some(std::time::Instant::now());
                        tracing::warn!(jobmanager = %config.jobmanager, "JobManager lost ({reason}); registering again, keeping finished partitions for {} ms", config.partitions_kept_without_jobmanager_ms)
                    }
                    SessionEnd::Shutdown => return Ok(()),
                }
            }
            Err(e @ (RpcError::VersionMismatch { .. } | RpcError::Refused { .. }))
                if is_fatal(&e) =>
            {
                return Err(TaskManagerError::Refused(e));
            }
            Err(e) => match log.failed(std::time::Instant::now()) {
                registration_log::Line::First => tracing::warn!(
                    jobmanager = %config.jobmanager,
                    "cannot register with the JobManager at {}: {e}; retrying every {} to \
                     {max_backoff} ms until it answers (repeated every {} s while it fails)",
                    config.jobmanager,
                    config.retry_interval_ms.max(1),
                    registration_log::REPEAT_INTERVAL.as_secs()
                ),
                registration_log::Line::Again { attempts, for_secs } => tracing::warn!(
                    jobmanager = %config.jobmanager,
                    "still cannot register with the JobManager at {} after {attempts} \
                     attempts over {for_secs} s: {e}; retrying",
                    config.jobmanager
                ),
                registration_log::Line::Quiet => {
                    tracing::debug!("registration failed: {e}; retrying in {backoff} ms");
                }
            },
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(backoff)) => {}
            // Another leader was published: registered with at once.
            () = leader_other_than(&config.leader, leader_token) => {
                backoff = config.retry_interval_ms.max(1);
                continue;
            }
            () = &mut shutdown => return Ok(()),
        }
        backoff = (backoff * 2).min(max_backoff);
    }
}

/// Resolves when `leader` (high availability) publishes a leader other than the one of `token`
/// (another, or none); never without high availability.
async fn leader_other_than(
    leader: &Option<tokio::sync::watch::Receiver<Option<conflux_ha::LeaderInfo>>>,
    token: Option<u64>,
) {
    match (leader, token) {
        (Some(leader), Some(token)) => {
            let mut leader = leader.clone();
            if leader
                .wait_for(|l| l.as_ref().map(|l| l.fencing_token) != Some(token))
                .await
                .is_err()
            {
                std::future::pending::<()>().await;
            }
        }
        _ => std::future::pending::<()>().await,
    }
}

/// Resolves at `at`; never for `None`.
async fn sleep_until(at: Option<std::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending::<()>().await,
    }
}

/// `hello` with `held` as its registration's held partitions.
fn with_held_partitions(hello: &Hello, held: Vec<crate::protocol::HeldPartition>) -> Hello {
    let mut hello = hello.clone();
    if let Role::TaskManager(registration) = &mut hello.role {
        registration.held_partitions = held;
    }
    hello
}

/// Refusals retrying cannot fix.
fn is_fatal(e: &RpcError) -> bool {
    match e {
        RpcError::VersionMismatch { .. } => true,
        RpcError::Refused { reason, .. } => {
            reason.contains("token") || reason.contains("protocol version")
        }
        _ => false,
    }
}

/// Why a session ended.
enum SessionEnd {
    /// The JobManager said goodbye (it is shutting down).
    Disconnected(String),
    /// The connection or the heartbeats stopped.
    Lost(String),
    /// The TaskManager is shutting down.
    Shutdown,
}

/// One registration: serves the JobManager until it is lost. Returns why the session ended.
#[allow(clippy::too_many_arguments)]
async fn session(
    conn: FramedStream,
    welcome: Welcome,
    config: &TaskManagerConfig,
    gates: GateLoader,
    counters: Arc<Counters>,
    metrics: Arc<TaskManagerMetrics>,
    wordcount: WordCountContext,
    mut shutdown: std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
    mut leader_moved: std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
) -> SessionEnd {
    let Some(id) = welcome.task_manager_id else {
        return SessionEnd::Lost("the JobManager sent no TaskManager id".into());
    };
    let mut cache_config = BlobCacheConfig::new(config.data_dir.join("blob-cache"));
    cache_config.server_url = Some(welcome.blob_server_url.clone());
    cache_config.auth_token = config.token.clone();
    let blob_cache = match BlobCache::new(cache_config, tokio::runtime::Handle::current()) {
        Ok(cache) => Arc::new(cache),
        Err(e) => return SessionEnd::Lost(format!("blob cache: {e}")),
    };
    tracing::info!(task_manager = %id, jobmanager = %config.jobmanager, "registered");
    *lock(&counters.blob_cache) = Some(Arc::clone(&blob_cache));
    let Some(secret) = welcome.registration_secret else {
        return SessionEnd::Lost("the JobManager sent no registration secret".into());
    };
    // The partitions of every job this JobManager does not recover (without high
    // availability: all of them) go, whether an earlier registration's or a dead JobManager's.
    let released = wordcount.partitions.release_jobs_except(&welcome.keep_jobs);
    if released > 0 {
        tracing::info!(task_manager = %id, jobs = released, "released the partitions of jobs the JobManager does not recover");
    }
    let partitions = Arc::clone(&wordcount.partitions);
    let (sink, mut stream) = conn.split();
    let (priority_tx, priority_rx) = mpsc::unbounded_channel::<Bytes>();
    let (updates_tx, updates_rx) = mpsc::unbounded_channel::<Bytes>();
    // Heartbeat answers (when heartbeats come on this connection) before queued task states.
    let writer = tokio::spawn(write_prioritized(
        sink,
        priority_rx,
        updates_rx,
        FaultInjector::new(RpcFaults::default(), 0),
        None,
    ));
    let ctx = Arc::new(SessionContext {
        blob_cache: Arc::clone(&blob_cache),
        gates,
        counters: Arc::clone(&counters),
        updates: updates_tx,
        running: Mutex::new(HashMap::new()),
        wordcount,
        slowdown: config.slowdown,
        metrics,
        labels: (
            id.to_string(),
            crate::metrics::flink_label(&config.advertised_host.to_string()),
        ),
        rss: Mutex::new((std::time::Instant::now(), 0)),
    });
    let peer = config.jobmanager.as_str();
    let timeout = Duration::from_millis(
        config
            .heartbeat_timeout_ms
            .unwrap_or(welcome.heartbeat_timeout_ms)
            .max(1),
    );
    let side = Arc::new(HeartbeatSide::default());
    if let Err(e) = spawn_heartbeat_thread(
        config.clone(),
        id,
        secret,
        Arc::clone(&ctx),
        Arc::clone(&side),
        timeout,
    ) {
        // Without the thread heartbeats stay on the main connection, as when the heartbeat
        // connection cannot be opened.
        tracing::warn!("no heartbeat thread ({e}): heartbeats stay on the main connection");
    }
    let mut frame = 1u64;
    let end = loop {
        let next = tokio::select! {
            next = next_frame(&mut stream, peer, frame, "heartbeat or task", timeout) => next,
            () = side.lost.notified() => break side.end(),
            () = &mut shutdown => break SessionEnd::Shutdown,
            () = &mut leader_moved => break SessionEnd::Lost("another JobManager leads now".into()),
        };
        let body = match next {
            Ok(body) => body,
            // Heartbeats come on their own connection: a quiet main connection is fine.
            Err(RpcError::Timeout { .. }) if side.alive.load(Ordering::Relaxed) => continue,
            Err(e) => break SessionEnd::Lost(e.to_string()),
        };
        let message: ToTaskManager = match decode(&body, peer, frame, "JobManager message") {
            Ok(message) => message,
            Err(e) => break SessionEnd::Lost(e.to_string()),
        };
        frame += 1;
        match message {
            ToTaskManager::HeartbeatRequest { seq, answered } => {
                ctx.wordcount.lease.acknowledged(answered);
                ctx.wordcount.lease.answer_sent(seq);
                let answer = ToJobManager::HeartbeatResponse {
                    seq,
                    stats: ctx.stats(),
                };
                let sent = encode(&answer).map(|frame| priority_tx.send(frame).is_ok());
                match sent {
                    Ok(true) => {}
                    Ok(false) => break SessionEnd::Lost("the connection's writer stopped".into()),
                    Err(e) => break SessionEnd::Lost(e.to_string()),
                }
            }
            ToTaskManager::SubmitTask {
                tdd,
                task,
                job_secret,
            } => {
                counters.tasks.fetch_add(1, Ordering::Relaxed);
                counters
                    .tdd_bytes_received
                    .fetch_add(tdd.len() as u64, Ordering::Relaxed);
                match decode_tdd(&tdd) {
                    Ok(tdd)
                        if tdd.allocation.task_manager != id
                            || tdd.allocation.slot >= config.slots =>
                    {
                        ctx.send(&ToJobManager::SubmitAcknowledged {
                            job: tdd.job_id,
                            attempt: tdd.execution_attempt,
                            refused: Some(format!(
                                "slot {} of {} is not one of {id}'s {} slots",
                                tdd.allocation.slot, tdd.allocation.task_manager, config.slots
                            )),
                        });
                    }
                    Ok(tdd) => {
                        let attempt = tdd.execution_attempt;
                        ctx.send(&ToJobManager::SubmitAcknowledged {
                            job: tdd.job_id,
                            attempt,
                            refused: None,
                        });
                        partitions.job_started(tdd.job_id, job_secret);
                        task::spawn(Arc::clone(&ctx), tdd, task, job_secret);
                    }
                    // Without a decodable descriptor there is no attempt to name: the
                    // JobManager's acknowledgement timeout fails the task.
                    Err(e) => tracing::warn!("frame {frame}: task deployment descriptor: {e}"),
                }
            }
            ToTaskManager::CancelTask(attempt) => {
                if let Some(handle) = lock(&ctx.running).remove(&attempt) {
                    handle.abort();
                    tracing::debug!(
                        vertex = attempt.vertex,
                        attempt = attempt.attempt,
                        "task cancelled"
                    );
                }
            }
            ToTaskManager::ReleasePartitions {
                job,
                partitions: released,
            } => {
                let held = partitions.release(job, &released);
                tracing::debug!(%job, partitions = released.len(), held, "partitions released");
            }
            ToTaskManager::JobEnded(job) => {
                ctx.metrics.job_ended(job);
                partitions.release_job(job);
                ctx.gates.clear_job(job);
                if let Err(e) = blob_cache.release_job(job) {
                    tracing::warn!(%job, "blob cache cleanup: {e}");
                }
            }
            ToTaskManager::Disconnect(reason) => break SessionEnd::Disconnected(reason),
        }
    };
    // A TaskManager that lost its JobManager cancels its tasks (Flink's
    // `TaskExecutor.disconnectJobManagerConnection` fails them).
    let cancelled: Vec<AbortHandle> = lock(&ctx.running).drain().map(|(_, h)| h).collect();
    if !cancelled.is_empty() {
        tracing::warn!(task_manager = %id, tasks = cancelled.len(), "cancelling the tasks of the lost JobManager");
    }
    for handle in cancelled {
        handle.abort();
    }
    *lock(&counters.blob_cache) = None;
    counters
        .blob_fetches_before
        .fetch_add(blob_cache.stats().server_fetches, Ordering::Relaxed);
    writer.abort();
    side.stop.notify_one();
    end
}

/// The state of a session's heartbeat connection.
#[derive(Default)]
struct HeartbeatSide {
    /// It is open and the JobManager asks in time.
    alive: std::sync::atomic::AtomicBool,
    /// Signalled when the JobManager stops asking (or the connection fails after it was open).
    lost: tokio::sync::Notify,
    /// Why the heartbeat connection ended, set before `lost` is signalled.
    reason: Mutex<Option<String>>,
    /// Whether it ended with the JobManager's goodbye (`Disconnect`): the session then ends as
    /// the main connection's `Disconnect` would end it, whichever arrives first.
    goodbye: std::sync::atomic::AtomicBool,
    /// Signalled when the session ends: the heartbeat thread closes its connection and stops.
    stop: tokio::sync::Notify,
}

impl HeartbeatSide {
    /// How the session ends now that the heartbeat connection ended.
    fn end(&self) -> SessionEnd {
        if self.goodbye.load(Ordering::Relaxed) {
            SessionEnd::Disconnected(self.take_reason())
        } else {
            SessionEnd::Lost(self.take_reason())
        }
    }

    fn take_reason(&self) -> String {
        lock(&self.reason)
            .take()
            .unwrap_or_else(|| "the heartbeat connection ended".into())
    }
}

/// Why the heartbeat connection ended, from the error that ended it: a JobManager that stopped
/// asking (`timeout`) is told apart from a connection that closed or failed.
fn heartbeat_end_reason(e: &RpcError, timeout: Duration) -> String {
    match e {
        RpcError::Timeout { .. } => {
            format!("no heartbeat request for {} ms", timeout.as_millis())
        }
        e => format!("heartbeat connection: {e}"),
    }
}

/// Runs [`heartbeat_connection`] on the process's heartbeat thread (`heartbeat_thread.rs`),
/// until the session signals [`HeartbeatSide::stop`].
///
/// Deploying thousands of tasks keeps the session's runtime busy (decoding TDDs, starting tasks,
/// sending their states): an answer that waited there for a worker came back 0.4-0.7 s late at
/// 100k x 100k on 20 TaskManagers, against a 1 s timeout. A thread that sleeps between
/// requests is woken and scheduled at once, whatever the task threads do; under `conflux
/// cluster` it also keeps the process's priority while the task threads run at nice 19.
fn spawn_heartbeat_thread(
    config: TaskManagerConfig,
    id: conflux_deploy::TaskManagerId,
    secret: Secret,
    ctx: Arc<SessionContext>,
    side: Arc<HeartbeatSide>,
    timeout: Duration,
) -> std::io::Result<()> {
    let runtime = crate::heartbeat_thread::heartbeat_runtime()?;
    let stopped = Arc::clone(&side);
    runtime.spawn(async move {
        tokio::select! {
            () = heartbeat_connection(config, id, secret, ctx, side, timeout) => {}
            () = stopped.stop.notified() => {}
        }
    });
    Ok(())
}

/// Opens the heartbeat connection and answers every request on it at once. If it cannot be
/// opened, heartbeats stay on the main connection (the JobManager sends them there until one is
/// attached). Without a request for `timeout` the JobManager is lost.
async fn heartbeat_connection(
    config: TaskManagerConfig,
    id: conflux_deploy::TaskManagerId,
    secret: Secret,
    ctx: Arc<SessionContext>,
    side: Arc<HeartbeatSide>,
    timeout: Duration,
) {
    let hello = Hello {
        token: config.token.clone(),
        role: Role::Heartbeat {
            task_manager: id,
            pid: std::process::id(),
            secret,
        },
    };
    let connect_timeout = Duration::from_millis(config.connect_timeout_ms);
    let mut conn = match connect(
        &config.jobmanager,
        &hello,
        crate::connection::MAX_HANDSHAKE_FRAME_BYTES,
        connect_timeout,
    )
    .await
    {
        Ok((conn, _)) => conn,
        Err(e) => {
            tracing::info!("no heartbeat connection ({e}): heartbeats stay on the main connection");
            return;
        }
    };
    side.alive.store(true, Ordering::Relaxed);
    let peer = config.jobmanager.as_str();
    let mut frame = 1u64;
    let reason = loop {
        let body = match next_frame(&mut conn, peer, frame, "heartbeat request", timeout).await {
            Ok(body) => body,
            Err(e) => break heartbeat_end_reason(&e, timeout),
        };
        match decode(&body, peer, frame, "heartbeat request") {
            Ok(ToTaskManager::HeartbeatRequest { seq, answered }) => {
                ctx.wordcount.lease.acknowledged(answered);
                ctx.wordcount.lease.answer_sent(seq);
                let answer = ToJobManager::HeartbeatResponse {
                    seq,
                    stats: ctx.stats(),
                };
                let frame = match encode(&answer) {
                    Ok(frame) => frame,
                    Err(e) => break format!("heartbeat connection: {e}"),
                };
                if let Err(e) = conn.send(frame).await {
                    break format!("heartbeat connection: {e}");
                }
            }
            Ok(ToTaskManager::Disconnect(reason)) => {
                side.goodbye.store(true, Ordering::Relaxed);
                break reason;
            }
            Ok(other) => break format!("{other:?} on the heartbeat connection"),
            Err(e) => break heartbeat_end_reason(&e, timeout),
        }
        frame += 1;
    };
    tracing::debug!("heartbeat connection ended: {reason}");
    *lock(&side.reason) = Some(reason);
    side.alive.store(false, Ordering::Relaxed);
    side.lost.notify_one();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a heartbeat connection that closed was reported as 50 s without a
    /// heartbeat request.
    #[test]
    fn the_end_of_the_heartbeat_connection_says_why() {
        let timeout = Duration::from_millis(50_000);
        let closed = RpcError::Closed("127.0.0.1:6123".into());
        assert_eq!(
            heartbeat_end_reason(&closed, timeout),
            "heartbeat connection: 127.0.0.1:6123 closed the connection"
        );
        let silent = RpcError::Timeout {
            peer: "127.0.0.1:6123".into(),
            what: "heartbeat request",
            ms: 50_000,
        };
        assert_eq!(
            heartbeat_end_reason(&silent, timeout),
            "no heartbeat request for 50000 ms"
        );
        let side = HeartbeatSide::default();
        *lock(&side.reason) = Some("heartbeat connection: reset".into());
        assert_eq!(side.take_reason(), "heartbeat connection: reset");
        assert_eq!(side.take_reason(), "the heartbeat connection ended");
    }
}
