//! `/jobs/:jobid`, `/plan`, `/exceptions` and `/execution-result`.

use serde::Serialize;
use utoipa::ToSchema;

use super::{IoMetrics, JobTimestamps, TaskCounts};
use crate::states::{ExecutionState, JobStatus};

/// `GET /jobs/:jobid` (Flink's `JobDetailsInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct JobDetails {
    /// The JobID.
    pub jid: String,
    /// The job's name.
    pub name: String,
    /// Whether it can be stopped with a savepoint (false).
    #[serde(rename = "isStoppable")]
    pub is_stoppable: bool,
    /// Its status.
    pub state: JobStatus,
    /// `STREAMING` or `BATCH`.
    #[serde(rename = "job-type")]
    pub job_type: String,
    /// When it was submitted (its INITIALIZING timestamp), epoch ms.
    #[serde(rename = "start-time")]
    pub start_time: i64,
    /// When it ended, epoch ms; -1 while it has not.
    #[serde(rename = "end-time")]
    pub end_time: i64,
    /// From start to end (or now), ms.
    pub duration: i64,
    /// The job's max parallelism: -1 (set per vertex).
    #[serde(rename = "maxParallelism")]
    pub max_parallelism: i64,
    /// The time of this answer, epoch ms.
    pub now: i64,
    /// When the job entered each status.
    pub timestamps: JobTimestamps,
    /// Its vertices, in topological order.
    pub vertices: Vec<JobVertexSummary>,
    /// Job vertices per aggregate state.
    #[serde(rename = "status-counts")]
    pub status_counts: TaskCounts,
    /// Its plan, as `/jobs/:jobid/plan` gives it.
    pub plan: Plan,
}

/// A vertex of `/jobs/:jobid` (Flink's `JobDetailsInfo.JobVertexDetailsInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct JobVertexSummary {
    /// The JobVertexID.
    pub id: String,
    /// Its slot sharing group's id.
    #[serde(rename = "slotSharingGroupId")]
    pub slot_sharing_group_id: String,
    /// Its name.
    pub name: String,
    /// Its max parallelism.
    #[serde(rename = "maxParallelism")]
    pub max_parallelism: i64,
    /// Its parallelism (-1 while undecided).
    pub parallelism: i64,
    /// The aggregate of its tasks' states.
    pub status: ExecutionState,
    /// Its first task's deployment, epoch ms; -1 before.
    #[serde(rename = "start-time")]
    pub start_time: i64,
    /// When its last task ended, once all have; else -1.
    #[serde(rename = "end-time")]
    pub end_time: i64,
    /// From start to end (or now), ms; -1 before the start.
    pub duration: i64,
    /// Its tasks per state.
    pub tasks: TaskCounts,
    /// Its tasks' I/O, summed.
    pub metrics: IoMetrics,
}

/// `GET /jobs/:jobid/plan` (Flink's `JobPlanInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct JobPlan {
    /// The plan.
    pub plan: Plan,
}

/// A job's plan, as Flink's `JsonPlanGenerator` writes it.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct Plan {
    /// The JobID.
    pub jid: String,
    /// The job's name.
    pub name: String,
    /// `STREAMING` or `BATCH`.
    #[serde(rename = "type")]
    pub job_type: String,
    /// One node per job vertex, sinks first (Flink's order).
    pub nodes: Vec<PlanNode>,
}

/// A job vertex in the plan.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct PlanNode {
    /// The JobVertexID.
    pub id: String,
    /// Its parallelism (-1 while undecided).
    pub parallelism: i64,
    /// Empty, as Flink's streaming plans.
    pub operator: String,
    /// Empty, as Flink's streaming plans.
    pub operator_strategy: String,
    /// Its description (the vertex's name, or its description when it has one).
    pub description: String,
    /// Its inputs; absent for a source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Vec<PlanInput>>,
    /// Nothing (`{}`).
    #[schema(value_type = Object)]
    pub optimizer_properties: serde_json::Map<String, serde_json::Value>,
}

/// An input of a plan node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct PlanInput {
    /// Its position among the node's inputs.
    pub num: u32,
    /// The producing vertex's JobVertexID.
    pub id: String,
    /// The partitioner (`FORWARD`, `HASH`, `REBALANCE`, ...).
    pub ship_strategy: String,
    /// The result partition type in lower case (`pipelined_bounded`, `blocking`, ...).
    pub exchange: String,
}

