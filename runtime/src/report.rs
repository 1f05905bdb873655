//! What a job run on the cluster did: the report `conflux submit` and `conflux cluster` print.
//! Its JSON keys are a contract (documented in the README); keep them stable.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Wall times, ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WallMs {
    /// From the first task submission to the last task RUNNING.
    pub deploy: f64,
    /// From the submission (for `cluster`: from its start, before spawning TaskManagers) to the
    /// job's terminal status.
    pub total: f64,
}

/// One TaskManager in a [`JobReport`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskManagerReport {
    /// Its id (`tm3`).
    pub id: String,
    /// Slots it offered.
    pub slots: u32,
    /// Tasks of this job submitted to it.
    pub tasks: u64,
    /// Its peak resident set size as it last reported, bytes.
    pub peak_rss_bytes: u64,
    /// Encoded TDD bytes it received (all jobs).
    pub tdd_bytes_received: u64,
    /// Blobs it fetched from the blob server (all jobs).
    pub blob_fetches: u64,
    /// Whether it was lost during the job.
    pub lost: bool,
}

/// The TaskManager `conflux cluster --kill-task-manager-after-ms` killed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KilledTaskManager {
    /// Its id.
    pub id: String,
    /// Its process id.
    pub pid: u32,
    /// Tasks deployed to it when it was killed.
    pub tasks: u64,
    /// When, ms after the submission.
    pub after_ms: u64,
}

/// What a job did on the cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobReport {
    /// The job's id (32 hex digits).
    pub job_id: String,
    /// Its name.
    pub job: String,
    /// `FINISHED`, `FAILED` or `CANCELED`.
    pub status: String,
    /// Why it failed, if it did.
    pub failure_reason: Option<String>,
    /// Wall times.
    pub wall_ms: WallMs,
    /// Execution vertices of the job.
    pub tasks: u64,
    /// Task submissions, restarts included.
    pub tasks_deployed: u64,
    /// Restarts granted by the restart strategy.
    pub restarts: u32,
    /// TaskManagers lost while the job ran (heartbeat timeouts and closed connections).
    pub task_managers_lost: u64,
    /// Of those, the ones that missed the heartbeat timeout.
    pub heartbeat_timeouts: u64,
    /// Task submissions that were not acknowledged within the RPC timeout.
    pub rpc_timeouts: u64,
    /// The longest heartbeat round trip while the job ran, ms.
    pub max_heartbeat_rtt_ms: f64,
    /// The longest single scheduler call, wall time, ms (preemptions included).
    pub max_handler_stall_ms: f64,
    /// The most CPU time a single scheduler call used (its thread's CPU time), ms.
    pub max_handler_cpu_ms: f64,
    /// The JobManager process's peak resident set size, bytes.
    pub jobmanager_peak_rss_bytes: u64,
    /// Per TaskManager that took part, by id.
    pub task_managers: Vec<TaskManagerReport>,
    /// Blobs fetched by all TaskManagers from the blob server (every offloaded group once per
    /// TaskManager when caches work).
    pub blob_fetches: u64,
    /// The killed TaskManager, if `conflux cluster` killed one.
    pub killed_task_manager: Option<KilledTaskManager>,
    /// Why nothing was killed although a kill was asked for.
    pub kill_skipped: Option<String>,
    /// What the data plane did, for jobs whose tasks move data (word count); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<DataReport>,
    /// What was decided at run time (adaptive batch), or why undecided vertices ran at their
    /// estimate; absent for a job without undecided vertices.
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveJobReport>,
}

/// What an adaptive batch job decided at run time; the keys of `conflux run`'s report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdaptiveJobReport {
    /// Job vertex id -> decided parallelism, for every vertex the job graph left undecided.
    #[serde(default)]
    pub decided_parallelism: BTreeMap<String, u32>,
    /// Job vertex id -> bytes its subtasks read, for every vertex decided from its inputs'
    /// bytes (the producers' reports over the subpartition ranges each subtask reads).
    #[serde(default)]
    pub bytes_per_task: BTreeMap<String, BytesPerTask>,
    /// Subpartitions far above their input's average bytes per subtask.
    #[serde(default)]
    pub skewed_subpartitions: SkewedSubpartitions,
    /// Job vertex id -> per subtask, the subpartitions `[first, last]` it reads of its one input
    /// (vertices decided from a single input), as its deployment descriptors carry them.
    #[serde(default)]
    pub consumed_subpartitions: BTreeMap<String, Vec<[u32; 2]>>,
    /// Why undecided vertices ran at their estimate although nothing fixed them (the job cannot
    /// grow at run time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undecided_at_estimate: Option<String>,
}

/// Bytes read per subtask of one job vertex.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BytesPerTask {
    /// The fewest bytes a subtask read.
    pub min: u64,
    /// The median (the lower middle for an even count).
    pub median: u64,
    /// The most.
    pub max: u64,
}

