//! `/jobs` and `/jobs/overview`.

use serde::Serialize;
use utoipa::ToSchema;

use super::LowerCaseTaskCounts;
use crate::states::JobStatus;

/// `GET /jobs` (Flink's `JobIdsWithStatusOverview`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct JobsWithStatus {
    /// Every job the JobManager keeps, in submission order.
    pub jobs: Vec<JobIdWithStatus>,
}

/// A job's id and status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct JobIdWithStatus {
    /// The JobID, 32 hex digits.
    pub id: String,
    /// Its status.
    pub status: JobStatus,
}

/// `GET /jobs/overview` (Flink's `MultipleJobsDetails`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct JobsOverview {
    /// Every job the JobManager keeps, in submission order.
    pub jobs: Vec<JobOverview>,
}

/// A job in the overview (Flink's `JobDetails`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct JobOverview {
    /// The JobID.
    pub jid: String,
    /// The job's name.
    pub name: String,
    /// When it was submitted, epoch ms.
    #[serde(rename = "start-time")]
    pub start_time: i64,
    /// When it ended, epoch ms; -1 while it has not.
    #[serde(rename = "end-time")]
    pub end_time: i64,
    /// From start to end (or now), ms.
    pub duration: i64,
    /// Its status.
    pub state: JobStatus,
    /// When its status or a task's last changed, epoch ms.
    #[serde(rename = "last-modification")]
    pub last_modification: i64,
    /// Its tasks per state.
    pub tasks: LowerCaseTaskCounts,
}
