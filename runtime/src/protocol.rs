//! The messages JobManager, TaskManagers and clients exchange (Flink's `TaskExecutorGateway`,
//! `JobMasterGateway` and `DispatcherGateway`, reduced to what Conflux runs).
//!
//! Every message is one frame of [`connection`](crate::connection): MessagePack (rmp-serde) of
//! the types below. The first frame of a connection is a [`Hello`] and its answer a
//! [`HandshakeReply`], both behind a fixed prefix (magic `CFXR`, protocol version as `u32`
//! little-endian) that every version keeps, so that a peer of another version is refused with
//! a message naming both versions instead of a decode error.

use std::net::SocketAddr;
use std::path::PathBuf;

use bytes::Bytes;
use conflux_blob_api::JobId;
use conflux_deploy::{ExecutionAttemptId, TaskManagerId};
use serde::{Deserialize, Serialize};

pub use crate::secret::Secret;

/// The version of this protocol. A peer of another version is refused at the handshake.
/// Version 5: heartbeat connections carry their TaskManager's registration secret, task
/// submissions their job's data secret, the welcome names the jobs whose partitions a
/// TaskManager keeps, and task metrics carry the bytes read (versions 3 and 4 named builds
/// with only some of these). Version 6: heartbeat requests name the last answer received (the
/// TaskManager's commit lease), task metrics carry the partition request retries, a
/// registering TaskManager lists the finished partitions it holds
/// ([`TaskManagerRegistration::held_partitions`]), for batch job recovery, job summaries carry
/// start, end, duration and tasks by state, and a client may ask for one job's summary.
/// Version 7: the welcome carries the leader's fencing token (high availability), and a client
/// may ask how many TaskManagers are registered.
pub const PROTOCOL_VERSION: u32 = 7;

/// The first four bytes of a handshake frame.
pub const HANDSHAKE_MAGIC: [u8; 4] = *b"CFXR";

/// The first frame a connecting peer sends (after the fixed prefix).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The shared secret, when the JobManager requires one.
    pub token: Option<String>,
    /// Who connects.
    pub role: Role,
}

impl std::fmt::Debug for Hello {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret itself never shows.
        f.debug_struct("Hello")
            .field("token", &self.token.as_ref().map(|_| "******"))
            .field("role", &self.role)
            .finish()
    }
}

/// Who is connecting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// A TaskManager registering its slots (Flink's `registerTaskExecutor` and slot report).
    TaskManager(TaskManagerRegistration),
    /// A client submitting, listing or cancelling jobs (`conflux submit`, `list`, `cancel`).
    Client,
    /// A registered TaskManager's heartbeat connection: heartbeat requests and answers only, so
    /// that they never queue behind task messages on the main connection. It is attached only
    /// when all three match the registration; otherwise it is refused and the TaskManager's
    /// heartbeat connection stays as it was.
    Heartbeat {
        /// The id the JobManager gave it at registration.
        task_manager: TaskManagerId,
        /// Its process id, as registered.
        pid: u32,
        /// The secret the JobManager gave it at registration ([`Welcome::registration_secret`]).
        secret: Secret,
    },
}

/// What a TaskManager tells the JobManager when it registers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskManagerRegistration {
    /// Slots it offers (its slot report: all free at registration).
    pub slots: u32,
    /// Where its data server listens; the address its produced partitions' ShuffleDescriptors
    /// carry.
    pub data_address: SocketAddr,
    /// Its operating-system process id, for operators (and for `conflux cluster`'s kill fault).
    pub pid: u32,
    /// The finished BLOCKING partitions it holds (kept from an earlier JobManager, which died):
    /// a JobManager that recovers their job marks finished the producers whose partitions are
    /// all still held (FLIP-383); the others are released at registration.
    pub held_partitions: Vec<HeldPartition>,
}

/// A finished partition a TaskManager holds: its job, the partition, and the attempt that
/// produced it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HeldPartition {
    /// The job.
    pub job: JobId,
    /// The intermediate result (data set index).
    pub result: u32,
    /// The partition number (the producer's subtask).
    pub partition: u32,
    /// The producer's execution vertex index.
    pub vertex: u32,
    /// The producer's attempt number.
    pub attempt: u32,
}

