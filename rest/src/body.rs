//! The response bodies, with Flink 1.20's keys, value types and enums (checked key by key
//! against answers captured from Flink 1.20.3 in `fixtures/flink-rest/`). Maps keyed by states
//! are structs with one field per state, so the OpenAPI document names every key.

mod cluster;
mod job;
mod job_config;
mod jobs;
mod metrics;
mod per_state;
mod vertex;

pub use cluster::{
    AllocatedSlot, ClusterConfigEntry, ClusterOverview, DashboardConfiguration, Features,
    GarbageCollector, Hardware, MemoryConfiguration, Resource, TaskManagerDetails, TaskManagerInfo,
    TaskManagerMetrics, TaskManagers,
};
pub use job::{
    ExceptionHistory, ExceptionInfo, ExecutionResult, FailureCause, JobDetails, JobExceptions,
    JobExecutionResult, JobPlan, JobVertexSummary, LegacyExceptionInfo, Plan, PlanInput, PlanNode,
    QueueStatus, QueueStatusId, RootExceptionInfo,
};
pub use job_config::{ExecutionConfig, JobConfig};
pub use jobs::{JobIdWithStatus, JobOverview, JobsOverview, JobsWithStatus};
pub use metrics::{MetricValue, UserAccumulator, VertexAccumulators};
pub use per_state::{
    JobTimestamps, LowerCaseTaskCounts, StatusDuration, TaskCounts, TaskTimestamps,
};
pub use vertex::{
    AggregatedDetails, AggregatedMetrics, AggregatedStatusDuration, IoMetrics, Statistics,
    SubtaskDetails, SubtaskTimes, SubtasksTimes, VertexDetails,
};
