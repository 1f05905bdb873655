//! Scripted replay on small graphs (`conflux simulate`, its script format in the README): the script's events are
//! applied in order after the start, deployed tasks run at once, restarts have no delay, and the
//! run stops after the last event. The output lists every deploy request, restart set and
//! released partition group, in order.
//!
//! By default every failure restarts at once ([`RESTART_AT_ONCE`]): a script describes
//! failovers. With another restart strategy ([`replay_with`]), a failure it refuses fails the job,
//! and a restart it delays happens before the next event: the replay's clock, which stands at 0,
//! moves on to the restart's due time (slot request checks due by then run too).

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use conflux_deploy::{TaskManagerId, TaskManagerLocation};
use conflux_graph::limits::{check_cluster, ClusterSizeError, MAX_TASK_MANAGERS, MAX_TOTAL_SLOTS};
use conflux_graph::{
    index_u32, ExecutionGraph, ExecutionVertexId, ExecutionVertexIndex,
    IntermediateResultPartitionId, PipelinedRegions,
};
use serde::{Deserialize, Serialize};

use conflux_scheduler::{
    Command, Event, FailureCause, JobStatus, RestartStrategy, Scheduler, SchedulerConfig,
    SchedulerError,
};

/// A replay script.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// TaskManagers and their slots; absent: enough slots for every task.
    #[serde(default)]
    pub task_managers: Option<Vec<ScriptTaskManager>>,
    /// The events, applied in order.
    pub events: Vec<ScriptEvent>,
}

/// A TaskManager of a script.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTaskManager {
    /// Its name, e.g. `tm0`.
    pub id: String,
    /// Its slots.
    pub slots: u32,
}

/// One scripted event: exactly one of `finish`, `fail`, `lose_task_manager`, `restart`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptEvent {
    /// A RUNNING vertex finishes, e.g. `"A#0"`.
    #[serde(default)]
    pub finish: Option<String>,
    /// A vertex fails.
    #[serde(default)]
    pub fail: Option<String>,
    /// With `fail`: the partition the failure could not read.
    #[serde(default)]
    pub partition_not_found: Option<String>,
    /// With `fail`: partitions known lost before the failover decision.
    #[serde(default)]
    pub unavailable: Option<Vec<String>>,
    /// A TaskManager is lost.
    #[serde(default)]
    pub lose_task_manager: Option<String>,
    /// Restart exactly these vertices (whole regions).
    #[serde(default)]
    pub restart: Option<Vec<String>>,
}

/// One entry of the timeline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TimelineEntry {
    /// Index of the script event that caused it; -1 for the start.
    pub event: i64,
    /// What happened.
    #[serde(flatten)]
    pub what: TimelineKind,
}

/// What a timeline entry records.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimelineKind {
    /// A deploy request (one region), vertices in topological order.
    Deploy(Vec<String>),
    /// A restart set.
    Restart(Vec<String>),
    /// A released partition group, by its partitions.
    Release(Vec<String>),
}

/// The result of a replay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReplayOutput {
    /// Job status after the last event (`RUNNING` if tasks still run).
    pub status: String,
    /// Every deploy request, restart set and release, in order.
    pub timeline: Vec<TimelineEntry>,
}

/// Why a script cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The script is not valid JSON of the expected shape.
    #[error("invalid script JSON: {0}")]
    Json(String),
    /// An event names nothing or several things.
    #[error("event {index}: {message}")]
    BadEvent {
        /// Index of the event.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// The script's cluster is outside the limits every front end applies
    /// ([`conflux_graph::limits`]).
    #[error("task manager {task_manager:?}: {source}")]
    Cluster {
        /// The TaskManager's id in the script (for the count limit: the first one past it).
        task_manager: String,
        /// Which limit.
        #[source]
        source: ClusterSizeError,
    },
    /// The script's TaskManagers offer more slots in all than [`MAX_TOTAL_SLOTS`].
    #[error("task managers up to {task_manager:?} offer {total} slots, above the limit of {MAX_TOTAL_SLOTS}")]
    TooManySlots {
        /// The TaskManager at which the total passed the limit.
        task_manager: String,
        /// The total so far.
        total: u64,
    },
    /// The scheduler refused the event.
    #[error("event {index}: {source}")]
    Scheduler {
        /// Index of the event.
        index: usize,
        /// The refusal.
        #[source]
        source: SchedulerError,
    },
}

