//! Names of the HTTP protocol shared by the server's routes and the client.

/// Header with the cap of a rejected upload, in bytes.
pub(crate) const LIMIT_HEADER: &str = "x-blob-limit";
/// Header with the reference count after an upload.
pub(crate) const REFERENCES_HEADER: &str = "x-blob-references";
