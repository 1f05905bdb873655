//! Settings of the JobManager, the TaskManager and their RPC, with Flink's defaults.

use std::net::SocketAddr;
use std::path::PathBuf;

use conflux_scheduler::SchedulerConfig;

/// Flink's `heartbeat.interval` default: 10 s.
pub const DEFAULT_HEARTBEAT_INTERVAL_MS: u64 = 10_000;
/// Flink's `heartbeat.timeout` default: 50 s.
pub const DEFAULT_HEARTBEAT_TIMEOUT_MS: u64 = 50_000;
/// Flink's `akka.ask.timeout` / `pekko.ask.timeout` default: 10 s.
pub const DEFAULT_RPC_TIMEOUT_MS: u64 = 10_000;
/// Largest frame a JobManager or TaskManager accepts, bytes (TDDs are kilobytes; offloaded data
/// goes through the blob server).
pub const DEFAULT_MAX_FRAME_BYTES: usize = 64 << 20;
/// Largest job file a client may submit, bytes: the loader's own limit.
pub const MAX_SUBMISSION_BYTES: usize = 256 << 20;

/// How long a connecting peer has to complete the handshake, ms.
pub const DEFAULT_HANDSHAKE_TIMEOUT_MS: u64 = 10_000;
/// Connections a JobManager accepts at once (TaskManagers and clients).
pub const DEFAULT_MAX_CONNECTIONS: usize = 1_024;
/// A client connection with no request for this long is closed, ms.
pub const DEFAULT_CLIENT_IDLE_TIMEOUT_MS: u64 = 60_000;
/// The JobManager's default [`SchedulerConfig::work_budget`]: the scheduler's default, 2^17 work
/// units (about 1 ms of one core per call at 100k x 100k). The runtime shares its cores with
/// TaskManagers and network tasks, so a call is often preempted; a short slice keeps the
/// longest call's wall time low.
pub const DEFAULT_RUNTIME_WORK_BUDGET: u32 = conflux_scheduler::api::DEFAULT_WORK_BUDGET;

/// Default of [`JobManagerConfig::max_job_memory_bytes`]: 4 GiB, a fixed figure so that what
/// a JobManager admits does not depend on the host it runs on.
pub const DEFAULT_MAX_JOB_MEMORY_BYTES: u64 = 4 << 30;
/// Default of [`JobHistory::size`]: 1,000 ended jobs.
pub const DEFAULT_JOB_HISTORY_SIZE: usize = 1_000;
/// Default of [`JobHistory::ttl_ms`]: one hour, Flink's `jobstore.expiration-time` default.
pub const DEFAULT_JOB_HISTORY_TTL_MS: u64 = 3_600_000;
/// Default of [`RpcConfig::max_submissions_in_flight`]: task submissions one TaskManager may
/// have unacknowledged at once.
pub const DEFAULT_MAX_SUBMISSIONS_IN_FLIGHT: usize = 256;

/// Jobs a JobManager lets wait at once: a submission beyond them is refused until some have
/// run. With the job history's default size, `list` answers at most about 2,000 jobs.
pub const MAX_QUEUED_JOBS: usize = 1_000;

/// Which ended jobs a JobManager keeps (with their reports) for `list` and `wait`: at most
/// `size` of them, none older than `ttl_ms` (Flink's `jobstore.max-capacity` and
/// `jobstore.expiration-time`); the oldest go first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobHistory {
    /// Ended jobs kept at most.
    pub size: usize,
    /// An ended job is dropped this long after it ended, ms.
    pub ttl_ms: u64,
}

impl Default for JobHistory {
    fn default() -> Self {
        JobHistory {
            size: DEFAULT_JOB_HISTORY_SIZE,
            ttl_ms: DEFAULT_JOB_HISTORY_TTL_MS,
        }
    }
}

/// Heartbeat settings (Flink's `heartbeat.interval` and `heartbeat.timeout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeartbeatConfig {
    /// The JobManager asks every TaskManager this often, ms.
    pub interval_ms: u64,
    /// A TaskManager that has not answered for this long is lost; a TaskManager that has not been
    /// asked for this long considers its JobManager lost, ms.
    pub timeout_ms: u64,
}

impl Default for HeartbeatConfig {
    fn default() -> Self {
        HeartbeatConfig {
            interval_ms: DEFAULT_HEARTBEAT_INTERVAL_MS,
            timeout_ms: DEFAULT_HEARTBEAT_TIMEOUT_MS,
        }
    }
}

/// Faults injected into the JobManager's outgoing messages (handshakes excepted), for tests and
/// `conflux cluster`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RpcFaults {
    /// Every message waits this long before it is sent, ms.
    pub delay_ms: u64,
    /// Chance that a message is dropped instead (0.0 to 1.0).
    pub drop_rate: f64,
    /// Seed of the drops.
    pub seed: u64,
}

