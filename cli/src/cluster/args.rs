//! The flags of the cluster commands.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::anyhow;
use conflux_runtime::config::{
    DEFAULT_HEARTBEAT_INTERVAL_MS, DEFAULT_HEARTBEAT_TIMEOUT_MS, DEFAULT_JOB_HISTORY_SIZE,
    DEFAULT_JOB_HISTORY_TTL_MS, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_JOB_MEMORY_BYTES,
    DEFAULT_RPC_TIMEOUT_MS,
};
use conflux_runtime::protocol::JobOptions;
use conflux_runtime::{JobHistory, JobManagerConfig, RpcFaults, TaskManagerConfig};

use super::paths::{check_utf8, check_writable, Utf8Path};
use crate::settings::ConfigArgs;
use crate::speculative::{check_slowdown, SpeculativeArgs, SpeculativeOptionsArgs};
use crate::token::TokenArgs;
use crate::{Failure, Format, LoadArgs};

/// Heartbeat flags (Flink's `heartbeat.interval` and `heartbeat.timeout`).
#[derive(clap::Args, Clone, Copy)]
pub(crate) struct HeartbeatArgs {
    /// Heartbeat interval, ms (Flink's default 10 s).
    #[arg(help_heading = crate::headings::HEARTBEATS, long, default_value_t = DEFAULT_HEARTBEAT_INTERVAL_MS, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub(crate) heartbeat_interval_ms: u64,
    /// A TaskManager silent for this long is lost, ms (Flink's default 50 s).
    #[arg(help_heading = crate::headings::HEARTBEATS, long, default_value_t = DEFAULT_HEARTBEAT_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub(crate) heartbeat_timeout_ms: u64,
}

/// RPC flags of a JobManager.
#[derive(clap::Args, Clone)]
pub(crate) struct RpcArgs {
    /// A task submission unanswered for this long fails the task, ms (Flink's ask timeout).
    #[arg(help_heading = crate::headings::HEARTBEATS, long, default_value_t = DEFAULT_RPC_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub(crate) rpc_timeout_ms: u64,
    /// Injected fault: every message to a TaskManager waits this long, ms.
    #[arg(help_heading = crate::headings::FAULTS, long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub(crate) rpc_delay_ms: u64,
    /// Injected fault: chance (0..1) that a message to a TaskManager is dropped (seeded).
    #[arg(help_heading = crate::headings::FAULTS, long, default_value_t = 0.0)]
    pub(crate) rpc_drop_rate: f64,
}

/// What a JobManager admits and keeps: its job memory budget and job history.
#[derive(clap::Args, Clone, Copy)]
pub(crate) struct JobManagerLimitsArgs {
    /// A job whose estimated execution graph, scheduler state and descriptors exceed this many
    /// bytes is refused at submission (default 4 GiB, whatever the host's memory); the queued
    /// jobs' graphs together are held to it too.
    #[arg(help_heading = crate::headings::JOBS, long, default_value_t = DEFAULT_MAX_JOB_MEMORY_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_job_memory: u64,
    /// Ended jobs kept for `list` and waiting clients; the oldest go first.
    #[arg(help_heading = crate::headings::JOBS, long, default_value_t = DEFAULT_JOB_HISTORY_SIZE as u64, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub(crate) job_history_size: u64,
    /// An ended job leaves the job history this long after it ended, ms (Flink's
    /// `jobstore.expiration-time`, 1 h).
    #[arg(help_heading = crate::headings::JOBS, long, default_value_t = DEFAULT_JOB_HISTORY_TTL_MS, value_parser = clap::value_parser!(u64).range(0..=30 * 86_400_000))]
    pub(crate) job_history_ttl_ms: u64,
}

/// The JobManager's scheduler.
#[derive(clap::Args, Clone, Copy)]
pub(crate) struct SchedulerArgs {
    /// Region work one scheduler call may do before it yields to the event loop, work units
    /// (the scheduler's default 2^17, about 1 ms at 100k x 100k; README, `conflux run`: the
    /// longest scheduler event-handler call).
    #[arg(help_heading = crate::headings::SCHEDULING, long, default_value_t = conflux_runtime::config::DEFAULT_RUNTIME_WORK_BUDGET, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) scheduler_work_budget: u32,
    #[command(flatten)]
    pub(crate) restart: crate::restart::RestartArgs,
    #[command(flatten)]
    pub(crate) slot_request: SlotRequestArgs,
    /// Spread slots over the TaskManagers instead of filling one after the other (Flink's
    /// `cluster.evenly-spread-out-slots`).
    #[arg(help_heading = crate::headings::SCHEDULING, long)]
    pub(crate) evenly_spread_out_slots: bool,
}

