//! The validated, index-resolved job graph: [`JobGraph`], compact for millions of vertices, and
//! what it is made of. Reading a job is `raw_job.rs` ([`RawJob`](raw_job::RawJob), a job as
//! read, before validation); validating it into a graph is `validation.rs`
//! ([`JobGraph::from_json`] and the loader's `from_raw`). This file refers to neither: both are
//! above it.

use std::collections::BTreeMap;
use std::fmt;

use crate::index_vec::index_u32;
use crate::strings::{StrArena, StrIndex};

use crate::json::{JobGraphJson, OperatorJson};
use crate::{DistributionPattern, GraphError, ResultPartitionType};

pub(crate) mod raw_job;
mod validation;

/// The most execution vertices (sum of all parallelisms) a job may have: 2^26 = 67,108,864.
/// Far above any real job (Flink caps one vertex at 32,768), it keeps the per-vertex arrays of the
/// pipelined regions below 1 GiB, so a hostile file cannot exhaust memory.
pub const MAX_EXECUTION_VERTICES: u64 = 1 << 26;

/// Dense index of a job vertex: its position in the job graph's topological order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobVertexIndex(pub u32);

/// Dense index of a job edge: its position in the input's edge list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobEdgeIndex(pub u32);

/// Dense index of an intermediate data set, in order of the first edge that consumes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IntermediateDataSetIndex(pub u32);

macro_rules! impl_index {
    ($($t:ty),*) => {$(
        impl $t {
            /// The index as a `usize`, for indexing the owning `Vec`.
            #[inline]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }
    )*};
}
impl_index!(JobVertexIndex, JobEdgeIndex, IntermediateDataSetIndex);
crate::index_vec::impl_idx!(JobVertexIndex, JobEdgeIndex, IntermediateDataSetIndex);

/// Whether a job runs unbounded (streaming) or bounded (batch) data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobType {
    /// Unbounded: every task runs at once.
    Streaming,
    /// Bounded: regions may run one after another.
    Batch,
}

impl JobType {
    /// `streaming` or `batch`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobType::Streaming => "streaming",
            JobType::Batch => "batch",
        }
    }
}

impl fmt::Display for JobType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Flink's default max parallelism for a vertex of parallelism `p`: `p + p/2` rounded up to a
/// power of two, at least 128 (Flink's `KeyGroupRangeAssignment.computeDefaultMaxParallelism`).
/// Unlike Flink, Conflux does not cap it at 32,768, so 100,000-way vertices are valid.
pub fn default_max_parallelism(parallelism: u32) -> u64 {
    let p = u64::from(parallelism);
    (p + p / 2).next_power_of_two().max(128)
}

/// A job vertex: its numbers. Its id, groups, operators, inputs and produced data sets are kept
/// by the [`JobGraph`] in shared tables (one string buffer for all ids, interned group names,
/// index lists) and read through it by [`JobVertexIndex`]: [`JobGraph::vertex_id`],
/// [`JobGraph::slot_sharing_group`], [`JobGraph::co_location_group`], [`JobGraph::operators`],
/// [`JobGraph::vertex_invokable`], [`JobGraph::vertex_config`],
/// [`JobGraph::inputs`] and [`JobGraph::produced_data_sets`]. 24 bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobVertex {
    /// Explicit or Flink-default max parallelism, at least `parallelism`.
    pub max_parallelism: u64,
    /// Number of subtasks, at least 1; for an [`undecided`](Self::undecided) vertex the
    /// estimate (`--default-parallelism`) that planning and a run without deciding use.
    pub parallelism: u32,
    /// Whether `max_parallelism` was given explicitly.
    pub max_parallelism_configured: bool,
    /// The job graph says `-1`: the parallelism is decided at run time from the bytes the
    /// inputs produced (batch jobs only); `parallelism` is an estimate until then.
    pub undecided: bool,
    /// A skewed subpartition this vertex consumes may be split across several of its subtasks
    /// (the job graph's `skew_splittable`).
    pub skew_splittable: bool,
    /// Number of the slot sharing group in the graph's table (0 is `default`).
    slot_sharing_group: u32,
    /// Number of the co-location group in the graph's table, or [`NO_GROUP`].
    co_location_group: u32,
}

