//! `JobManagerError`: why a JobManager could not start or serve a request. Below the JobManager
//! and every part of it that refuses something (admission, the job table, the job store, the
//! servers).

use std::net::SocketAddr;

use conflux_blob_api::JobId;

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
    /// The job would take more memory than the JobManager's budget
    /// ([`JobManagerConfig::max_job_memory_bytes`](crate::JobManagerConfig::max_job_memory_bytes));
    /// nothing was built for it.
    #[error("job {source_name} is refused: its execution graph, scheduler state and descriptors \
             need an estimated {} ({estimate} bytes: {execution_vertices} subtasks), more than \
             the JobManager's --max-job-memory of {} ({limit} bytes); raise --max-job-memory or \
             lower the job's parallelism", mib(*.estimate), mib(*.limit))]
    TooLarge {
        /// Where the job came from.
        source_name: String,
        /// The estimate, bytes.
        estimate: u64,
        /// The budget, bytes.
        limit: u64,
        /// The job's subtasks.
        execution_vertices: u64,
    },
    /// Too many jobs wait already, or their graphs hold the memory budget.
    #[error(
        "the JobManager's queue is full ({jobs} jobs holding {bytes} bytes wait; at most \
             {max_jobs} jobs and {max_bytes} bytes): submit again once some have run"
    )]
    QueueFull {
        /// Jobs waiting.
        jobs: usize,
        /// Bytes of their graphs.
        bytes: u64,
        /// The most jobs that may wait.
        max_jobs: usize,
        /// The most bytes their graphs may hold.
        max_bytes: u64,
    },
    /// No job has this id (or it ended and left the job history).
    #[error("no job {0}")]
    UnknownJob(JobId),
    /// The JobManager is shutting down.
    #[error("the JobManager is shutting down")]
    ShuttingDown,
    /// [`JobManagerConfig::web_ui_dir`](crate::JobManagerConfig::web_ui_dir) holds no
    /// dashboard.
    #[error(transparent)]
    WebUi(#[from] conflux_web::WebUiDirError),
    /// With a storage directory (`high-availability.storageDir`) the submission could not be
    /// made durable: it is refused, not queued. At start: the directory cannot be used.
    #[error("job {source_name} is refused: the job store could not keep it: {message}")]
    JobStore {
        /// Where the job came from (at start: the storage directory).
        source_name: String,
        /// What could not be written.
        message: String,
    },
}

/// `bytes` as MiB or GiB with one decimal, for messages.
fn mib(bytes: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    let b = bytes as f64;
    if b >= GIB {
        format!("{:.1} GiB", b / GIB)
    } else {
        format!("{:.1} MiB", b / f64::from(1u32 << 20))
    }
}