/// How long a slot request may wait (`jobmanager`, `cluster` and `run`).
#[derive(clap::Args, Clone, Copy)]
pub(crate) struct SlotRequestArgs {
    /// A slot request that could not be served for this long fails its tasks with
    /// `NoResourceAvailableException`, which goes through failover and the restart strategy, ms
    /// (Flink's `slot.request.timeout`, 5 min; checked as Flink's
    /// `PhysicalSlotRequestBulkCheckerImpl`: a batch job counts every registered slot).
    #[arg(help_heading = crate::headings::SCHEDULING, long, default_value_t = conflux_scheduler::DEFAULT_SLOT_REQUEST_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub(crate) slot_request_timeout_ms: u64,
}

/// How the synthetic tasks of a job run.
#[derive(clap::Args, Clone)]
pub(crate) struct JobArgs {
    /// Task durations, ms: `MIN..MAX` (drawn per attempt from the seed) or one value.
    #[arg(help_heading = crate::headings::CLUSTER, long, default_value = "1000..2000", value_parser = super::duration_range::parse_duration_range)]
    pub(crate) task_duration_ms: (u64, u64),
    /// Seed of task durations (and of injected RPC drops for `cluster`).
    #[arg(help_heading = crate::headings::CLUSTER, long, default_value_t = 0)]
    pub(crate) seed: u64,
    #[command(flatten)]
    pub(crate) batch: crate::batch::BatchArgs,
    /// Where word count sinks write their files (`part-NNNNN.tsv`, and `_SUCCESS` once the job
    /// FINISHED); created if missing, and checked to be writable.
    #[arg(help_heading = crate::headings::DATA, long, value_parser = Utf8Path)]
    pub(crate) output_dir: Option<PathBuf>,
    /// Word count sinks wait this long per buffer they consume, µs (a slow sink).
    #[arg(help_heading = crate::headings::DATA, long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub(crate) sink_delay_us: u64,
    /// Buffers of 32 KiB per subpartition in flight: a pipelined producer's queue per
    /// subpartition and a consumer's credit per channel.
    #[arg(help_heading = crate::headings::DATA, long, default_value_t = conflux_runtime::protocol::DEFAULT_CREDIT, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub(crate) buffers_per_channel: u32,
}

impl JobArgs {
    pub(crate) fn options(&self, load_args: &LoadArgs) -> Result<JobOptions, Failure> {
        let load = load_args.options();
        let output_dir = match &self.output_dir {
            None => None,
            Some(dir) => {
                // Absolute, so that TaskManagers in other working directories write there.
                let dir = std::fs::create_dir_all(dir)
                    .and_then(|()| std::fs::canonicalize(dir))
                    .map_err(|e| Failure::input(anyhow!("--output-dir {}: {e}", dir.display())))?;
                check_utf8(&dir, "--output-dir")?;
                check_writable(&dir, "--output-dir")?;
                Some(dir)
            }
        };
        let bytes = self.batch.bytes()?;
        Ok(JobOptions {
            seed: self.seed,
            task_duration_ms: self.task_duration_ms,
            parallelism: load.parallelism,
            auto_parallelism: load.auto_parallelism,
            // Given: undecided vertices run at it; not given: they are decided at run time.
            default_parallelism: load_args
                .default_parallelism_given()
                .then_some(load.default_parallelism),
            output_dir,
            sink_delay_us: self.sink_delay_us,
            credit: self.buffers_per_channel,
            batch: self.batch.options()?.into(),
            source_bytes: bytes.source_bytes,
            skew: bytes.skew,
        })
    }
}

