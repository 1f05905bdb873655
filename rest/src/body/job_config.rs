//! `/jobs/:jobid/config`.

use serde::Serialize;
use utoipa::ToSchema;

/// `GET /jobs/:jobid/config` (Flink's `JobConfigInfo`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct JobConfig {
    /// The JobID.
    pub jid: String,
    /// The job's name.
    pub name: String,
    /// Its execution settings.
    #[serde(rename = "execution-config")]
    pub execution_config: ExecutionConfig,
}

/// A job's execution settings (Flink's `JobConfigInfo.ExecutionConfigInfo`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct ExecutionConfig {
    /// Flink's `ExecutionMode`: always `PIPELINED` (Flink's default; batch exchanges are
    /// chosen per edge by their result partition type).
    #[serde(rename = "execution-mode")]
    pub execution_mode: String,
    /// The restart strategy as Flink describes it; `Cluster level default restart strategy`
    /// when the job sets none (Conflux's strategies are the JobManager's).
    #[serde(rename = "restart-strategy")]
    pub restart_strategy: String,
    /// The job's default parallelism; -1, Flink's "not set" (each Conflux vertex has its own).
    #[serde(rename = "job-parallelism")]
    pub job_parallelism: i64,
    /// Whether objects are reused between operators: `false`.
    #[serde(rename = "object-reuse-mode")]
    pub object_reuse_mode: bool,
    /// The user's global job parameters: none.
    #[serde(rename = "user-config")]
    pub user_config: std::collections::BTreeMap<String, String>,
}
