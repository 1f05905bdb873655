//! Reading job graph JSON straight into a [`RawJob`], one vertex and one edge at a time, without
//! building a [`JobGraphJson`](crate::JobGraphJson): a `JobGraphJson` of a 200 MB file of
//! millions of vertices takes about 3.4 times the file (a `String` per id and field), while the
//! compact form takes 1 byte per id character plus 24 bytes per vertex.
//!
//! The format and every error are those of `JobGraphJson`'s derived `Deserialize` (same field
//! names, defaults, unknown-field, missing-field and duplicate-field errors, at the same line and
//! column): each vertex and edge is read by a derived struct of the same name and fields that
//! borrows its strings from the input where it can, and the top level is a hand-written copy of
//! the derived visitor whose `vertices` and `edges` arrays feed the [`RawJob`] as they are read.
//! The graph tests compare both readers on random input.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::job_graph::raw_job::RawJob;
use crate::json::OperatorJson;
use crate::GraphError;

/// Reads job graph JSON into its compact, unvalidated form.
///
/// # Errors
/// [`GraphError::Json`] with serde_json's message (line and column) when the bytes are not job
/// graph JSON: the same message [`JobGraphJson::parse`](crate::JobGraphJson::parse) gives.
pub(crate) fn parse(bytes: &[u8]) -> Result<RawJob, GraphError> {
    let mut raw = RawJob::default();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    JobSeed { raw: &mut raw }
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| GraphError::Json {
            format: "job graph",
            message: e.to_string(),
        })?;
    Ok(raw)
}

/// The fields of [`JobGraphJson`](crate::JobGraphJson), in its order.
const FIELDS: &[&str] = &["name", "job_type", "vertices", "edges"];

/// A top-level key (unknown keys are an error listing [`FIELDS`], as the derive gives).
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Field {
    Name,
    JobType,
    Vertices,
    Edges,
}

/// The whole document, fed into `raw`.
struct JobSeed<'r> {
    raw: &'r mut RawJob,
}

impl<'de> DeserializeSeed<'de> for JobSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_struct("JobGraphJson", FIELDS, self)
    }
}

impl<'de> Visitor<'de> for JobSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct JobGraphJson")
    }

    /// As the derive: fields by position, `name` and `edges` defaulting when the array ends.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        const EXPECTING: &str = "struct JobGraphJson with 4 elements";
        self.raw.name = seq.next_element::<String>()?.unwrap_or_default();
        self.raw.job_type = seq
            .next_element::<String>()?
            .ok_or_else(|| de::Error::invalid_length(1, &EXPECTING))?;
        seq.next_element_seed(VerticesSeed { raw: self.raw })?
            .ok_or_else(|| de::Error::invalid_length(2, &EXPECTING))?;
        let _ = seq.next_element_seed(EdgesSeed { raw: self.raw })?;
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (mut name, mut job_type, mut vertices, mut edges) = (false, false, false, false);
        while let Some(key) = map.next_key::<Field>()? {
            let (seen, field) = match key {
                Field::Name => (&mut name, "name"),
                Field::JobType => (&mut job_type, "job_type"),
                Field::Vertices => (&mut vertices, "vertices"),
                Field::Edges => (&mut edges, "edges"),
            };
            if *seen {
                return Err(de::Error::duplicate_field(field));
            }
            *seen = true;
            match key {
                Field::Name => self.raw.name = map.next_value()?,
                Field::JobType => self.raw.job_type = map.next_value()?,
                Field::Vertices => map.next_value_seed(VerticesSeed { raw: self.raw })?,
                Field::Edges => map.next_value_seed(EdgesSeed { raw: self.raw })?,
            }
        }
        if !job_type {
            return Err(de::Error::missing_field("job_type"));
        }
        if !vertices {
            return Err(de::Error::missing_field("vertices"));
        }
        Ok(())
    }
}

/// One vertex as [`crate::json::JobVertexJson`] reads it, borrowing the id where it has no
/// escapes. Named alike, so that messages name the same struct.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JobVertexJson<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    description: Option<Cow<'a, str>>,
    parallelism: i32,
    #[serde(default)]
    max_parallelism: Option<u32>,
    #[serde(default, borrow)]
    slot_sharing_group: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    co_location_group: Option<Cow<'a, str>>,
    #[serde(default)]
    operators: Vec<OperatorJson>,
    #[serde(default, borrow)]
    invokable: Option<Cow<'a, str>>,
    #[serde(default)]
    config: BTreeMap<String, String>,
    #[serde(default)]
    source_bytes: Option<u64>,
    #[serde(default)]
    skew_splittable: bool,
}

/// One edge as [`crate::json::JobEdgeJson`] reads it, borrowing its strings where they have no
/// escapes. Named alike, so that messages name the same struct.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JobEdgeJson<'a> {
    #[serde(borrow)]
    source: Cow<'a, str>,
    #[serde(borrow)]
    target: Cow<'a, str>,
    #[serde(borrow)]
    distribution_pattern: Cow<'a, str>,
    #[serde(borrow)]
    result_partition_type: Cow<'a, str>,
    #[serde(default, borrow)]
    ship_strategy: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    data_set: Option<Cow<'a, str>>,
}

/// The `vertices` array, each element appended to the job as it is read.
struct VerticesSeed<'r> {
    raw: &'r mut RawJob,
}

impl<'de> DeserializeSeed<'de> for VerticesSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for VerticesSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(v) = seq.next_element::<JobVertexJson<'de>>()? {
            self.raw.push_vertex(
                &v.id,
                v.name.as_deref(),
                v.description.as_deref(),
                v.parallelism,
                v.max_parallelism,
                v.slot_sharing_group.as_deref(),
                v.co_location_group.as_deref(),
                v.operators,
                v.source_bytes,
                v.skew_splittable,
            );
            self.raw.set_task(v.invokable.as_deref(), v.config);
        }
        Ok(())
    }
}

/// The `edges` array, each element appended to the job as it is read.
struct EdgesSeed<'r> {
    raw: &'r mut RawJob,
}

impl<'de> DeserializeSeed<'de> for EdgesSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EdgesSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(e) = seq.next_element::<JobEdgeJson<'de>>()? {
            self.raw.push_edge(
                &e.source,
                &e.target,
                &e.distribution_pattern,
                &e.result_partition_type,
                e.ship_strategy.as_deref(),
                e.data_set.as_deref(),
            );
        }
        Ok(())
    }
}