fn check_rate(rate: f64) -> Result<(), Failure> {
    if (0.0..=1.0).contains(&rate) {
        Ok(())
    } else {
        Err(Failure::input(anyhow!(
            "--rpc-drop-rate {rate} is not a chance between 0 and 1"
        )))
    }
}

fn check_heartbeats(h: &HeartbeatArgs) -> Result<(), Failure> {
    if h.heartbeat_timeout_ms <= h.heartbeat_interval_ms {
        return Err(Failure::input(anyhow!(
            "--heartbeat-timeout-ms {} must be above --heartbeat-interval-ms {}",
            h.heartbeat_timeout_ms,
            h.heartbeat_interval_ms
        )));
    }
    Ok(())
}

/// `conflux jobmanager`.
#[derive(clap::Args)]
pub(crate) struct JobManagerArgs {
    /// Log output.
    #[command(flatten)]
    pub(crate) log: crate::logging::LogArgs,

    /// Listen address for TaskManagers and clients (Flink's port 6123).
    #[arg(help_heading = crate::headings::SERVER, long, default_value = "127.0.0.1:6123")]
    pub(crate) address: SocketAddr,
    /// Host (or HOST:PORT; the port is ignored) TaskManagers use to reach this JobManager's blob
    /// server; default: the listen address's IP.
    #[arg(help_heading = crate::headings::SERVER, long)]
    pub(crate) advertised_address: Option<String>,
    /// The blob server's storage directory (default: a temporary directory, removed at exit).
    #[arg(help_heading = crate::headings::STORAGE, long, value_parser = Utf8Path)]
    pub(crate) blob_dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) token: TokenArgs,
    /// Connections accepted at once.
    #[arg(help_heading = crate::headings::SERVER, long, default_value_t = DEFAULT_MAX_CONNECTIONS as u64, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub(crate) max_connections: u64,
    /// Host or IP the REST API (Flink's, with `/metrics`) binds (Flink's `rest.address`;
    /// default: the host of `--address`).
    #[arg(help_heading = crate::headings::SERVER, long)]
    pub(crate) rest_address: Option<String>,
    /// Port of the REST API (Flink's `rest.port`); 0 picks a free port, printed at start.
    #[arg(help_heading = crate::headings::SERVER, long, default_value_t = 8081)]
    pub(crate) rest_port: u16,
    /// Serve Flink's web dashboard from DIR at `/` beside the REST API: the `web/` folder of
    /// Flink 1.20's flink-dist jar (`unzip flink-dist-1.20.3.jar 'web/*'`). Default: Conflux's
    /// live job view.
    #[arg(help_heading = crate::headings::SERVER, long, value_name = "DIR", value_parser = Utf8Path)]
    pub(crate) web_ui_dir: Option<PathBuf>,
    /// Seed of injected RPC drops.
    #[arg(help_heading = crate::headings::FAULTS, long, default_value_t = 0)]
    pub(crate) seed: u64,
    #[command(flatten)]
    pub(crate) heartbeat: HeartbeatArgs,
    #[command(flatten)]
    pub(crate) rpc: RpcArgs,
    #[command(flatten)]
    pub(crate) scheduler: SchedulerArgs,
    #[command(flatten)]
    pub(crate) limits: JobManagerLimitsArgs,
    #[command(flatten)]
    pub(crate) speculative: SpeculativeOptionsArgs,
    #[command(flatten)]
    pub(crate) ha: crate::ha::HaArgs,
    /// Exit when standard input closes (how `conflux cluster --job-managers N` makes sure no
    /// JobManager outlives it).
    #[arg(long, hide = true)]
    pub(crate) exit_with_parent: bool,
    /// Where submitted jobs, their results and their event logs are kept (Flink's
    /// `high-availability.storageDir`): a JobManager started on it recovers every job that has
    /// not ended, keeping the finished tasks whose partitions TaskManagers still hold (batch
    /// jobs). Under high availability (required then) the leader keeps them in its cluster
    /// id's subdirectory, which every JobManager of the cluster must see (a shared file system
    /// across hosts), with pointers in ZooKeeper. Default: nothing is kept.
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long, value_parser = Utf8Path)]
    pub(crate) ha_storage_dir: Option<PathBuf>,
    /// How long a recovered job waits for the TaskManagers that held its finished partitions
    /// to register again, ms (Flink's
    /// `execution.batch.job-recovery.previous-worker.recovery.timeout`, 30 s).
    #[arg(help_heading = crate::headings::STORAGE, long, default_value_t = conflux_runtime::config::DEFAULT_JOB_RECOVERY_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(0..=86_400_000))]
    pub(crate) previous_worker_recovery_timeout_ms: u64,
    #[command(flatten)]
    pub(crate) settings: ConfigArgs,
}