/// `GET /jobs/:jobid/exceptions` (Flink's `JobExceptionsInfoWithHistory`).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct JobExceptions {
    /// The latest failure as text; null when nothing failed.
    #[serde(rename = "root-exception")]
    pub root_exception: Option<String>,
    /// When it happened, epoch ms; null when nothing failed.
    pub timestamp: Option<i64>,
    /// Task failures, latest first (Flink's deprecated list).
    #[serde(rename = "all-exceptions")]
    pub all_exceptions: Vec<LegacyExceptionInfo>,
    /// Whether older task failures were left out.
    pub truncated: bool,
    /// The failures, latest first.
    #[serde(rename = "exceptionHistory")]
    pub exception_history: ExceptionHistory,
}

/// A task failure in the deprecated list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct LegacyExceptionInfo {
    /// The failure as text.
    pub exception: String,
    /// `<vertex> (<subtask + 1>/<parallelism>)`.
    pub task: String,
    /// Its TaskManager's data endpoint.
    pub location: String,
    /// The same.
    pub endpoint: String,
    /// When it failed, epoch ms.
    pub timestamp: i64,
    /// Its TaskManager.
    #[serde(rename = "taskManagerId")]
    pub task_manager_id: String,
}

/// The exception history.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ExceptionHistory {
    /// Failures, latest first (at most Flink's `web.exception-history-size`, 16).
    pub entries: Vec<RootExceptionInfo>,
    /// Whether older failures were left out.
    pub truncated: bool,
}

/// A failure in the history, with the failures that happened with it.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct RootExceptionInfo {
    /// The failure.
    #[serde(flatten)]
    pub exception: ExceptionInfo,
    /// Failures handled together with it.
    #[serde(rename = "concurrentExceptions")]
    pub concurrent_exceptions: Vec<ExceptionInfo>,
}

/// A failure: Conflux names its kinds `conflux.TaskFailure` (a task reported FAILED, its
/// submission was refused or not acknowledged) and `conflux.JobFailure` (the job gave up).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ExceptionInfo {
    /// The failure's kind.
    #[serde(rename = "exceptionName")]
    pub exception_name: String,
    /// `<kind>: <reason>`.
    pub stacktrace: String,
    /// When it happened, epoch ms.
    pub timestamp: i64,
    /// Labels (none).
    #[serde(rename = "failureLabels")]
    #[schema(value_type = Object)]
    pub failure_labels: serde_json::Map<String, serde_json::Value>,
    /// The failed task (`<vertex> (<i>/<n>) - execution #<attempt>`); absent for a job failure.
    #[serde(rename = "taskName", skip_serializing_if = "Option::is_none")]
    pub task_name: Option<String>,
    /// Its TaskManager's data endpoint; absent for a job failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Its TaskManager; absent for a job failure.
    #[serde(rename = "taskManagerId", skip_serializing_if = "Option::is_none")]
    pub task_manager_id: Option<String>,
}

/// `GET /jobs/:jobid/execution-result` (Flink's `JobExecutionResultResponseBody`).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct JobExecutionResult {
    /// `IN_PROGRESS` until the job ends, then `COMPLETED`.
    pub status: QueueStatus,
    /// The result once the job ended.
    #[serde(
        rename = "job-execution-result",
        skip_serializing_if = "Option::is_none"
    )]
    pub job_execution_result: Option<ExecutionResult>,
}

/// Flink's `QueueStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct QueueStatus {
    /// The status.
    pub id: QueueStatusId,
}

/// Whether an asynchronous result is ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum QueueStatusId {
    /// Not yet.
    InProgress,
    /// Ready.
    Completed,
}

/// An ended job's result (Flink's `JobResult` as `JobResultSerializer` writes it).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ExecutionResult {
    /// The JobID.
    pub id: String,
    /// `SUCCEEDED`, `FAILED` or `CANCELED`.
    #[serde(rename = "application-status")]
    pub application_status: String,
    /// Accumulators (none).
    #[serde(rename = "accumulator-results")]
    #[schema(value_type = Object)]
    pub accumulator_results: serde_json::Map<String, serde_json::Value>,
    /// From submission to end, ms.
    #[serde(rename = "net-runtime")]
    pub net_runtime: i64,
    /// Why a FAILED job failed; absent otherwise.
    #[serde(rename = "failure-cause", skip_serializing_if = "Option::is_none")]
    pub failure_cause: Option<FailureCause>,
}

/// Flink's serialised `SerializedThrowable`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct FailureCause {
    /// The failure's kind (`conflux.JobFailure`).
    pub class: String,
    /// `<kind>: <reason>`.
    #[serde(rename = "stack-trace")]
    pub stack_trace: String,
    /// A Java-serialised `org.apache.flink.util.SerializedThrowable` carrying the same, base64
    /// (what Flink's client deserialises).
    #[serde(rename = "serialized-throwable")]
    pub serialized_throwable: String,
}