/// A vertex without co-location group.
const NO_GROUP: u32 = u32::MAX;

/// The display name and description of a vertex that has either (kept sparsely: generated
/// jobs of millions of vertices have neither).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Labels {
    name: Option<Box<str>>,
    description: Option<Box<str>>,
}

impl Labels {
    fn of(name: Option<&str>, description: Option<&str>) -> Option<Labels> {
        (name.is_some() || description.is_some()).then(|| Labels {
            name: name.map(Box::from),
            description: description.map(Box::from),
        })
    }

    fn heap_bytes(&self) -> usize {
        self.name.as_deref().map_or(0, str::len) + self.description.as_deref().map_or(0, str::len)
    }
}

/// The task a vertex runs and its configuration, for a vertex that names one (kept sparsely:
/// vertices without run synthetic tasks).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Task {
    invokable: Option<Box<str>>,
    config: BTreeMap<String, String>,
}

impl Task {
    fn heap_bytes(&self) -> usize {
        // A B-tree node's overhead is not counted: configs have a handful of entries.
        self.invokable.as_deref().map_or(0, str::len)
            + self
                .config
                .iter()
                .map(|(k, v)| k.capacity() + v.capacity())
                .sum::<usize>()
    }
}

/// The config of a vertex that has none.
static NO_CONFIG: BTreeMap<String, String> = BTreeMap::new();

/// An intermediate data set: the output of one producer, read by one or more consumer edges
/// (several since FLINK-28663).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntermediateDataSet {
    /// The id as written, or `"<source>-><target>"` for an edge without one (with `.2`, `.3`, ...
    /// appended where that name is taken).
    pub id: String,
    /// The producing vertex.
    pub producer: JobVertexIndex,
    /// Type of all its partitions.
    pub result_partition_type: ResultPartitionType,
    /// Pattern shared by all consumer edges (Flink requires them to agree).
    pub distribution_pattern: DistributionPattern,
    /// Consumer edges, in edge-list order.
    pub consumers: Vec<JobEdgeIndex>,
}

/// A job edge: `target` consumes `data_set`, produced by `source`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobEdge {
    /// Producing vertex.
    pub source: JobVertexIndex,
    /// Consuming vertex.
    pub target: JobVertexIndex,
    /// The consumed data set.
    pub data_set: IntermediateDataSetIndex,
    /// Pattern of the subtask connections.
    pub distribution_pattern: DistributionPattern,
    /// Type of the consumed partitions.
    pub result_partition_type: ResultPartitionType,
    /// The partitioner's display name, if given.
    pub ship_strategy: Option<String>,
}

/// The slot sharing group of a vertex that names none.
const DEFAULT_SLOT_SHARING_GROUP: &str = "default";

/// A validated job graph: ids resolved to dense indices, vertices in topological order, data
/// sets grouped. It can only be built through [`JobGraph::from_json`] (or the loader in
/// [`load`](crate::load), which validates the same way), so every instance is valid.
///
/// Compact for jobs of millions of vertices: the ids live in one string buffer in the order of
/// the file (plus the topological position -> file position map when the two differ), group
/// names are interned, inputs and produced data sets are index lists shared by all vertices, and
/// the id lookup is a hash index of `u32`s over the stored ids, so that an id is stored once.
#[derive(Clone, Debug)]
pub struct JobGraph {
    name: String,
    job_type: JobType,
    vertices: Vec<JobVertex>,
    /// Vertex ids, in the order of the file.
    ids: StrArena,
    /// Topological position -> position in the file; empty when they are the same.
    listing: Vec<u32>,
    slot_sharing_groups: StrArena,
    co_location_groups: StrArena,
    /// (vertex, its operators) for the vertices that have any, by vertex.
    operators: Vec<(JobVertexIndex, Vec<OperatorJson>)>,
    /// (vertex, its name and description) for the vertices that have either, by vertex.
    labels: Vec<(JobVertexIndex, Labels)>,
    /// (vertex, its task) for the vertices that name one or have a config, by vertex.
    tasks: Vec<(JobVertexIndex, Task)>,
    /// (vertex, its `source_bytes`) for the vertices that give it, by vertex.
    source_bytes: Vec<(JobVertexIndex, u64)>,
    /// `inputs[input_offsets[j]..input_offsets[j + 1]]` are the inputs of vertex `j`; both
    /// empty when there are no edges.
    input_offsets: Vec<u32>,
    inputs: Vec<JobEdgeIndex>,
    /// As `input_offsets` and `inputs`, for the produced data sets.
    produced_offsets: Vec<u32>,
    produced: Vec<IntermediateDataSetIndex>,
    edges: Vec<JobEdge>,
    data_sets: Vec<IntermediateDataSet>,
    /// Vertex id -> topological position.
    vertex_by_id: StrIndex,
}

