//! The validated, index-resolved job graph.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::fmt;

use crate::forward_group::{self, is_forward, ForwardEdge};
use crate::index_vec::index_u32;
use crate::strings::{Interner, StrArena, StrIndex};

use crate::json::{JobGraphJson, OperatorJson};
use crate::{DistributionPattern, GraphError, ResultPartitionType};

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

/// A value of an edge field with a fixed vocabulary: parsed, or the position of the unknown
/// text in the edge strings (reported by validation, in its turn).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Coded<T> {
    Known(T),
    Unknown(u32),
}

/// One vertex as read, before validation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawVertex {
    /// As written: at least 1, or `-1` (undecided).
    parallelism: i32,
    skew_splittable: bool,
    max_parallelism: Option<u32>,
    slot_sharing_group: u32,
    co_location_group: u32,
}

/// One edge as read: positions of its strings in [`RawJob::edge_text`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawEdge {
    source: u32,
    target: u32,
    pattern: Coded<DistributionPattern>,
    partition_type: Coded<ResultPartitionType>,
    ship_strategy: Option<u32>,
    data_set: Option<u32>,
}

/// A job graph as read, in listing order, before validation: what [`JobGraphJson`] holds, but
/// with every string in a few shared buffers (24 bytes per vertex plus its id, 40 per edge plus
/// its strings), so that a file of millions of vertices can be read without a `String` per
/// field. Built from a [`JobGraphJson`] ([`JobGraph::from_json`]) or straight from the bytes
/// (the streaming reader of `load`), and validated by [`JobGraph::from_raw`].
#[derive(Clone, Debug)]
pub(crate) struct RawJob {
    pub(crate) name: String,
    pub(crate) job_type: String,
    ids: StrArena,
    vertices: Vec<RawVertex>,
    /// Slot sharing group names; number 0 is `default`.
    slot_sharing_groups: Interner,
    co_location_groups: Interner,
    /// Operators of the vertices that have any: (listing position, operators), ascending.
    operators: Vec<(u32, Vec<OperatorJson>)>,
    /// Names and descriptions of the vertices that have any: (listing position, them), ascending.
    labels: Vec<(u32, Labels)>,
    /// Tasks of the vertices that name one or have a config: (listing position, it), ascending.
    tasks: Vec<(u32, Task)>,
    /// `source_bytes` of the vertices that give it: (listing position, bytes), ascending.
    source_bytes: Vec<(u32, u64)>,
    /// The parallelism an undecided vertex is given until it is decided (`--default-parallelism`).
    pub(crate) estimate: u32,
    edge_text: StrArena,
    edges: Vec<RawEdge>,
}

impl Default for RawJob {
    fn default() -> Self {
        let mut slot_sharing_groups = Interner::default();
        slot_sharing_groups.intern(DEFAULT_SLOT_SHARING_GROUP);
        RawJob {
            name: String::new(),
            job_type: String::new(),
            ids: StrArena::default(),
            vertices: Vec::new(),
            slot_sharing_groups,
            co_location_groups: Interner::default(),
            operators: Vec::new(),
            labels: Vec::new(),
            tasks: Vec::new(),
            source_bytes: Vec::new(),
            estimate: crate::flink_plan::DEFAULT_ADAPTIVE_PARALLELISM,
            edge_text: StrArena::default(),
            edges: Vec::new(),
        }
    }
}

/// The slot sharing group of a vertex that names none.
const DEFAULT_SLOT_SHARING_GROUP: &str = "default";

