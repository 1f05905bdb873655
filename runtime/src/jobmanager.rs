//! The JobManager: accepts TaskManagers and clients, runs jobs one after another with the
//! scheduler core, and serves offloaded deployment data from an embedded blob server.
//!
//! Tasks of the JobManager (tokio unless said otherwise):
//! - the accept loop and one task per connection (`server`): handshakes, heartbeat answers,
//!   task states, client requests;
//! - the heartbeat loop (`registry`): asks every TaskManager each interval, declares the silent
//!   ones lost;
//! - the job runner (an OS thread): takes queued jobs in order from the job table (`jobs`),
//!   builds each one's scheduler and runs it in its event loop (`job_loop`).
//!
//! Admission: a submission is loaded and validated, and its memory estimated from its job
//! graph ([`conflux_scheduler::JobMemoryEstimate`], O(V + E)); a job above
//! [`JobManagerConfig::max_job_memory_bytes`] is refused before anything is built for it.

mod admission;
mod data_stats;
mod durable;
mod error;
mod invokables;
mod job_loop;
mod jobs;
mod loop_event;
mod recovery;
mod registry;
mod rest_backend;
mod rest_view;
mod server;
mod shared;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use conflux_blob::{BlobServer, BlobServerConfig};
use conflux_blob_api::{BlobWriter, JobId};
use conflux_deploy::TaskManagerId;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore};

use crate::config::JobManagerConfig;
use crate::metrics::JobManagerMetrics;
use crate::protocol::{JobSubmission, JobSummary};
use crate::report::JobReport;
pub use invokables::{word_count_job, word_count_job_as_run};
use job_loop::LoopContext;
use jobs::Jobs;
use registry::Registry;

use admission::submit;
pub use error::JobManagerError;
use shared::Shared;

/// A TaskManager as the JobManager sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskManagerInfo {
    /// Its id.
    pub id: TaskManagerId,
    /// Its process id.
    pub pid: u32,
    /// Where its data server listens.
    pub data_address: SocketAddr,
    /// Slots it offers.
    pub slots: u32,
    /// Tasks of the running (or last) job submitted to it.
    pub job_tasks: u64,
}

/// Submissions loaded at once: each holds its file and its job graph while it is checked.
const CONCURRENT_SUBMISSIONS: usize = 2;