/// RPC settings shared by both sides.
#[derive(Clone, PartialEq)]
pub struct RpcConfig {
    /// A task submission not acknowledged within this fails that task, ms (Flink's ask
    /// timeout), counted from when it is handed to the connection's writer.
    pub timeout_ms: u64,
    /// Task submissions one TaskManager may have unacknowledged at once; the JobManager holds
    /// the others back (back-pressure), so that a submission's timeout never runs while it
    /// waits behind thousands of others. At least 1.
    pub max_submissions_in_flight: usize,
    /// Largest frame accepted, bytes.
    pub max_frame_bytes: usize,
    /// Time a peer has to send its hello, ms.
    pub handshake_timeout_ms: u64,
    /// The shared secret every peer must present, if any.
    pub token: Option<String>,
    /// Injected faults (JobManager side).
    pub faults: RpcFaults,
}

impl Default for RpcConfig {
    fn default() -> Self {
        RpcConfig {
            timeout_ms: DEFAULT_RPC_TIMEOUT_MS,
            max_submissions_in_flight: DEFAULT_MAX_SUBMISSIONS_IN_FLIGHT,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            handshake_timeout_ms: DEFAULT_HANDSHAKE_TIMEOUT_MS,
            token: None,
            faults: RpcFaults::default(),
        }
    }
}

/// Settings of a [`JobManager`](crate::JobManager).
#[derive(Clone, Debug)]
pub struct JobManagerConfig {
    /// Where it listens for TaskManagers and clients (Flink's default port is 6123).
    pub address: SocketAddr,
    /// The host name or IP TaskManagers use to reach its blob server; default: the listening
    /// address's IP.
    pub advertised_host: Option<String>,
    /// The blob server's storage directory.
    pub blob_dir: PathBuf,
    /// Heartbeats.
    pub heartbeat: HeartbeatConfig,
    /// RPC limits and faults.
    pub rpc: RpcConfig,
    /// Connections accepted at once.
    pub max_connections: usize,
    /// Idle client connections are closed after this, ms.
    pub client_idle_timeout_ms: u64,
    /// The scheduler's settings for every job.
    pub scheduler: SchedulerConfig,
    /// A job whose estimated execution graph, scheduler state and descriptors
    /// ([`conflux_scheduler::JobMemoryEstimate`]) exceed this is refused at submission, bytes;
    /// the queued jobs' graphs together are held to it too.
    pub max_job_memory_bytes: u64,
    /// Which ended jobs are kept.
    pub job_history: JobHistory,
    /// Where the REST API (Flink's, with `/metrics`) listens: `None` for none. Default: the
    /// IP of `address` with port 0 (a free port; [`JobManager::rest_address`](crate::JobManager::rest_address)
    /// tells which), so that JobManagers embedded side by side never collide; `conflux
    /// jobmanager` defaults to Flink's `rest.port`, 8081.
    pub rest_address: Option<SocketAddr>,
    /// Flink's `high-availability.storageDir`: where submitted jobs, their results and their
    /// event logs are kept (`conflux_job_store::StorageDir`). `None` (the default): nothing is
    /// kept and nothing recovered. With a directory, [`JobManager::start`] recovers every job
    /// of it that has not ended (batch job recovery, FLIP-383).
    ///
    /// [`JobManager::start`]: crate::JobManager::start
    pub storage_dir: Option<PathBuf>,
    /// Flink's `execution.batch.job-recovery.previous-worker.recovery.timeout`: how long a
    /// recovered job waits for the TaskManagers that held its finished partitions, ms (default
    /// [`DEFAULT_JOB_RECOVERY_TIMEOUT_MS`]).
    pub job_recovery_timeout_ms: u64,
    /// The effective configuration under Flink's keys as the CLI resolved it (flags, `-D`,
    /// environment, `config.yaml`), secrets already hidden: `/jobmanager/config` lists it,
    /// with the addresses the JobManager actually bound in place of the configured ones.
    pub configuration: Vec<(String, String)>,
    /// The web pages at `/` beside the REST API: `None` for Conflux's live job view
    /// (`conflux-web`), else a directory of static files, Flink's dashboard (the `web/` folder
    /// of Flink's `flink-dist` jar), served as Flink's `web.*` settings would; it must hold an
    /// `index.html`.
    pub web_ui_dir: Option<PathBuf>,
    /// Under high availability, the leadership this JobManager holds (its fencing token, lease
    /// and job store pointers in ZooKeeper); it needs [`storage_dir`](Self::storage_dir).
    /// `None` without high availability.
    pub leader: Option<crate::high_availability::LeaderContext>,
}

