//! Blob keys and job ids.

use std::fmt;
#[cfg(doc)]
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A job's id: 16 bytes, written as 32 lower-case hex digits (Flink's `JobID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct JobId(pub [u8; 16]);

/// A BLAKE3 content digest (32 bytes), written as 64 lower-case hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(*blake3::hash(bytes).as_bytes())
    }
}

/// How long a blob lives (Flink's `BlobType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum BlobKind {
    /// Lives until deleted or its job is cleaned up: offloaded descriptors, job and task
    /// information. Written `p`.
    Permanent,
    /// Expires after a TTL unless read: logs, thread dumps. Written `t`.
    Transient,
}

/// A content-addressed blob name: kind, owning job (or none), and the BLAKE3 digest of the bytes.
///
/// Unlike Flink's key (SHA-1 plus a random suffix, so equal content gets distinct keys), equal
/// content of one job and kind has one key; the store counts references so that one owner's delete
/// never removes content another still references.
///
/// String form (also the HTTP path segment): `p-<job hex|no_job>-<digest hex>`, e.g.
/// `p-00112233445566778899aabbccddeeff-<64 hex>`. [`BlobKey::from_str`] accepts nothing else,
/// so a key can never name a path outside the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BlobKey {
    /// Permanent or transient.
    pub kind: BlobKind,
    /// The owning job; `None` for job-unrelated blobs.
    pub job: Option<JobId>,
    /// BLAKE3 of the content.
    pub digest: Digest,
}

impl BlobKey {
    /// The key of `bytes` stored as `kind` for `job`.
    pub fn for_content(kind: BlobKind, job: Option<JobId>, bytes: &[u8]) -> BlobKey {
        BlobKey {
            kind,
            job,
            digest: Digest::of(bytes),
        }
    }

    /// Whether `bytes` are this key's content.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        Digest::of(bytes) == self.digest
    }
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    for b in bytes {
        write!(f, "{b:02x}")?;
    }
    Ok(())
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

impl fmt::Display for BlobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.kind {
            BlobKind::Permanent => "p-",
            BlobKind::Transient => "t-",
        })?;
        match &self.job {
            Some(job) => write!(f, "{job}")?,
            None => f.write_str("no_job")?,
        }
        write!(f, "-{}", self.digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_their_string_form() {
        let job = JobId([0xab; 16]);
        for key in [
            BlobKey::for_content(BlobKind::Permanent, Some(job), b"hello"),
            BlobKey::for_content(BlobKind::Transient, None, b""),
        ] {
            let s = key.to_string();
            assert_eq!(s.parse::<BlobKey>().unwrap(), key, "{s}");
        }
        let s = BlobKey::for_content(BlobKind::Permanent, Some(job), b"x").to_string();
        assert!(s.starts_with("p-abababababababababababababababab-"), "{s}");
        assert_eq!(s.len(), 2 + 32 + 1 + 64);
    }

    #[test]
    fn malformed_keys_are_rejected() {
        let good = BlobKey::for_content(BlobKind::Permanent, None, b"x").to_string();
        for bad in [
            "",
            "p",
            "x-no_job-00",
            "../../etc/passwd",
            &good.replace("p-", "q-"),
            &good.to_uppercase(),
            &format!("{good}-extra"),
            &good[..good.len() - 1],
            &format!("{}/", &good[..good.len() - 1]),
        ] {
            assert!(bad.parse::<BlobKey>().is_err(), "{bad}");
        }
    }
}