impl Script {
    /// Parses a script and checks its cluster against the limits of
    /// [`conflux_graph::limits`] before anything is allocated per slot.
    ///
    /// # Errors
    /// [`ScriptError::Json`] with line and column; [`ScriptError::Cluster`] naming the
    /// TaskManager whose slots (or the count or total) are out of bounds.
    pub fn parse(bytes: &[u8]) -> Result<Script, ScriptError> {
        let script: Script =
            serde_json::from_slice(bytes).map_err(|e| ScriptError::Json(e.to_string()))?;
        script.check_cluster()?;
        Ok(script)
    }

    /// The count, then per TaskManager its slots and the running total, with the limits
    /// `conflux run` applies to its flags. O(TaskManagers).
    fn check_cluster(&self) -> Result<(), ScriptError> {
        let Some(list) = &self.task_managers else {
            return Ok(());
        };
        if list.len() > MAX_TASK_MANAGERS as usize {
            return Err(ScriptError::Cluster {
                task_manager: list[MAX_TASK_MANAGERS as usize].id.clone(),
                source: ClusterSizeError::TaskManagers {
                    task_managers: u32::try_from(list.len()).unwrap_or(u32::MAX),
                },
            });
        }
        let mut total: u64 = 0;
        for tm in list {
            check_cluster(Some(1), tm.slots).map_err(|source| ScriptError::Cluster {
                task_manager: tm.id.clone(),
                source,
            })?;
            total += u64::from(tm.slots);
            if total > MAX_TOTAL_SLOTS {
                return Err(ScriptError::TooManySlots {
                    task_manager: tm.id.clone(),
                    total,
                });
            }
        }
        Ok(())
    }
}

struct Names<'g> {
    graph: &'g ExecutionGraph,
}

impl Names<'_> {
    fn vertex(&self, name: &str) -> Result<ExecutionVertexIndex, String> {
        let (id, subtask) = name.split_once('#').ok_or_else(|| {
            format!("'{name}' is not an execution vertex name (expected <vertex>#<subtask>)")
        })?;
        let job_vertex = self
            .graph
            .job_graph()
            .vertex_index(id)
            .ok_or_else(|| format!("unknown vertex '{id}' in '{name}'"))?;
        let subtask: u32 = subtask
            .parse()
            .map_err(|_| format!("bad subtask index in '{name}'"))?;
        let parallelism = self.graph.job_graph().vertex(job_vertex).parallelism;
        if subtask >= parallelism {
            return Err(format!(
                "'{name}': subtask {subtask} is not below the parallelism {parallelism}"
            ));
        }
        Ok(self.graph.execution_vertex_index(ExecutionVertexId {
            job_vertex,
            subtask,
        }))
    }

    fn partition(&self, name: &str) -> Result<IntermediateResultPartitionId, String> {
        let (vertex_name, data_set) = match name.split_once('#').and_then(|(v, rest)| {
            rest.split_once('@')
                .map(|(s, ds)| (format!("{v}#{s}"), Some(ds)))
        }) {
            Some((v, ds)) => (v, ds),
            None => (name.to_owned(), None),
        };
        let v = self.vertex(&vertex_name)?;
        let id = self.graph.execution_vertex_id(v);
        let job = self.graph.job_graph();
        let produced = job.produced_data_sets(id.job_vertex);
        let result = match data_set {
            Some(ds) => *produced
                .iter()
                .find(|&&d| job.data_set(d).id == ds)
                .ok_or_else(|| format!("'{name}': the vertex produces no data set '{ds}'"))?,
            None => match produced {
                [only] => *only,
                [] => return Err(format!("'{name}': the vertex produces no data set")),
                _ => return Err(format!("'{name}': the vertex produces several data sets; name one as {vertex_name}@<data set>")),
            },
        };
        Ok(IntermediateResultPartitionId {
            result,
            partition: id.subtask,
        })
    }

    fn partition_name(&self, p: IntermediateResultPartitionId) -> String {
        conflux_deploy::partition_name(self.graph, p)
    }
}

