//! The report itself: one type for every command that runs a job.

use serde::{Deserialize, Serialize};

use crate::adaptive::AdaptiveReport;
use crate::data::DataReport;
use crate::deployment::{BlobServerReport, DescriptorsReport, FaultsInjected};
use crate::round;
use crate::speculative::SpeculativeAttemptsReport;
use crate::task_managers::{KilledTaskManager, TaskManagerReport};

/// Wall times of a run's phases, ms (rounded to 0.001). Each is `null` where the command has no
/// such phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WallMs {
    /// `run`: reading and parsing the job file.
    #[serde(serialize_with = "round::serialize_option")]
    pub parse: Option<f64>,
    /// `run`: building the execution graph (0 when the graph grows at run time: it counts in
    /// `run`).
    #[serde(serialize_with = "round::serialize_option")]
    pub graph: Option<f64>,
    /// `run`: computing the pipelined regions.
    #[serde(serialize_with = "round::serialize_option")]
    pub regions: Option<f64>,
    /// `run`: building task deployment descriptors (the JobManager's side).
    #[serde(serialize_with = "round::serialize_option")]
    pub descriptors: Option<f64>,
    /// `run`: the TaskManagers loading their input gates (blob fetches and decoding).
    #[serde(serialize_with = "round::serialize_option")]
    pub deployment: Option<f64>,
    /// `cluster`, `submit`: from the first task submission to the last task RUNNING.
    #[serde(serialize_with = "round::serialize_option")]
    pub deploy: Option<f64>,
    /// `run`: the simulation less `descriptors` and `deployment`.
    #[serde(serialize_with = "round::serialize_option")]
    pub run: Option<f64>,
    /// `run`: from the start of the command to the report; `cluster`: from its start, before
    /// spawning TaskManagers, to the job's end; `submit`: from the submission to the job's end.
    #[serde(serialize_with = "round::serialize")]
    pub total: f64,
}