impl RawJob {
    /// Appends a vertex, as listed.
    #[allow(clippy::too_many_arguments)] // the fields of a vertex, as the two readers pass them
    pub(crate) fn push_vertex(
        &mut self,
        id: &str,
        name: Option<&str>,
        description: Option<&str>,
        parallelism: i32,
        max_parallelism: Option<u32>,
        slot_sharing_group: Option<&str>,
        co_location_group: Option<&str>,
        operators: Vec<OperatorJson>,
        source_bytes: Option<u64>,
        skew_splittable: bool,
    ) {
        let position = self.ids.push(id);
        if let Some(labels) = Labels::of(name, description) {
            self.labels.push((position, labels));
        }
        if !operators.is_empty() {
            self.operators.push((position, operators));
        }
        if let Some(bytes) = source_bytes {
            self.source_bytes.push((position, bytes));
        }
        self.vertices.push(RawVertex {
            parallelism,
            skew_splittable,
            max_parallelism,
            slot_sharing_group: slot_sharing_group
                .map_or(0, |g| self.slot_sharing_groups.intern(g)),
            co_location_group: co_location_group
                .map_or(NO_GROUP, |g| self.co_location_groups.intern(g)),
        });
    }

    /// Sets the task of the vertex appended last (nothing is kept for no invokable and an
    /// empty config).
    pub(crate) fn set_task(&mut self, invokable: Option<&str>, config: BTreeMap<String, String>) {
        if invokable.is_none() && config.is_empty() {
            return;
        }
        let position = index_u32(self.vertices.len().saturating_sub(1));
        let task = Task {
            invokable: invokable.map(Box::from),
            config,
        };
        self.tasks.push((position, task));
    }

    /// Appends an edge, as listed.
    pub(crate) fn push_edge(
        &mut self,
        source: &str,
        target: &str,
        distribution_pattern: &str,
        result_partition_type: &str,
        ship_strategy: Option<&str>,
        data_set: Option<&str>,
    ) {
        let text = &mut self.edge_text;
        let source = text.push(source);
        let target = text.push(target);
        let pattern = DistributionPattern::parse(distribution_pattern).map_or_else(
            || Coded::Unknown(text.push(distribution_pattern)),
            Coded::Known,
        );
        let partition_type = ResultPartitionType::parse(result_partition_type).map_or_else(
            || Coded::Unknown(text.push(result_partition_type)),
            Coded::Known,
        );
        let ship_strategy = ship_strategy.map(|s| text.push(s));
        let data_set = data_set.map(|s| text.push(s));
        self.edges.push(RawEdge {
            source,
            target,
            pattern,
            partition_type,
            ship_strategy,
            data_set,
        });
    }

    /// `--parallelism N` (`Some(N)`): every vertex of parallelism above 1 or undecided gets
    /// `N`; `--parallelism auto` (`None`): every vertex of parallelism above 1 becomes undecided.
    /// Either way vertices of parallelism 1 stay at 1. `N` above `i32::MAX` is kept as
    /// `i32::MAX`, which validation then refuses as too many subtasks.
    pub(crate) fn override_parallelism(&mut self, parallelism: Option<u32>) {
        let to = parallelism.map_or(crate::json::PARALLELISM_UNDECIDED, |p| {
            i32::try_from(p).unwrap_or(i32::MAX)
        });
        for v in &mut self.vertices {
            if v.parallelism > 1 || v.parallelism == crate::json::PARALLELISM_UNDECIDED {
                v.parallelism = to;
            }
        }
        if let Some(name) =
            parallelism.and_then(|p| crate::generate::retitle_word_count(&self.name, p))
        {
            self.name = name;
        }
    }

