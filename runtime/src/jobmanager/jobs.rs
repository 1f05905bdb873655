//! The JobManager's table of jobs: queued, running and ended, in submission order (Flink's
//! `Dispatcher` job table and `ExecutionGraphInfoStore`).
//!
//! A queued job is held as its compact job graph only: its execution graph and scheduler are
//! built when it starts, so waiting jobs cost what their job graphs cost, and the queue is
//! bounded in jobs ([`MAX_QUEUED_JOBS`]) and in those bytes (the JobManager's job memory
//! budget). Cancelling a queued job takes it out of the queue at once (CANCELED, its graph
//! freed). An ended job stays, with its report, for `list` and `wait` until it is one of more
//! than [`JobHistory::size`] ended jobs (the oldest go first) or older than
//! [`JobHistory::ttl_ms`] (Flink's `jobstore.max-capacity` and `jobstore.expiration-time`), so
//! the table and `list` stay bounded however many jobs a JobManager runs.
//!
//! Each job has the view the REST API reads: built from its job graph when it is queued,
//! replaced by one built from its execution graph when it starts ([`Jobs::set_view`]); a job
//! cancelled while queued has its view ended CANCELED at once.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use conflux_blob_api::JobId;
use conflux_graph::JobGraph;
use conflux_rest::JobView;
use tokio::sync::watch;

use crate::config::{JobHistory, MAX_QUEUED_JOBS};
use crate::jobmanager::error::JobManagerError;
use crate::jobmanager::loop_event::LoopEvent;
use crate::protocol::{JobOptions, JobSummary, WordCountTask};
use crate::report::JobReport;

/// A job accepted and waiting for the jobs before it: validated, not expanded.
pub(crate) struct QueuedJob {
    pub(crate) id: JobId,
    pub(crate) name: String,
    pub(crate) job: JobGraph,
    /// Per job vertex, the word count task it runs (`None`: synthetic).
    pub(crate) tasks: Vec<Option<WordCountTask>>,
    pub(crate) options: JobOptions,
    pub(crate) submitted: Instant,
    /// Heap bytes of `job`, counted against the queue's budget while it waits.
    pub(crate) graph_bytes: u64,
    /// Its execution vertices, for the report of a job cancelled while queued.
    pub(crate) execution_vertices: u64,
    /// When it was submitted, epoch ms (the REST API's start time).
    pub(crate) submitted_ms: i64,
    /// What the REST API shows of it while it waits.
    pub(crate) view: Arc<JobView>,
    /// Its data secret, when it was chosen before the job runs (a job kept in the storage
    /// directory keeps it); `None`: one is drawn when it starts.
    pub(crate) secret: Option<crate::secret::Secret>,
    /// A job recovered from the storage directory: its replayed event log.
    pub(crate) recovery: Option<crate::jobmanager::durable::JobRecovery>,
}

/// Where a job is in its life.
enum Phase {
    Queued(Box<QueuedJob>),
    /// Running: its event loop's inbox.
    Running(Sender<LoopEvent>),
    Ended,
}

struct JobEntry {
    name: String,
    /// Its place in submission order.
    seq: u64,
    /// `QUEUED`, `RUNNING`, then the final status.
    status: String,
    phase: Phase,
    report: watch::Sender<Option<Arc<JobReport>>>,
    /// What the REST API shows of it.
    view: Arc<JobView>,
}

#[derive(Default)]
struct Table {
    entries: HashMap<JobId, JobEntry>,
    /// Submission order.
    order: BTreeMap<u64, JobId>,
    next_seq: u64,
    queue: VecDeque<JobId>,
    /// Heap bytes of the queued jobs' graphs.
    queued_bytes: u64,
    /// Ended jobs in the order they ended, with when.
    ended: VecDeque<(Instant, JobId)>,
    /// Shutting down: nothing more is queued or started.
    closed: bool,
}

impl Table {
    /// Ends `id` with `report` (a job not ended yet); it joins the history.
    fn end(&mut self, id: JobId, report: JobReport, history: JobHistory) {
        if let Some(entry) = self.entries.get_mut(&id) {
            entry.status.clone_from(&report.status);
            entry.phase = Phase::Ended;
            entry.report.send_replace(Some(Arc::new(report)));
            self.ended.push_back((Instant::now(), id));
        }
        self.expire(history);
    }