/// A flag that the command line or the configuration must give.
fn required<T>(value: Option<T>, flag: &str, key: &str) -> Result<T, Failure> {
    value.ok_or_else(|| {
        Failure::input(anyhow!(
            "{flag} (or {key} in the configuration) is required"
        ))
    })
}

/// Where the REST API binds: `host` (a name or an IP; default `default_ip`) and `port`.
fn rest_address(
    host: Option<&str>,
    default_ip: std::net::IpAddr,
    port: u16,
) -> Result<SocketAddr, Failure> {
    use std::net::ToSocketAddrs as _;
    let Some(host) = host else {
        return Ok(SocketAddr::new(default_ip, port));
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| Failure::input(anyhow!("--rest-address {host}: not an IP or a known host")))
}

/// The host part of `HOST`, `HOST:PORT` or `[V6]:PORT`.
fn host_of(address: &str) -> String {
    if let Ok(socket) = address.parse::<SocketAddr>() {
        return socket.ip().to_string();
    }
    match address.rsplit_once(':') {
        Some((host, port)) if port.parse::<u16>().is_ok() && !host.contains(':') => host.into(),
        _ => address.to_owned(),
    }
}

pub(crate) fn jobmanager_config(
    address: SocketAddr,
    blob_dir: PathBuf,
    heartbeat: &HeartbeatArgs,
    rpc: &RpcArgs,
    scheduler: SchedulerArgs,
    limits: JobManagerLimitsArgs,
    seed: u64,
) -> Result<JobManagerConfig, Failure> {
    check_heartbeats(heartbeat)?;
    check_rate(rpc.rpc_drop_rate)?;
    let mut config = JobManagerConfig::new(address, blob_dir);
    config.heartbeat.interval_ms = heartbeat.heartbeat_interval_ms;
    config.heartbeat.timeout_ms = heartbeat.heartbeat_timeout_ms;
    config.rpc.timeout_ms = rpc.rpc_timeout_ms;
    config.scheduler.work_budget = scheduler.scheduler_work_budget;
    config.scheduler.evenly_spread_out_slots = scheduler.evenly_spread_out_slots;
    config.scheduler.slot_request_timeout_ms = scheduler.slot_request.slot_request_timeout_ms;
    config.scheduler.restart = scheduler.restart.strategy()?;
    config.scheduler.seed = seed;
    config.max_job_memory_bytes = limits.max_job_memory;
    config.job_history = JobHistory {
        size: usize::try_from(limits.job_history_size).unwrap_or(usize::MAX),
        ttl_ms: limits.job_history_ttl_ms,
    };
    config.rpc.faults = RpcFaults {
        delay_ms: rpc.rpc_delay_ms,
        drop_rate: rpc.rpc_drop_rate,
        seed,
    };
    Ok(config)
}

impl JobManagerArgs {
    pub(crate) fn config(&self) -> Result<JobManagerConfig, Failure> {
        // Without --blob-dir, `jobmanager` sets its working directory once the flags are valid.
        let blob_dir = self.blob_dir.clone().unwrap_or_default();
        let mut config = jobmanager_config(
            self.address,
            blob_dir,
            &self.heartbeat,
            &self.rpc,
            self.scheduler,
            self.limits,
            self.seed,
        )?;
        config.advertised_host = self.advertised_address.as_deref().map(host_of);
        config.rpc.token = self.token.token()?;
        config.configuration.clone_from(&self.settings.effective);
        config.max_connections = usize::try_from(self.max_connections).unwrap_or(65_536);
        config.scheduler.speculative = self.speculative.options()?;
        config.rest_address = Some(rest_address(
            self.rest_address.as_deref(),
            self.address.ip(),
            self.rest_port,
        )?);
        config.web_ui_dir.clone_from(&self.web_ui_dir);
        config.storage_dir.clone_from(&self.ha_storage_dir);
        config.job_recovery_timeout_ms = self.previous_worker_recovery_timeout_ms;
        Ok(config)
    }
}

