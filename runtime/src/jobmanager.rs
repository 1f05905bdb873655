//! The JobManager: accepts TaskManagers and clients, runs jobs one after another with the
//! scheduler core, and serves offloaded deployment data from an embedded blob server.
//!
//! Tasks of the JobManager (tokio unless said otherwise):
//! - the accept loop and one task per connection (`server`): handshakes, heartbeat answers,
//!   task states, client requests;
//! - the heartbeat loop (`registry`): asks every TaskManager each interval, declares the silent
//!   ones lost;
//! - the job runner (an OS thread): takes submitted jobs in order and runs each in its event
//!   loop (`job_loop`), which owns the job's scheduler.

mod data_stats;
mod invokables;
mod job_loop;
mod jobs;
mod registry;
mod server;

use std::net::SocketAddr;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use conflux_blob::{BlobServer, BlobServerConfig};
use conflux_blob_api::{BlobWriter, Digest, JobId};
use conflux_deploy::TaskManagerId;
use conflux_graph::load::LoadOptions;
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::config::JobManagerConfig;
use crate::protocol::{JobSubmission, JobSummary};
use crate::report::JobReport;
pub use invokables::{word_count_job, word_count_job_as_run};
use job_loop::{LoopContext, PreparedJob};
use jobs::Jobs;
use registry::Registry;

/// Why a JobManager could not start or serve a request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobManagerError {
    /// Its address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The embedded blob server failed.
    #[error("blob server: {0}")]
    Blob(#[from] conflux_blob_api::BlobError),
    /// The submitted job is invalid (the message names the offending item).
    #[error("invalid job {source_name}: {message}")]
    InvalidJob {
        /// Where the job came from.
        source_name: String,
        /// What is wrong.
        message: String,
    },
    /// No job has this id.
    #[error("no job {0}")]
    UnknownJob(JobId),
    /// The JobManager is shutting down.
    #[error("the JobManager is shutting down")]
    ShuttingDown,
}

/// A TaskManager as the JobManager sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskManagerInfo {
    /// Its id.
    pub id: TaskManagerId,
    /// Its process id.
    pub pid: u32,
    /// Slots it offers.
    pub slots: u32,
    /// Tasks of the running (or last) job submitted to it.
    pub job_tasks: u64,
}

pub(crate) struct Shared {
    pub(crate) config: JobManagerConfig,
    pub(crate) registry: Arc<Registry>,
    pub(crate) jobs: Jobs,
    pub(crate) blob_server_url: String,
    pub(crate) queue: std::sync::Mutex<Option<mpsc::Sender<PreparedJob>>>,
    pub(crate) shutdown: Notify,
}

/// A running JobManager. Dropping it without [`shutdown`](Self::shutdown) stops accepting
/// connections when its runtime stops.
pub struct JobManager {
    shared: Arc<Shared>,
    address: SocketAddr,
    blob_server: Option<Arc<BlobServer>>,
    runner: Option<std::thread::JoinHandle<()>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for JobManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobManager")
            .field("address", &self.address)
            .field("blob_server_url", &self.shared.blob_server_url)
            .finish_non_exhaustive()
    }
}

impl JobManager {
    /// Binds `config.address`, starts the blob server (keeping no blobs of earlier jobs: this
    /// JobManager recovers none, as Flink's `BlobServer` after FLINK-25436 keeps only recovered
    /// jobs' blobs), the heartbeat loop and the job runner. Must be called within a
    /// multi-thread tokio runtime.
    ///
    /// # Errors
    /// [`JobManagerError::Bind`] when the address is taken, [`JobManagerError::Blob`] when the
    /// blob directory cannot be used.
    pub async fn start(config: JobManagerConfig) -> Result<JobManager, JobManagerError> {
        let listener =
            TcpListener::bind(config.address)
                .await
                .map_err(|source| JobManagerError::Bind {
                    address: config.address,
                    source,
                })?;
        let address = listener
            .local_addr()
            .map_err(|source| JobManagerError::Bind {
                address: config.address,
                source,
            })?;
        let mut blob_config = BlobServerConfig::new(&config.blob_dir);
        blob_config.address = SocketAddr::new(address.ip(), 0);
        blob_config.auth_token = config.rpc.token.clone();
        blob_config.recovered_jobs = Some(Vec::new());
        let blob_server = Arc::new(BlobServer::start(blob_config).await?);
        let host = config
            .advertised_host
            .clone()
            .unwrap_or_else(|| blob_server.local_addr().ip().to_string());
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host
        };
        let blob_server_url = format!("http://{host}:{}", blob_server.local_addr().port());
        let blob_writer: Arc<dyn BlobWriter> = blob_server.clone();