impl JobManagerConfig {
    /// Defaults, listening on `address`, blobs under `blob_dir`.
    pub fn new(address: SocketAddr, blob_dir: impl Into<PathBuf>) -> JobManagerConfig {
        JobManagerConfig {
            address,
            advertised_host: None,
            blob_dir: blob_dir.into(),
            heartbeat: HeartbeatConfig::default(),
            rpc: RpcConfig::default(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            client_idle_timeout_ms: DEFAULT_CLIENT_IDLE_TIMEOUT_MS,
            scheduler: SchedulerConfig {
                work_budget: DEFAULT_RUNTIME_WORK_BUDGET,
                ..SchedulerConfig::default()
            },
            max_job_memory_bytes: DEFAULT_MAX_JOB_MEMORY_BYTES,
            job_history: JobHistory::default(),
            rest_address: Some(SocketAddr::new(address.ip(), 0)),
            storage_dir: None,
            job_recovery_timeout_ms: DEFAULT_JOB_RECOVERY_TIMEOUT_MS,
            configuration: Vec::new(),
            web_ui_dir: None,
            leader: None,
        }
    }
}

/// Settings of a [`TaskManager`](crate::TaskManager).
#[derive(Clone)]
pub struct TaskManagerConfig {
    /// The JobManager's `host:port`.
    pub jobmanager: String,
    /// Slots offered.
    pub slots: u32,
    /// Its working directory (blob cache, partition files under `partitions/`).
    pub data_dir: PathBuf,
    /// The IP its data server binds and advertises (default 127.0.0.1).
    pub advertised_host: std::net::IpAddr,
    /// The JobManager's token, if it requires one.
    pub token: Option<String>,
    /// Largest frame accepted, bytes.
    pub max_frame_bytes: usize,
    /// Connect and handshake timeout, ms.
    pub connect_timeout_ms: u64,
    /// Wait between registration attempts, ms (doubles up to 10x this).
    pub retry_interval_ms: u64,
    /// After this long without a heartbeat request the JobManager is lost, ms; default: the
    /// JobManager's heartbeat timeout, learnt at registration.
    pub heartbeat_timeout_ms: Option<u64>,
    /// Bytes of partition files its data directory may hold (`None`: no quota); a write past
    /// it fails as on a full disk.
    pub data_dir_max_bytes: Option<u64>,
    /// Data connections its data server accepts at once.
    pub data_max_connections: usize,
    /// A data connection with no open channel and no frame for this long is closed, ms.
    pub data_idle_timeout_ms: u64,
    /// How many times as long its tasks take, a factor of at least 1 (default 1): a slow
    /// TaskManager, for tests and demonstrations of speculative execution. A synthetic task
    /// sleeps its duration times this; a word count task, once its work is done, sleeps the
    /// time it took times `slowdown - 1` before it reports FINISHED.
    pub slowdown: f64,
    /// Where it serves its Prometheus metrics (`GET /metrics`): `None` (the default) for
    /// nowhere.
    pub metrics_address: Option<SocketAddr>,
    /// How long a consumer waits for a producer's data server to accept its connection and
    /// welcome it, per attempt, ms (Flink's `taskmanager.network.partition-request-timeout`,
    /// 10,000).
    pub partition_request_timeout_ms: u64,
    /// The first wait before a partition request is tried again, ms (Flink's
    /// `taskmanager.network.request-backoff.initial`, 100); 0 tries once only. Each retry
    /// doubles the wait, up to [`partition_request_backoff_max_ms`](Self::partition_request_backoff_max_ms);
    /// after the retry at that wait the request fails and the consumer with partition-not-found.
    pub partition_request_backoff_initial_ms: u64,
    /// The longest wait between two tries of a partition request, ms (Flink's
    /// `taskmanager.network.request-backoff.max`, 10,000).
    pub partition_request_backoff_max_ms: u64,
    /// How long it keeps its finished partitions while it has no JobManager, ms (default
    /// [`DEFAULT_PARTITIONS_KEPT_WITHOUT_JOBMANAGER_MS`]): a JobManager that takes over within
    /// it finds them (batch job recovery); past it they are released. At least the
    /// high-availability session timeout plus the recovery timeout.
    pub partitions_kept_without_jobmanager_ms: u64,
    /// Under high availability, the leader as ZooKeeper publishes it (a
    /// [`conflux_ha::LeaderRetrieval`]'s subscription): the TaskManager registers with
    /// whoever leads (`jobmanager` is then ignored), leaves a session when another leader is
    /// published, and refuses a JobManager whose fencing token is below the highest it has
    /// seen. `None`: the fixed `jobmanager`.
    pub leader: Option<tokio::sync::watch::Receiver<Option<conflux_ha::LeaderInfo>>>,
}

/// Flink's `taskmanager.network.request-backoff.initial`, ms.
pub const DEFAULT_PARTITION_REQUEST_BACKOFF_INITIAL_MS: u64 = 100;
/// Flink's `taskmanager.network.request-backoff.max`, ms.
pub const DEFAULT_PARTITION_REQUEST_BACKOFF_MAX_MS: u64 = 10_000;
/// Flink's `taskmanager.network.partition-request-timeout`, ms.
pub const DEFAULT_PARTITION_REQUEST_TIMEOUT_MS: u64 = 10_000;

/// Flink's `high-availability.zookeeper.client.session-timeout` (60 s) plus
/// `execution.batch.job-recovery.previous-worker.recovery.timeout` (30 s): how long a
/// TaskManager without a JobManager keeps its finished partitions by default, ms.
pub const DEFAULT_PARTITIONS_KEPT_WITHOUT_JOBMANAGER_MS: u64 = 90_000;

/// Flink's `execution.batch.job-recovery.previous-worker.recovery.timeout` default: how long a
/// JobManager recovering a batch job waits for the TaskManagers that held its finished
/// partitions to register again, ms.
pub const DEFAULT_JOB_RECOVERY_TIMEOUT_MS: u64 = 30_000;

impl TaskManagerConfig {
    /// Defaults for a TaskManager of `jobmanager` with `slots` slots working in `data_dir`.
    pub fn new(jobmanager: impl Into<String>, slots: u32, data_dir: impl Into<PathBuf>) -> Self {
        TaskManagerConfig {
            jobmanager: jobmanager.into(),
            slots,
            data_dir: data_dir.into(),
            advertised_host: std::net::IpAddr::from([127, 0, 0, 1]),
            token: None,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            connect_timeout_ms: DEFAULT_HANDSHAKE_TIMEOUT_MS,
            retry_interval_ms: 500,
            heartbeat_timeout_ms: None,
            data_dir_max_bytes: None,
            data_max_connections: DEFAULT_MAX_CONNECTIONS,
            data_idle_timeout_ms: DEFAULT_CLIENT_IDLE_TIMEOUT_MS,
            slowdown: 1.0,
            metrics_address: None,
            partition_request_timeout_ms: DEFAULT_PARTITION_REQUEST_TIMEOUT_MS,
            partition_request_backoff_initial_ms: DEFAULT_PARTITION_REQUEST_BACKOFF_INITIAL_MS,
            partition_request_backoff_max_ms: DEFAULT_PARTITION_REQUEST_BACKOFF_MAX_MS,
            partitions_kept_without_jobmanager_ms: DEFAULT_PARTITIONS_KEPT_WITHOUT_JOBMANAGER_MS,
            leader: None,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn submissions_are_bounded_as_job_files_are() {
        assert_eq!(
            super::MAX_SUBMISSION_BYTES as u64,
            conflux_graph::load::MAX_JOB_FILE_BYTES
        );
    }
}

/// What `Debug` shows of a shared secret: whether there is one, never its text.
fn hidden(token: Option<&String>) -> Option<&'static str> {
    token.map(|_| "******")
}

impl std::fmt::Debug for RpcConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcConfig")
            .field("timeout_ms", &self.timeout_ms)
            .field("max_submissions_in_flight", &self.max_submissions_in_flight)
            .field("max_frame_bytes", &self.max_frame_bytes)
            .field("handshake_timeout_ms", &self.handshake_timeout_ms)
            .field("token", &hidden(self.token.as_ref()))
            .field("faults", &self.faults)
            .finish()
    }
}

