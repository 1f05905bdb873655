//! Flink's ids as the REST API writes them: 32 lower-case hex digits (`JobID`, `JobVertexID`,
//! slot sharing group ids), and how Conflux derives the ones its job graphs do not carry.

use std::fmt;

use conflux_blob_api::JobId;

/// A 16-byte id written as 32 lower-case hex digits (Flink's `AbstractID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HexId(pub [u8; 16]);

impl fmt::Display for HexId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl HexId {
    /// Parses 32 hex digits, either case (as Flink's `AbstractID.fromHexString`); `None` for
    /// anything else.
    pub fn parse(text: &str) -> Option<HexId> {
        let bytes = text.as_bytes();
        if bytes.len() != 32 {
            return None;
        }
        let mut id = [0u8; 16];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            let hi = char::from(pair[0]).to_digit(16)?;
            let lo = char::from(pair[1]).to_digit(16)?;
            id[i] = u8::try_from(hi * 16 + lo).ok()?;
        }
        Some(HexId(id))
    }

    /// The first 16 bytes of the BLAKE3 digest of `parts`, each preceded by its length (so
    /// that no two lists of parts give the same input).
    fn digest(parts: &[&[u8]]) -> HexId {
        let mut hasher = blake3::Hasher::new();
        for part in parts {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        let mut id = [0u8; 16];
        id.copy_from_slice(&hasher.finalize().as_bytes()[..16]);
        HexId(id)
    }
}

impl From<JobId> for HexId {
    fn from(id: JobId) -> HexId {
        HexId(id.0)
    }
}

impl From<HexId> for JobId {
    fn from(id: HexId) -> JobId {
        JobId(id.0)
    }
}

/// The `JobVertexID` of a job graph vertex: its id itself when that is already 32 hex digits
/// (a Flink plan's vertices carry their `JobVertexID`s), else a digest of the id. Stable: the
/// same vertex id gives the same `JobVertexID` in every job and run, as Flink's ids hashed from
/// the stream graph are stable across submissions of one program.
pub fn job_vertex_id(vertex_id: &str) -> HexId {
    HexId::parse(vertex_id).unwrap_or_else(|| HexId::digest(&[b"job vertex", vertex_id.as_bytes()]))
}

/// The id of a slot sharing group of a job (Flink draws a random `SlotSharingGroupId` per
/// group; Conflux derives it from the job and the group's name, so one snapshot and the next
/// agree).
pub fn slot_sharing_group_id(job: JobId, group: &str) -> HexId {
    HexId::digest(&[b"slot sharing group", &job.0, group.as_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_ids_round_trip_and_refuse_the_rest() {
        let id = HexId::parse("93536d13F0cdbdd8f8fa53ca74b08179").unwrap();
        assert_eq!(id.to_string(), "93536d13f0cdbdd8f8fa53ca74b08179");
        for bad in [
            "zzz",
            "",
            "93536d13f0cdbdd8f8fa53ca74b0817",
            "93536d13f0cdbdd8f8fa53ca74b0817g",
            "+3536d13f0cdbdd8f8fa53ca74b08179",
        ] {
            assert_eq!(HexId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn vertex_ids_keep_flink_ids_and_hash_the_rest() {
        assert_eq!(
            job_vertex_id("cbc357ccb763df2852fee8c4fc7d55f2").to_string(),
            "cbc357ccb763df2852fee8c4fc7d55f2"
        );
        let source = job_vertex_id("source");
        assert_eq!(source, job_vertex_id("source"), "stable");
        assert_ne!(source, job_vertex_id("sink"));
        assert_eq!(source.to_string().len(), 32);
        let job = JobId([7; 16]);
        assert_ne!(
            slot_sharing_group_id(job, "default"),
            slot_sharing_group_id(JobId([8; 16]), "default")
        );
    }
}