/// `conflux taskmanager`.
#[derive(clap::Args)]
pub(crate) struct TaskManagerArgs {
    /// Log output.
    #[command(flatten)]
    pub(crate) log: crate::logging::LogArgs,
    /// The JobManager's HOST:PORT (required here or as `jobmanager.rpc.address` in the
    /// configuration, unless high availability finds the leader).
    #[arg(help_heading = crate::headings::CLUSTER, long)]
    pub(crate) jobmanager: Option<String>,
    #[command(flatten)]
    pub(crate) ha: crate::ha::HaArgs,
    /// Slots offered, 1 to 65,536 (required here or as `taskmanager.numberOfTaskSlots`).
    #[arg(help_heading = crate::headings::CLUSTER, long, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub(crate) slots: Option<u32>,
    /// Working directory (blob cache, partitions); default: a temporary directory, removed at
    /// exit. Its partitions are deleted at exit either way.
    #[arg(help_heading = crate::headings::STORAGE, long, value_parser = Utf8Path)]
    pub(crate) data_dir: Option<PathBuf>,
    /// The IP its data server binds and advertises in ShuffleDescriptors (default 127.0.0.1).
    #[arg(help_heading = crate::headings::CLUSTER, long, default_value = "127.0.0.1")]
    pub(crate) advertised_address: std::net::IpAddr,
    #[command(flatten)]
    pub(crate) token: TokenArgs,
    /// Without a heartbeat request for this long the JobManager is lost, ms (default: the
    /// JobManager's heartbeat timeout).
    #[arg(help_heading = crate::headings::HEARTBEATS, long, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub(crate) heartbeat_timeout_ms: Option<u64>,
    /// Bytes of partition files its data directory may hold; a write past it fails the task as
    /// a full disk would (default: no quota).
    #[arg(help_heading = crate::headings::DATA, long)]
    pub(crate) data_dir_max_bytes: Option<u64>,
    /// How many times as long its tasks take, at least 1: a slow TaskManager, for tests and
    /// demonstrations of speculative execution (synthetic tasks sleep their duration times
    /// this; word count tasks sleep their working time times this minus 1 before finishing).
    #[arg(help_heading = crate::headings::SPECULATIVE, long, default_value_t = 1.0)]
    pub(crate) slowdown: f64,
    /// Port of its Prometheus endpoint (`GET /metrics`, on `--advertised-address`); 0: none.
    #[arg(help_heading = crate::headings::SERVER, long, default_value_t = 0)]
    pub(crate) metrics_port: u16,
    #[command(flatten)]
    pub(crate) partition_requests: PartitionRequestArgs,
    /// How long it keeps its finished partitions while it has no JobManager, ms, so that a
    /// JobManager taking over finds them; past it they are released (default 90 s: Flink's
    /// ZooKeeper session timeout plus its job recovery timeout).
    #[arg(help_heading = crate::headings::DATA, long, default_value_t = conflux_runtime::config::DEFAULT_PARTITIONS_KEPT_WITHOUT_JOBMANAGER_MS, value_parser = clap::value_parser!(u64).range(0..=86_400_000))]
    pub(crate) partitions_kept_without_jobmanager_ms: u64,
    /// Exit when standard input closes (how `conflux cluster` makes sure no TaskManager
    /// outlives it).
    #[arg(long, hide = true)]
    pub(crate) exit_with_parent: bool,
    /// Nice levels its work threads (tasks, deployments, data) run below its heartbeat thread,
    /// 0-19 (how `conflux cluster` keeps its TaskManagers from starving the JobManager on one
    /// machine while their heartbeats keep the JobManager's priority).
    #[arg(long, hide = true, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=19))]
    pub(crate) work_nice: u8,
    #[command(flatten)]
    pub(crate) settings: ConfigArgs,
}

