//! From what the JobManager published to Flink's response bodies. Every function here reads a
//! snapshot (O(job vertices)) or one copied subtask table (O(parallelism of that vertex)).

use std::time::{SystemTime, UNIX_EPOCH};

use crate::backend::{RestBackend, TaskManagerStatus};
use crate::body::*;
use crate::ids::HexId;
use crate::java_throwable::serialized_throwable_base64;
use crate::states::{ExecutionState, JobStatus};
use crate::view::{IoCounts, JobSnapshot, JobView, SubtaskRecord, SubtaskTable, VertexSnapshot};

/// The Flink version whose REST API Conflux serves.
pub const FLINK_VERSION: &str = "1.20.3";

/// Shown for a subtask not deployed, as Flink does.
const UNASSIGNED: &str = "(unassigned)";

/// Now, epoch ms.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// `GET /config`.
pub(crate) fn dashboard_configuration() -> DashboardConfiguration {
    DashboardConfiguration {
        refresh_interval: 3_000,
        timezone_name: "Coordinated Universal Time".into(),
        timezone_offset: 0,
        flink_version: FLINK_VERSION.into(),
        flink_revision: format!("conflux {}", env!("CARGO_PKG_VERSION")),
        features: Features {
            web_submit: false,
            web_cancel: true,
            web_rescale: false,
            web_history: false,
        },
    }
}

/// `GET /overview`.
pub(crate) fn overview(backend: &dyn RestBackend) -> ClusterOverview {
    let task_managers = backend.task_managers();
    let mut overview = ClusterOverview {
        taskmanagers: u32::try_from(task_managers.len()).unwrap_or(u32::MAX),
        slots_total: task_managers.iter().map(|t| t.slots).sum(),
        slots_available: task_managers
            .iter()
            .map(TaskManagerStatus::free_slots)
            .sum(),
        jobs_running: 0,
        jobs_finished: 0,
        jobs_cancelled: 0,
        jobs_failed: 0,
        flink_version: FLINK_VERSION.into(),
        flink_commit: format!("conflux-{}", env!("CARGO_PKG_VERSION")),
    };
    for job in backend.jobs() {
        match job.snapshot().status {
            JobStatus::Finished => overview.jobs_finished += 1,
            JobStatus::Canceled => overview.jobs_cancelled += 1,
            JobStatus::Failed => overview.jobs_failed += 1,
            _ => overview.jobs_running += 1,
        }
    }
    overview
}

/// `GET /jobs`.
pub(crate) fn jobs(backend: &dyn RestBackend) -> JobsWithStatus {
    JobsWithStatus {
        jobs: backend
            .jobs()
            .iter()
            .map(|job| JobIdWithStatus {
                id: job.info().id.to_string(),
                status: job.snapshot().status,
            })
            .collect(),
    }
}

/// `GET /jobs/overview`.
pub(crate) fn jobs_overview(backend: &dyn RestBackend, now: i64) -> JobsOverview {
    JobsOverview {
        jobs: backend
            .jobs()
            .iter()
            .map(|job| job_overview(job, &job.snapshot(), now))
            .collect(),
    }
}

fn job_duration(snapshot: &JobSnapshot, now: i64) -> i64 {
    let end = snapshot.end_ms();
    (if end > 0 { end } else { now }) - snapshot.start_ms()
}

fn job_overview(job: &JobView, snapshot: &JobSnapshot, now: i64) -> JobOverview {
    JobOverview {
        jid: job.info().id.to_string(),
        name: job.info().name.clone(),
        start_time: snapshot.start_ms(),
        end_time: snapshot.end_ms(),
        duration: job_duration(snapshot, now),
        state: snapshot.status,
        last_modification: snapshot.last_modification,
        tasks: LowerCaseTaskCounts::from_array(&snapshot.task_counts()),
    }
}

/// I/O figures of `tasks` tasks of which `reported` reported theirs.
fn io_metrics(io: IoCounts, reported: u32, tasks: i64) -> IoMetrics {
    let complete = tasks > 0 && i64::from(reported) >= tasks;
    IoMetrics {
        read_bytes: to_i64(io.read_bytes),
        read_bytes_complete: complete,
        write_bytes: to_i64(io.write_bytes),
        write_bytes_complete: complete,
        read_records: to_i64(io.read_records),
        read_records_complete: complete,
        write_records: to_i64(io.write_records),
        write_records_complete: complete,
        accumulated_backpressured_time: 0,
        accumulated_idle_time: 0,
        accumulated_busy_time: 0.0,
    }
}

