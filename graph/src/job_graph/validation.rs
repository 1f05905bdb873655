//! Validation: a [`RawJob`] into a [`JobGraph`] ([`JobGraph::from_json`], and `from_raw` for
//! the loader), in named steps, each refusing what it checks with an error naming the item, in
//! the order the checks have always run: the job type, the vertices (ids, parallelism, the total),
//! the edges (endpoints, pattern and type), the topological order (or the cycle), the forward
//! groups, the data sets (names, shared data sets agreeing), co-location groups; then the compact
//! graph is assembled. Each step frees what later steps no longer need.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::forward_group::{self, is_forward, ForwardEdge};
use crate::index_vec::index_u32;
use crate::json::{JobGraphJson, OperatorJson};
use crate::strings::{Interner, StrArena, StrIndex};
use crate::{DistributionPattern, GraphError, ResultPartitionType};

use super::raw_job::{Coded, RawEdge, RawJob, RawVertex};
use super::{
    csr, csr_slice, default_max_parallelism, IntermediateDataSet, IntermediateDataSetIndex,
    JobEdge, JobEdgeIndex, JobGraph, JobType, JobVertex, JobVertexIndex, Labels, Task,
    MAX_EXECUTION_VERTICES, NO_GROUP,
};

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
        let n = raw_vertices.len();
        let mut vertex_by_id = check_vertices(&ids, &raw_vertices, job_type, estimate)?;
        let resolved = resolve_edges(&ids, &vertex_by_id, &edge_text, &raw_edges)?;
        let order = topological_order(&ids, n, &resolved)?;
        let mut position = vec![0u32; n];
        for (pos, &listing) in order.iter().enumerate() {
            position[listing as usize] = index_u32(pos);
        }
        let vertex_id = |pos: JobVertexIndex| ids.get(order[pos.idx()]);

        let mut vertices = ordered_vertices(&order, &raw_vertices, estimate);
        drop(raw_vertices);
        apply_forward_groups(
            &mut vertices,
            job_type,
            &resolved,
            &raw_edges,
            &edge_text,
            &position,
            &vertex_id,
        )?;

        let (names, edge_names) = data_set_names(&raw_edges, &edge_text);
        let (edges, data_sets) = edges_and_data_sets(
            &resolved,
            &raw_edges,
            &edge_text,
            &position,
            &vertices,
            &names,
            &edge_names,
            &vertex_id,
        )?;
        drop((names, edge_names, resolved, raw_edges, edge_text));
        check_co_location(&vertices, &co_location_groups, &vertex_id)?;

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
        let operators: Vec<(JobVertexIndex, Vec<OperatorJson>)> =
            by_position(raw_operators, &position);
        let mut labels: Vec<(JobVertexIndex, Labels)> = by_position(raw_labels, &position);
        labels.shrink_to_fit();
        let mut tasks: Vec<(JobVertexIndex, Task)> = by_position(raw_tasks, &position);
        tasks.shrink_to_fit();
        let source_bytes: Vec<(JobVertexIndex, u64)> = by_position(raw_source_bytes, &position);
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
}

/// A sparse per-vertex list keyed by listing position, keyed by topological position instead
/// and sorted by it.
fn by_position<T>(items: Vec<(u32, T)>, position: &[u32]) -> Vec<(JobVertexIndex, T)> {
    let mut items: Vec<(JobVertexIndex, T)> = items
        .into_iter()
        .map(|(listing, t)| (JobVertexIndex(position[listing as usize]), t))
        .collect();
    items.sort_by_key(|(j, _)| *j);
    items
}

/// An edge with its endpoints resolved (listing positions) and its pattern and type known.
#[derive(Clone, Copy)]
struct Resolved {
    source: u32,
    target: u32,
    pattern: DistributionPattern,
    partition_type: ResultPartitionType,
}

/// The vertices, in listing order: each id not empty, without `#` and unique; each
/// parallelism at least 1 or undecided (`-1`, batch jobs only) and at most its max; at most
/// [`MAX_EXECUTION_VERTICES`] subtasks in all. Returns the id index (id -> listing position).
fn check_vertices(
    ids: &StrArena,
    raw_vertices: &[RawVertex],
    job_type: JobType,
    estimate: u32,
) -> Result<StrIndex, GraphError> {
    let mut vertex_by_id = StrIndex::with_capacity(raw_vertices.len());
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
        if v.parallelism == crate::json::PARALLELISM_UNDECIDED && job_type == JobType::Streaming {
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

    Ok(vertex_by_id)
}

/// The edges, by listing position of their endpoints: both ends known vertices, pattern and
/// partition type known values.
fn resolve_edges(
    ids: &StrArena,
    vertex_by_id: &StrIndex,
    edge_text: &StrArena,
    raw_edges: &[RawEdge],
) -> Result<Vec<Resolved>, GraphError> {
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
        let partition_type = match e.partition_type {
            Coded::Known(t) => t,
            Coded::Unknown(value) => {
                return Err(unknown(
                    "result_partition_type",
                    value,
                    "pipelined, pipelined_bounded, blocking, hybrid_full, hybrid_selective, \
                     blocking_persistent, pipelined_approximate",
                ))
            }
        };
        resolved.push(Resolved {
            source,
            target,
            pattern,
            partition_type,
        });
    }

    Ok(resolved)
}

