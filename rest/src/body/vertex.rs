//! `/jobs/:jobid/vertices/:vertexid` and its `subtasktimes`, and the I/O metrics every vertex
//! and subtask carries.

use serde::Serialize;
use utoipa::ToSchema;

use super::{StatusDuration, TaskTimestamps};
use crate::states::ExecutionState;

/// A task's or vertex's I/O (Flink's `IOMetricsInfo`): bytes and records read and written, each
/// with whether every task's figure is in (Conflux's tasks report theirs when they finish, so a
/// figure is complete once every task finished); the accumulated times are neutral (0).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[allow(missing_docs)]
pub struct IoMetrics {
    #[serde(rename = "read-bytes")]
    pub read_bytes: i64,
    #[serde(rename = "read-bytes-complete")]
    pub read_bytes_complete: bool,
    #[serde(rename = "write-bytes")]
    pub write_bytes: i64,
    #[serde(rename = "write-bytes-complete")]
    pub write_bytes_complete: bool,
    #[serde(rename = "read-records")]
    pub read_records: i64,
    #[serde(rename = "read-records-complete")]
    pub read_records_complete: bool,
    #[serde(rename = "write-records")]
    pub write_records: i64,
    #[serde(rename = "write-records-complete")]
    pub write_records_complete: bool,
    #[serde(rename = "accumulated-backpressured-time")]
    pub accumulated_backpressured_time: i64,
    #[serde(rename = "accumulated-idle-time")]
    pub accumulated_idle_time: i64,
    #[serde(rename = "accumulated-busy-time")]
    pub accumulated_busy_time: f64,
}

/// `GET /jobs/:jobid/vertices/:vertexid` (Flink's `JobVertexDetailsInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct VertexDetails {
    /// The JobVertexID.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its parallelism (-1 while undecided).
    pub parallelism: i64,
    /// Its max parallelism.
    #[serde(rename = "maxParallelism")]
    pub max_parallelism: i64,
    /// The time of this answer, epoch ms.
    pub now: i64,
    /// Its subtasks' current attempts.
    pub subtasks: Vec<SubtaskDetails>,
    /// Statistics over the subtasks.
    pub aggregated: AggregatedDetails,
}

/// A subtask's current attempt (Flink's `SubtaskExecutionAttemptDetailsInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct SubtaskDetails {
    /// Its index.
    pub subtask: u32,
    /// Its state.
    pub status: ExecutionState,
    /// Its attempt number (0 first).
    pub attempt: u32,
    /// Its TaskManager's host, or `(unassigned)`.
    pub host: String,
    /// Its TaskManager's data endpoint, or `(unassigned)`.
    pub endpoint: String,
    /// Its deployment, epoch ms; -1 before.
    #[serde(rename = "start-time")]
    pub start_time: i64,
    /// When it ended, epoch ms; -1 while it has not.
    #[serde(rename = "end-time")]
    pub end_time: i64,
    /// From start to end (or now), ms; -1 before the start.
    pub duration: i64,
    /// Its I/O.
    pub metrics: IoMetrics,
    /// Its TaskManager's id, or `(unassigned)`.
    #[serde(rename = "taskmanager-id")]
    pub taskmanager_id: String,
    /// Time spent in each state up to RUNNING.
    #[serde(rename = "status-duration")]
    pub status_duration: StatusDuration,
    /// `start-time` again (Flink's deprecated name).
    #[serde(rename = "start_time")]
    pub start_time_deprecated: i64,
}

/// Statistics of a vertex's subtasks (Flink 1.18+'s `AggregatedTaskDetailsInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct AggregatedDetails {
    /// Of each I/O figure.
    pub metrics: AggregatedMetrics,
    /// Of each state's duration (subtasks that reached the state).
    #[serde(rename = "status-duration")]
    pub status_duration: AggregatedStatusDuration,
}

/// Statistics of each I/O figure.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[allow(missing_docs)]
pub struct AggregatedMetrics {
    #[serde(rename = "read-bytes")]
    pub read_bytes: Statistics,
    #[serde(rename = "write-bytes")]
    pub write_bytes: Statistics,
    #[serde(rename = "read-records")]
    pub read_records: Statistics,
    #[serde(rename = "write-records")]
    pub write_records: Statistics,
    #[serde(rename = "accumulated-backpressured-time")]
    pub accumulated_backpressured_time: Statistics,
    #[serde(rename = "accumulated-idle-time")]
    pub accumulated_idle_time: Statistics,
    #[serde(rename = "accumulated-busy-time")]
    pub accumulated_busy_time: Statistics,
}