/// Start, end and duration of a job vertex, as Flink's `JobDetailsHandler`.
fn vertex_times(v: &VertexSnapshot, now: i64) -> (i64, i64, i64) {
    if v.start_ms < 0 {
        return (-1, -1, -1);
    }
    let terminal: u32 = ExecutionState::ALL
        .iter()
        .filter(|s| s.is_terminal())
        .map(|s| v.counts[s.ordinal()])
        .sum();
    if v.parallelism > 0 && i64::from(terminal) >= v.parallelism {
        (v.start_ms, v.last_change_ms, v.last_change_ms - v.start_ms)
    } else {
        (v.start_ms, -1, now - v.start_ms)
    }
}

/// `GET /jobs/:jobid`. O(job vertices).
pub(crate) fn job_details(job: &JobView, now: i64) -> JobDetails {
    let snapshot = job.snapshot();
    let info = job.info();
    let mut status_counts = [0u32; 10];
    let vertices = info
        .vertices
        .iter()
        .zip(&snapshot.vertices)
        .map(|(vi, v)| {
            let status = ExecutionState::aggregate(&v.counts, v.parallelism);
            status_counts[status.ordinal()] += 1;
            let (start_time, end_time, duration) = vertex_times(v, now);
            JobVertexSummary {
                id: vi.id.to_string(),
                slot_sharing_group_id: vi.slot_sharing_group_id.to_string(),
                name: vi.name.clone(),
                max_parallelism: vi.max_parallelism,
                parallelism: v.parallelism,
                status,
                start_time,
                end_time,
                duration,
                tasks: TaskCounts::from_array(&v.counts),
                metrics: io_metrics(v.io, v.reported, v.parallelism),
            }
        })
        .collect();
    JobDetails {
        jid: info.id.to_string(),
        name: info.name.clone(),
        is_stoppable: false,
        state: snapshot.status,
        job_type: info.job_type.as_str().into(),
        start_time: snapshot.start_ms(),
        end_time: snapshot.end_ms(),
        duration: job_duration(&snapshot, now),
        max_parallelism: -1,
        now,
        timestamps: JobTimestamps::from_array(&snapshot.timestamps),
        vertices,
        status_counts: TaskCounts::from_array(&status_counts),
        plan: info.plan.clone(),
    }
}

/// `GET /jobs/:jobid/plan`.
pub(crate) fn plan(job: &JobView) -> JobPlan {
    JobPlan {
        plan: job.info().plan.clone(),
    }
}

/// `GET /jobs/:jobid/exceptions`.
pub(crate) fn exceptions(job: &JobView) -> JobExceptions {
    let snapshot = job.snapshot();
    let e = &snapshot.exceptions;
    let latest = e.history.first();
    JobExceptions {
        root_exception: latest.map(|x| x.exception.stacktrace.clone()),
        timestamp: latest.map(|x| x.exception.timestamp),
        all_exceptions: e.tasks.clone(),
        truncated: e.tasks_truncated,
        exception_history: ExceptionHistory {
            entries: e.history.clone(),
            truncated: e.history_truncated,
        },
    }
}

/// The exception kind of a job that gave up.
pub const JOB_FAILURE: &str = "conflux.JobFailure";
/// The exception kind of a task that failed.
pub const TASK_FAILURE: &str = "conflux.TaskFailure";

/// `GET /jobs/:jobid/execution-result`.
pub(crate) fn execution_result(job: &JobView) -> JobExecutionResult {
    let snapshot = job.snapshot();
    if !snapshot.status.is_globally_terminal() {
        return JobExecutionResult {
            status: QueueStatus {
                id: QueueStatusId::InProgress,
            },
            job_execution_result: None,
        };
    }
    let application_status = match snapshot.status {
        JobStatus::Finished => "SUCCEEDED",
        JobStatus::Canceled => "CANCELED",
        _ => "FAILED",
    };
    let failure_cause = (snapshot.status == JobStatus::Failed).then(|| {
        let reason = snapshot.failure.as_deref().unwrap_or("the job failed");
        let stack_trace = format!("{JOB_FAILURE}: {reason}");
        FailureCause {
            class: JOB_FAILURE.into(),
            serialized_throwable: serialized_throwable_base64(JOB_FAILURE, reason, &stack_trace),
            stack_trace,
        }
    });
    JobExecutionResult {
        status: QueueStatus {
            id: QueueStatusId::Completed,
        },
        job_execution_result: Some(ExecutionResult {
            id: job.info().id.to_string(),
            application_status: application_status.into(),
            accumulator_results: serde_json::Map::new(),
            net_runtime: snapshot.end_ms() - snapshot.start_ms(),
            failure_cause,
        }),
    }
}

/// A copy of one vertex's subtask table (the lock is held for the copy only), and where its
/// TaskManagers are.
struct CopiedTable {
    table: SubtaskTable,
    hosts: Vec<(u32, String, String)>,
}