/// Two graphs are equal when they describe the same job: same name and type, same vertices in
/// the same order with the same ids, groups, operators, inputs and outputs, same edges and data
/// sets (however their strings are stored).
impl PartialEq for JobGraph {
    fn eq(&self, other: &JobGraph) -> bool {
        let same_vertex = |j: JobVertexIndex| {
            let (a, b) = (self.vertex(j), other.vertex(j));
            (
                a.parallelism,
                a.max_parallelism,
                a.max_parallelism_configured,
            ) == (
                b.parallelism,
                b.max_parallelism,
                b.max_parallelism_configured,
            ) && (a.undecided, a.skew_splittable) == (b.undecided, b.skew_splittable)
                && self.source_bytes(j) == other.source_bytes(j)
                && self.vertex_id(j) == other.vertex_id(j)
                && self.slot_sharing_group(j) == other.slot_sharing_group(j)
                && self.co_location_group(j) == other.co_location_group(j)
                && self.operators(j) == other.operators(j)
                && self.vertex_name(j) == other.vertex_name(j)
                && self.vertex_description(j) == other.vertex_description(j)
                && self.vertex_invokable(j) == other.vertex_invokable(j)
                && self.vertex_config(j) == other.vertex_config(j)
                && self.inputs(j) == other.inputs(j)
                && self.produced_data_sets(j) == other.produced_data_sets(j)
        };
        self.name == other.name
            && self.job_type == other.job_type
            && self.edges == other.edges
            && self.data_sets == other.data_sets
            && self.vertices.len() == other.vertices.len()
            && self.vertex_indices().all(same_vertex)
    }
}

impl Eq for JobGraph {}

/// The slice `offsets[i]..offsets[i + 1]` of `items`, or nothing when `offsets` is empty.
fn csr_slice<'a, T>(offsets: &[u32], items: &'a [T], i: usize) -> &'a [T] {
    if offsets.is_empty() {
        return &[];
    }
    &items[offsets[i] as usize..offsets[i + 1] as usize]
}

/// Groups `items` (given as `(key, value)` in order) by key into offsets and values, keeping the
/// order within a key: a counting sort. Empty vectors when there are no items.
fn csr<T: Copy>(
    keys: usize,
    fill: T,
    items: impl Iterator<Item = (usize, T)> + Clone,
) -> (Vec<u32>, Vec<T>) {
    let mut offsets = vec![0u32; keys + 1];
    let mut count = 0usize;
    for (key, _) in items.clone() {
        offsets[key + 1] += 1;
        count += 1;
    }
    if count == 0 {
        return (Vec::new(), Vec::new());
    }
    for i in 0..keys {
        offsets[i + 1] += offsets[i];
    }
    // Fill moving each key's start forward; afterwards offsets[k] is where k + 1 starts.
    let mut values = vec![fill; count];
    for (key, value) in items {
        values[offsets[key] as usize] = value;
        offsets[key] += 1;
    }
    for k in (1..=keys).rev() {
        offsets[k] = offsets[k - 1];
    }
    offsets[0] = 0;
    (offsets, values)
}