impl TaskManagerArgs {
    pub(crate) fn config(&self) -> Result<TaskManagerConfig, Failure> {
        // Without --data-dir, `taskmanager` sets its working directory once the flags are
        // valid.
        let data_dir = self.data_dir.clone().unwrap_or_default();
        let jobmanager = match self.ha.options()? {
            Some(options) => format!("the leader of cluster id {}", options.cluster_id),
            None => required(
                self.jobmanager.clone(),
                "--jobmanager",
                "jobmanager.rpc.address",
            )?,
        };
        let slots = required(self.slots, "--slots", "taskmanager.numberOfTaskSlots")?;
        let mut config = TaskManagerConfig::new(jobmanager, slots, data_dir);
        config.advertised_host = self.advertised_address;
        config.token = self.token.token()?;
        config.heartbeat_timeout_ms = self.heartbeat_timeout_ms;
        config.data_dir_max_bytes = self.data_dir_max_bytes;
        check_slowdown(self.slowdown)?;
        config.slowdown = self.slowdown;
        config.metrics_address = (self.metrics_port != 0)
            .then(|| SocketAddr::new(self.advertised_address, self.metrics_port));
        self.partition_requests.apply(&mut config);
        config.partitions_kept_without_jobmanager_ms = self.partitions_kept_without_jobmanager_ms;
        Ok(config)
    }
}

/// How a consumer asks producers for their partitions (on `taskmanager`, and on `cluster` for
/// every TaskManager it starts), as Flink's `taskmanager.network.*` settings.
#[derive(clap::Args, Clone, Copy, Debug)]
pub(crate) struct PartitionRequestArgs {
    /// How long one partition request waits for the producer's data server to accept and
    /// welcome it, ms (Flink's `taskmanager.network.partition-request-timeout`).
    #[arg(help_heading = crate::headings::DATA, long, default_value_t = conflux_runtime::config::DEFAULT_PARTITION_REQUEST_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub(crate) partition_request_timeout_ms: u64,
    /// The first wait before a failed partition request is tried again, ms; it doubles per
    /// retry up to --partition-request-backoff-max-ms, after whose retry the consumer fails with
    /// partition-not-found; 0: no retry (Flink's `taskmanager.network.request-backoff.initial`).
    #[arg(help_heading = crate::headings::DATA, long, default_value_t = conflux_runtime::config::DEFAULT_PARTITION_REQUEST_BACKOFF_INITIAL_MS, value_parser = clap::value_parser!(u64).range(0..=3_600_000))]
    pub(crate) partition_request_backoff_initial_ms: u64,
    /// The longest wait between two tries of a partition request, ms (Flink's
    /// `taskmanager.network.request-backoff.max`).
    #[arg(help_heading = crate::headings::DATA, long, default_value_t = conflux_runtime::config::DEFAULT_PARTITION_REQUEST_BACKOFF_MAX_MS, value_parser = clap::value_parser!(u64).range(0..=3_600_000))]
    pub(crate) partition_request_backoff_max_ms: u64,
}

impl PartitionRequestArgs {
    /// Sets them on a TaskManager's configuration.
    pub(crate) fn apply(&self, config: &mut TaskManagerConfig) {
        config.partition_request_timeout_ms = self.partition_request_timeout_ms;
        config.partition_request_backoff_initial_ms = self.partition_request_backoff_initial_ms;
        config.partition_request_backoff_max_ms = self.partition_request_backoff_max_ms;
    }

    /// The same flags for a `taskmanager` child.
    pub(crate) fn to_args(self) -> [String; 6] {
        [
            "--partition-request-timeout-ms".to_owned(),
            self.partition_request_timeout_ms.to_string(),
            "--partition-request-backoff-initial-ms".to_owned(),
            self.partition_request_backoff_initial_ms.to_string(),
            "--partition-request-backoff-max-ms".to_owned(),
            self.partition_request_backoff_max_ms.to_string(),
        ]
    }
}