impl CopiedTable {
    fn of(job: &JobView, position: usize) -> Option<CopiedTable> {
        let table = job.subtasks(position)?.clone();
        let mut ids: Vec<u32> = table.records.iter().map(|r| r.task_manager).collect();
        ids.sort_unstable();
        ids.dedup();
        let hosts = ids
            .into_iter()
            .filter_map(|id| {
                job.location(id)
                    .map(|a| (id, a.ip().to_string(), a.to_string()))
            })
            .collect();
        Some(CopiedTable { table, hosts })
    }

    /// Host, endpoint and TaskManager id of a subtask.
    fn where_(&self, r: &SubtaskRecord) -> (String, String, String) {
        match self.hosts.iter().find(|(id, _, _)| *id == r.task_manager) {
            Some((id, host, endpoint)) => (host.clone(), endpoint.clone(), format!("tm{id}")),
            None => (UNASSIGNED.into(), UNASSIGNED.into(), UNASSIGNED.into()),
        }
    }
}

/// When a subtask left `state`: the earliest later state it entered (0: it has not).
fn left(ts: &[i64; 10], state: ExecutionState) -> i64 {
    const LIFECYCLE: [ExecutionState; 9] = [
        ExecutionState::Created,
        ExecutionState::Scheduled,
        ExecutionState::Deploying,
        ExecutionState::Initializing,
        ExecutionState::Running,
        ExecutionState::Finished,
        ExecutionState::Canceling,
        ExecutionState::Canceled,
        ExecutionState::Failed,
    ];
    let from = LIFECYCLE.iter().position(|s| *s == state).unwrap_or(0) + 1;
    LIFECYCLE[from..]
        .iter()
        .map(|s| ts[s.ordinal()])
        .filter(|t| *t > 0)
        .min()
        .unwrap_or(0)
}

/// Flink's `StatusDurationUtils`: how long the attempt was in each state up to RUNNING.
fn status_duration(state: ExecutionState, ts: &[i64; 10], now: i64) -> StatusDuration {
    let d = |s: ExecutionState| {
        let start = ts[s.ordinal()];
        let end = if state == s { now } else { left(ts, s) };
        if start == 0 || end == 0 {
            -1
        } else {
            end - start
        }
    };
    StatusDuration {
        created: d(ExecutionState::Created),
        scheduled: d(ExecutionState::Scheduled),
        deploying: d(ExecutionState::Deploying),
        initializing: d(ExecutionState::Initializing),
        running: d(ExecutionState::Running),
    }
}

fn io_of(r: &SubtaskRecord) -> IoCounts {
    if r.reported {
        r.io
    } else {
        IoCounts::default()
    }
}

/// `GET /jobs/:jobid/vertices/:vertexid`: `None` for an unknown vertex position. O(p log p)
/// for a vertex of parallelism p (the percentiles sort).
pub(crate) fn vertex_details(job: &JobView, position: usize, now: i64) -> Option<VertexDetails> {
    let info = job.info().vertices.get(position)?;
    let snapshot = job.snapshot();
    let parallelism = snapshot
        .vertices
        .get(position)
        .map_or(-1, |v| v.parallelism);
    let copied = CopiedTable::of(job, position)?;
    let table = &copied.table;
    let n = table.records.len();
    let mut durations: [Vec<i64>; 5] = Default::default();
    let mut figures: [Vec<i64>; 4] = Default::default();
    let subtasks = table
        .records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let state = ExecutionState::from(r.state);
            let ts = table.timestamps(r);
            let start = ts[ExecutionState::Deploying.ordinal()];
            let start = if start > 0 { start } else { -1 };
            let end = if state.is_terminal() {
                ts[state.ordinal()]
            } else {
                -1
            };
            let duration = if start > 0 {
                (if end > 0 { end } else { now }) - start
            } else {
                -1
            };
            let sd = status_duration(state, &ts, now);
            for (list, d) in durations.iter_mut().zip([
                sd.created,
                sd.scheduled,
                sd.deploying,
                sd.initializing,
                sd.running,
            ]) {
                if d >= 0 {
                    list.push(d);
                }
            }
            let io = io_of(r);
            for (list, v) in figures.iter_mut().zip([
                io.read_bytes,
                io.write_bytes,
                io.read_records,
                io.write_records,
            ]) {
                list.push(to_i64(v));
            }
            let (host, endpoint, taskmanager_id) = copied.where_(r);
            SubtaskDetails {
                subtask: u32::try_from(i).unwrap_or(u32::MAX),
                status: state,
                attempt: r.attempt,
                host,
                endpoint,
                start_time: start,
                end_time: end,
                duration,
                metrics: io_metrics(r.io, u32::from(r.reported), 1),
                taskmanager_id,
                status_duration: sd,
                start_time_deprecated: start,
            }
        })
        .collect();
    let [read_bytes, write_bytes, read_records, write_records] = figures;
    let [mut c, mut s, mut d, mut i, mut r] = durations;
    let zeros = || Statistics::of(&mut vec![0; n]);
    let stats = |mut v: Vec<i64>| Statistics::of(&mut v);
    Some(VertexDetails {
        id: info.id.to_string(),
        name: info.name.clone(),
        parallelism,
        max_parallelism: info.max_parallelism,
        now,
        subtasks,
        aggregated: AggregatedDetails {
            metrics: AggregatedMetrics {
                read_bytes: stats(read_bytes),
                write_bytes: stats(write_bytes),
                read_records: stats(read_records),
                write_records: stats(write_records),
                accumulated_backpressured_time: zeros(),
                accumulated_idle_time: zeros(),
                accumulated_busy_time: zeros(),
            },
            status_duration: AggregatedStatusDuration {
                created: Statistics::of(&mut c),
                scheduled: Statistics::of(&mut s),
                deploying: Statistics::of(&mut d),
                initializing: Statistics::of(&mut i),
                running: Statistics::of(&mut r),
            },
        },
    })
}