/// The listing positions of the `n` vertices in topological order, ties by listing order (Kahn
/// with a min-heap), or the cycle that prevents one.
fn topological_order(
    ids: &StrArena,
    n: usize,
    resolved: &[Resolved],
) -> Result<Vec<u32>, GraphError> {
    let mut in_degree = vec![0u32; n];
    for e in resolved {
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
                ids,
                resolved
                    .iter()
                    .map(|e| (e.source as usize, e.target as usize)),
                &in_degree,
            ),
        });
    }
    drop(in_degree);
    Ok(order)
}

/// The vertices in topological order as the graph stores them (parallelism and max parallelism
/// resolved, undecided vertices at the estimate).
fn ordered_vertices(order: &[u32], raw_vertices: &[RawVertex], estimate: u32) -> Vec<JobVertex> {
    order
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
        .collect()
}

/// Forward groups: one parallelism per group of vertices joined by FORWARD edges
/// ([`forward_group::apply`]), then the total subtasks checked again.
fn apply_forward_groups<'s>(
    vertices: &mut [JobVertex],
    job_type: JobType,
    resolved: &[Resolved],
    raw_edges: &[RawEdge],
    edge_text: &StrArena,
    position: &[u32],
    vertex_id: &dyn Fn(JobVertexIndex) -> &'s str,
) -> Result<(), GraphError> {
    let forward_edges: Vec<ForwardEdge> = resolved
        .iter()
        .zip(raw_edges)
        .enumerate()
        .filter(|(_, (_, e))| is_forward(e.ship_strategy.map(|s| edge_text.get(s))))
        .map(|(index, (r, _))| ForwardEdge {
            index,
            source: position[r.source as usize] as usize,
            target: position[r.target as usize] as usize,
        })
        .collect();
    forward_group::apply(
        vertices,
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

    Ok(())
}

/// The data set name of every edge, as a number in the returned names: explicit names first,
/// so generated names (`source->target`, then `.2`, `.3`, ...) never collide with them.
fn data_set_names(raw_edges: &[RawEdge], edge_text: &StrArena) -> (Interner, Vec<u32>) {
    let mut names = Interner::default();
    for e in raw_edges {
        if let Some(data_set) = e.data_set {
            names.intern(edge_text.get(data_set));
        }
    }
    // Next suffix to try per base name (by its number in `names`), so many parallel edges
    // stay linear; only bases that were taken get one.
    let mut next_suffix: HashMap<u32, usize> = HashMap::new();
    let mut edge_names: Vec<u32> = Vec::with_capacity(raw_edges.len());
    let mut base = String::new();
    for e in raw_edges {
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

    (names, edge_names)
}

/// The graph's edges and data sets: one data set per name, its consumers in edge order; the
/// edges of a shared data set must agree ([`check_shared_data_set`]).
#[allow(clippy::too_many_arguments)] // the pieces validation has built so far
fn edges_and_data_sets<'s>(
    resolved: &[Resolved],
    raw_edges: &[RawEdge],
    edge_text: &StrArena,
    position: &[u32],
    vertices: &[JobVertex],
    names: &Interner,
    edge_names: &[u32],
    vertex_id: &dyn Fn(JobVertexIndex) -> &'s str,
) -> Result<(Vec<JobEdge>, Vec<IntermediateDataSet>), GraphError> {
    let mut data_set_of_name = vec![u32::MAX; names.len()];
    let mut data_sets: Vec<IntermediateDataSet> = Vec::new();
    let mut edges: Vec<JobEdge> = Vec::with_capacity(raw_edges.len());
    for (index, (r, e)) in resolved.iter().zip(raw_edges).enumerate() {
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
                check_shared_data_set(
                    &data_sets[ds.idx()],
                    &edges,
                    vertices,
                    name,
                    index,
                    (source, target),
                    r,
                    edge_text.get(e.source),
                    vertex_id,
                )?;
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
    Ok((edges, data_sets))
}

/// A further consumer edge (`index`, `ends`) of the data set `existing` named `name`: same
/// source, pattern and partition type, and a consumer as decided (or undecided) and of the same
/// parallelism as the first consumer.
#[allow(clippy::too_many_arguments)] // the edge and what it is checked against
fn check_shared_data_set<'s>(
    existing: &IntermediateDataSet,
    edges: &[JobEdge],
    vertices: &[JobVertex],
    name: &str,
    index: usize,
    (source, target): (JobVertexIndex, JobVertexIndex),
    r: &Resolved,
    source_id: &str,
    vertex_id: &dyn Fn(JobVertexIndex) -> &'s str,
) -> Result<(), GraphError> {
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
            source_id.to_owned(),
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
    Ok(())
}

/// Co-located vertices run subtask i in one slot: they need equal parallelism.
fn check_co_location<'s>(
    vertices: &[JobVertex],
    co_location_groups: &Interner,
    vertex_id: &dyn Fn(JobVertexIndex) -> &'s str,
) -> Result<(), GraphError> {
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

    Ok(())
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
