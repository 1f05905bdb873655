//! The per-item lists of the inspect report (job vertices, edges, and with `--detail` every
//! execution vertex), serialised straight from the graph while the report is written. Built as
//! `serde_json::Value`s they took about 1 KB per item: 10 GB for a job of 6 million vertices.
//!
//! JSON field order is alphabetical, as that of the `Value` maps the rest of the report uses.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use crate::descriptors::DescriptorReport;

use conflux_graph::{
    EdgeConnection, ExecutionGraph, ExecutionVertexIndex, JobGraph, PipelinedRegions,
};

/// The graph the lists are read from.
#[derive(Clone, Copy)]
pub(crate) struct Lists<'a> {
    pub(crate) graph: &'a ExecutionGraph,
    pub(crate) regions: &'a PipelinedRegions,
    /// The `descriptors` section, whose edges are listed.
    pub(crate) descriptors: &'a DescriptorReport<'a>,
}

/// One job vertex of `job_graph.vertices`.
#[derive(serde::Serialize)]
pub(crate) struct VertexRow<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<&'a str>,
    pub(crate) id: &'a str,
    pub(crate) max_parallelism: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<&'a str>,
    pub(crate) parallelism: u32,
    pub(crate) slot_sharing_group: &'a str,
    /// `-1` in the job graph: `parallelism` is the `--default-parallelism` estimate.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) undecided: bool,
}

/// One edge of `job_graph.edges`, with its expansion.
#[derive(serde::Serialize)]
pub(crate) struct EdgeRow<'a> {
    pub(crate) connections: u64,
    pub(crate) data_set: &'a str,
    pub(crate) distribution_pattern: &'static str,
    pub(crate) groups: u32,
    pub(crate) result_partition_type: &'static str,
    pub(crate) ship_strategy: Option<&'a str>,
    pub(crate) source: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) source_name: Option<&'a str>,
    pub(crate) target: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) target_name: Option<&'a str>,
}

/// One execution vertex of `vertices` (`--detail`): its region and consumed partition groups.
#[derive(serde::Serialize)]
pub(crate) struct DetailRow {
    /// Per group, its partitions named by producer subtask, plus `@<data set>` when the
    /// producer has several data sets.
    pub(crate) consumed_partition_groups: Vec<Vec<String>>,
    pub(crate) id: String,
    pub(crate) region: u32,
}

impl<'a> Lists<'a> {
    fn job(&self) -> &'a JobGraph {
        self.graph.job_graph()
    }

    /// The job vertices, in the job graph's order.
    pub(crate) fn vertices(&self) -> impl Iterator<Item = VertexRow<'a>> + 'a {
        let job = self.job();
        job.vertex_indices().map(move |j| {
            let v = job.vertex(j);
            VertexRow {
                description: job.vertex_description(j),
                id: job.vertex_id(j),
                max_parallelism: v.max_parallelism,
                name: job.vertex_name(j),
                parallelism: v.parallelism,
                slot_sharing_group: job.slot_sharing_group(j),
                undecided: v.undecided,
            }
        })
    }

    /// The edges, one per connection of the execution graph.
    pub(crate) fn edges(&self) -> impl Iterator<Item = EdgeRow<'a>> + 'a {
        let job = self.job();
        self.graph
            .connections()
            .iter()
            .map(move |c: &'a EdgeConnection| {
                let e = job.edge(c.edge);
                EdgeRow {
                    connections: c.logical_connections(),
                    data_set: &job.data_set(e.data_set).id,
                    distribution_pattern: e.distribution_pattern.as_str(),
                    groups: c.num_groups,
                    result_partition_type: e.result_partition_type.as_str(),
                    ship_strategy: e.ship_strategy.as_deref(),
                    source: job.vertex_id(e.source),
                    source_name: job.vertex_name(e.source),
                    target: job.vertex_id(e.target),
                    target_name: job.vertex_name(e.target),
                }
            })
    }

    /// Every execution vertex, made one at a time.
    pub(crate) fn detail(&self) -> impl Iterator<Item = DetailRow> + 'a {
        let (graph, regions, job) = (self.graph, self.regions, self.job());
        (0..graph.num_execution_vertices())
            .map(ExecutionVertexIndex)
            .map(move |v| DetailRow {
                consumed_partition_groups: graph
                    .consumed_partition_groups(v)
                    .map(|g| {
                        let group = graph.consumed_partition_group(g);
                        let data_set = job.data_set(group.result);
                        let producer = job.vertex_id(data_set.producer);
                        let suffix = if job.produced_data_sets(data_set.producer).len() > 1 {
                            format!("@{}", data_set.id)
                        } else {
                            String::new()
                        };
                        group
                            .partitions
                            .map(|p| format!("{producer}#{p}{suffix}"))
                            .collect()
                    })
                    .collect(),
                id: graph.execution_vertex_name(v),
                region: regions.region_of(v).0,
            })
    }
}

/// Serialises an iterator as a JSON array without collecting it.
struct Seq<I>(std::cell::RefCell<Option<I>>);

impl<I: Iterator<Item = T>, T: Serialize> Serialize for Seq<I> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        if let Some(items) = self.0.borrow_mut().take() {
            for item in items {
                seq.serialize_element(&item)?;
            }
        }
        seq.end()
    }
}

fn seq<I: Iterator<Item = T>, T: Serialize>(items: I) -> Seq<I> {
    Seq(std::cell::RefCell::new(Some(items)))
}

/// The whole report: the summary `Value`, where the lists are placeholders, with the lists
/// serialised in their place: `job_graph.vertices`, `job_graph.edges` and, with `--detail`,
/// `vertices`.
pub(crate) struct JsonReport<'a> {
    pub(crate) summary: &'a Value,
    pub(crate) lists: Lists<'a>,
}

impl Serialize for JsonReport<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(fields) = self.summary else {
            return self.summary.serialize(serializer);
        };
        let mut map = serializer.serialize_map(Some(fields.len()))?;
        for (key, value) in fields {
            match (key.as_str(), value) {
                ("job_graph", Value::Object(job_graph)) => {
                    map.serialize_entry(key, &JobGraphLists(job_graph, self.lists))?;
                }
                ("vertices", _) => map.serialize_entry(key, &seq(self.lists.detail()))?,
                ("descriptors", Value::Object(descriptors)) => {
                    map.serialize_entry(key, &DescriptorEdges(descriptors, self.lists.descriptors))?
                }
                _ => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

/// `descriptors`: its keys in the summary's order, the edges in place of their placeholder.
struct DescriptorEdges<'a>(&'a serde_json::Map<String, Value>, &'a DescriptorReport<'a>);

impl Serialize for DescriptorEdges<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            match key.as_str() {
                "edges" => map.serialize_entry(key, &seq(self.1.rows()))?,
                _ => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

/// `job_graph`: its keys in the summary's order, the lists in place of their placeholders.
struct JobGraphLists<'a>(&'a serde_json::Map<String, Value>, Lists<'a>);

impl Serialize for JobGraphLists<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            match key.as_str() {
                "vertices" => map.serialize_entry(key, &seq(self.1.vertices()))?,
                "edges" => map.serialize_entry(key, &seq(self.1.edges()))?,
                _ => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}
