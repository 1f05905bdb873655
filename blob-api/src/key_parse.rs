//! Job ids and blob keys read back from their string forms (`FromStr`), rejecting anything
//! else as [`BlobError::InvalidKey`]: above both the keys and the error that names them.

use std::str::FromStr;

use crate::key::{BlobKey, BlobKind, Digest, JobId};
use crate::BlobError;

fn parse_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != 2 * N
        || !s
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

impl FromStr for JobId {
    type Err = BlobError;

    /// Parses 32 lower-case hex digits.
    fn from_str(s: &str) -> Result<JobId, BlobError> {
        parse_hex::<16>(s).map(JobId).ok_or_else(|| {
            BlobError::InvalidKey(format!("'{s}' is not a job id (32 lower-case hex digits)"))
        })
    }
}

impl FromStr for BlobKey {
    type Err = BlobError;

    /// Parses the string form; anything else (other characters, lengths, kinds) is
    /// [`BlobError::InvalidKey`].
    fn from_str(s: &str) -> Result<BlobKey, BlobError> {
        let invalid = || BlobError::InvalidKey(format!("'{}' is not a blob key", s.escape_debug()));
        let mut parts = s.split('-');
        let (Some(kind), Some(job), Some(digest), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid());
        };
        let kind = match kind {
            "p" => BlobKind::Permanent,
            "t" => BlobKind::Transient,
            _ => return Err(invalid()),
        };
        let job = match job {
            "no_job" => None,
            hex => Some(JobId(parse_hex::<16>(hex).ok_or_else(invalid)?)),
        };
        let digest = Digest(parse_hex::<32>(digest).ok_or_else(invalid)?);
        Ok(BlobKey { kind, job, digest })
    }
}
