//! The REST API's backend on a JobManager: the job table's views, the TaskManager registry
//! (read under its lock, held for the copy only), cancel, the settings under Flink's keys, and
//! the Prometheus scrape. Nothing here waits for a job's event loop.

use std::sync::Arc;
use std::time::{Duration, Instant};

use conflux_blob_api::JobId;
use conflux_rest::{CancelOutcome, JobStatus, JobView, RestBackend, TaskManagerStatus};

use crate::jobmanager::error::JobManagerError;
use crate::jobmanager::shared::Shared;
use crate::metrics::{ClusterFigures, JobFigures};

/// The REST server's connection limits: 10 s for a request's head, 60 s of idleness, 256
/// connections.
pub(crate) const REST_LIMITS: conflux_http::Limits = conflux_http::Limits {
    header_read_timeout: Duration::from_secs(10),
    idle_timeout: Duration::from_secs(60),
    max_connections: 256,
};

/// The JobManager as its REST API sees it.
pub(crate) struct JobManagerRest {
    shared: Arc<Shared>,
}

impl JobManagerRest {
    pub(crate) fn new(shared: Arc<Shared>) -> JobManagerRest {
        JobManagerRest { shared }
    }
}

/// An `Instant` of the past as epoch ms.
fn epoch_ms(at: Instant) -> i64 {
    let ago = i64::try_from(at.elapsed().as_millis()).unwrap_or(i64::MAX);
    conflux_rest::now_ms().saturating_sub(ago)
}

impl RestBackend for JobManagerRest {
    fn jobs(&self) -> Vec<Arc<JobView>> {
        self.shared.jobs.views()
    }

    fn job(&self, id: JobId) -> Option<Arc<JobView>> {
        self.shared.jobs.view(id)
    }

    fn task_managers(&self) -> Vec<TaskManagerStatus> {
        let running = self.shared.jobs.running_view();
        let in_use = running
            .as_ref()
            .map(|view| (view.info().id, view.snapshot().slots_in_use.clone()));
        let registry = self.shared.registry.lock();
        registry
            .alive
            .iter()
            .map(|(id, entry)| TaskManagerStatus {
                id: id.0,
                data_address: entry.location.data_address,
                slots: entry.slots,
                slots_in_use: in_use
                    .iter()
                    .flat_map(|(job, used)| {
                        used.iter()
                            .filter(|(tm, _)| *tm == id.0)
                            .map(|(_, n)| (*job, *n))
                    })
                    .collect(),
                last_heartbeat_ms: epoch_ms(entry.last_answer),
            })
            .collect()
    }

    fn cancel(&self, id: JobId) -> CancelOutcome {
        match self.shared.jobs.ended_status(id).as_deref() {
            Some("FINISHED") => return CancelOutcome::AlreadyEnded(JobStatus::Finished),
            Some("FAILED") => return CancelOutcome::AlreadyEnded(JobStatus::Failed),
            _ => {}
        }
        match self.shared.jobs.cancel(id) {
            Ok(()) => CancelOutcome::Accepted,
            Err(JobManagerError::UnknownJob(_)) => CancelOutcome::Unknown,
            Err(e) => {
                tracing::warn!(job = %id, "cancel over REST: {e}");
                CancelOutcome::Unknown
            }
        }
    }

    fn configuration(&self) -> Vec<(String, String)> {
        let c = &self.shared.config;
        let mut entries = vec![
            (
                "jobmanager.rpc.address".to_owned(),
                c.address.ip().to_string(),
            ),
            (
                "jobmanager.rpc.port".to_owned(),
                c.address.port().to_string(),
            ),
            (
                "heartbeat.interval".to_owned(),
                format!("{} ms", c.heartbeat.interval_ms),
            ),
            (
                "heartbeat.timeout".to_owned(),
                format!("{} ms", c.heartbeat.timeout_ms),
            ),
            (
                "pekko.ask.timeout".to_owned(),
                format!("{} ms", c.rpc.timeout_ms),
            ),
            (
                "jobmanager.execution.failover-strategy".to_owned(),
                "region".to_owned(),
            ),
            (
                "cluster.evenly-spread-out-slots".to_owned(),
                c.scheduler.evenly_spread_out_slots.to_string(),
            ),
            (
                "execution.batch.speculative.enabled".to_owned(),
                c.scheduler.speculative.enabled.to_string(),
            ),
            (
                "conflux.scheduler.work-budget".to_owned(),
                c.scheduler.work_budget.to_string(),
            ),
            (
                "conflux.max-connections".to_owned(),
                c.max_connections.to_string(),
            ),
        ];
        if let Some(rest) = self.shared.rest_address {
            entries.push(("rest.address".to_owned(), rest.ip().to_string()));
            entries.push(("rest.bind-address".to_owned(), rest.ip().to_string()));
            entries.push(("rest.port".to_owned(), rest.port().to_string()));
        }
        if let Some(blob) = self.shared.blob_server.upgrade() {
            entries.push((
                "blob.server.port".to_owned(),
                blob.local_addr().port().to_string(),
            ));
        }
        // The CLI's effective configuration, where the JobManager has not said better (the
        // bound addresses above win over the configured ones).
        for (key, value) in &c.configuration {
            if !entries.iter().any(|(k, _)| k == key) {
                entries.push((key.clone(), value.clone()));
            }
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries
    }

    fn metrics(&self) -> String {
        let (task_managers, slots_total) = {
            let registry = self.shared.registry.lock();
            (
                registry.alive.len() as u64,
                registry
                    .alive
                    .values()
                    .map(|e| u64::from(e.slots))
                    .sum::<u64>(),
            )
        };
        let now = conflux_rest::now_ms();
        let mut slots_used = 0u64;
        let jobs = self
            .shared
            .jobs
            .views()
            .into_iter()
            .filter_map(|view| {
                let snapshot = view.snapshot();
                if snapshot.status.is_globally_terminal() {
                    return None;
                }
                slots_used += snapshot
                    .slots_in_use
                    .iter()
                    .map(|(_, n)| u64::from(*n))
                    .sum::<u64>();
                let running = snapshot.timestamps[JobStatus::Running.ordinal()];
                Some(JobFigures {
                    id: view.info().id,
                    name: view.info().name.clone(),
                    uptime_ms: if snapshot.status == JobStatus::Running && running > 0 {
                        now - running
                    } else {
                        0
                    },
                    restarts: snapshot.restarts,
                })
            })
            .collect();
        let blob_server_gets = self
            .shared
            .blob_server
            .upgrade()
            .map_or(0, |b| b.stats().gets);
        self.shared.metrics.scrape(&ClusterFigures {
            task_managers,
            slots_total,
            slots_available: slots_total.saturating_sub(slots_used),
            jobs,
            blob_server_gets,
        })
    }
}