    /// Drops the ended jobs beyond the history's size or older than its age. O(dropped).
    fn expire(&mut self, history: JobHistory) {
        let now = Instant::now();
        let ttl = Duration::from_millis(history.ttl_ms);
        while let Some(&(ended, id)) = self.ended.front() {
            if self.ended.len() <= history.size && now.duration_since(ended) <= ttl {
                break;
            }
            self.ended.pop_front();
            if let Some(entry) = self.entries.remove(&id) {
                self.order.remove(&entry.seq);
            }
        }
    }

    /// Takes a queued job out of the queue and ends it CANCELED at once.
    fn cancel_queued(&mut self, id: JobId, history: JobHistory) {
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        if !matches!(entry.phase, Phase::Queued(_)) {
            return;
        }
        let Phase::Queued(job) = std::mem::replace(&mut entry.phase, Phase::Ended) else {
            return;
        };
        crate::jobmanager::rest_view::ended_outside_the_loop(&entry.view, "CANCELED", None);
        self.queue.retain(|q| *q != id);
        self.queued_bytes = self.queued_bytes.saturating_sub(job.graph_bytes);
        let report = JobReport {
            job_id: id.to_string(),
            job: job.name.clone(),
            status: "CANCELED".into(),
            tasks: job.execution_vertices,
            ..JobReport::default()
        };
        drop(job);
        self.end(id, report, history);
    }
}

/// A job's summary at `now_ms`, from its table entry and its view's latest snapshot: a running
/// job shows the status the REST API shows (RESTARTING, FAILING, ... as the job loop
/// published it), not just RUNNING.
fn summary(id: JobId, e: &JobEntry, now_ms: i64) -> JobSummary {
    let snapshot = e.view.snapshot();
    let status = match e.phase {
        Phase::Running(_) => snapshot.status.as_str().to_owned(),
        Phase::Queued(_) | Phase::Ended => e.status.clone(),
    };
    let start_ms = snapshot.start_ms();
    let end_ms = snapshot.end_ms();
    let duration_ms = if end_ms >= 0 { end_ms } else { now_ms } - start_ms;
    JobSummary {
        job: id,
        name: e.name.clone(),
        status,
        start_ms,
        end_ms,
        duration_ms: duration_ms.max(0),
        tasks: snapshot.task_counts(),
    }
}

/// Every job the JobManager knows: the queued, the running one, and the history.
pub(crate) struct Jobs {
    table: Mutex<Table>,
    /// Signalled when a job is queued or the table closes.
    ready: Condvar,
    history: JobHistory,
    /// The most bytes the queued jobs' graphs may hold together.
    max_queued_bytes: u64,
}

