//! A job's summary as `list` and `status` show it: state, start time (RFC 3339, UTC), duration
//! and tasks by state (Flink's `JobDetails`, as `/jobs/overview` and `flink list` show them).

use std::time::{Duration, UNIX_EPOCH};

use conflux_runtime::protocol::JobSummary;

/// Flink's `ExecutionState` names, in the order of [`JobSummary::tasks`].
pub(crate) const EXECUTION_STATES: [&str; 10] = [
    "CREATED",
    "SCHEDULED",
    "DEPLOYING",
    "RUNNING",
    "FINISHED",
    "CANCELING",
    "CANCELED",
    "FAILED",
    "RECONCILING",
    "INITIALIZING",
];

/// Which jobs `list` shows, as Flink's `flink list`: `scheduled` are those not started yet
/// (`QUEUED`, `CREATED`, `INITIALIZING`), `running` the others that did not end, the rest ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Selection {
    pub(crate) running: bool,
    pub(crate) scheduled: bool,
    pub(crate) ended: bool,
}

impl Selection {
    /// From `-r`, `-s`, `-a`: all with `-a`; with neither `-r` nor `-s`, running and scheduled
    /// (Flink's default).
    pub(crate) fn from_flags(running: bool, scheduled: bool, all: bool) -> Selection {
        if all {
            return Selection {
                running: true,
                scheduled: true,
                ended: true,
            };
        }
        let neither = !running && !scheduled;
        Selection {
            running: running || neither,
            scheduled: scheduled || neither,
            ended: false,
        }
    }

    /// Whether `job` is shown.
    pub(crate) fn shows(self, job: &JobSummary) -> bool {
        if job.ended() {
            self.ended
        } else if is_scheduled(job) {
            self.scheduled
        } else {
            self.running
        }
    }
}

/// Not started yet: queued behind another job, or created and not running.
fn is_scheduled(job: &JobSummary) -> bool {
    matches!(job.status.as_str(), "QUEUED" | "CREATED" | "INITIALIZING")
}

/// An epoch ms as RFC 3339 UTC to the second (`2026-12-05T05:50:01Z`); `-` when unknown (<= 0).
pub(crate) fn time(epoch_ms: i64) -> String {
    match u64::try_from(epoch_ms) {
        Ok(ms) if ms > 0 => {
            humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
        }
        _ => "-".to_owned(),
    }
}

/// A duration in ms, short: `850ms`, `12.3s`, `4m 05s`, `2h 03m`.
pub(crate) fn duration(ms: i64) -> String {
    let ms = ms.max(0);
    if ms < 1_000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1_000.0)
    } else if ms < 3_600_000 {
        format!("{}m {:02}s", ms / 60_000, ms % 60_000 / 1_000)
    } else {
        format!("{}h {:02}m", ms / 3_600_000, ms % 3_600_000 / 60_000)
    }
}

/// The states that have tasks, in Flink's order: `RUNNING 3, FINISHED 5`; `no tasks` when none.
pub(crate) fn states(job: &JobSummary) -> String {
    let parts: Vec<String> = EXECUTION_STATES
        .iter()
        .zip(job.tasks)
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| format!("{s} {n}"))
        .collect();
    if parts.is_empty() {
        "no tasks".to_owned()
    } else {
        parts.join(", ")
    }
}

/// The summary's keys in `--format json`: `job_id`, `name`, `status`, `start_time_ms`,
/// `end_time_ms` (-1 while it runs), `duration_ms`, `tasks` (every Flink `ExecutionState` name
/// with its count), `tasks_total`, `tasks_finished`.
pub(crate) fn json(job: &JobSummary) -> serde_json::Value {
    let tasks: serde_json::Map<String, serde_json::Value> = EXECUTION_STATES
        .iter()
        .zip(job.tasks)
        .map(|(s, n)| ((*s).to_owned(), n.into()))
        .collect();
    serde_json::json!({
        "job_id": job.job.to_string(),
        "name": job.name,
        "status": job.status,
        "start_time_ms": job.start_ms,
        "end_time_ms": job.end_ms,
        "duration_ms": job.duration_ms,
        "tasks": tasks,
        "tasks_total": job.total_tasks(),
        "tasks_finished": job.finished_tasks(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(status: &str, tasks: [u32; 10]) -> JobSummary {
        JobSummary {
            job: conflux_blob::JobId([7; 16]),
            name: "j".into(),
            status: status.into(),
            start_ms: 1_764_913_801_000,
            end_ms: -1,
            duration_ms: 1_500,
            tasks,
        }
    }

    #[test]
    fn flink_list_defaults_to_running_and_scheduled() {
        let jobs = [
            job("QUEUED", [0; 10]),
            job("CREATED", [0; 10]),
            job("RUNNING", [0; 10]),
            job("RESTARTING", [0; 10]),
            job("FINISHED", [0; 10]),
            job("CANCELED", [0; 10]),
        ];
        let shown = |s: Selection| -> Vec<&str> {
            jobs.iter()
                .filter(|j| s.shows(j))
                .map(|j| j.status.as_str())
                .collect()
        };
        let default = Selection::from_flags(false, false, false);
        assert_eq!(
            shown(default),
            ["QUEUED", "CREATED", "RUNNING", "RESTARTING"]
        );
        assert_eq!(
            shown(Selection::from_flags(true, false, false)),
            ["RUNNING", "RESTARTING"]
        );
        assert_eq!(
            shown(Selection::from_flags(false, true, false)),
            ["QUEUED", "CREATED"]
        );
        assert_eq!(shown(Selection::from_flags(false, false, true)).len(), 6);
    }

    #[test]
    fn times_durations_and_states_read_as_written() {
        assert_eq!(time(1_764_913_801_234), "2025-12-05T05:50:01Z");
        assert_eq!(time(-1), "-");
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(12_345), "12.3s");
        assert_eq!(duration(245_000), "4m 05s");
        assert_eq!(duration(7_380_000), "2h 03m");
        let mut tasks = [0; 10];
        tasks[3] = 3;
        tasks[4] = 5;
        let j = job("RUNNING", tasks);
        assert_eq!(states(&j), "RUNNING 3, FINISHED 5");
        assert_eq!(states(&job("QUEUED", [0; 10])), "no tasks");
        let v = json(&j);
        assert_eq!(v["tasks"]["RUNNING"], 3);
        assert_eq!(v["tasks"]["RECONCILING"], 0);
        assert_eq!(v["tasks_total"], 8);
        assert_eq!(v["tasks_finished"], 5);
        assert_eq!(v["end_time_ms"], -1);
    }
}
