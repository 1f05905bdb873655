//! The validated, index-resolved job graph.

use crate::index_vec::index_u32;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::fmt;

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

/// A job vertex with its resolved inputs and outputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobVertex {
    /// The id as written (no `#`).
    pub id: String,
    /// Number of subtasks, at least 1.
    pub parallelism: u32,
    /// Explicit or Flink-default max parallelism, at least `parallelism`.
    pub max_parallelism: u64,
    /// Whether `max_parallelism` was given explicitly.
    pub max_parallelism_configured: bool,
    /// Slot sharing group (`default` when none was given).
    pub slot_sharing_group: String,
    /// Co-location group, if any.
    pub co_location_group: Option<String>,
    /// Chained operators with their state, as written.
    pub operators: Vec<OperatorJson>,
    /// Input edges, in input order (the order of the edge list).
    pub inputs: Vec<JobEdgeIndex>,
    /// Produced data sets, in index order.
    pub produced_data_sets: Vec<IntermediateDataSetIndex>,
}

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

/// A validated job graph: ids resolved to dense indices, vertices in topological order, data
/// sets grouped. It can only be built through [`JobGraph::from_json`], so every instance is valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobGraph {
    name: String,
    job_type: JobType,
    vertices: Vec<JobVertex>,
    edges: Vec<JobEdge>,
    data_sets: Vec<IntermediateDataSet>,
    vertex_by_id: HashMap<String, JobVertexIndex>,
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
        let job_type = match json.job_type.as_str() {
            "streaming" => JobType::Streaming,
            "batch" => JobType::Batch,
            other => return Err(GraphError::UnknownJobType(other.to_owned())),
        };
        if json.vertices.is_empty() {
            return Err(GraphError::NoVertices);
        }

        // Vertices, by listing position first.
        let mut listing_by_id: HashMap<&str, usize> = HashMap::with_capacity(json.vertices.len());
        let mut total_subtasks: u64 = 0;
        for (index, v) in json.vertices.iter().enumerate() {
            let reason = if v.id.is_empty() {
                Some("it is empty")
            } else if v.id.contains('#') {
                Some("'#' separates vertex id and subtask index and cannot be part of an id")
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(GraphError::InvalidVertexId {
                    index,
                    id: v.id.clone(),
                    reason,
                });
            }
            if listing_by_id.insert(v.id.as_str(), index).is_some() {
                return Err(GraphError::DuplicateVertex(v.id.clone()));
            }
            if v.parallelism == 0 {
                return Err(GraphError::ZeroParallelism(v.id.clone()));
            }
            if let Some(max) = v.max_parallelism {
                if v.parallelism > max {
                    return Err(GraphError::ParallelismAboveMax {
                        vertex: v.id.clone(),
                        parallelism: v.parallelism,
                        max_parallelism: max,
                    });
                }
            }
            total_subtasks += u64::from(v.parallelism);
        }
        if total_subtasks > MAX_EXECUTION_VERTICES {
            return Err(GraphError::TooLarge {
                what: "execution vertices",
                count: total_subtasks,
                limit: MAX_EXECUTION_VERTICES,
            });
        }

        // Edges, by listing position of their endpoints.
        struct RawEdge {
            source: usize,
            target: usize,
            pattern: DistributionPattern,
            partition_type: ResultPartitionType,
        }
        let mut raw_edges = Vec::with_capacity(json.edges.len());
        for (index, e) in json.edges.iter().enumerate() {
            let lookup = |end: &'static str, id: &str| {
                listing_by_id
                    .get(id)
                    .copied()
                    .ok_or_else(|| GraphError::UnknownVertex {
                        edge: index,
                        source_id: e.source.clone(),
                        target_id: e.target.clone(),
                        end,
                        vertex: id.to_owned(),
                    })
            };
            let source = lookup("source", &e.source)?;
            let target = lookup("target", &e.target)?;
            let unknown = |field, value: &str, expected| GraphError::UnknownEdgeValue {
                edge: index,
                source_id: e.source.clone(),
                target_id: e.target.clone(),
                field,
                value: value.to_owned(),
                expected,
            };
            let pattern = DistributionPattern::parse(&e.distribution_pattern).ok_or_else(|| {
                unknown(
                    "distribution_pattern",
                    &e.distribution_pattern,
                    "pointwise, all_to_all",
                )
            })?;
            let partition_type =
                ResultPartitionType::parse(&e.result_partition_type).ok_or_else(|| {
                    unknown(
                        "result_partition_type",
                        &e.result_partition_type,
                        "pipelined, pipelined_bounded, blocking, hybrid_full, hybrid_selective, \
                         blocking_persistent, pipelined_approximate",
                    )
                })?;
            raw_edges.push(RawEdge {
                source,
                target,
                pattern,
                partition_type,
            });
        }

        // Topological order, ties by listing order (Kahn with a min-heap).
        let n = json.vertices.len();
        let mut in_degree = vec![0u32; n];
        let mut out_edges: Vec<Vec<usize>> = vec![Vec::new(); n];
        for e in &raw_edges {
            in_degree[e.target] += 1;
            out_edges[e.source].push(e.target);
        }
        let mut ready: BinaryHeap<Reverse<usize>> =
            (0..n).filter(|&v| in_degree[v] == 0).map(Reverse).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(Reverse(v)) = ready.pop() {
            order.push(v);
            for &t in &out_edges[v] {
                in_degree[t] -= 1;
                if in_degree[t] == 0 {
                    ready.push(Reverse(t));
                }
            }
        }
        if order.len() < n {
            return Err(GraphError::Cycle {
                cycle: describe_cycle(
                    json,
                    &raw_edges
                        .iter()
                        .map(|e| (e.source, e.target))
                        .collect::<Vec<_>>(),
                    &in_degree,
                ),
            });
        }
        let mut position = vec![0u32; n];
        for (pos, &listing) in order.iter().enumerate() {
            position[listing] = index_u32(pos);
        }

        let mut vertices: Vec<JobVertex> = order
            .iter()
            .map(|&listing| {
                let v = &json.vertices[listing];
                JobVertex {
                    id: v.id.clone(),
                    parallelism: v.parallelism,
                    max_parallelism: v
                        .max_parallelism
                        .map_or_else(|| default_max_parallelism(v.parallelism), u64::from),
                    max_parallelism_configured: v.max_parallelism.is_some(),
                    slot_sharing_group: v
                        .slot_sharing_group
                        .clone()
                        .unwrap_or_else(|| "default".to_owned()),
                    co_location_group: v.co_location_group.clone(),
                    operators: v.operators.clone(),
                    inputs: Vec::new(),
                    produced_data_sets: Vec::new(),
                }
            })
            .collect();

        // Data sets: explicit names first, so generated names never collide with them.
        let mut data_set_by_name: HashMap<String, IntermediateDataSetIndex> = HashMap::new();
        let mut taken: HashSet<String> = json
            .edges
            .iter()
            .filter_map(|e| e.data_set.clone())
            .collect();
        // Next suffix to try per base name, so many parallel edges stay linear.
        let mut next_suffix: HashMap<String, usize> = HashMap::new();
        let mut generated: Vec<Option<String>> = Vec::with_capacity(json.edges.len());
        for e in &json.edges {
            if e.data_set.is_some() {
                generated.push(None);
                continue;
            }
            let base = format!("{}->{}", e.source, e.target);
            let mut name = base.clone();
            let suffix = next_suffix.entry(base.clone()).or_insert(2);
            while taken.contains(&name) {
                name = format!("{base}.{suffix}");
                *suffix += 1;
            }
            taken.insert(name.clone());
            generated.push(Some(name));
        }
        drop(taken);

        let mut data_sets: Vec<IntermediateDataSet> = Vec::new();
        let mut edges: Vec<JobEdge> = Vec::with_capacity(raw_edges.len());
        for (index, (raw, e)) in raw_edges.iter().zip(&json.edges).enumerate() {
            let edge_index = JobEdgeIndex(index_u32(index));
            let source = JobVertexIndex(position[raw.source]);
            let target = JobVertexIndex(position[raw.target]);
            let name = match (&e.data_set, &generated[index]) {
                (Some(name), _) | (None, Some(name)) => name,
                (None, None) => unreachable!("bug: an edge without data set got no generated name"),
            };
            let data_set = match data_set_by_name.get(name) {
                Some(&ds) => {
                    let existing = &data_sets[ds.idx()];
                    let mismatch = |field, found: String, expected: String| {
                        Err(GraphError::DataSetMismatch {
                            data_set: name.clone(),
                            edge: index,
                            field,
                            found,
                            expected,
                        })
                    };
                    if existing.producer != source {
                        return mismatch(
                            "source",
                            e.source.clone(),
                            vertices[existing.producer.idx()].id.clone(),
                        );
                    }
                    if existing.distribution_pattern != raw.pattern {
                        return mismatch(
                            "distribution_pattern",
                            raw.pattern.to_string(),
                            existing.distribution_pattern.to_string(),
                        );
                    }
                    if existing.result_partition_type != raw.partition_type {
                        return mismatch(
                            "result_partition_type",
                            raw.partition_type.to_string(),
                            existing.result_partition_type.to_string(),
                        );
                    }
                    let first = &vertices[edges[existing.consumers[0].idx()].target.idx()];
                    let other = &vertices[target.idx()];
                    if first.parallelism != other.parallelism {
                        return Err(GraphError::DataSetConsumerParallelism {
                            data_set: name.clone(),
                            first: first.id.clone(),
                            first_parallelism: first.parallelism,
                            other: other.id.clone(),
                            other_parallelism: other.parallelism,
                        });
                    }
                    data_sets[ds.idx()].consumers.push(edge_index);
                    ds
                }
                None => {
                    let ds = IntermediateDataSetIndex(index_u32(data_sets.len()));
                    data_sets.push(IntermediateDataSet {
                        id: name.clone(),
                        producer: source,
                        result_partition_type: raw.partition_type,
                        distribution_pattern: raw.pattern,
                        consumers: vec![edge_index],
                    });
                    data_set_by_name.insert(name.clone(), ds);
                    vertices[source.idx()].produced_data_sets.push(ds);
                    ds
                }
            };
            vertices[target.idx()].inputs.push(edge_index);
            edges.push(JobEdge {
                source,
                target,
                data_set,
                distribution_pattern: raw.pattern,
                result_partition_type: raw.partition_type,
                ship_strategy: e.ship_strategy.clone(),
            });
        }

        // Co-located vertices run subtask i in one slot: they need equal parallelism.
        let mut co_location: HashMap<&str, usize> = HashMap::new();
        for (i, v) in vertices.iter().enumerate() {
            if let Some(group) = v.co_location_group.as_deref() {
                let first = *co_location.entry(group).or_insert(i);
                if vertices[first].parallelism != v.parallelism {
                    return Err(GraphError::CoLocationParallelism {
                        group: group.to_owned(),
                        first: vertices[first].id.clone(),
                        second: v.id.clone(),
                    });
                }
            }
        }

        let vertex_by_id = vertices
            .iter()
            .enumerate()
            .map(|(i, v)| (v.id.clone(), JobVertexIndex(index_u32(i))))
            .collect();
        Ok(JobGraph {
            name: json.name.clone(),
            job_type,
            vertices,
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
                .map(|v| JobVertexJson {
                    id: v.id.clone(),
                    parallelism: v.parallelism,
                    max_parallelism: v
                        .max_parallelism_configured
                        .then(|| u32::try_from(v.max_parallelism).unwrap_or(u32::MAX)),
                    slot_sharing_group: (v.slot_sharing_group != "default")
                        .then(|| v.slot_sharing_group.clone()),
                    co_location_group: v.co_location_group.clone(),
                    operators: v.operators.clone(),
                })
                .collect(),
            edges: self
                .edges
                .iter()
                .map(|e| JobEdgeJson {
                    source: self.vertices[e.source.idx()].id.clone(),
                    target: self.vertices[e.target.idx()].id.clone(),
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

    /// One vertex.
    ///
    /// # Panics
    /// If the index is not of this graph.
    pub fn vertex(&self, index: JobVertexIndex) -> &JobVertex {
        &self.vertices[index.idx()]
    }

    /// Looks a vertex up by id, O(1).
    pub fn vertex_index(&self, id: &str) -> Option<JobVertexIndex> {
        self.vertex_by_id.get(id).copied()
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
        let operators: usize = self
            .vertices
            .iter()
            .map(|v| {
                v.operators.capacity() * size_of::<OperatorJson>()
                    + v.operators
                        .iter()
                        .map(|o| {
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
                        })
                        .sum::<usize>()
            })
            .sum();
        let vertices: usize = self.vertices.capacity() * size_of::<JobVertex>()
            + self
                .vertices
                .iter()
                .map(|v| {
                    v.id.capacity()
                        + v.slot_sharing_group.capacity()
                        + v.co_location_group.as_ref().map_or(0, String::capacity)
                        + v.inputs.capacity() * size_of::<JobEdgeIndex>()
                        + v.produced_data_sets.capacity() * size_of::<IntermediateDataSetIndex>()
                })
                .sum::<usize>();
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
        // A hashbrown table: one (key, value) slot plus one control byte per bucket.
        let index = self.vertex_by_id.capacity() * (size_of::<(String, JobVertexIndex)>() + 1)
            + self.vertices.iter().map(|v| v.id.len()).sum::<usize>();
        vertices + operators + edges + data_sets + index
    }
}

/// Names one cycle among the vertices Kahn's algorithm could not order (those with
/// `in_degree > 0`): each has a predecessor that is also unordered, so walking predecessors must
/// revisit a vertex.
fn describe_cycle(json: &JobGraphJson, edges: &[(usize, usize)], in_degree: &[u32]) -> String {
    let n = in_degree.len();
    let mut predecessor = vec![usize::MAX; n];
    for &(s, t) in edges {
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
        .map(|&i| json.vertices[i].id.as_str())
        .collect::<Vec<_>>()
        .join(" -> ")
}