impl JobGraph {
    /// Writes the graph back as job graph JSON: vertices in topological order, edges in their
    /// original order, every data set named explicitly where it is shared or named. Round trip:
    /// `from_json(to_json())` equals `self`.
    pub fn to_json(&self) -> JobGraphJson {
        use crate::json::{JobEdgeJson, JobVertexJson};
        JobGraphJson {
            name: self.name.clone(),
            job_type: self.job_type.as_str().to_owned(),
            vertices: self
                .vertices
                .iter()
                .enumerate()
                .map(|(j, v)| {
                    let index = JobVertexIndex(index_u32(j));
                    let group = self.slot_sharing_group(index);
                    JobVertexJson {
                        id: self.vertex_id(index).to_owned(),
                        name: self.vertex_name(index).map(str::to_owned),
                        description: self.vertex_description(index).map(str::to_owned),
                        parallelism: if v.undecided {
                            crate::json::PARALLELISM_UNDECIDED
                        } else {
                            i32::try_from(v.parallelism).unwrap_or(i32::MAX)
                        },
                        max_parallelism: v
                            .max_parallelism_configured
                            .then(|| u32::try_from(v.max_parallelism).unwrap_or(u32::MAX)),
                        slot_sharing_group: (group != DEFAULT_SLOT_SHARING_GROUP)
                            .then(|| group.to_owned()),
                        co_location_group: self.co_location_group(index).map(str::to_owned),
                        operators: self.operators(index).to_vec(),
                        invokable: self.vertex_invokable(index).map(str::to_owned),
                        config: self.vertex_config(index).clone(),
                        source_bytes: self.source_bytes(index),
                        skew_splittable: v.skew_splittable,
                    }
                })
                .collect(),
            edges: self
                .edges
                .iter()
                .map(|e| JobEdgeJson {
                    source: self.vertex_id(e.source).to_owned(),
                    target: self.vertex_id(e.target).to_owned(),
                    distribution_pattern: e.distribution_pattern.as_str().to_owned(),
                    result_partition_type: e.result_partition_type.as_str().to_owned(),
                    ship_strategy: e.ship_strategy.clone(),
                    data_set: Some(self.data_sets[e.data_set.idx()].id.clone()),
                })
                .collect(),
        }
    }

    /// The job's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Streaming or batch.
    pub fn job_type(&self) -> JobType {
        self.job_type
    }

    /// Vertices in topological order; the position is the [`JobVertexIndex`].
    pub fn vertices(&self) -> &[JobVertex] {
        &self.vertices
    }

    /// The vertex indices, in topological order: `0..vertices().len()`.
    pub fn vertex_indices(&self) -> impl ExactSizeIterator<Item = JobVertexIndex> {
        (0..index_u32(self.vertices.len())).map(JobVertexIndex)
    }

    /// One vertex.
    ///
    /// # Panics
    /// If the index is not of this graph.
    pub fn vertex(&self, index: JobVertexIndex) -> &JobVertex {
        &self.vertices[index.idx()]
    }

    /// The id of a vertex, as written (non-empty, no `#`). O(1).
    ///
    /// # Panics
    /// If the index is not of this graph.
    pub fn vertex_id(&self, index: JobVertexIndex) -> &str {
        let listing = if self.listing.is_empty() {
            index.0
        } else {
            self.listing[index.idx()]
        };
        self.ids.get(listing)
    }

    /// The display name of a vertex, as written (Flink's name for an imported Flink plan), if
    /// it has one. O(log of the number of vertices with a name or description).
    pub fn vertex_name(&self, index: JobVertexIndex) -> Option<&str> {
        self.labels(index).and_then(|l| l.name.as_deref())
    }

    /// The description of a vertex, as written (Flink's `description` for an imported Flink
    /// plan), if it has one. O(log of the number of vertices with a name or description).
    pub fn vertex_description(&self, index: JobVertexIndex) -> Option<&str> {
        self.labels(index).and_then(|l| l.description.as_deref())
    }

    /// The task a vertex runs, by name, as written (as Flink's `JobVertex` names its invokable
    /// class), if it names one; a vertex without runs a synthetic task. O(log of the number of
    /// vertices with a task).
    pub fn vertex_invokable(&self, index: JobVertexIndex) -> Option<&str> {
        self.task(index).and_then(|t| t.invokable.as_deref())
    }

