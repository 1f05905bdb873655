//! The JobManager's table of jobs: queued, running, ended with their reports.

use std::collections::HashMap;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard};

use conflux_blob_api::JobId;
use tokio::sync::watch;

use crate::jobmanager::job_loop::LoopEvent;
use crate::jobmanager::JobManagerError;
use crate::protocol::JobSummary;
use crate::report::JobReport;

struct JobEntry {
    name: String,
    /// `QUEUED`, `RUNNING`, then the final status.
    status: String,
    cancel_requested: bool,
    /// The running job's event loop.
    events: Option<Sender<LoopEvent>>,
    report: watch::Sender<Option<Arc<JobReport>>>,
}

#[derive(Default)]
struct Table {
    order: Vec<JobId>,
    entries: HashMap<JobId, JobEntry>,
}

/// Every job submitted to the JobManager.
#[derive(Default)]
pub(crate) struct Jobs {
    table: Mutex<Table>,
}

impl Jobs {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn add(&self, id: JobId, name: String) {
        let mut table = self.lock();
        table.order.push(id);
        table.entries.insert(
            id,
            JobEntry {
                name,
                status: "QUEUED".into(),
                cancel_requested: false,
                events: None,
                report: watch::channel(None).0,
            },
        );
    }

    /// Marks a job running; false when it was cancelled while queued.
    pub(crate) fn start(&self, id: JobId, events: Sender<LoopEvent>) -> bool {
        let mut table = self.lock();
        let Some(entry) = table.entries.get_mut(&id) else {
            return false;
        };
        if entry.cancel_requested {
            return false;
        }
        entry.status = "RUNNING".into();
        entry.events = Some(events);
        true
    }

    pub(crate) fn finish(&self, id: JobId, report: JobReport) {
        let mut table = self.lock();
        if let Some(entry) = table.entries.get_mut(&id) {
            entry.status = report.status.clone();
            entry.events = None;
            entry.report.send_replace(Some(Arc::new(report)));
        }
    }

    pub(crate) fn list(&self) -> Vec<JobSummary> {
        let table = self.lock();
        table
            .order
            .iter()
            .filter_map(|id| {
                table.entries.get(id).map(|e| JobSummary {
                    job: *id,
                    name: e.name.clone(),
                    status: e.status.clone(),
                })
            })
            .collect()
    }

    pub(crate) fn cancel(&self, id: JobId) -> Result<(), JobManagerError> {
        let mut table = self.lock();
        let entry = table
            .entries
            .get_mut(&id)
            .ok_or(JobManagerError::UnknownJob(id))?;
        entry.cancel_requested = true;
        if let Some(events) = &entry.events {
            let _ = events.send(LoopEvent::Cancel);
        }
        Ok(())
    }

    pub(crate) fn cancel_all(&self) {
        let mut table = self.lock();
        for entry in table.entries.values_mut() {
            entry.cancel_requested = true;
            if let Some(events) = entry.events.take() {
                let _ = events.send(LoopEvent::Cancel);
            }
        }
    }

    pub(crate) async fn wait(&self, id: JobId) -> Result<JobReport, JobManagerError> {
        let mut receiver = {
            let table = self.lock();
            table
                .entries
                .get(&id)
                .ok_or(JobManagerError::UnknownJob(id))?
                .report
                .subscribe()
        };
        let report = receiver
            .wait_for(Option::is_some)
            .await
            .map_err(|_| JobManagerError::ShuttingDown)?;
        report
            .as_ref()
            .map(|r| JobReport::clone(r))
            .ok_or(JobManagerError::ShuttingDown)
    }
}