/// The replay's default restart strategy: every failure restarts, at once.
pub const RESTART_AT_ONCE: RestartStrategy = RestartStrategy::FixedDelay {
    attempts: u32::MAX,
    delay_ms: 0,
};

/// Replays a script on a graph: starts the job, then applies each event; every failure restarts
/// at once ([`RESTART_AT_ONCE`]).
///
/// # Errors
/// [`ScriptError`] naming the event: an unknown vertex, TaskManager or data set, an event
/// naming nothing or several things, or one the scheduler refuses (finishing a CREATED vertex, a
/// restart of part of a region).
pub fn replay(
    graph: Arc<ExecutionGraph>,
    regions: Arc<PipelinedRegions>,
    script: &Script,
) -> Result<ReplayOutput, ScriptError> {
    replay_with(graph, regions, script, RESTART_AT_ONCE)
}

/// As [`replay`], with a restart strategy: a failure it refuses fails the job; a restart it
/// delays happens after the event that caused it, the replay's clock moving on to its due time.
///
/// # Errors
/// As [`replay`].
pub fn replay_with(
    graph: Arc<ExecutionGraph>,
    regions: Arc<PipelinedRegions>,
    script: &Script,
    restart: RestartStrategy,
) -> Result<ReplayOutput, ScriptError> {
    let config = SchedulerConfig {
        restart,
        ..SchedulerConfig::default()
    };
    let mut scheduler = Scheduler::new(Arc::clone(&graph), Arc::clone(&regions), config);
    let names = Names { graph: &graph };
    let mut timeline = Vec::new();

    let task_managers: Vec<(String, u32)> = match &script.task_managers {
        Some(list) => list.iter().map(|t| (t.id.clone(), t.slots)).collect(),
        None => vec![("tm0".to_owned(), graph.num_execution_vertices().max(1))],
    };
    let tm_index: HashMap<String, u32> = task_managers
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (name.clone(), index_u32(i)))
        .collect();

    // The replay's clock: 0, or the due time of the last delayed restart.
    let mut now = 0u64;
    let apply = |scheduler: &mut Scheduler,
                 now: u64,
                 index: i64,
                 event: Event,
                 timeline: &mut Vec<TimelineEntry>|
     -> Result<(), SchedulerError> {
        let mut queue = vec![event];
        while let Some(e) = queue.pop() {
            let mut commands = scheduler.handle(now, e)?;
            while scheduler.has_pending_work() {
                commands.extend(scheduler.continue_work()?);
            }
            let mut running = Vec::new();
            for c in commands {
                match c {
                    Command::Deploy { tasks, .. } => {
                        timeline.push(TimelineEntry {
                            event: index,
                            what: TimelineKind::Deploy(
                                tasks
                                    .iter()
                                    .map(|(a, _)| {
                                        graph.execution_vertex_name(ExecutionVertexIndex(a.vertex))
                                    })
                                    .collect(),
                            ),
                        });
                        running.extend(tasks.into_iter().map(|(a, _)| Event::TaskRunning(a)));
                    }
                    Command::Restart(vertices) => timeline.push(TimelineEntry {
                        event: index,
                        what: TimelineKind::Restart(
                            vertices
                                .iter()
                                .map(|&v| graph.execution_vertex_name(v))
                                .collect(),
                        ),
                    }),
                    Command::ReleaseGroup { group, .. } => {
                        let g = graph.consumed_partition_group(group);
                        timeline.push(TimelineEntry {
                            event: index,
                            what: TimelineKind::Release(
                                g.partitions
                                    .map(|p| {
                                        names.partition_name(IntermediateResultPartitionId {
                                            result: g.result,
                                            partition: p,
                                        })
                                    })
                                    .collect(),
                            ),
                        });
                    }
                    _ => {}
                }
            }
            // Deployed tasks are RUNNING at once.
            running.reverse();
            queue.extend(running);
        }
        Ok(())
    };

    let start_error = |source| ScriptError::Scheduler { index: 0, source };
    for (i, (_, slots)) in task_managers.iter().enumerate() {
        let id = index_u32(i);
        let location = TaskManagerLocation {
            id: TaskManagerId(id),
            data_address: SocketAddr::from((Ipv4Addr::LOCALHOST, 40_000 + (id % 20_000) as u16)),
        };
        apply(
            &mut scheduler,
            now,
            -1,
            Event::TaskManagerRegistered {
                location,
                slots: *slots,
            },
            &mut timeline,
        )
        .map_err(start_error)?;
    }
    apply(&mut scheduler, now, -1, Event::Start, &mut timeline).map_err(start_error)?;

    for (index, e) in script.events.iter().enumerate() {
        let bad = |message: String| ScriptError::BadEvent { index, message };
        let kinds = [
            e.finish.is_some(),
            e.fail.is_some(),
            e.lose_task_manager.is_some(),
            e.restart.is_some(),
        ]
        .iter()
        .filter(|&&x| x)
        .count();
        if kinds != 1 {
            return Err(bad(
                "an event names exactly one of finish, fail, lose_task_manager, restart".to_owned(),
            ));
        }
        if e.fail.is_none() && (e.partition_not_found.is_some() || e.unavailable.is_some()) {
            return Err(bad(
                "partition_not_found and unavailable go with fail".to_owned()
            ));
        }
        let at = |source| ScriptError::Scheduler { index, source };
        let i = index as i64;
        if let Some(name) = &e.finish {
            let v = names.vertex(name).map_err(bad)?;
            let attempt = scheduler.attempt(v);
            apply(
                &mut scheduler,
                now,
                i,
                Event::TaskFinished(attempt),
                &mut timeline,
            )
            .map_err(at)?;
        } else if let Some(name) = &e.fail {
            let v = names.vertex(name).map_err(bad)?;
            let lost = e
                .unavailable
                .iter()
                .flatten()
                .map(|p| names.partition(p))
                .collect::<Result<Vec<_>, _>>()
                .map_err(bad)?;
            let cause = match &e.partition_not_found {
                Some(p) => FailureCause::PartitionNotFound(names.partition(p).map_err(bad)?),
                None => FailureCause::Task,
            };
            if !lost.is_empty() {
                apply(
                    &mut scheduler,
                    now,
                    i,
                    Event::PartitionsLost(lost),
                    &mut timeline,
                )
                .map_err(at)?;
            }
            let attempt = scheduler.attempt(v);
            apply(
                &mut scheduler,
                now,
                i,
                Event::TaskFailed(attempt, cause),
                &mut timeline,
            )
            .map_err(at)?;
        } else if let Some(name) = &e.lose_task_manager {
            let tm = *tm_index
                .get(name)
                .ok_or_else(|| bad(format!("unknown TaskManager '{name}'")))?;
            apply(
                &mut scheduler,
                now,
                i,
                Event::TaskManagerLost(TaskManagerId(tm)),
                &mut timeline,
            )
            .map_err(at)?;
        } else if let Some(list) = &e.restart {
            let vertices = list
                .iter()
                .map(|n| names.vertex(n))
                .collect::<Result<Vec<_>, _>>()
                .map_err(bad)?;
            apply(
                &mut scheduler,
                now,
                i,
                Event::Restart(vertices),
                &mut timeline,
            )
            .map_err(at)?;
        }
        // A delayed restart happens before the next event.
        while let Some(due) = scheduler.next_restart_due() {
            now = now.max(due);
            apply(&mut scheduler, now, i, Event::Tick, &mut timeline).map_err(at)?;
        }
    }
    let status = match scheduler.status() {
        JobStatus::Created => "CREATED",
        s => s.as_str(),
    };
    Ok(ReplayOutput {
        status: status.to_owned(),
        timeline,
    })
}