/// The JobManager's answer to a [`Hello`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HandshakeReply {
    /// Accepted.
    Welcome(Welcome),
    /// Refused, and why (wrong token, full, ...). The connection is closed after it.
    Refused(String),
}

/// What a registered peer learns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Welcome {
    /// The id the JobManager gave a TaskManager (`None` for clients).
    pub task_manager_id: Option<TaskManagerId>,
    /// The blob server's base URL (`http://host:port`), from which offloaded data is fetched.
    pub blob_server_url: String,
    /// The heartbeat interval the JobManager uses, ms.
    pub heartbeat_interval_ms: u64,
    /// After this long without a heartbeat request the TaskManager considers its JobManager
    /// lost, ms.
    pub heartbeat_timeout_ms: u64,
    /// A registering TaskManager's secret (`None` for clients): its heartbeat connection must
    /// present it, so that no other peer can take that connection over.
    pub registration_secret: Option<Secret>,
    /// The jobs whose partitions a registering TaskManager keeps: those this JobManager
    /// recovers (a leader taking over under high availability names them). Every other job's
    /// partitions, in memory or on disk, are released at registration; without high
    /// availability the list is empty.
    pub keep_jobs: Vec<JobId>,
    /// The leader's fencing token under high availability (`None` without): a TaskManager
    /// that has seen a larger one refuses this JobManager, and one session is bound to one
    /// token, so every message on it is the leader's of that token.
    pub fencing_token: Option<u64>,
}

/// A partition named by its intermediate result and partition number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PartitionRef {
    /// The intermediate result (data set index).
    pub result: u32,
    /// The partition number (the producer's subtask).
    pub partition: u32,
}

/// How a synthetic task behaves: it loads its input gates, runs for `duration_ms`, then
/// finishes, or fails when `fail` is set. Chosen by the JobManager from its seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SyntheticTask {
    /// How long it runs, ms.
    pub duration_ms: u64,
    /// Fail at the end instead of finishing (an injected task failure).
    pub fail: bool,
    /// Its subtask index (for its metrics' labels).
    pub subtask: u32,
    /// What it reports as written when it finishes ([`TaskMetrics::produced_bytes`]), one entry
    /// per result partition it produces: parameters of the job's seeded byte model where a
    /// run-time decision reads the bytes (adaptive batch), so that a submission stays O(1)
    /// whatever the subpartition count; empty otherwise.
    pub produced_bytes: Vec<SyntheticOutput>,
}

/// The bytes a synthetic task reports for one result partition: `bytes` spread over
/// `subpartitions` with Zipf weights of exponent `skew` over a ranking drawn from `seed`
/// ([`conflux_sim::spread_bytes`]); no subpartitions: nothing reported for that partition.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SyntheticOutput {
    /// Subpartitions of the partition (at most the consumer's max parallelism, 32,768).
    pub subpartitions: u32,
    /// Bytes in all.
    pub bytes: u64,
    /// Zipf exponent (0: even).
    pub skew: f64,
    /// Seed of the subpartitions' ranking (the same for every producer of the result).
    pub seed: u64,
}

impl SyntheticOutput {
    /// The bytes per subpartition. O(subpartitions).
    pub fn bytes_per_subpartition(&self) -> Vec<u64> {
        if self.subpartitions == 0 {
            return Vec::new();
        }
        conflux_sim::spread_bytes(self.bytes, self.subpartitions, self.skew, self.seed)
    }
}

/// What a submitted task runs: a synthetic task, or a vertex's `invokable`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TaskSpec {
    /// A vertex without an invokable.
    Synthetic(SyntheticTask),
    /// A word count vertex (`wordcount-source` or `wordcount-count`).
    WordCount(WordCountTask),
}

/// Which side of the word count a task is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WordCountRole {
    /// Generates words and routes each to its consumer subtask.
    Source {
        /// The consuming vertex's max parallelism (its number of key groups), which routing
        /// needs (Flink's `KeyGroupRangeAssignment` with the downstream operator's).
        consumer_max_parallelism: u32,
    },
    /// Counts what it reads and writes its sink file.
    Count,
}