/// `GET /jobs/:jobid/vertices/:vertexid/subtasktimes`: `None` for an unknown vertex position.
/// O(p).
pub(crate) fn subtask_times(job: &JobView, position: usize, now: i64) -> Option<SubtasksTimes> {
    let info = job.info().vertices.get(position)?;
    let copied = CopiedTable::of(job, position)?;
    let table = &copied.table;
    let subtasks = table
        .records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let state = ExecutionState::from(r.state);
            let ts = table.timestamps(r);
            let scheduled = ts[ExecutionState::Scheduled.ordinal()];
            let end = if state.is_terminal() {
                ts[state.ordinal()]
            } else {
                now
            };
            let (host, endpoint, _) = copied.where_(r);
            SubtaskTimes {
                subtask: u32::try_from(i).unwrap_or(u32::MAX),
                host,
                endpoint,
                duration: if scheduled > 0 { end - scheduled } else { -1 },
                timestamps: TaskTimestamps::from_array(&ts),
            }
        })
        .collect();
    Some(SubtasksTimes {
        id: info.id.to_string(),
        name: info.name.clone(),
        now,
        subtasks,
    })
}

/// A TaskManager in `/taskmanagers`.
pub(crate) fn task_manager_info(tm: &TaskManagerStatus) -> TaskManagerInfo {
    let free = tm.free_slots();
    TaskManagerInfo {
        id: format!("tm{}", tm.id),
        path: format!("conflux://{}/taskmanager/tm{}", tm.data_address, tm.id),
        data_port: tm.data_address.port(),
        jmx_port: -1,
        time_since_last_heartbeat: tm.last_heartbeat_ms,
        slots_number: tm.slots,
        free_slots: free,
        total_resource: Resource::cores(tm.slots),
        free_resource: Resource::cores(free),
        hardware: Hardware {
            cpu_cores: 0,
            physical_memory: -1,
            free_memory: 0,
            managed_memory: 0,
        },
        memory_configuration: MemoryConfiguration::default(),
    }
}

/// `GET /taskmanagers/:tmid`.
pub(crate) fn task_manager_details(tm: &TaskManagerStatus) -> TaskManagerDetails {
    TaskManagerDetails {
        info: task_manager_info(tm),
        allocated_slots: tm
            .slots_in_use
            .iter()
            .flat_map(|(job, n)| {
                (0..*n).map(move |_| AllocatedSlot {
                    job_id: HexId::from(*job).to_string(),
                    resource: Resource::cores(1),
                })
            })
            .collect(),
        metrics: TaskManagerMetrics::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_durations_follow_flinks_rules() {
        let mut ts = [0i64; 10];
        ts[ExecutionState::Created.ordinal()] = 1_000;
        ts[ExecutionState::Scheduled.ordinal()] = 1_400;
        ts[ExecutionState::Deploying.ordinal()] = 1_500;
        ts[ExecutionState::Initializing.ordinal()] = 1_700;
        ts[ExecutionState::Running.ordinal()] = 1_700;
        let running = status_duration(ExecutionState::Running, &ts, 2_000);
        assert_eq!(
            running,
            StatusDuration {
                created: 400,
                scheduled: 100,
                deploying: 200,
                initializing: 0,
                running: 300
            }
        );
        ts[ExecutionState::Finished.ordinal()] = 2_500;
        assert_eq!(
            status_duration(ExecutionState::Finished, &ts, 9_999).running,
            800
        );
        let created = {
            let mut t = [0i64; 10];
            t[ExecutionState::Created.ordinal()] = 1_000;
            status_duration(ExecutionState::Created, &t, 1_250)
        };
        assert_eq!(
            created,
            StatusDuration {
                created: 250,
                scheduled: -1,
                deploying: -1,
                initializing: -1,
                running: -1
            }
        );
    }
}