/// What one job run did. Its JSON keys are a contract, documented key by key in the README's
/// report table: every key is written for every run, `null` where it does not apply.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobReport {
    /// The job's id (32 hex digits). `run`: derived from the seed, as its blobs are keyed.
    pub job_id: String,
    /// Its name.
    pub job: String,
    /// `FINISHED`, `FAILED` or `CANCELED` (`RUNNING` when a simulation stopped early).
    pub status: String,
    /// Why it failed; `null` unless it did.
    pub failure_reason: Option<String>,
    /// Wall times.
    pub wall_ms: WallMs,
    /// Execution vertices of the job (of the grown graph for an adaptive job).
    pub tasks: u64,
    /// Task submissions, restarts and speculative attempts included.
    pub tasks_deployed: u64,
    /// Restarts granted by the restart strategy.
    pub restarts: u32,
    /// Events the scheduler handled (`run`; `null` on the cluster, where events are messages).
    pub scheduler_events: Option<u64>,
    /// Virtual time at the end, ms (`run`'s simulated clock; `null` on the cluster).
    pub virtual_ms: Option<u64>,
    /// The longest single scheduler call (`Scheduler::handle` or `continue_work`), wall time,
    /// ms (preemptions included).
    #[serde(serialize_with = "round::serialize")]
    pub max_handler_stall_ms: f64,
    /// The most CPU time one scheduler call used (its thread's CPU clock), ms; `null` where the
    /// CPU clock is not read (`run`).
    #[serde(serialize_with = "round::serialize_option")]
    pub max_handler_cpu_ms: Option<f64>,
    /// Peak resident set size of the process that ran the scheduler (`run`: this process;
    /// `cluster` and `submit`: the JobManager), bytes; `null` where the platform does not tell.
    pub peak_rss_bytes: Option<u64>,
    /// The JobManager process's peak RSS, bytes (`cluster`, `submit`; the same as
    /// `peak_rss_bytes` there); `null` for `run`, which has no JobManager process.
    pub jobmanager_peak_rss_bytes: Option<u64>,
    /// FNV-1a digest of the scheduler's events and commands, 16 hex digits: equal for runs
    /// that made the same decisions (in `run`, for equal seeds).
    pub trace_digest: String,
    /// The seed of task durations and faults.
    pub seed: u64,
    /// TaskManagers that took part: started with the job or registered while it ran
    /// (replacements included), whether or not they received tasks.
    pub task_manager_count: u64,
    /// One entry per TaskManager that received tasks of this job, by id.
    pub task_managers: Vec<TaskManagerReport>,
    /// TaskManagers lost while the job ran (every cause; `run`: the injected losses).
    pub task_managers_lost: u64,
    /// Of those, the ones that missed the heartbeat timeout (`null` for `run`: no heartbeats).
    pub heartbeat_timeouts: Option<u64>,
    /// Task submissions not acknowledged within the RPC timeout (`null` for `run`: no RPC).
    pub rpc_timeouts: Option<u64>,
    /// TaskManagers that registered again while the job ran: a process that the JobManager
    /// lost, or that lost the JobManager (a cut link, missed heartbeats), registering anew
    /// once it reached the JobManager again (`null` for `run`: no registrations).
    pub re_registrations: Option<u64>,
    /// Partition requests the job's consumers tried again after a failed one, with Flink's
    /// back-off (`taskmanager.network.request-backoff.*`), before reading their data or
    /// failing with partition-not-found (`null` for `run`: no data plane).
    pub partition_request_retries: Option<u64>,
    /// The longest time from a TaskManager loss (as the JobManager's job loop took it) that
    /// restarted tasks to the submission of the first re-run attempt after it (its restarted
    /// regions running on the TaskManagers left or registered since), ms, the JobManager's
    /// clock: the restart delay and any wait for free slots included. `null` when no loss
    /// restarted tasks, and for `run`.
    #[serde(serialize_with = "round::serialize_option")]
    pub max_loss_to_redeploy_ms: Option<f64>,
    /// The longest heartbeat round trip while the job ran, ms; `null` when none was measured
    /// (and for `run`).
    #[serde(serialize_with = "round::serialize_option")]
    pub max_heartbeat_rtt_ms: Option<f64>,
    /// What the deployment descriptor factory did.
    pub descriptors: DescriptorsReport,
    /// Blobs fetched from the blob server (`run`: through any source but the TaskManager's
    /// descriptor cache) by all TaskManagers.
    pub blob_fetches: u64,
    /// Offloaded groups served from the TaskManagers' descriptor caches (`run`); `null` on the
    /// cluster, whose TaskManagers do not count them.
    pub blob_cache_hits: Option<u64>,
    /// `run`'s embedded blob server and the caches' sources; `null` on the cluster.
    pub blob_server: Option<BlobServerReport>,
    /// The faults `run` injected; `null` on the cluster (see `killed_task_manager`).
    pub faults_injected: Option<FaultsInjected>,
    /// The TaskManager `conflux cluster --kill-task-manager-after-ms` killed; `null` otherwise.
    pub killed_task_manager: Option<KilledTaskManager>,
    /// Why nothing was killed although a kill was asked for; `null` otherwise.
    pub kill_skipped: Option<String>,
    /// What speculative execution did.
    pub speculative_attempts: SpeculativeAttemptsReport,
    /// What was decided at run time (adaptive batch); its keys are top-level keys.
    #[serde(flatten)]
    pub adaptive: AdaptiveReport,
    /// What the data plane did, for jobs whose tasks move data (word count); `null` otherwise.
    pub data: Option<DataReport>,
    /// Finished tasks a JobManager that took the job over kept instead of running them again
    /// (batch job recovery); `null` unless the job was recovered.
    pub tasks_recovered: Option<u64>,
    /// Reading and replaying the recovered job's event log, ms; `null` unless the job was
    /// recovered.
    #[serde(serialize_with = "round::serialize_option")]
    pub recovery_replay_ms: Option<f64>,
    /// Times another JobManager took the leadership while the job ran (`conflux cluster`; 0
    /// with its in-process JobManager); `null` for `run` and `submit`.
    pub leader_changes: Option<u64>,
    /// From the SIGKILL of the leading JobManager (`conflux cluster
    /// --kill-job-manager-after-ms`) to the new leader's first deployment of the job's tasks,
    /// ms; `null` when no leader was killed (or the job ended first).
    #[serde(serialize_with = "round::serialize_option")]
    pub recovery_ms: Option<f64>,
}
