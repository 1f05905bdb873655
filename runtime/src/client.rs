//! A client of the JobManager: what `conflux submit`, `list` and `cancel` use (Flink's
//! `RestClusterClient`, over the same RPC port as TaskManagers).

use std::time::Duration;

use conflux_blob_api::JobId;
use futures_util::SinkExt;

use crate::config::{DEFAULT_HANDSHAKE_TIMEOUT_MS, MAX_SUBMISSION_BYTES};
use crate::connection::{connect, decode, encode, next_frame, FramedStream, RpcError};
use crate::protocol::{ClientRequest, ClientResponse, Hello, JobSubmission, JobSummary, Role};
use crate::report::{from_json, JobReport};

/// Why a client request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The connection failed or was refused.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// The JobManager answered with an error.
    #[error("{0}")]
    JobManager(String),
    /// The JobManager answered something unexpected.
    #[error("unexpected answer from the JobManager: {0}")]
    Unexpected(String),
}

/// A connection to a JobManager as a client.
#[derive(Debug)]
pub struct JobManagerClient {
    conn: FramedStream,
    peer: String,
    frame: u64,
}

impl JobManagerClient {
    /// Connects to `address` (`host:port`) and introduces itself with `token`.
    ///
    /// # Errors
    /// [`ClientError::Rpc`]: unreachable, refused (token, version), timed out.
    pub async fn connect(address: &str, token: Option<String>) -> Result<Self, ClientError> {
        let hello = Hello {
            token,
            role: Role::Client,
        };
        let (conn, _) = connect(
            address,
            &hello,
            MAX_SUBMISSION_BYTES + (1 << 20),
            Duration::from_millis(DEFAULT_HANDSHAKE_TIMEOUT_MS),
        )
        .await?;
        Ok(JobManagerClient {
            conn,
            peer: address.to_owned(),
            frame: 1,
        })
    }

    async fn call(&mut self, request: &ClientRequest) -> Result<ClientResponse, ClientError> {
        self.conn
            .send(encode(request)?)
            .await
            .map_err(|source| RpcError::Io {
                peer: self.peer.clone(),
                source,
            })?;
        // Waiting for a job may take as long as the job: no deadline here.
        let body = next_frame(
            &mut self.conn,
            &self.peer,
            self.frame,
            "answer",
            Duration::from_secs(u64::from(u32::MAX)),
        )
        .await?;
        let frame = self.frame;
        self.frame += 1;
        match decode(&body, &self.peer, frame, "JobManager answer")? {
            ClientResponse::Error(message) => Err(ClientError::JobManager(message)),
            response => Ok(response),
        }
    }

    /// Submits a job; returns its id.
    ///
    /// # Errors
    /// [`ClientError::JobManager`] with the reason an invalid job was refused.
    pub async fn submit(&mut self, submission: JobSubmission) -> Result<JobId, ClientError> {
        match self.call(&ClientRequest::Submit(submission)).await? {
            ClientResponse::Submitted(job) => Ok(job),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// Lists the jobs.
    ///
    /// # Errors
    /// As [`submit`](Self::submit).
    pub async fn list(&mut self) -> Result<Vec<JobSummary>, ClientError> {
        match self.call(&ClientRequest::List).await? {
            ClientResponse::Jobs(jobs) => Ok(jobs),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// One job's summary.
    ///
    /// # Errors
    /// [`ClientError::JobManager`] for an unknown job (never submitted, or gone from the
    /// history).
    pub async fn status(&mut self, job: JobId) -> Result<JobSummary, ClientError> {
        match self.call(&ClientRequest::Status(job)).await? {
            ClientResponse::Job(summary) => Ok(summary),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// How many TaskManagers are registered with the JobManager now.
    ///
    /// # Errors
    /// As [`submit`](Self::submit).
    pub async fn task_manager_count(&mut self) -> Result<u64, ClientError> {
        match self.call(&ClientRequest::TaskManagerCount).await? {
            ClientResponse::TaskManagerCount(n) => Ok(n),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// Cancels a job.
    ///
    /// # Errors
    /// [`ClientError::JobManager`] for an unknown job.
    pub async fn cancel(&mut self, job: JobId) -> Result<(), ClientError> {
        match self.call(&ClientRequest::Cancel(job)).await? {
            ClientResponse::Canceled(_) => Ok(()),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }

    /// Waits for a job's end and returns its report.
    ///
    /// # Errors
    /// [`ClientError::JobManager`] for an unknown job.
    pub async fn wait(&mut self, job: JobId) -> Result<JobReport, ClientError> {
        match self.call(&ClientRequest::Wait(job)).await? {
            ClientResponse::Report(json) => from_json(&json).map_err(ClientError::Unexpected),
            other => Err(ClientError::Unexpected(format!("{other:?}"))),
        }
    }
}