    /// The task configuration of a vertex (as Flink's task configuration), key to value, as
    /// written; empty when it has none. O(log of the number of vertices with a task).
    pub fn vertex_config(&self, index: JobVertexIndex) -> &BTreeMap<String, String> {
        self.task(index).map_or(&NO_CONFIG, |t| &t.config)
    }

    fn task(&self, index: JobVertexIndex) -> Option<&Task> {
        self.tasks
            .binary_search_by_key(&index, |(j, _)| *j)
            .ok()
            .map(|k| &self.tasks[k].1)
    }

    fn labels(&self, index: JobVertexIndex) -> Option<&Labels> {
        self.labels
            .binary_search_by_key(&index, |(j, _)| *j)
            .ok()
            .map(|k| &self.labels[k].1)
    }

    /// Finds a vertex by id or by name, as
    /// [`JobGraphJson::resolve_vertex`](crate::JobGraphJson::resolve_vertex): an exact id wins
    /// (O(1)); otherwise the one vertex with exactly that name (O(V)).
    ///
    /// # Errors
    /// [`GraphError::UnknownVertexRef`] when nothing matches;
    /// [`GraphError::AmbiguousVertexName`] naming the candidates' ids when several vertices
    /// have that name.
    pub fn resolve_vertex(&self, id_or_name: &str) -> Result<JobVertexIndex, GraphError> {
        if let Some(j) = self.vertex_index(id_or_name) {
            return Ok(j);
        }
        crate::json::resolve_by_name(
            id_or_name,
            self.labels
                .iter()
                .map(|(j, l)| (*j, self.vertex_id(*j), l.name.as_deref())),
        )
    }

    /// The slot sharing group of a vertex (`default` when none was given).
    ///
    /// # Panics
    /// If the index is not of this graph.
    pub fn slot_sharing_group(&self, index: JobVertexIndex) -> &str {
        self.slot_sharing_groups
            .get(self.vertices[index.idx()].slot_sharing_group)
    }

    /// The co-location group of a vertex, if any.
    ///
    /// # Panics
    /// If the index is not of this graph.
    pub fn co_location_group(&self, index: JobVertexIndex) -> Option<&str> {
        match self.vertices[index.idx()].co_location_group {
            NO_GROUP => None,
            group => Some(self.co_location_groups.get(group)),
        }
    }

    /// The chained operators of a vertex with their state, as written (empty when none were
    /// given). O(log of the number of vertices with operators).
    pub fn operators(&self, index: JobVertexIndex) -> &[OperatorJson] {
        self.operators
            .binary_search_by_key(&index, |(j, _)| *j)
            .map_or(&[], |k| &self.operators[k].1)
    }

    /// The bytes a source produces in all, if the job graph gives them (`source_bytes`).
    /// O(log of the number of vertices that give it).
    pub fn source_bytes(&self, index: JobVertexIndex) -> Option<u64> {
        self.source_bytes
            .binary_search_by_key(&index, |(j, _)| *j)
            .ok()
            .map(|k| self.source_bytes[k].1)
    }

    /// Whether any vertex is [`undecided`](JobVertex::undecided). O(V).
    pub fn has_undecided(&self) -> bool {
        self.vertices.iter().any(|v| v.undecided)
    }

    /// Fixes every undecided vertex at its estimate (a run given `--default-parallelism`
    /// explicitly, or a runtime that does not decide). O(V).
    pub fn fix_undecided(&mut self) {
        for v in &mut self.vertices {
            v.undecided = false;
        }
    }

    /// The input edges of a vertex, in input order (the order of the edge list).
    ///
    /// # Panics
    /// If the index is not of this graph.
    pub fn inputs(&self, index: JobVertexIndex) -> &[JobEdgeIndex] {
        csr_slice(&self.input_offsets, &self.inputs, index.idx())
    }

    /// The data sets a vertex produces, in index order.
    ///
    /// # Panics
    /// If the index is not of this graph.
    pub fn produced_data_sets(&self, index: JobVertexIndex) -> &[IntermediateDataSetIndex] {
        csr_slice(&self.produced_offsets, &self.produced, index.idx())
    }