/// A word count task's settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WordCountTask {
    /// Source or count.
    pub role: WordCountRole,
    /// The task's subtask index in its vertex (its sink file's number).
    pub subtask: u32,
    /// The vertex's `config` entries (seed, vocabulary, words per source).
    pub config: Vec<(String, String)>,
    /// Where count tasks write their files (`None`: counts are not written).
    pub output_dir: Option<PathBuf>,
    /// Count tasks wait this long per buffer they consume, µs (a slow sink).
    pub sink_delay_us: u64,
    /// Buffers of 32 KiB per subpartition in flight: a pipelined producer's queue per
    /// subpartition and a consumer's credit per channel.
    pub credit: u32,
    /// Report the bytes written per subpartition ([`TaskMetrics::produced_bytes`]): set when a
    /// run-time decision reads them (adaptive batch).
    pub report_produced_bytes: bool,
}

/// What a task did, sent with its final state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskMetrics {
    /// Records it wrote to its partitions.
    pub records_out: u64,
    /// Serialised bytes it wrote to its partitions.
    pub bytes_out: u64,
    /// Records it read.
    pub records_in: u64,
    /// Serialised bytes it read from its input channels.
    pub bytes_in: u64,
    /// The most bytes its pipelined partitions held at once, waiting for consumers.
    pub peak_buffered_bytes: u64,
    /// Per result partition it produced (in the TDD's order), the bytes it wrote to each
    /// subpartition: what the adaptive batch scheduler decides from (Flink's
    /// `ResultPartitionBytes`). Empty when not measured.
    pub produced_bytes: Vec<Vec<u64>>,
    /// Partition requests it tried again (a connection to a producer's data server after a
    /// failed one, a pipelined partition asked for again), under the back-off of Flink's
    /// `taskmanager.network.request-backoff.*`; sent with every final state, FAILED included.
    pub partition_request_retries: u64,
}

/// JobManager to TaskManager.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ToTaskManager {
    /// Answer with [`ToJobManager::HeartbeatResponse`] carrying the same `seq`.
    HeartbeatRequest {
        /// Sequence number of the request.
        seq: u64,
        /// The sequence number of the last answer the JobManager received from this
        /// TaskManager (`None` before the first): the TaskManager's commit lease runs from when
        /// it sent that answer.
        answered: Option<u64>,
    },
    /// Run a task (Flink's `submitTask`): the TDD as [`conflux_deploy::encode_tdd`] wrote it.
    /// Answered with [`ToJobManager::SubmitAcknowledged`].
    SubmitTask {
        /// The encoded task deployment descriptor.
        tdd: Bytes,
        /// What the task runs.
        task: TaskSpec,
        /// The job's data secret: the TaskManager's data server serves the job's partitions
        /// only to consumers presenting it, and the task's consumers present it.
        job_secret: Secret,
    },
    /// Cancel an attempt (Flink's `cancelTask`); unknown attempts are ignored.
    CancelTask(ExecutionAttemptId),
    /// The partitions are no longer needed (Flink's `releasePartitions`).
    ReleasePartitions {
        /// Their job.
        job: JobId,
        /// The partitions.
        partitions: Vec<PartitionRef>,
    },
    /// The job ended: drop what is cached for it (descriptor groups, blobs).
    JobEnded(JobId),
    /// The JobManager drops this TaskManager (Flink's `disconnectJobManager`), and why.
    Disconnect(String),
}

/// The state a task reports (Flink's `updateTaskExecutionState`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskState {
    /// Its inputs are loaded and it runs.
    Running,
    /// It finished; its partitions are complete.
    Finished,
    /// It failed.
    Failed {
        /// Why, for logs.
        reason: String,
        /// A partition it could not read (Flink's `PartitionNotFoundException`).
        partition_not_found: Option<PartitionRef>,
        /// The failure would recur on every attempt (an output directory that is not
        /// writable, a full output disk, a data directory quota its own output exceeds): the
        /// job fails at once instead of restarting (Flink's non-recoverable error).
        non_recoverable: bool,
    },
}

/// A TaskManager's counters, sent with heartbeats and task states.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskManagerStats {
    /// Tasks submitted to it.
    pub tasks: u64,
    /// Bytes of encoded TDDs it received.
    pub tdd_bytes_received: u64,
    /// Blobs its BlobCache fetched from the blob server.
    pub blob_fetches: u64,
    /// Its peak resident set size, bytes (0 where the platform does not tell).
    pub peak_rss_bytes: u64,
}