impl std::fmt::Debug for TaskManagerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskManagerConfig")
            .field("jobmanager", &self.jobmanager)
            .field("slots", &self.slots)
            .field("data_dir", &self.data_dir)
            .field("advertised_host", &self.advertised_host)
            .field("token", &hidden(self.token.as_ref()))
            .field("max_frame_bytes", &self.max_frame_bytes)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field("retry_interval_ms", &self.retry_interval_ms)
            .field("heartbeat_timeout_ms", &self.heartbeat_timeout_ms)
            .field("data_dir_max_bytes", &self.data_dir_max_bytes)
            .field("data_max_connections", &self.data_max_connections)
            .field("data_idle_timeout_ms", &self.data_idle_timeout_ms)
            .field("slowdown", &self.slowdown)
            .field("metrics_address", &self.metrics_address)
            .field(
                "partitions_kept_without_jobmanager_ms",
                &self.partitions_kept_without_jobmanager_ms,
            )
            .finish()
    }
}

#[cfg(test)]
mod secret_tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_token() {
        let mut tm = TaskManagerConfig::new("jm:6123", 1, "/tmp");
        tm.token = Some("hunter2".into());
        let mut jm = JobManagerConfig::new(([127, 0, 0, 1], 6123).into(), "/tmp");
        jm.rpc.token = Some("hunter2".into());
        for text in [format!("{tm:?}"), format!("{jm:?}")] {
            assert!(!text.contains("hunter2"), "{text}");
            assert!(text.contains("token: Some(\"******\")"), "{text}");
        }
    }
}