/// A running JobManager. Dropping it without [`shutdown`](Self::shutdown) stops accepting
/// connections when its runtime stops.
pub struct JobManager {
    shared: Arc<Shared>,
    address: SocketAddr,
    /// The REST server: its stop signal and task.
    rest: Option<(
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<()>,
    )>,
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
    /// blob directory cannot be used, [`JobManagerError::WebUi`] when
    /// [`JobManagerConfig::web_ui_dir`](crate::JobManagerConfig::web_ui_dir) has no
    /// `index.html`.
    pub async fn start(config: JobManagerConfig) -> Result<JobManager, JobManagerError> {
        // The web pages beside the API (Flink's dashboard from a directory, or Conflux's own),
        // checked before anything starts.
        let web = match &config.web_ui_dir {
            Some(dir) => Some(conflux_web::flink_dashboard(dir)?),
            None => None,
        };
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
        let store = match &config.storage_dir {
            Some(dir) => Some(conflux_job_store::StorageDir::open(dir).map_err(|e| {
                JobManagerError::JobStore {
                    source_name: dir.display().to_string(),
                    message: e.to_string(),
                }
            })?),
            None if config.leader.is_some() => {
                return Err(JobManagerError::JobStore {
                    source_name: "high-availability.storageDir".into(),
                    message: "high availability needs a storage directory".into(),
                })
            }
            None => None,
        };
        let mut blob_config = BlobServerConfig::new(&config.blob_dir);
        blob_config.address = SocketAddr::new(address.ip(), 0);
        blob_config.auth_token = config.rpc.token.clone();
        // The blob server keeps the blobs of the jobs this JobManager is about to recover (as
        // Flink's BlobServer is told the recovered jobs); every other job's blobs go.
        blob_config.recovered_jobs = Some(store.as_ref().map(jobs_to_recover).unwrap_or_default());
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
        let rest_listener = match config.rest_address {
            Some(rest) => {
                Some(
                    TcpListener::bind(rest)
                        .await
                        .map_err(|source| JobManagerError::Bind {
                            address: rest,
                            source,
                        })?,
                )
            }
            None => None,
        };
        let rest_address = rest_listener.as_ref().and_then(|l| l.local_addr().ok());
        let metrics = JobManagerMetrics::new(
            config
                .advertised_host
                .as_deref()
                .unwrap_or(&address.ip().to_string()),
        );

        let registry = Arc::new(Registry::new(metrics.heartbeat_rtt_seconds.clone()));
        let shared = Arc::new(Shared {
            config: config.clone(),
            metrics,
            rest_address,
            blob_server: Arc::downgrade(&blob_server),
            registry: Arc::clone(&registry),
            jobs: Jobs::new(config.job_history, config.max_job_memory_bytes),
            blob_server_url,
            loading: Semaphore::new(CONCURRENT_SUBMISSIONS),
            shutdown: Notify::new(),
            store: store.clone(),
            recovering: std::sync::Mutex::new(Vec::new()),
            stopping: std::sync::atomic::AtomicBool::new(false),
        });
        // Before any connection is accepted: every registering TaskManager learns which jobs'
        // partitions to keep.
        if let Some(store) = &store {
            let recovered = recovery::recover_jobs(&shared, store).await;
            if !recovered.is_empty() {
                tracing::info!(
                    jobs = recovered.len(),
                    "jobs recovered from the storage directory"
                );
            }
            *shared
                .recovering
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = recovered;
        }
        // On the heartbeat thread, with the heartbeat connections: no deployment work delays a
        // round or the reading of its answers.
        let heartbeats = crate::heartbeat_thread::heartbeat_runtime()
            .map_err(|source| JobManagerError::Bind { address, source })?;
        let heartbeat = heartbeats.spawn(registry::heartbeat_loop(
            Arc::downgrade(&registry),
            Duration::from_millis(config.heartbeat.interval_ms),
            Duration::from_millis(config.heartbeat.timeout_ms),
        ));
        let accept = tokio::spawn(server::accept_loop(listener, Arc::clone(&shared)));
        let runner_shared = Arc::clone(&shared);
        let handle = tokio::runtime::Handle::current();
        let runner = std::thread::Builder::new()
            .name("conflux-job-runner".into())
            .spawn(move || run_jobs(&runner_shared, blob_writer, &handle))
            .map_err(|source| JobManagerError::Bind { address, source })?;
        let rest = rest_listener.map(|listener| {
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let api = conflux_rest::router(Arc::new(rest_backend::JobManagerRest::new(
                Arc::clone(&shared),
            )));
            let router = match web {
                Some(dashboard) => api.fallback_service(dashboard),
                None => api.merge(conflux_web::live_view()),
            };
            let task = tokio::spawn(async move {
                let served = conflux_http::serve(
                    listener,
                    router,
                    rest_backend::REST_LIMITS,
                    conflux_http::OpenConnections::default(),
                    async move {
                        let _ = stopped.await;
                    },
                )
                .await;
                if let Err(e) = served {
                    tracing::warn!("the REST server stopped: {e}");
                }
            });
            (stop, task)
        });
        let rest_url = rest_address.map_or_else(|| "none".to_owned(), |a| format!("http://{a}"));
        tracing::info!(
            %address,
            blob_server = %shared.blob_server_url,
            rest = %rest_url,
            "JobManager listening on {address} (blob server {}, REST API {rest_url})",
            shared.blob_server_url
        );
        Ok(JobManager {
            shared,
            address,
            rest,
            blob_server: Some(blob_server),
            runner: Some(runner),
            tasks: vec![heartbeat, accept],
        })
    }

    /// Where it listens.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Where the REST API (Flink's, with `/metrics`) listens, if it does.
    pub fn rest_address(&self) -> Option<SocketAddr> {
        self.shared.rest_address
    }

    /// The embedded blob server's base URL, as TaskManagers get it.
    pub fn blob_server_url(&self) -> &str {
        &self.shared.blob_server_url
    }