/// `conflux submit`.
#[derive(clap::Args)]
pub(crate) struct SubmitArgs {
    /// Job graph JSON or Flink JSON plan (`-` for standard input).
    pub(crate) file: PathBuf,
    #[command(flatten)]
    pub(crate) load: LoadArgs,
    /// The JobManager's HOST:PORT (required here, in CONFLUX_JOBMANAGER or as
    /// `jobmanager.rpc.address` in the configuration, unless high availability finds the
    /// leader).
    #[arg(help_heading = crate::headings::CLUSTER, long, env = "CONFLUX_JOBMANAGER")]
    pub(crate) jobmanager: Option<String>,
    #[command(flatten)]
    pub(crate) ha: crate::ha::HaArgs,
    #[command(flatten)]
    pub(crate) token: TokenArgs,
    #[command(flatten)]
    pub(crate) job: JobArgs,
    /// Print the job id and return instead of waiting for the job's end.
    #[arg(help_heading = crate::headings::OUTPUT, long, conflicts_with = "verify")]
    pub(crate) detached: bool,
    /// After the job, compare the sinks' files in `--output-dir` (a directory this machine
    /// shares with the TaskManagers) with the counts computed from the seeds alone (word count
    /// jobs); a wrong output exits 1.
    #[arg(help_heading = crate::headings::DATA, long, requires = "output_dir")]
    pub(crate) verify: bool,
    /// Output format.
    #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    #[command(flatten)]
    pub(crate) settings: ConfigArgs,
}

/// `conflux list`.
#[derive(clap::Args)]
pub(crate) struct ListArgs {
    /// The JobManager's HOST:PORT (without high availability).
    #[arg(help_heading = crate::headings::CLUSTER, long, env = "CONFLUX_JOBMANAGER")]
    pub(crate) jobmanager: Option<String>,
    #[command(flatten)]
    pub(crate) ha: crate::ha::HaArgs,
    /// Only running jobs (and restarting, failing, cancelling ones), as Flink's `flink list -r`.
    #[arg(short, long)]
    pub(crate) running: bool,
    /// Only scheduled jobs (queued or created, not started yet), as `flink list -s`.
    #[arg(short, long)]
    pub(crate) scheduled: bool,
    /// Every job the JobManager keeps, ended ones included, as `flink list -a`. Without `-r`,
    /// `-s` or `-a`: running and scheduled jobs (Flink's default).
    #[arg(short, long)]
    pub(crate) all: bool,
    #[command(flatten)]
    pub(crate) token: TokenArgs,
    /// Output format.
    #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

/// `conflux cancel`.
#[derive(clap::Args)]
pub(crate) struct CancelArgs {
    /// The job's id (32 hex digits, as `submit` and `list` print it).
    pub(crate) job_id: String,
    /// The JobManager's HOST:PORT (without high availability).
    #[arg(help_heading = crate::headings::CLUSTER, long, env = "CONFLUX_JOBMANAGER")]
    pub(crate) jobmanager: Option<String>,
    #[command(flatten)]
    pub(crate) ha: crate::ha::HaArgs,
    #[command(flatten)]
    pub(crate) token: TokenArgs,
}

/// `conflux status` and `conflux wait`: one job on one JobManager.
#[derive(clap::Args)]
pub(crate) struct JobQueryArgs {
    /// The job's id (32 hex digits, as `submit` and `list` print it).
    pub(crate) job_id: String,
    /// The JobManager's HOST:PORT (without high availability).
    #[arg(help_heading = crate::headings::CLUSTER, long, env = "CONFLUX_JOBMANAGER")]
    pub(crate) jobmanager: Option<String>,
    #[command(flatten)]
    pub(crate) ha: crate::ha::HaArgs,
    #[command(flatten)]
    pub(crate) token: TokenArgs,
    /// Output format.
    #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

/// `conflux cluster`.
#[derive(clap::Args)]
pub(crate) struct ClusterArgs {
    /// Log output.
    #[command(flatten)]
    pub(crate) log: crate::logging::LogArgs,