        let registry = Arc::new(Registry::default());
        let (queue_tx, queue_rx) = mpsc::channel::<PreparedJob>();
        let shared = Arc::new(Shared {
            config: config.clone(),
            registry: Arc::clone(&registry),
            jobs: Jobs::default(),
            blob_server_url,
            queue: std::sync::Mutex::new(Some(queue_tx)),
            shutdown: Notify::new(),
        });
        let heartbeat = tokio::spawn(registry::heartbeat_loop(
            Arc::downgrade(&registry),
            Duration::from_millis(config.heartbeat.interval_ms),
            Duration::from_millis(config.heartbeat.timeout_ms),
        ));
        let accept = tokio::spawn(server::accept_loop(listener, Arc::clone(&shared)));
        let runner_shared = Arc::clone(&shared);
        let runner = std::thread::Builder::new()
            .name("conflux-job-runner".into())
            .spawn(move || run_jobs(&runner_shared, blob_writer, &queue_rx))
            .map_err(|source| JobManagerError::Bind { address, source })?;
        tracing::info!(%address, blob_server = %shared.blob_server_url, "JobManager started");
        Ok(JobManager {
            shared,
            address,
            blob_server: Some(blob_server),
            runner: Some(runner),
            tasks: vec![heartbeat, accept],
        })
    }

    /// Where it listens.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The embedded blob server's base URL, as TaskManagers get it.
    pub fn blob_server_url(&self) -> &str {
        &self.shared.blob_server_url
    }

    /// Validates and expands a job and queues it; it runs when the jobs before it have ended.
    ///
    /// # Errors
    /// [`JobManagerError::InvalidJob`] naming the offending item (vertex, edge, byte offset),
    /// [`JobManagerError::ShuttingDown`].
    pub async fn submit(&self, submission: JobSubmission) -> Result<JobId, JobManagerError> {
        submit(&self.shared, submission).await
    }

    /// Every job, in submission order.
    pub fn list(&self) -> Vec<JobSummary> {
        self.shared.jobs.list()
    }

    /// Cancels a queued or running job.
    ///
    /// # Errors
    /// [`JobManagerError::UnknownJob`].
    pub fn cancel(&self, job: JobId) -> Result<(), JobManagerError> {
        self.shared.jobs.cancel(job)
    }

    /// Waits for a job's end and returns its report.
    ///
    /// # Errors
    /// [`JobManagerError::UnknownJob`], [`JobManagerError::ShuttingDown`].
    pub async fn wait(&self, job: JobId) -> Result<JobReport, JobManagerError> {
        self.shared.jobs.wait(job).await
    }

    /// The registered TaskManagers, by id.
    pub fn task_managers(&self) -> Vec<TaskManagerInfo> {
        let registry = self.shared.registry.lock();
        registry
            .alive
            .keys()
            .filter_map(|id| {
                registry.records.get(id).map(|r| TaskManagerInfo {
                    id: *id,
                    pid: r.pid,
                    slots: r.slots,
                    job_tasks: r.job_tasks,
                })
            })
            .collect()
    }

    /// Stops accepting, cancels the running job, tells the TaskManagers and stops the blob
    /// server.
    pub async fn shutdown(mut self) {
        self.shared.shutdown.notify_waiters();
        self.shared.jobs.cancel_all();
        if let Ok(mut queue) = self.shared.queue.lock() {
            queue.take();
        }
        {
            let mut registry = self.shared.registry.lock();
            for entry in registry.alive.values() {
                entry.say_goodbye("the JobManager is shutting down");
                entry.closed.notify_one();
            }
            // Drops every heartbeat request sender: each heartbeat connection writes its
            // goodbye and closes.
            registry.alive.clear();
        }
        for task in self.tasks.drain(..) {
            task.abort();
        }
        if let Some(runner) = self.runner.take() {
            let _ = tokio::task::spawn_blocking(move || runner.join()).await;
        }
        // The job runner held the other reference; it has stopped.
        if let Some(blob_server) = self.blob_server.take().and_then(Arc::into_inner) {
            blob_server.shutdown().await;
        }
    }
}