impl Jobs {
    /// An empty table keeping `history` of ended jobs and at most `max_queued_bytes` of
    /// queued job graphs.
    pub(crate) fn new(history: JobHistory, max_queued_bytes: u64) -> Jobs {
        Jobs {
            table: Mutex::new(Table::default()),
            ready: Condvar::new(),
            history,
            max_queued_bytes,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues a job behind the others.
    ///
    /// # Errors
    /// [`JobManagerError::ShuttingDown`]; [`JobManagerError::QueueFull`] when
    /// [`MAX_QUEUED_JOBS`] wait already or the queued graphs would exceed the budget.
    pub(crate) fn enqueue(&self, job: QueuedJob) -> Result<(), JobManagerError> {
        let mut table = self.lock();
        if table.closed {
            return Err(JobManagerError::ShuttingDown);
        }
        if table.queue.len() >= MAX_QUEUED_JOBS
            || table.queued_bytes.saturating_add(job.graph_bytes) > self.max_queued_bytes
        {
            return Err(JobManagerError::QueueFull {
                jobs: table.queue.len(),
                bytes: table.queued_bytes,
                max_jobs: MAX_QUEUED_JOBS,
                max_bytes: self.max_queued_bytes,
            });
        }
        let id = job.id;
        let seq = table.next_seq;
        table.next_seq += 1;
        table.order.insert(seq, id);
        table.queue.push_back(id);
        table.queued_bytes += job.graph_bytes;
        table.entries.insert(
            id,
            JobEntry {
                name: job.name.clone(),
                seq,
                status: "QUEUED".into(),
                view: Arc::clone(&job.view),
                phase: Phase::Queued(Box::new(job)),
                report: watch::channel(None).0,
            },
        );
        drop(table);
        self.ready.notify_all();
        Ok(())
    }

    /// Waits for the next queued job and marks it running, with a new event loop inbox
    /// (returned with its receiving end). `None` once the table is closed.
    pub(crate) fn next(&self) -> Option<(QueuedJob, Sender<LoopEvent>, Receiver<LoopEvent>)> {
        let mut table = self.lock();
        loop {
            if table.closed {
                return None;
            }
            if let Some(id) = table.queue.pop_front() {
                let (sender, events) = mpsc::channel();
                let Some(entry) = table.entries.get_mut(&id) else {
                    continue;
                };
                let Phase::Queued(job) =
                    std::mem::replace(&mut entry.phase, Phase::Running(sender.clone()))
                else {
                    continue;
                };
                entry.status = "RUNNING".into();
                table.queued_bytes = table.queued_bytes.saturating_sub(job.graph_bytes);
                return Some((*job, sender, events));
            }
            table = self
                .ready
                .wait(table)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// A running job ended with `report`.
    pub(crate) fn finish(&self, id: JobId, report: JobReport) {
        let mut table = self.lock();
        if table
            .entries
            .get(&id)
            .is_some_and(|e| matches!(e.phase, Phase::Running(_)))
        {
            table.end(id, report, self.history);
        }
    }

    /// The jobs in submission order: queued, running, and the history. O(jobs x job
    /// vertices).
    pub(crate) fn list(&self) -> Vec<JobSummary> {
        let mut table = self.lock();
        table.expire(self.history);
        let now = conflux_rest::now_ms();
        table
            .order
            .values()
            .filter_map(|id| table.entries.get(id).map(|e| summary(*id, e, now)))
            .collect()
    }

    /// One job's summary (`None`: unknown, or gone from the history). O(job vertices).
    pub(crate) fn summary(&self, id: JobId) -> Option<JobSummary> {
        let mut table = self.lock();
        table.expire(self.history);
        table
            .entries
            .get(&id)
            .map(|e| summary(id, e, conflux_rest::now_ms()))
    }

    /// Every job's view, in submission order.
    pub(crate) fn views(&self) -> Vec<Arc<JobView>> {
        let table = self.lock();
        table
            .order
            .values()
            .filter_map(|id| table.entries.get(id).map(|e| Arc::clone(&e.view)))
            .collect()
    }

    /// One job's view.
    pub(crate) fn view(&self, id: JobId) -> Option<Arc<JobView>> {
        self.lock().entries.get(&id).map(|e| Arc::clone(&e.view))
    }

    /// The view of the running job, if one runs.
    pub(crate) fn running_view(&self) -> Option<Arc<JobView>> {
        self.lock()
            .entries
            .values()
            .find(|e| matches!(e.phase, Phase::Running(_)))
            .map(|e| Arc::clone(&e.view))
    }

    /// The final status of an ended job (`None` while it is queued or running, or unknown).
    pub(crate) fn ended_status(&self, id: JobId) -> Option<String> {
        self.lock()
            .entries
            .get(&id)
            .filter(|e| e.status != "QUEUED" && e.status != "RUNNING")
            .map(|e| e.status.clone())
    }

    /// Replaces a job's view (the job started: its execution graph is built).
    pub(crate) fn set_view(&self, id: JobId, view: Arc<JobView>) {
        if let Some(entry) = self.lock().entries.get_mut(&id) {
            entry.view = view;
        }
    }

    /// Cancels a job: a queued one ends CANCELED at once, a running one is told to cancel;
    /// an ended one stays as it ended.
    ///
    /// # Errors
    /// [`JobManagerError::UnknownJob`], also for a job no longer in the history.
    pub(crate) fn cancel(&self, id: JobId) -> Result<(), JobManagerError> {
        let mut table = self.lock();
        let entry = table
            .entries
            .get(&id)
            .ok_or(JobManagerError::UnknownJob(id))?;
        match &entry.phase {
            Phase::Queued(_) => table.cancel_queued(id, self.history),
            Phase::Running(events) => {
                let _ = events.send(LoopEvent::Cancel);
            }
            Phase::Ended => {}
        }
        Ok(())
    }

    /// Shutting down: queued jobs end CANCELED, the running one is told to cancel, and
    /// [`next`](Self::next) returns `None` from now on.
    pub(crate) fn close(&self) {
        let mut table = self.lock();
        table.closed = true;
        let queued: Vec<JobId> = table.queue.iter().copied().collect();
        for id in queued {
            table.cancel_queued(id, self.history);
        }
        for entry in table.entries.values() {
            if let Phase::Running(events) = &entry.phase {
                let _ = events.send(LoopEvent::Cancel);
            }
        }
        drop(table);
        self.ready.notify_all();
    }

    /// Waits for a job's end and returns its report.
    ///
    /// # Errors
    /// [`JobManagerError::UnknownJob`]; [`JobManagerError::ShuttingDown`] when the table is
    /// dropped first.
    pub(crate) async fn wait(&self, id: JobId) -> Result<JobReport, JobManagerError> {
        let mut receiver = {
            let mut table = self.lock();
            table.expire(self.history);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn job(n: u8, graph_bytes: u64) -> QueuedJob {
        let graph = br#"{"job_type": "batch", "vertices": [{"id": "a", "parallelism": 2}]}"#;
        let job = conflux_graph::load::load(graph, &Default::default()).unwrap();
        let id = JobId([n; 16]);
        QueuedJob {
            id,
            name: format!("job {n}"),
            view: crate::jobmanager::rest_view::queued_view(id, &job, false, 0),
            submitted_ms: 0,
            job,
            tasks: vec![None],
            options: JobOptions::default(),
            submitted: Instant::now(),
            graph_bytes,
            execution_vertices: 2,
            secret: None,
            recovery: None,
        }
    }

    fn report(status: &str) -> JobReport {
        JobReport {
            status: status.into(),
            ..JobReport::default()
        }
    }

    fn statuses(jobs: &Jobs) -> Vec<(u8, String)> {
        jobs.list()
            .into_iter()
            .map(|s| (s.job.0[0], s.status))
            .collect()
    }

    /// Regression: a cancelled queued job stayed QUEUED (and in memory) until the job before
    /// it ended.
    #[test]
    fn a_queued_job_cancelled_ends_at_once_and_frees_its_place() {
        let jobs = Jobs::new(JobHistory::default(), 100);
        jobs.enqueue(job(1, 40)).unwrap();
        jobs.enqueue(job(2, 40)).unwrap();
        let e = jobs.enqueue(job(3, 40)).unwrap_err();
        assert!(
            matches!(e, JobManagerError::QueueFull { bytes: 80, .. }),
            "{e}"
        );
        jobs.cancel(JobId([2; 16])).unwrap();
        assert_eq!(
            statuses(&jobs),
            [(1, "QUEUED".to_owned()), (2, "CANCELED".to_owned())]
        );
        // Its bytes are free again.
        jobs.enqueue(job(3, 40)).unwrap();
        let (first, _, _) = jobs.next().unwrap();
        assert_eq!(first.id, JobId([1; 16]));
        let (second, _, _) = jobs.next().unwrap();
        assert_eq!(second.id, JobId([3; 16]), "the cancelled job never starts");
        let waited = futures_util::FutureExt::now_or_never(jobs.wait(JobId([2; 16])));
        assert_eq!(waited.unwrap().unwrap().status, "CANCELED");
    }

    #[test]
    fn the_history_keeps_the_newest_ended_jobs_within_its_size_and_age() {
        let jobs = Jobs::new(
            JobHistory {
                size: 2,
                ttl_ms: 3_600_000,
            },
            u64::MAX,
        );
        for n in 1..=4 {
            jobs.enqueue(job(n, 1)).unwrap();
        }
        for _ in 0..3 {
            let (running, _, _) = jobs.next().unwrap();
            jobs.finish(running.id, report("FINISHED"));
        }
        // Job 1 ended first and is dropped; job 4 waits.
        assert_eq!(
            statuses(&jobs),
            [
                (2, "FINISHED".to_owned()),
                (3, "FINISHED".to_owned()),
                (4, "QUEUED".to_owned())
            ]
        );
        assert!(matches!(
            jobs.cancel(JobId([1; 16])),
            Err(JobManagerError::UnknownJob(_))
        ));
        let aged = Jobs::new(
            JobHistory {
                size: 10,
                ttl_ms: 0,
            },
            u64::MAX,
        );
        aged.enqueue(job(1, 1)).unwrap();
        let (running, _, _) = aged.next().unwrap();
        aged.finish(running.id, report("FAILED"));
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(statuses(&aged), []);
    }

    #[test]
    fn closing_cancels_the_queue_and_stops_the_runner() {
        let jobs = Jobs::new(JobHistory::default(), u64::MAX);
        jobs.enqueue(job(1, 1)).unwrap();
        jobs.enqueue(job(2, 1)).unwrap();
        let (_running, _sender, events) = jobs.next().unwrap();
        jobs.close();
        assert!(matches!(events.try_recv(), Ok(LoopEvent::Cancel)));
        // A running job shows its view's status; its loop never started here, so no execution
        // graph view was published: Flink's CREATED.
        assert_eq!(
            statuses(&jobs),
            [(1, "CREATED".to_owned()), (2, "CANCELED".to_owned())]
        );
        assert!(jobs.next().is_none());
        assert!(matches!(
            jobs.enqueue(job(3, 1)),
            Err(JobManagerError::ShuttingDown)
        ));
    }
}