    /// Job graph JSON or Flink JSON plan (`-` for standard input).
    pub(crate) file: PathBuf,
    #[command(flatten)]
    pub(crate) load: LoadArgs,
    /// TaskManager processes to start, 1 to 256.
    #[arg(help_heading = crate::headings::CLUSTER, long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub(crate) task_managers: u32,
    /// Slots per TaskManager (default: the job's slot demand spread evenly).
    #[arg(help_heading = crate::headings::CLUSTER, long, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub(crate) slots: Option<u32>,
    #[command(flatten)]
    pub(crate) job: JobArgs,
    #[command(flatten)]
    pub(crate) scheduler: SchedulerArgs,
    /// Injected fault: SIGKILL the TaskManager with the most deployed tasks (ties: lowest id)
    /// this long after the submission, ms; it is not replaced.
    #[arg(help_heading = crate::headings::FAULTS, long)]
    pub(crate) kill_task_manager_after_ms: Option<u64>,
    /// JobManager processes to start, 1 to 16. With more than one (or with
    /// `--zookeeper-quorum`) they run as child processes under ZooKeeper high availability:
    /// one leads, the others stand by; ZooKeeper is started here when no quorum is given
    /// (Debian's `zookeeper` package). With 1 the JobManager runs in this process.
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub(crate) job_managers: u32,
    /// Injected fault: SIGKILL the leading JobManager this long after the submission, ms
    /// (counted once every TaskManager registered); a standby takes over. Needs
    /// `--job-managers` 2 or more.
    #[arg(help_heading = crate::headings::FAULTS, long)]
    pub(crate) kill_job_manager_after_ms: Option<u64>,
    #[command(flatten)]
    pub(crate) ha: crate::ha::ClusterHaArgs,
    /// The JobManager children's flags that this command line gave (those `jobmanager` also
    /// takes), filled after parsing.
    #[arg(skip)]
    pub(crate) jobmanager_flags: Vec<std::ffi::OsString>,
    #[command(flatten)]
    pub(crate) rpc: RpcArgs,
    #[command(flatten)]
    pub(crate) limits: JobManagerLimitsArgs,
    #[command(flatten)]
    pub(crate) speculative: SpeculativeArgs,
    #[command(flatten)]
    pub(crate) heartbeat: HeartbeatArgs,
    #[command(flatten)]
    pub(crate) token: TokenArgs,
    /// Per-TaskManager quota of partition files, bytes (each child's `--data-dir-max-bytes`).
    #[arg(help_heading = crate::headings::DATA, long)]
    pub(crate) data_dir_max_bytes: Option<u64>,
    #[command(flatten)]
    pub(crate) partition_requests: PartitionRequestArgs,
    /// After the job, compare the sinks' files in `--output-dir` with the counts computed from
    /// the seeds alone (word count jobs); a wrong output exits 1.
    #[arg(help_heading = crate::headings::DATA, long, requires = "output_dir")]
    pub(crate) verify: bool,
    /// Output format.
    #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    #[command(flatten)]
    pub(crate) settings: ConfigArgs,
}

impl ClusterArgs {
    /// How many times as long tasks take on TaskManager `i` (the first
    /// `--slow-task-managers` it starts are slow).
    ///
    /// # Errors
    /// An input failure for a slowdown below 1, or more slow TaskManagers than TaskManagers.
    pub(crate) fn slowdown_of(&self, i: u32) -> Result<f64, Failure> {
        let slow = &self.speculative.slow;
        check_slowdown(slow.slowdown)?;
        if slow.slow_task_managers > self.task_managers {
            return Err(Failure::input(anyhow!(
                "--slow-task-managers {} is more than --task-managers {}",
                slow.slow_task_managers,
                self.task_managers
            )));
        }
        Ok(if i < slow.slow_task_managers {
            slow.slowdown
        } else {
            1.0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn rest_addresses_default_to_the_rpc_host() {
        let ip: std::net::IpAddr = "10.1.2.3".parse().unwrap();
        assert_eq!(
            super::rest_address(None, ip, 8081).unwrap(),
            "10.1.2.3:8081".parse().unwrap()
        );
        assert_eq!(
            super::rest_address(Some("127.0.0.1"), ip, 0).unwrap(),
            "127.0.0.1:0".parse().unwrap()
        );
        assert_eq!(
            super::rest_address(Some("[::1]"), ip, 9).unwrap(),
            "[::1]:9".parse().unwrap()
        );
        assert!(super::rest_address(Some("no such host.invalid"), ip, 1).is_err());
    }

    #[test]
    fn advertised_hosts() {
        assert_eq!(host_of("10.0.0.5:6123"), "10.0.0.5");
        assert_eq!(host_of("jm.example.org"), "jm.example.org");
        assert_eq!(host_of("jm.example.org:6123"), "jm.example.org");
        assert_eq!(host_of("[::1]:6123"), "::1");
    }
}