    /// The same job, read from job graph JSON.
    fn from_json(json: &JobGraphJson) -> RawJob {
        let mut raw = RawJob {
            name: json.name.clone(),
            job_type: json.job_type.clone(),
            ..RawJob::default()
        };
        for v in &json.vertices {
            raw.push_vertex(
                &v.id,
                v.name.as_deref(),
                v.description.as_deref(),
                v.parallelism,
                v.max_parallelism,
                v.slot_sharing_group.as_deref(),
                v.co_location_group.as_deref(),
                v.operators.clone(),
                v.source_bytes,
                v.skew_splittable,
            );
            raw.set_task(v.invokable.as_deref(), v.config.clone());
        }
        for e in &json.edges {
            raw.push_edge(
                &e.source,
                &e.target,
                &e.distribution_pattern,
                &e.result_partition_type,
                e.ship_strategy.as_deref(),
                e.data_set.as_deref(),
            );
        }
        raw
    }
}

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
    /// Validates a parsed job graph file and resolves it into indices.
    ///
    /// Vertices are put in topological order, ties broken by their order in the file (so a file
    /// listed topologically keeps its order). Time O((V + E) log V), memory O(V + E).
    ///
    /// # Errors
    /// The first problem found, naming the item: an empty or `#`-containing or duplicate vertex
    /// id; parallelism 0 or above max parallelism; an edge to an unknown vertex; an unknown
    /// pattern, partition type or job type; edges of one data set that disagree on source,
    /// pattern or type, or whose consumers differ in parallelism; a cycle; more than
    /// [`MAX_EXECUTION_VERTICES`] subtasks.
    pub fn from_json(json: &JobGraphJson) -> Result<JobGraph, GraphError> {
        JobGraph::from_raw(RawJob::from_json(json))
    }

    /// As [`JobGraph::from_json`], with `estimate` (`--default-parallelism`) as the parallelism of
    /// undecided vertices (`-1`) instead of [`DEFAULT_ADAPTIVE_PARALLELISM`](crate::flink_plan::DEFAULT_ADAPTIVE_PARALLELISM)
    /// (capped by an explicit max parallelism).
    ///
    /// # Errors
    /// As [`JobGraph::from_json`].
    pub fn from_json_estimating(
        json: &JobGraphJson,
        estimate: u32,
    ) -> Result<JobGraph, GraphError> {
        let mut raw = RawJob::from_json(json);
        raw.estimate = estimate;
        JobGraph::from_raw(raw)
    }

    /// Validates a job as read (see [`JobGraph::from_json`], which this implements). Consumes
    /// it, freeing its parts as they are no longer needed.
    pub(crate) fn from_raw(raw: RawJob) -> Result<JobGraph, GraphError> {
        let RawJob {
            name,
            job_type,
            ids,
            vertices: raw_vertices,
            slot_sharing_groups,
            co_location_groups,
            operators: raw_operators,
            labels: raw_labels,
            tasks: raw_tasks,
            source_bytes: raw_source_bytes,
            estimate,
            edge_text,
            edges: raw_edges,
        } = raw;
        let job_type = match job_type.as_str() {
            "streaming" => JobType::Streaming,
            "batch" => JobType::Batch,
            other => return Err(GraphError::UnknownJobType(other.to_owned())),
        };
        if raw_vertices.is_empty() {
            return Err(GraphError::NoVertices);
        }

        // Vertices, by listing position first.
        let n = raw_vertices.len();
        let mut vertex_by_id = StrIndex::with_capacity(n);
        let mut total_subtasks: u64 = 0;
        for (index, v) in raw_vertices.iter().enumerate() {
            let id = ids.get(index_u32(index));
            let reason = if id.is_empty() {
                Some("it is empty")
            } else if id.contains('#') {
                Some("'#' separates vertex id and subtask index and cannot be part of an id")
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(GraphError::InvalidVertexId {
                    index,
                    id: id.to_owned(),
                    reason,
                });
            }
            if vertex_by_id
                .insert(id, index_u32(index), |i| ids.get(i))
                .is_some()
            {
                return Err(GraphError::DuplicateVertex(id.to_owned()));
            }
            if v.parallelism == 0 {
                return Err(GraphError::ZeroParallelism(id.to_owned()));
            }
            if v.parallelism < crate::json::PARALLELISM_UNDECIDED {
                return Err(GraphError::NegativeParallelism {
                    vertex: id.to_owned(),
                    parallelism: v.parallelism,
                });
            }
            if v.parallelism == crate::json::PARALLELISM_UNDECIDED && job_type == JobType::Streaming
            {
                return Err(GraphError::UndecidedInStreamingJob(id.to_owned()));
            }
            let parallelism = raw_parallelism(v, estimate);
            if let Some(max) = v.max_parallelism {
                if parallelism > max {
                    return Err(GraphError::ParallelismAboveMax {
                        vertex: id.to_owned(),
                        parallelism,
                        max_parallelism: max,
                    });
                }
            }
            total_subtasks += u64::from(parallelism);
        }
        if total_subtasks > MAX_EXECUTION_VERTICES {
            return Err(GraphError::TooLarge {
                what: "execution vertices",
                count: total_subtasks,
                limit: MAX_EXECUTION_VERTICES,
            });
        }

        // Edges, by listing position of their endpoints.
        #[derive(Clone, Copy)]
        struct Resolved {
            source: u32,
            target: u32,
            pattern: DistributionPattern,
            partition_type: ResultPartitionType,
        }
        let mut resolved = Vec::with_capacity(raw_edges.len());
        for (index, e) in raw_edges.iter().enumerate() {
            let (source_id, target_id) = (edge_text.get(e.source), edge_text.get(e.target));
            let lookup = |end: &'static str, id: &str| {
                vertex_by_id
                    .get(id, |i| ids.get(i))
                    .ok_or_else(|| GraphError::UnknownVertex {
                        edge: index,
                        source_id: source_id.to_owned(),
                        target_id: target_id.to_owned(),
                        end,
                        vertex: id.to_owned(),
                    })
            };
            let source = lookup("source", source_id)?;
            let target = lookup("target", target_id)?;
            let unknown = |field, value: u32, expected| GraphError::UnknownEdgeValue {
                edge: index,
                source_id: source_id.to_owned(),
                target_id: target_id.to_owned(),
                field,
                value: edge_text.get(value).to_owned(),
                expected,
            };
            let pattern = match e.pattern {
                Coded::Known(p) => p,
                Coded::Unknown(value) => {
                    return Err(unknown(
                        "distribution_pattern",
                        value,
                        "pointwise, all_to_all",
                    ))
                }
            };
            let partition_type =
                match e.partition_type {
                    Coded::Known(t) => t,
                    Coded::Unknown(value) => return Err(unknown(
                        "result_partition_type",
                        value,
                        "pipelined, pipelined_bounded, blocking, hybrid_full, hybrid_selective, \
                         blocking_persistent, pipelined_approximate",
                    )),
                };
            resolved.push(Resolved {
                source,
                target,
                pattern,
                partition_type,
            });
        }

        // Topological order, ties by listing order (Kahn with a min-heap).
        let mut in_degree = vec![0u32; n];
        for e in &resolved {
            in_degree[e.target as usize] += 1;
        }
        let (out_offsets, out_targets) =
            csr(n, 0, resolved.iter().map(|e| (e.source as usize, e.target)));
        let mut ready: BinaryHeap<Reverse<u32>> = (0..n)
            .filter(|&v| in_degree[v] == 0)
            .map(|v| Reverse(index_u32(v)))
            .collect();
        let mut order: Vec<u32> = Vec::with_capacity(n);
        while let Some(Reverse(v)) = ready.pop() {
            order.push(v);
            for &t in csr_slice(&out_offsets, &out_targets, v as usize) {
                in_degree[t as usize] -= 1;
                if in_degree[t as usize] == 0 {
                    ready.push(Reverse(t));
                }
            }
        }
        drop((ready, out_offsets, out_targets));
        if order.len() < n {
            return Err(GraphError::Cycle {
                cycle: describe_cycle(
                    &ids,
                    resolved
                        .iter()
                        .map(|e| (e.source as usize, e.target as usize)),
                    &in_degree,
                ),
            });
        }
        drop(in_degree);
        let mut position = vec![0u32; n];
        for (pos, &listing) in order.iter().enumerate() {
            position[listing as usize] = index_u32(pos);
        }
        let vertex_id = |pos: JobVertexIndex| ids.get(order[pos.idx()]);

        let mut vertices: Vec<JobVertex> = order
            .iter()
            .map(|&listing| {
                let v = &raw_vertices[listing as usize];
                let parallelism = raw_parallelism(v, estimate);
                JobVertex {
                    parallelism,
                    max_parallelism: v
                        .max_parallelism
                        .map_or_else(|| default_max_parallelism(parallelism), u64::from),
                    max_parallelism_configured: v.max_parallelism.is_some(),
                    undecided: v.parallelism == crate::json::PARALLELISM_UNDECIDED,
                    skew_splittable: v.skew_splittable,
                    slot_sharing_group: v.slot_sharing_group,
                    co_location_group: v.co_location_group,
                }
            })
            .collect();
        drop(raw_vertices);

        // Forward groups: one parallelism per group of vertices joined by FORWARD edges.
        let forward_edges: Vec<ForwardEdge> = resolved
            .iter()
            .zip(&raw_edges)
            .enumerate()
            .filter(|(_, (_, e))| is_forward(e.ship_strategy.map(|s| edge_text.get(s))))
            .map(|(index, (r, _))| ForwardEdge {
                index,
                source: position[r.source as usize] as usize,
                target: position[r.target as usize] as usize,
            })
            .collect();
        forward_group::apply(
            &mut vertices,
            job_type == JobType::Batch,
            &forward_edges,
            |pos| vertex_id(JobVertexIndex(index_u32(pos))).to_owned(),
        )?;
        drop(forward_edges);
        let total_subtasks: u64 = vertices.iter().map(|v| u64::from(v.parallelism)).sum();
        if total_subtasks > MAX_EXECUTION_VERTICES {
            return Err(GraphError::TooLarge {
                what: "execution vertices",
                count: total_subtasks,
                limit: MAX_EXECUTION_VERTICES,
            });
        }

        // Data set names: explicit names first, so generated names never collide with them.
        // `names` holds every name taken so far; each becomes one data set.
        let mut names = Interner::default();
        for e in &raw_edges {
            if let Some(data_set) = e.data_set {
                names.intern(edge_text.get(data_set));
            }
        }
        // Next suffix to try per base name (by its number in `names`), so many parallel edges
        // stay linear; only bases that were taken get one.
        let mut next_suffix: HashMap<u32, usize> = HashMap::new();
        let mut edge_names: Vec<u32> = Vec::with_capacity(raw_edges.len());
        let mut base = String::new();
        for e in &raw_edges {
            if let Some(data_set) = e.data_set {
                let explicit = names.find(edge_text.get(data_set));
                edge_names.push(explicit.unwrap_or_else(|| unreachable!("bug: name not interned")));
                continue;
            }
            base.clear();
            base.push_str(edge_text.get(e.source));
            base.push_str("->");
            base.push_str(edge_text.get(e.target));
            let name = match names.find(&base) {
                None => names.intern(&base),
                Some(taken) => {
                    let suffix = next_suffix.entry(taken).or_insert(2);
                    loop {
                        let name = format!("{base}.{suffix}");
                        *suffix += 1;
                        if names.find(&name).is_none() {
                            break names.intern(&name);
                        }
                    }
                }
            };
            edge_names.push(name);
        }
        drop(next_suffix);

        let mut data_set_of_name = vec![u32::MAX; names.len()];
        let mut data_sets: Vec<IntermediateDataSet> = Vec::new();
        let mut edges: Vec<JobEdge> = Vec::with_capacity(raw_edges.len());
        for (index, (r, e)) in resolved.iter().zip(&raw_edges).enumerate() {
            let edge_index = JobEdgeIndex(index_u32(index));
            let source = JobVertexIndex(position[r.source as usize]);
            let target = JobVertexIndex(position[r.target as usize]);
            let name_number = edge_names[index];
            let name = names.get(name_number);
            let data_set = match data_set_of_name[name_number as usize] {
                u32::MAX => {
                    let ds = IntermediateDataSetIndex(index_u32(data_sets.len()));
                    data_sets.push(IntermediateDataSet {
                        id: name.to_owned(),
                        producer: source,
                        result_partition_type: r.partition_type,
                        distribution_pattern: r.pattern,
                        consumers: vec![edge_index],
                    });
                    data_set_of_name[name_number as usize] = ds.0;
                    ds
                }
                ds => {
                    let ds = IntermediateDataSetIndex(ds);
                    let existing = &data_sets[ds.idx()];
                    let mismatch = |field, found: String, expected: String| {
                        Err(GraphError::DataSetMismatch {
                            data_set: name.to_owned(),
                            edge: index,
                            field,
                            found,
                            expected,
                        })
                    };
                    if existing.producer != source {
                        return mismatch(
                            "source",
                            edge_text.get(e.source).to_owned(),
                            vertex_id(existing.producer).to_owned(),
                        );
                    }
                    if existing.distribution_pattern != r.pattern {
                        return mismatch(
                            "distribution_pattern",
                            r.pattern.to_string(),
                            existing.distribution_pattern.to_string(),
                        );
                    }
                    if existing.result_partition_type != r.partition_type {
                        return mismatch(
                            "result_partition_type",
                            r.partition_type.to_string(),
                            existing.result_partition_type.to_string(),
                        );
                    }
                    let first = edges[existing.consumers[0].idx()].target;
                    let (first_undecided, other_undecided) = (
                        vertices[first.idx()].undecided,
                        vertices[target.idx()].undecided,
                    );
                    if first_undecided != other_undecided {
                        let (undecided, fixed) = if first_undecided {
                            (first, target)
                        } else {
                            (target, first)
                        };
                        return Err(GraphError::DataSetConsumerUndecided {
                            data_set: name.to_owned(),
                            undecided: vertex_id(undecided).to_owned(),
                            fixed: vertex_id(fixed).to_owned(),
                        });
                    }
                    let (first_parallelism, other_parallelism) = (
                        vertices[first.idx()].parallelism,
                        vertices[target.idx()].parallelism,
                    );
                    if first_parallelism != other_parallelism {
                        return Err(GraphError::DataSetConsumerParallelism {
                            data_set: name.to_owned(),
                            first: vertex_id(first).to_owned(),
                            first_parallelism,
                            other: vertex_id(target).to_owned(),
                            other_parallelism,
                        });
                    }
                    data_sets[ds.idx()].consumers.push(edge_index);
                    ds
                }
            };
            edges.push(JobEdge {
                source,
                target,
                data_set,
                distribution_pattern: r.pattern,
                result_partition_type: r.partition_type,
                ship_strategy: e.ship_strategy.map(|s| edge_text.get(s).to_owned()),
            });
        }
        drop((
            names,
            edge_names,
            data_set_of_name,
            resolved,
            raw_edges,
            edge_text,
        ));

        // Co-located vertices run subtask i in one slot: they need equal parallelism.
        let mut first_of_group = vec![NO_GROUP; co_location_groups.len()];
        for (i, v) in vertices.iter().enumerate() {
            if v.co_location_group == NO_GROUP {
                continue;
            }
            let first = &mut first_of_group[v.co_location_group as usize];
            if *first == NO_GROUP {
                *first = index_u32(i);
            }
            let first = JobVertexIndex(*first);
            if vertices[first.idx()].parallelism != v.parallelism {
                return Err(GraphError::CoLocationParallelism {
                    group: co_location_groups.get(v.co_location_group).to_owned(),
                    first: vertex_id(first).to_owned(),
                    second: vertex_id(JobVertexIndex(index_u32(i))).to_owned(),
                });
            }
        }
        drop(first_of_group);

        let (input_offsets, inputs) = csr(
            n,
            JobEdgeIndex(0),
            edges
                .iter()
                .enumerate()
                .map(|(i, e)| (e.target.idx(), JobEdgeIndex(index_u32(i)))),
        );
        let (produced_offsets, produced) = csr(
            n,
            IntermediateDataSetIndex(0),
            data_sets
                .iter()
                .enumerate()
                .map(|(i, d)| (d.producer.idx(), IntermediateDataSetIndex(index_u32(i)))),
        );
        let mut operators: Vec<(JobVertexIndex, Vec<OperatorJson>)> = raw_operators
            .into_iter()
            .map(|(listing, ops)| (JobVertexIndex(position[listing as usize]), ops))
            .collect();
        operators.sort_by_key(|(j, _)| *j);
        let mut labels: Vec<(JobVertexIndex, Labels)> = raw_labels
            .into_iter()
            .map(|(listing, l)| (JobVertexIndex(position[listing as usize]), l))
            .collect();
        labels.sort_by_key(|(j, _)| *j);
        labels.shrink_to_fit();
        let mut tasks: Vec<(JobVertexIndex, Task)> = raw_tasks
            .into_iter()
            .map(|(listing, t)| (JobVertexIndex(position[listing as usize]), t))
            .collect();
        tasks.sort_by_key(|(j, _)| *j);
        tasks.shrink_to_fit();
        let mut source_bytes: Vec<(JobVertexIndex, u64)> = raw_source_bytes
            .into_iter()
            .map(|(listing, bytes)| (JobVertexIndex(position[listing as usize]), bytes))
            .collect();
        source_bytes.sort_by_key(|(j, _)| *j);
        vertex_by_id.remap(|listing| position[listing as usize]);
        drop(position);
        let identity = order.iter().enumerate().all(|(pos, &l)| pos == l as usize);
        let listing = if identity { Vec::new() } else { order };
        let mut ids = ids;
        ids.shrink_to_fit();
        Ok(JobGraph {
            name,
            job_type,
            vertices,
            ids,
            listing,
            slot_sharing_groups: slot_sharing_groups.into_names(),
            co_location_groups: co_location_groups.into_names(),
            operators,
            labels,
            tasks,
            source_bytes,
            input_offsets,
            inputs,
            produced_offsets,
            produced,
            edges,
            data_sets,
            vertex_by_id,
        })
    }

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