    /// Looks a vertex up by id, O(1) (a hash index over the stored ids).
    pub fn vertex_index(&self, id: &str) -> Option<JobVertexIndex> {
        self.vertex_by_id
            .get(id, |j| self.vertex_id(JobVertexIndex(j)))
            .map(JobVertexIndex)
    }

    /// Edges in the input's order; the position is the [`JobEdgeIndex`].
    pub fn edges(&self) -> &[JobEdge] {
        &self.edges
    }

    /// One edge.
    ///
    /// # Panics
    /// If the index is not of this graph.
    pub fn edge(&self, index: JobEdgeIndex) -> &JobEdge {
        &self.edges[index.idx()]
    }

    /// Intermediate data sets; the position is the [`IntermediateDataSetIndex`].
    pub fn data_sets(&self) -> &[IntermediateDataSet] {
        &self.data_sets
    }

    /// One data set.
    ///
    /// # Panics
    /// If the index is not of this graph.
    pub fn data_set(&self, index: IntermediateDataSetIndex) -> &IntermediateDataSet {
        &self.data_sets[index.idx()]
    }

    /// Total number of subtasks (execution vertices).
    pub fn num_execution_vertices(&self) -> u64 {
        self.vertices.iter().map(|v| u64::from(v.parallelism)).sum()
    }

    /// Heap bytes held by this graph (vectors at capacity, strings, the id index), for
    /// `topology_bytes`. O(V + E).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let strings = |s: &str| s.len();
        let operators: usize = self.operators.capacity()
            * size_of::<(JobVertexIndex, Vec<OperatorJson>)>()
            + self
                .operators
                .iter()
                .flat_map(|(_, ops)| {
                    std::iter::once(ops.capacity() * size_of::<OperatorJson>()).chain(
                        ops.iter().map(|o| {
                            o.uid.as_deref().map_or(0, strings)
                                + o.name.len()
                                + o.state.capacity() * size_of::<crate::json::StateJson>()
                                + o.state
                                    .iter()
                                    .map(|s| {
                                        s.name.len()
                                            + s.kind.len()
                                            + s.key_type.as_deref().map_or(0, strings)
                                            + s.value_type.as_deref().map_or(0, strings)
                                    })
                                    .sum::<usize>()
                        }),
                    )
                })
                .sum::<usize>();
        let vertices = self.vertices.capacity() * size_of::<JobVertex>()
            + self.ids.heap_bytes()
            + self.listing.capacity() * size_of::<u32>()
            + self.slot_sharing_groups.heap_bytes()
            + self.co_location_groups.heap_bytes()
            + (self.input_offsets.capacity() + self.produced_offsets.capacity()) * size_of::<u32>()
            + self.inputs.capacity() * size_of::<JobEdgeIndex>()
            + self.produced.capacity() * size_of::<IntermediateDataSetIndex>();
        let edges = self.edges.capacity() * size_of::<JobEdge>()
            + self
                .edges
                .iter()
                .map(|e| e.ship_strategy.as_ref().map_or(0, String::capacity))
                .sum::<usize>();
        let data_sets = self.data_sets.capacity() * size_of::<IntermediateDataSet>()
            + self
                .data_sets
                .iter()
                .map(|d| d.id.capacity() + d.consumers.capacity() * size_of::<JobEdgeIndex>())
                .sum::<usize>();
        let labels = self.labels.capacity() * size_of::<(JobVertexIndex, Labels)>()
            + self.source_bytes.capacity() * size_of::<(JobVertexIndex, u64)>()
            + self
                .labels
                .iter()
                .map(|(_, l)| l.heap_bytes())
                .sum::<usize>();
        let tasks = self.tasks.capacity() * size_of::<(JobVertexIndex, Task)>()
            + self
                .tasks
                .iter()
                .map(|(_, t)| t.heap_bytes())
                .sum::<usize>();
        vertices + operators + labels + tasks + edges + data_sets + self.vertex_by_id.heap_bytes()
    }
}
