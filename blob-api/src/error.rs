//! The error of every blob operation.

use crate::BlobKey;

/// Why a blob operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlobError {
    /// No blob under this key.
    #[error("blob {0} not found")]
    NotFound(BlobKey),
    /// A string that is not a blob key (or job id); nothing was touched.
    #[error("invalid blob key: {0}")]
    InvalidKey(String),
    /// Stored or received bytes do not hash to the key's digest; they are never served.
    #[error("blob {key}: content does not match its digest (corrupted)")]
    DigestMismatch {
        /// The key whose content is wrong.
        key: BlobKey,
    },
    /// An upload above the configured cap.
    #[error("blob of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Size of the upload in bytes (as far as known).
        size: u64,
        /// The cap in bytes.
        limit: u64,
    },
    /// The body of an upload could not be read: a malformed request (e.g. a bad chunked
    /// encoding) or a connection cut off mid-body. Nothing was stored; HTTP 400.
    #[error("upload body could not be read: {source}")]
    BadUpload {
        /// What the HTTP layer said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The client sent less than `min_bytes` of an upload's body within the server's idle
    /// timeout (nothing, or a trickle). Nothing was stored; HTTP 408.
    #[error("upload stalled: less than {min_bytes} bytes in {idle_ms} ms")]
    UploadStalled {
        /// The idle timeout in ms.
        idle_ms: u64,
        /// The least an upload must send per idle timeout (or finish), bytes.
        min_bytes: u64,
    },
    /// The request lacked the shared secret.
    #[error("unauthorized: missing or wrong bearer token")]
    Unauthorized,
    /// File system or network failure.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, e.g. `writing /tmp/blobs/incoming/temp-3`.
        context: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The durable object store failed.
    #[error("object store: {context}: {source}")]
    Store {
        /// What was being done, e.g. `writing job_<job>/p-<digest> in s3://blobs at <url>`.
        context: String,
        /// The cause: an `object_store::Error` from `conflux-blob`'s `BlobStore` (downcast
        /// it to match on its kind), or a description of malformed stored data. Boxed because
        /// this crate does not depend on `object_store`.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The remote server answered with an error.
    #[error("blob server: {0}")]
    Remote(String),
    /// An HTTP request could not be made or its answer not be read (connection refused, reset,
    /// timed out).
    #[error("request to {url} failed: {source}")]
    Transport {
        /// The URL requested.
        url: String,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A configuration that cannot work (a bad URL, an S3 setting the client refuses).
    #[error("invalid blob configuration: {0}")]
    Config(String),
    /// A background task failed or was cancelled (the runtime shut down); a bug unless the
    /// process is stopping.
    #[error("internal error (a bug unless shutting down): {0}")]
    Internal(String),
}
