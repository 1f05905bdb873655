//! Names of the HTTP protocol shared by the server's routes and the client.

/// Header with the cap of a rejected upload, in bytes.
pub(crate) const LIMIT_HEADER: &str = "x-blob-limit";
/// Header with the reference count after an upload.
pub(crate) const REFERENCES_HEADER: &str = "x-blob-references";

/// The answer of `GET /jobs`: the jobs with blobs on the server, as 32-hex-digit strings,
/// sorted.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct JobList {
    /// The jobs.
    pub(crate) jobs: Vec<String>,
}