/// TaskManager to JobManager.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToJobManager {
    /// The answer to a heartbeat request.
    HeartbeatResponse {
        /// The request's sequence number.
        seq: u64,
        /// Its counters.
        stats: TaskManagerStats,
    },
    /// A submitted task was accepted (or refused, with the reason: it then fails).
    SubmitAcknowledged {
        /// The attempt's job.
        job: JobId,
        /// The attempt.
        attempt: ExecutionAttemptId,
        /// `None` when accepted; else why not.
        refused: Option<String>,
    },
    /// A task's state changed.
    TaskStateChanged {
        /// The attempt's job.
        job: JobId,
        /// The attempt.
        attempt: ExecutionAttemptId,
        /// Its new state.
        state: TaskState,
        /// What it did (zero until it ends).
        metrics: TaskMetrics,
        /// The TaskManager's counters at that moment.
        stats: TaskManagerStats,
    },
}

/// How a submitted job runs (the synthetic task settings and input overrides).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobOptions {
    /// Seed of task durations and injected failures.
    pub seed: u64,
    /// Task durations are drawn uniformly from this inclusive range, ms.
    pub task_duration_ms: (u64, u64),
    /// Overrides every vertex's parallelism (`--parallelism`).
    pub parallelism: Option<u32>,
    /// Makes every vertex above parallelism 1 undecided (`--parallelism auto`; batch jobs).
    pub auto_parallelism: bool,
    /// Parallelism of vertices that leave it open (`--default-parallelism`).
    pub default_parallelism: Option<u32>,
    /// Where word count sinks write (`--output-dir`).
    pub output_dir: Option<PathBuf>,
    /// Word count sinks wait this long per buffer, µs (`--sink-delay-us`).
    pub sink_delay_us: u64,
    /// Buffers per subpartition in flight (`--buffers-per-channel`).
    pub credit: u32,
    /// How undecided vertices (`-1`) are decided at run time, unless
    /// [`default_parallelism`](Self::default_parallelism) fixes them.
    pub batch: BatchOptions,
    /// What synthetic tasks write, for the decisions: bytes of every source vertex over its
    /// subtasks (unless its job graph vertex says `source_bytes`).
    pub source_bytes: u64,
    /// Zipf exponent of synthetic tasks' bytes over subpartitions (0: even).
    pub skew: f64,
}

/// Flink 1.20's `execution.batch.adaptive.auto-parallelism.*` options, as submitted (see
/// [`conflux_adaptive::BatchExecutionOptions`], whose defaults these are).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchOptions {
    /// `min-parallelism`.
    pub min_parallelism: u32,
    /// `max-parallelism`.
    pub max_parallelism: u32,
    /// `avg-data-volume-per-task`, bytes.
    pub avg_data_volume_per_task: u64,
    /// `default-source-parallelism` (`None`: the max parallelism).
    pub default_source_parallelism: Option<u32>,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions::from(conflux_adaptive::BatchExecutionOptions::default())
    }
}

impl From<conflux_adaptive::BatchExecutionOptions> for BatchOptions {
    fn from(o: conflux_adaptive::BatchExecutionOptions) -> Self {
        BatchOptions {
            min_parallelism: o.min_parallelism,
            max_parallelism: o.max_parallelism,
            avg_data_volume_per_task: o.avg_data_volume_per_task,
            default_source_parallelism: o.default_source_parallelism,
        }
    }
}

impl From<BatchOptions> for conflux_adaptive::BatchExecutionOptions {
    fn from(o: BatchOptions) -> Self {
        conflux_adaptive::BatchExecutionOptions {
            min_parallelism: o.min_parallelism,
            max_parallelism: o.max_parallelism,
            avg_data_volume_per_task: o.avg_data_volume_per_task,
            default_source_parallelism: o.default_source_parallelism,
        }
    }
}

/// The most [`JobOptions::credit`] a job may ask for (and the most credit one data channel
/// holds): 1,024 buffers of 32 KiB per subpartition.
pub const MAX_CREDIT: u32 = 1_024;

/// Default of [`JobOptions::credit`]: 4 buffers of 32 KiB per subpartition (Flink's 2
/// exclusive buffers per channel plus a share of its 8 floating buffers per gate).
pub const DEFAULT_CREDIT: u32 = 4;