/// Statistics of each state's duration.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[allow(missing_docs)]
pub struct AggregatedStatusDuration {
    #[serde(rename = "CREATED")]
    pub created: Statistics,
    #[serde(rename = "SCHEDULED")]
    pub scheduled: Statistics,
    #[serde(rename = "DEPLOYING")]
    pub deploying: Statistics,
    #[serde(rename = "INITIALIZING")]
    pub initializing: Statistics,
    #[serde(rename = "RUNNING")]
    pub running: Statistics,
}

/// Min, max, mean, sum and percentiles of values (Flink's `StatsSummary` as the vertex
/// details write it: integers; percentiles as Apache Commons Math's default estimation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
#[allow(missing_docs)]
pub struct Statistics {
    pub min: i64,
    pub max: i64,
    pub avg: i64,
    pub sum: i64,
    pub median: i64,
    pub p25: i64,
    pub p75: i64,
    pub p95: i64,
}

impl Statistics {
    /// The statistics of `values` (sorted in place); all zero for none. O(n log n).
    pub fn of(values: &mut [i64]) -> Statistics {
        if values.is_empty() {
            return Statistics::default();
        }
        values.sort_unstable();
        let sum: i64 = values.iter().fold(0i64, |s, v| s.saturating_add(*v));
        let n = values.len();
        Statistics {
            min: values[0],
            max: values[n - 1],
            avg: sum / i64::try_from(n).unwrap_or(i64::MAX),
            sum,
            median: percentile(values, 50.0),
            p25: percentile(values, 25.0),
            p75: percentile(values, 75.0),
            p95: percentile(values, 95.0),
        }
    }
}

/// Apache Commons Math's `Percentile` (default estimation) of sorted, non-empty `values`: the
/// position `p (n + 1) / 100`, clamped to the ends, interpolated linearly, truncated.
fn percentile(values: &[i64], p: f64) -> i64 {
    let n = values.len();
    let pos = p * (n as f64 + 1.0) / 100.0;
    if pos < 1.0 {
        return values[0];
    }
    if pos >= n as f64 {
        return values[n - 1];
    }
    let lower_index = pos.floor();
    let fraction = pos - lower_index;
    // `pos` is in [1, n), so its floor indexes a value and the next one exists.
    #[allow(clippy::cast_possible_truncation)]
    let lower = values[lower_index as usize - 1] as f64;
    #[allow(clippy::cast_possible_truncation)]
    let upper = values[lower_index as usize] as f64;
    #[allow(clippy::cast_possible_truncation)]
    let value = (lower + fraction * (upper - lower)) as i64;
    value
}

/// `GET /jobs/:jobid/vertices/:vertexid/subtasktimes` (Flink's `SubtasksTimesInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct SubtasksTimes {
    /// The JobVertexID.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The time of this answer, epoch ms.
    pub now: i64,
    /// Per subtask, when its current attempt entered each state.
    pub subtasks: Vec<SubtaskTimes>,
}

/// One subtask's times.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct SubtaskTimes {
    /// Its index.
    pub subtask: u32,
    /// Its TaskManager's host, or `(unassigned)`.
    pub host: String,
    /// Its TaskManager's data endpoint, or `(unassigned)`.
    pub endpoint: String,
    /// From SCHEDULED to its end (or now), ms; -1 before it was scheduled.
    pub duration: i64,
    /// When it entered each state, epoch ms (0: never).
    pub timestamps: TaskTimestamps,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_match_flinks_captured_answer() {
        // write-records of a vertex with two subtasks, in a Flink 1.20.3 answer.
        let stats = Statistics::of(&mut [21800, 21637]);
        assert_eq!(
            stats,
            Statistics {
                min: 21637,
                max: 21800,
                avg: 21718,
                sum: 43437,
                median: 21718,
                p25: 21637,
                p75: 21800,
                p95: 21800
            }
        );
        let idle = Statistics::of(&mut [0, 2]);
        assert_eq!((idle.avg, idle.median, idle.p25, idle.p75), (1, 1, 0, 2));
        assert_eq!(Statistics::of(&mut []), Statistics::default());
        // Commons Math on 1..=10: p25 at position 2.75 is 2.75, p95 at 10.45 clamps to 10.
        let mut ten: Vec<i64> = (1..=10).collect();
        let s = Statistics::of(&mut ten);
        assert_eq!((s.p25, s.median, s.p75, s.p95), (2, 5, 8, 10));
    }
}