fn new_job_id(source: &str) -> JobId {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!("{source}/{nanos}/{}", std::process::id());
    let digest = Digest::of(seed.as_bytes());
    let mut id = [0u8; 16];
    id.copy_from_slice(&digest.0[..16]);
    JobId(id)
}

pub(crate) async fn submit(
    shared: &Arc<Shared>,
    submission: JobSubmission,
) -> Result<JobId, JobManagerError> {
    let source_name = submission.source.clone();
    let invalid = |message: String| JobManagerError::InvalidJob {
        source_name: source_name.clone(),
        message,
    };
    let submitted = Instant::now();
    let options = submission.options.clone();
    let scheduler_config = shared.config.scheduler;
    let (scheduler, tasks, estimate_reason) = tokio::task::spawn_blocking(move || {
        let load = LoadOptions {
            parallelism: options.parallelism,
            auto_parallelism: options.auto_parallelism,
            default_parallelism: options
                .default_parallelism
                .unwrap_or(LoadOptions::default().default_parallelism),
        };
        let job = conflux_graph::load::load(&submission.job, &load).map_err(|e| e.to_string())?;
        let tasks = invokables::resolve(&job, &options)?;
        let (scheduler, estimate_reason) =
            job_loop::new_scheduler(job, &options, scheduler_config)?;
        Ok::<_, String>((scheduler, tasks, estimate_reason))
    })
    .await
    .map_err(|e| invalid(format!("the loader failed: {e}")))?
    .map_err(invalid)?;
    let id = new_job_id(&source_name);
    let name = scheduler.graph().job_graph().name().to_owned();
    let job = PreparedJob {
        id,
        name: name.clone(),
        scheduler,
        tasks,
        options: submission.options,
        submitted,
        estimate_reason,
    };
    let queue = shared
        .queue
        .lock()
        .map_err(|_| JobManagerError::ShuttingDown)?
        .clone()
        .ok_or(JobManagerError::ShuttingDown)?;
    shared.jobs.add(id, name);
    queue.send(job).map_err(|_| JobManagerError::ShuttingDown)?;
    tracing::info!(job = %id, source = %source_name, "job submitted");
    Ok(id)
}

/// The job runner: one job at a time, in submission order (a session cluster whose jobs share
/// every slot).
fn run_jobs(
    shared: &Shared,
    blob_writer: Arc<dyn BlobWriter>,
    queue: &mpsc::Receiver<PreparedJob>,
) {
    let ctx = LoopContext {
        registry: &shared.registry,
        blob_writer,
        rpc_timeout_ms: shared.config.rpc.timeout_ms,
        speculative: shared.config.scheduler.speculative,
    };
    while let Ok(job) = queue.recv() {
        let (sender, events) = mpsc::channel();
        if !shared.jobs.start(job.id, sender.clone()) {
            // Cancelled while queued.
            shared.jobs.finish(
                job.id,
                JobReport {
                    job_id: job.id.to_string(),
                    job: job.name.clone(),
                    status: "CANCELED".into(),
                    tasks: u64::from(job.scheduler.graph().num_execution_vertices()),
                    seed: job.options.seed,
                    trace_digest: format!("{:016x}", job.scheduler.trace_digest()),
                    ..JobReport::default()
                },
            );
            continue;
        }
        tracing::info!(job = %job.id, name = %job.name, "job running");
        let id = job.id;
        let report = job_loop::run_job(&ctx, job, sender, &events);
        tracing::info!(job = %id, status = %report.status, "job ended");
        shared.jobs.finish(id, report);
    }
}