impl Default for JobOptions {
    fn default() -> Self {
        JobOptions {
            seed: 0,
            task_duration_ms: (1_000, 2_000),
            parallelism: None,
            auto_parallelism: false,
            default_parallelism: None,
            output_dir: None,
            sink_delay_us: 0,
            credit: DEFAULT_CREDIT,
            batch: BatchOptions::default(),
            source_bytes: DEFAULT_SOURCE_BYTES,
            skew: 0.0,
        }
    }
}

/// Default of [`JobOptions::source_bytes`]: 1 GiB per source vertex (as `conflux run`).
pub const DEFAULT_SOURCE_BYTES: u64 = 1 << 30;

/// A job as a client submits it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobSubmission {
    /// The file's bytes: job graph JSON or a Flink plan.
    pub job: Bytes,
    /// Where it came from, for messages (a file name).
    pub source: String,
    /// How it runs.
    pub options: JobOptions,
}

/// A client's request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ClientRequest {
    /// Submit a job; answered with [`ClientResponse::Submitted`].
    Submit(JobSubmission),
    /// List the jobs; answered with [`ClientResponse::Jobs`].
    List,
    /// Cancel a job; answered with [`ClientResponse::Canceled`].
    Cancel(JobId),
    /// Wait for a job to end; answered with [`ClientResponse::Report`] (as JSON).
    Wait(JobId),
    /// One job's summary; answered with [`ClientResponse::Job`] (or an error for a job the
    /// JobManager does not know). O(job vertices), never the whole job table.
    Status(JobId),
    /// How many TaskManagers are registered; answered with
    /// [`ClientResponse::TaskManagerCount`].
    TaskManagerCount,
}

/// One job as `list` and `status` show it (the fields of Flink's `JobDetails`, which
/// `/jobs/overview` lists).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSummary {
    /// Its id.
    pub job: JobId,
    /// Its name.
    pub name: String,
    /// `QUEUED` (waiting for the job before it), else its status as the REST API shows it:
    /// one of Flink's `JobStatus` names (`CREATED`, `RUNNING`, `RESTARTING` while tasks wait
    /// out a restart delay, `FAILING`, `CANCELLING`, then `FINISHED`, `FAILED` or `CANCELED`).
    pub status: String,
    /// When it was submitted, epoch ms (Flink's `start-time`).
    pub start_ms: i64,
    /// When it ended, epoch ms; -1 while it has not (Flink's `end-time`).
    pub end_ms: i64,
    /// Its end (or the JobManager's now, while it runs) minus its start, ms (Flink's
    /// `duration`).
    pub duration_ms: i64,
    /// Its tasks per state, in the order of Flink's `ExecutionState` (`CREATED`, `SCHEDULED`,
    /// `DEPLOYING`, `RUNNING`, `FINISHED`, `CANCELING`, `CANCELED`, `FAILED`, `RECONCILING`,
    /// `INITIALIZING`), as the REST view last published them.
    pub tasks: [u32; 10],
}

impl JobSummary {
    /// Whether the job ended: `FINISHED`, `FAILED`, `CANCELED` (or `SUSPENDED`), Flink's
    /// globally terminal states.
    pub fn ended(&self) -> bool {
        matches!(
            self.status.as_str(),
            "FINISHED" | "FAILED" | "CANCELED" | "SUSPENDED"
        )
    }

    /// Its tasks, all states together.
    pub fn total_tasks(&self) -> u64 {
        self.tasks.iter().map(|&n| u64::from(n)).sum()
    }

    /// Its finished tasks.
    pub fn finished_tasks(&self) -> u32 {
        self.tasks[4]
    }
}

/// The JobManager's answer to a client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientResponse {
    /// The job was accepted under this id.
    Submitted(JobId),
    /// The jobs, in submission order.
    Jobs(Vec<JobSummary>),
    /// The job is being cancelled.
    Canceled(JobId),
    /// The job's report, as JSON text (the keys of [`JobReport`](crate::JobReport)).
    Report(String),
    /// The request failed, and why.
    Error(String),
    /// One job's summary.
    Job(JobSummary),
    /// The TaskManagers registered now.
    TaskManagerCount(u64),
}
