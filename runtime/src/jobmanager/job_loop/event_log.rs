//! The job's event log (FLIP-383's `JobEventManager`): the loop records the events of each
//! scheduler call (a finished execution with where its partitions are and its bytes, a vertex
//! initialised with its parallelism, vertices reset by a failover) and hands them, when it is
//! about to wait, to a writer thread, which appends each batch as one checksummed record and
//! fsyncs it, compacting the log past its limit. The scheduler's thread never waits for the
//! disk.
//!
//! Under high availability a JobManager past its lease appends nothing more (the next leader
//! owns the log from then on): the writer checks the lease before every batch.
//!
//! A log that cannot be written is deleted and no more is written (logged at ERROR): a job
//! recovered without it runs again from the start, never from a log that misses a reset.

use std::sync::mpsc::{self, Receiver, Sender};

use conflux_job_store::{JobEvent, RecoveredJob, StorageDir};

/// The loop's end of a job's event log.
pub(super) struct JobEventLog {
    pending: Vec<JobEvent>,
    sender: Option<Sender<Vec<JobEvent>>>,
    writer: Option<std::thread::JoinHandle<Option<u64>>>,
}

impl JobEventLog {
    /// Opens (rewrites as the snapshot of `state`) the log of `job` and starts its writer,
    /// which writes only while `lease` (high availability) holds. `None` when it cannot be
    /// opened (logged): the job runs without a log.
    pub(super) fn open(
        store: &StorageDir,
        job: &str,
        state: RecoveredJob,
        lease: Option<conflux_ha::LeaseHandle>,
    ) -> Option<JobEventLog> {
        let mut writer = match store.event_log(job, state) {
            Ok(writer) => writer,
            Err(e) => {
                tracing::error!(%job, "no event log: {e}; the job cannot be recovered");
                return None;
            }
        };
        let (sender, batches): (Sender<Vec<JobEvent>>, Receiver<Vec<JobEvent>>) = mpsc::channel();
        let name = job.to_owned();
        let thread = std::thread::Builder::new()
            .name("conflux-event-log".into())
            .spawn(move || {
                while let Ok(mut batch) = batches.recv() {
                    // What else is waiting joins this batch: one fsync for all.
                    while let Ok(more) = batches.try_recv() {
                        batch.extend(more);
                    }
                    if lease.as_ref().is_some_and(|l| !l.is_valid()) {
                        tracing::warn!(job = %name, "event log no longer written: this JobManager's leadership lease ended");
                        return Some(writer.bytes());
                    }
                    if let Err(e) = writer.append(&batch) {
                        tracing::error!(job = %name, "event log not written: {e}; deleting it, so that a recovery runs the job from the start");
                        let path = writer.path().to_path_buf();
                        drop(writer);
                        let _ = std::fs::remove_file(&path);
                        return None;
                    }
                }
                Some(writer.bytes())
            });
        match thread {
            Ok(thread) => Some(JobEventLog {
                pending: Vec::new(),
                sender: Some(sender),
                writer: Some(thread),
            }),
            Err(e) => {
                tracing::error!(%job, "no event log thread: {e}");
                None
            }
        }
    }

    /// Records an event, written with the next flush.
    pub(super) fn record(&mut self, event: JobEvent) {
        self.pending.push(event);
    }

    /// Hands the recorded events to the writer.
    pub(super) fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.pending);
        if let Some(sender) = &self.sender {
            if sender.send(batch).is_err() {
                self.sender = None;
            }
        }
    }

    /// Flushes, stops the writer once it has written everything and returns the log's size,
    /// bytes (`None` when it failed).
    pub(super) fn close(mut self) -> Option<u64> {
        self.flush();
        self.sender = None;
        self.writer.take().and_then(|w| w.join().ok().flatten())
    }
}
