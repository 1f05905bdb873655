//! An HTTP client of the blob server's protocol (reqwest, rustls, no default features).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use conflux_blob_api::{BlobError, BlobKey, BlobKind, JobId};
use reqwest::{RequestBuilder, Response, StatusCode};

use crate::layout;
use crate::protocol::{JobList, LIMIT_HEADER};

/// How long an idle pooled connection is kept: 20 s.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(20);

/// A client of a [`BlobServer`](crate::BlobServer): put, get (verified), delete, job cleanup.
/// Cheap to clone: clones share one connection pool, so one client can serve many caches.
/// `Debug` hides the token.
///
/// Timeouts: 10 s to connect, 300 s per request (Flink's `blob.client.socket.timeout`).
#[derive(Clone)]
pub struct BlobClient {
    http: reqwest::Client,
    base: Arc<str>,
    token: Option<Arc<str>>,
}

impl fmt::Debug for BlobClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobClient")
            .field("base", &self.base)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

fn kind_segment(kind: BlobKind) -> &'static str {
    match kind {
        BlobKind::Permanent => "permanent",
        BlobKind::Transient => "transient",
    }
}

impl BlobClient {
    /// A client of the server at `base_url` (e.g. `http://127.0.0.1:6124`), sending
    /// `auth_token` as a bearer token when given.
    ///
    /// # Errors
    /// [`BlobError::Config`] when the URL is not `http://` or `https://`, or the HTTP client
    /// cannot be built.
    pub fn new(
        base_url: impl Into<String>,
        auth_token: Option<String>,
    ) -> Result<BlobClient, BlobError> {
        let base = base_url.into();
        let base = base.trim_end_matches('/').to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(BlobError::Config(format!(
                "blob server URL '{base}' is not http:// or https://"
            )));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(300))
            .tcp_nodelay(true)
            .pool_max_idle_per_host(128)
            // Below the server's default header-read timeout (30 s), which closes idle
            // connections: the client lets go first instead of racing a request with the close.
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .build()
            .map_err(|e| BlobError::Config(format!("HTTP client for {base}: {e}")))?;
        Ok(BlobClient {
            http,
            base: base.into(),
            token: auth_token.map(Into::into),
        })
    }

    /// The server's base URL.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    fn authorized(&self, request: RequestBuilder) -> RequestBuilder {
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    async fn send(&self, request: RequestBuilder, url: &str) -> Result<Response, BlobError> {
        self.authorized(request)
            .send()
            .await
            .map_err(|e| BlobError::Transport {
                url: url.to_owned(),
                source: Box::new(e),
            })
    }

    /// Uploads `bytes` as a blob of `kind` for `job` and returns its key, checked against the
    /// digest of what was sent.
    ///
    /// # Errors
    /// [`BlobError::TooLarge`] (413), [`BlobError::Unauthorized`] (401),
    /// [`BlobError::InvalidKey`] (400), [`BlobError::Remote`] for other answers,
    /// [`BlobError::Transport`] when the server cannot be reached.
    pub async fn put(
        &self,
        kind: BlobKind,
        job: Option<JobId>,
        bytes: Bytes,
    ) -> Result<BlobKey, BlobError> {
        let url = format!(
            "{}/blobs/{}/{}",
            self.base,
            kind_segment(kind),
            layout::job_dir_name(job).trim_start_matches("job_")
        );
        let size = bytes.len() as u64;
        let expected = if bytes.len() > (1 << 20) {
            let b = bytes.clone();
            layout::blocking(move || Ok(BlobKey::for_content(kind, job, &b))).await?
        } else {
            BlobKey::for_content(kind, job, &bytes)
        };
        let response = self.send(self.http.put(&url).body(bytes), &url).await?;
        let response = check(response, &url, None, size).await?;
        let text = response.text().await.map_err(|e| BlobError::Transport {
            url: url.clone(),
            source: Box::new(e),
        })?;
        let key: BlobKey = text.trim().parse()?;
        if key != expected {
            return Err(BlobError::Remote(format!(
                "{url} stored the upload as {key}, but its content is {expected}"
            )));
        }
        Ok(key)
    }

    /// A blob's content, checked against its digest.
    ///
    /// # Errors
    /// [`BlobError::NotFound`] (404), [`BlobError::DigestMismatch`] when the bytes received do
    /// not match the key, [`BlobError::Unauthorized`], [`BlobError::Remote`],
    /// [`BlobError::Transport`].
    pub async fn get(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        let url = format!("{}/blobs/{key}", self.base);
        let response = self.send(self.http.get(&url), &url).await?;
        let response = check(response, &url, Some(key), 0).await?;
        let bytes = response.bytes().await.map_err(|e| BlobError::Transport {
            url: url.clone(),
            source: Box::new(e),
        })?;
        let key = *key;
        let large = bytes.len() > (1 << 20);
        let verify = move || {
            if key.matches(&bytes) {
                Ok(bytes)
            } else {
                Err(BlobError::DigestMismatch { key })
            }
        };
        if large {
            // Hashing megabytes is CPU work: keep it off the async workers.
            layout::blocking(verify).await
        } else {
            verify()
        }
    }

    /// Drops one reference to a blob (unknown keys are not an error).
    ///
    /// # Errors
    /// As [`BlobClient::get`], except that a missing blob is not one.
    pub async fn delete(&self, key: &BlobKey) -> Result<(), BlobError> {
        let url = format!("{}/blobs/{key}", self.base);
        let response = self.send(self.http.delete(&url), &url).await?;
        check(response, &url, Some(key), 0).await.map(drop)
    }

    /// Deletes every blob of `job` on the server and in its durable store.
    ///
    /// # Errors
    /// As [`BlobClient::get`].
    pub async fn cleanup_job(&self, job: JobId) -> Result<(), BlobError> {
        let url = format!("{}/jobs/{job}", self.base);
        let response = self.send(self.http.delete(&url), &url).await?;
        check(response, &url, None, 0).await.map(drop)
    }

    /// The jobs with blobs on the server, sorted (`GET /jobs`): what a starting JobManager
    /// compares with the jobs it recovers.
    ///
    /// # Errors
    /// As [`BlobClient::get`]; [`BlobError::Remote`] for an answer that is not a job list.
    pub async fn jobs(&self) -> Result<Vec<JobId>, BlobError> {
        let url = format!("{}/jobs", self.base);
        let response = self.send(self.http.get(&url), &url).await?;
        let response = check(response, &url, None, 0).await?;
        let body = response.bytes().await.map_err(|e| BlobError::Transport {
            url: url.clone(),
            source: Box::new(e),
        })?;
        let list: JobList = serde_json::from_slice(&body)
            .map_err(|e| BlobError::Remote(format!("{url} answered no job list: {e}")))?;
        list.jobs.iter().map(|job| job.parse()).collect()
    }
}

/// Turns an error answer into the [`BlobError`] the server meant.
async fn check(
    response: Response,
    url: &str,
    key: Option<&BlobKey>,
    sent: u64,
) -> Result<Response, BlobError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let limit = response
        .headers()
        .get(LIMIT_HEADER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    let message = response.text().await.unwrap_or_default();
    let message = message.trim();
    Err(match (status, key) {
        (StatusCode::NOT_FOUND, Some(key)) => BlobError::NotFound(*key),
        (StatusCode::BAD_REQUEST, _) => BlobError::InvalidKey(message.to_owned()),
        (StatusCode::UNAUTHORIZED, _) => BlobError::Unauthorized,
        (StatusCode::PAYLOAD_TOO_LARGE, _) => BlobError::TooLarge {
            size: sent,
            limit: limit.unwrap_or(0),
        },
        _ => BlobError::Remote(format!("{status} from {url}: {message}")),
    })
}