    /// Validates a job, checks its estimated memory against the budget and queues it as its
    /// job graph; it is expanded and runs when the jobs before it have ended.
    ///
    /// # Errors
    /// [`JobManagerError::InvalidJob`] naming the offending item (vertex, edge, byte offset,
    /// an output directory that is not UTF-8), [`JobManagerError::TooLarge`],
    /// [`JobManagerError::QueueFull`], [`JobManagerError::ShuttingDown`].
    pub async fn submit(&self, submission: JobSubmission) -> Result<JobId, JobManagerError> {
        submit(&self.shared, submission).await
    }

    /// Every job queued, running or in the job history, in submission order.
    pub fn list(&self) -> Vec<JobSummary> {
        self.shared.jobs.list()
    }

    /// Cancels a queued job (it ends CANCELED at once) or a running one.
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
            .iter()
            .filter_map(|(id, entry)| {
                registry.records.get(id).map(|r| TaskManagerInfo {
                    id: *id,
                    pid: r.pid,
                    data_address: entry.location.data_address,
                    slots: r.slots,
                    job_tasks: r.job_tasks,
                })
            })
            .collect()
    }

    /// Stops accepting, cancels the queued and running jobs, tells the TaskManagers and stops
    /// the blob server. Waits for the job runner to stop: a process that must end promptly
    /// bounds this call (the runner may be inside a long scheduler call).
    pub async fn shutdown(mut self) {
        self.shared
            .stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.shared.shutdown.notify_waiters();
        if let Some((stop, task)) = self.rest.take() {
            let _ = stop.send(());
            // Requests in progress finish; a client that keeps its connection idle is cut by
            // the idle timeout, so the wait is bounded.
            if tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .is_err()
            {
                tracing::debug!("the REST server did not stop within 5 s");
            }
        }
        self.shared.jobs.close();
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

/// The job runner: one job at a time, in submission order (a session cluster whose jobs share
/// every slot); each job's scheduler is built when it starts.
fn run_jobs(shared: &Shared, blob_writer: Arc<dyn BlobWriter>, handle: &tokio::runtime::Handle) {
    let ctx = LoopContext {
        registry: &shared.registry,
        blob_writer,
        rpc_timeout_ms: shared.config.rpc.timeout_ms,
        max_submissions_in_flight: shared.config.rpc.max_submissions_in_flight.max(1),
        speculative: shared.config.scheduler.speculative,
        metrics: &shared.metrics,
        jobs: &shared.jobs,
        store: shared.store.as_ref(),
        lease: shared.config.leader.as_ref().map(|l| l.lease.clone()),
        recovery_timeout_ms: shared.config.job_recovery_timeout_ms,
    };
    while let Some((job, sender, events)) = shared.jobs.next() {
        tracing::info!(job = %job.id, "Starting execution of job '{}' ({}).", job.name, job.id);
        let id = job.id;
        let report = job_loop::run_job(&ctx, job, shared.config.scheduler, sender, &events);
        // A job whose loop never ran (its scheduler or descriptors could not be set up) ends
        // here.
        if let Some(view) = shared.jobs.view(id) {
            rest_view::ended_outside_the_loop(
                &view,
                &report.status,
                report.failure_reason.as_deref(),
            );
        }
        tracing::info!(job = %id, status = %report.status, "Job {id} reached terminal state {}.", report.status);
        // A job cancelled by the JobManager's shutdown stays in the storage directory for the
        // next JobManager; any other end is recorded before clients hear of it.
        if let Some(store) = &shared.store {
            if !shared.stopping.load(std::sync::atomic::Ordering::SeqCst) {
                durable::job_ended(store, id, &report, shared.config.leader.as_ref(), handle);
            }
        }
        shared
            .recovering
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|j| *j != id);
        shared.jobs.finish(id, report);
    }
}

/// The jobs `store` holds that have not ended (an entry, no result): those the JobManager
/// recovers. A listing that fails lists none here; the recovery itself reports it.
fn jobs_to_recover(store: &conflux_job_store::StorageDir) -> Vec<JobId> {
    store
        .jobs()
        .unwrap_or_default()
        .into_iter()
        .filter(|job| matches!(store.read_result(job), Ok(None)))
        .filter_map(|job| job.parse().ok())
        .collect()
}