/// The skewed subpartitions the decisions found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkewedSubpartitions {
    /// How many.
    pub count: u64,
    /// The largest few (at most [`SKEWED_LISTED`]), largest first.
    pub largest: Vec<SkewedSubpartition>,
}

/// Skewed subpartitions listed in a report.
pub const SKEWED_LISTED: usize = 10;

/// One skewed subpartition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkewedSubpartition {
    /// The consuming job vertex.
    pub vertex: String,
    /// The producing job vertex.
    pub producer: String,
    /// The subpartition index.
    pub subpartition: u32,
    /// Its bytes, summed over producers.
    pub bytes: u64,
    /// The input's bytes per consumer subtask.
    pub average_bytes_per_task: u64,
}

impl AdaptiveJobReport {
    /// What `scheduler` decided, or the reason the job ran at its estimate; `None` for a job
    /// that left nothing undecided. O(decided subtasks log) for the medians.
    pub(crate) fn collect(
        scheduler: &conflux_scheduler::Scheduler,
        undecided_at_estimate: Option<String>,
    ) -> Option<AdaptiveJobReport> {
        if !scheduler.is_adaptive() {
            return undecided_at_estimate.map(|reason| AdaptiveJobReport {
                undecided_at_estimate: Some(reason),
                ..AdaptiveJobReport::default()
            });
        }
        let job = scheduler.graph().job_graph();
        let mut report = AdaptiveJobReport::default();
        let mut skewed = Vec::new();
        for d in scheduler.decisions() {
            let id = job.vertex_id(d.job_vertex).to_owned();
            if d.undecided {
                report.decided_parallelism.insert(id.clone(), d.parallelism);
            }
            // A source decided in the dynamic suffix reads nothing: no bytes to tell.
            if !d.bytes_per_task.is_empty() && !job.inputs(d.job_vertex).is_empty() {
                let mut read = d.bytes_per_task.clone();
                read.sort_unstable();
                report.bytes_per_task.insert(
                    id.clone(),
                    BytesPerTask {
                        min: read[0],
                        median: read[(read.len() - 1) / 2],
                        max: read[read.len() - 1],
                    },
                );
            }
            if let [infos] = d.input_infos.as_slice() {
                report.consumed_subpartitions.insert(
                    id.clone(),
                    infos
                        .iter()
                        .map(|i| [i.subpartition_range.start, i.subpartition_range.end])
                        .collect(),
                );
            }
            for s in &d.skewed_subpartitions {
                let edge = job.edge(job.inputs(d.job_vertex)[s.input]);
                skewed.push(SkewedSubpartition {
                    vertex: id.clone(),
                    producer: job.vertex_id(edge.source).to_owned(),
                    subpartition: s.subpartition,
                    bytes: s.bytes,
                    average_bytes_per_task: s.average_bytes_per_task,
                });
            }
        }
        skewed.sort_by_key(|s| std::cmp::Reverse(s.bytes));
        report.skewed_subpartitions.count = skewed.len() as u64;
        skewed.truncate(SKEWED_LISTED);
        report.skewed_subpartitions.largest = skewed;
        Some(report)
    }
}

/// The data plane's numbers of a job whose tasks move data.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DataReport {
    /// Words the count tasks counted (their last attempts).
    pub words: u64,
    /// Serialised bytes written to result partitions, by every attempt (re-runs included).
    pub shuffle_bytes: u64,
    /// `shuffle_bytes` over the time from the first source RUNNING to the last count FINISHED
    /// (JobManager clock), MB (10^6 bytes) per second.
    pub shuffle_mb_per_s: f64,
    /// That time, ms.
    pub shuffle_ms: f64,
    /// The most bytes one producer's pipelined partition held waiting for consumers.
    pub peak_buffered_bytes: u64,
    /// The bound of that: subpartitions x credit x 32 KiB of the widest producer.
    pub buffered_bytes_bound: u64,
    /// Per job vertex id, attempts started beyond one per subtask (tasks re-run).
    pub reruns: std::collections::BTreeMap<String, u64>,
    /// Whether the sinks' files hold exactly the expected counts (`conflux cluster --verify`);
    /// absent when not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_verified: Option<bool>,
    /// The first difference found when the output is wrong (subtask, word, expected, found).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<String>,
}

/// The report as JSON text.
///
/// # Errors
/// Never for reports this crate builds (non-finite numbers aside); the message otherwise.
pub fn to_json(report: &JobReport) -> Result<String, String> {
    serde_json::to_string(report).map_err(|e| e.to_string())
}

/// Reads a report that [`to_json`] wrote.
///
/// # Errors
/// The parser's message when the text is not a report.
pub fn from_json(text: &str) -> Result<JobReport, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}