/// The parallelism of a vertex as read: as written, or for `-1` the estimate capped by its
/// explicit max parallelism (validation has refused every other value below 1).
fn raw_parallelism(v: &RawVertex, estimate: u32) -> u32 {
    match u32::try_from(v.parallelism) {
        Ok(p) => p,
        Err(_) => v
            .max_parallelism
            .map_or(estimate, |max| estimate.min(max))
            .max(1),
    }
}

/// Names one cycle among the vertices Kahn's algorithm could not order (those with
/// `in_degree > 0`): each has a predecessor that is also unordered, so walking predecessors must
/// revisit a vertex.
fn describe_cycle(
    ids: &StrArena,
    edges: impl Iterator<Item = (usize, usize)>,
    in_degree: &[u32],
) -> String {
    let n = in_degree.len();
    let mut predecessor = vec![usize::MAX; n];
    for (s, t) in edges {
        if in_degree[s] > 0 && in_degree[t] > 0 && predecessor[t] == usize::MAX {
            predecessor[t] = s;
        }
    }
    let Some(start) = (0..n).find(|&v| in_degree[v] > 0) else {
        return "(unknown)".to_owned();
    };
    let mut seen = vec![false; n];
    let mut v = start;
    while !seen[v] {
        seen[v] = true;
        v = predecessor[v];
    }
    // `v` is on the cycle; walk it backwards once, then print it forwards.
    let mut cycle = vec![v];
    let mut u = predecessor[v];
    while u != v {
        cycle.push(u);
        u = predecessor[u];
    }
    cycle.push(v);
    cycle.reverse();
    cycle
        .iter()
        .map(|&i| ids.get(index_u32(i)))
        .collect::<Vec<_>>()
        .join(" -> ")
}
