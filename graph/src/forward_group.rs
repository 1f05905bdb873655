//! Forward groups, as Flink 1.20's `ForwardGroup` and `ForwardGroupComputeUtil`: job vertices
//! joined by FORWARD edges (an edge whose ship strategy is exactly `FORWARD`, Flink's
//! `ForwardPartitioner`) must run at one parallelism, since subtask `i` sends to subtask `i`.
//!
//! Validation ([`JobGraph::from_json`](crate::JobGraph::from_json)) joins the groups and refuses
//! two fixed parallelisms in one group ("Forward partitioning does not allow change of
//! parallelism", naming the FORWARD edge that joins them). In a batch job it then does what
//! Flink's `StreamingJobGraphGenerator` does for the adaptive batch scheduler: a group with a
//! fixed parallelism gives it to its undecided members, and every member gets the group's max
//! parallelism, the least one configured in it. The scheduler decides an all-undecided group
//! once: its first member decided sets the parallelism of the rest ([`ForwardGroups`]).
//!
//! Groups have at least two vertices; a vertex without FORWARD edges is in none. Computing them
//! is O(V + E) (union-find with path halving and union by size).

use crate::{JobGraph, JobVertexIndex};

/// Whether a ship strategy makes a FORWARD edge (Flink's spelling, exactly).
pub fn is_forward(ship_strategy: Option<&str>) -> bool {
    ship_strategy == Some("FORWARD")
}

/// Index of a forward group, numbered by its first vertex in topological order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ForwardGroupIndex(pub u32);

/// "Not in a group" in the per-vertex table.
const NO_GROUP: u32 = u32::MAX;

/// The forward groups of a validated job graph. Memory O(V).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ForwardGroups {
    /// Per job vertex, its group, or [`NO_GROUP`]; empty when the job has no FORWARD edge.
    group_of: Vec<u32>,
    /// Per group, its members in topological order.
    members: Vec<Vec<JobVertexIndex>>,
}

impl ForwardGroups {
    /// The forward groups of a job graph (which validation made consistent: one parallelism per
    /// group unless every member is undecided). O(V + E).
    pub fn compute(job: &JobGraph) -> ForwardGroups {
        let n = job.vertices().len();
        let mut union = Union::new(n);
        let mut any = false;
        for e in job.edges() {
            if is_forward(e.ship_strategy.as_deref()) {
                union.join(e.source.idx(), e.target.idx());
                any = true;
            }
        }
        if !any {
            return ForwardGroups::default();
        }
        let group_of = union.groups();
        let groups = group_of.iter().filter(|&&g| g != NO_GROUP).max();
        let mut members = vec![Vec::new(); groups.map_or(0, |&g| g as usize + 1)];
        for (v, &g) in group_of.iter().enumerate() {
            if g != NO_GROUP {
                members[g as usize].push(JobVertexIndex(crate::index_u32(v)));
            }
        }
        ForwardGroups { group_of, members }
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the job has no forward group.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The group of a job vertex, if it is in one. O(1).
    pub fn group_of(&self, vertex: JobVertexIndex) -> Option<ForwardGroupIndex> {
        match self.group_of.get(vertex.idx()) {
            Some(&g) if g != NO_GROUP => Some(ForwardGroupIndex(g)),
            _ => None,
        }
    }

    /// The members of a group, in topological order.
    ///
    /// # Panics
    /// If the index is not of these groups.
    pub fn members(&self, group: ForwardGroupIndex) -> &[JobVertexIndex] {
        &self.members[group.0 as usize]
    }
}

/// Union-find over `0..n` (path halving, union by size).
#[derive(Debug)]
pub(crate) struct Union {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl Union {
    pub(crate) fn new(n: usize) -> Union {
        Union {
            parent: (0..n).map(crate::index_u32).collect(),
            size: vec![1; n],
        }
    }

    /// The representative of `x`'s set.
    pub(crate) fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] as usize != x {
            let grandparent = self.parent[self.parent[x] as usize];
            self.parent[x] = grandparent;
            x = grandparent as usize;
        }
        x
    }

    /// Joins the sets of `a` and `b`; returns the new representative.
    pub(crate) fn join(&mut self, a: usize, b: usize) -> usize {
        let (mut a, mut b) = (self.find(a), self.find(b));
        if a == b {
            return a;
        }
        if self.size[a] < self.size[b] {
            std::mem::swap(&mut a, &mut b);
        }
        self.parent[b] = crate::index_u32(a);
        self.size[a] += self.size[b];
        a
    }

    /// Per item its group, numbered by first item, or [`NO_GROUP`] for items alone.
    pub(crate) fn groups(mut self) -> Vec<u32> {
        let n = self.parent.len();
        let mut number = vec![NO_GROUP; n];
        let mut next = 0u32;
        let mut out = Vec::with_capacity(n);
        for x in 0..n {
            let root = self.find(x);
            if self.size[root] < 2 {
                out.push(NO_GROUP);
                continue;
            }
            if number[root] == NO_GROUP {
                number[root] = next;
                next += 1;
            }
            out.push(number[root]);
        }
        out
    }
}

/// A FORWARD edge as validation sees it: its position in the input's edge list and the
/// topological positions of its endpoints.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ForwardEdge {
    pub(crate) index: usize,
    pub(crate) source: usize,
    pub(crate) target: usize,
}

/// Validates the forward groups of a job's vertices (topological order) and, in a batch job,
/// gives every member its group's parallelism (when one member's is fixed) and max parallelism
/// (the least configured in the group), as Flink does at compile time for the adaptive batch
/// scheduler; an undecided member of an all-undecided group has its estimate capped by the
/// group's max. `id` names a vertex by position. O(V + E).
///
/// # Errors
/// [`GraphError::ForwardParallelism`] naming the FORWARD edge that joins two fixed, different
/// parallelisms; [`GraphError::ForwardGroupMaxParallelism`] for a member whose configured max
/// parallelism is below its group's fixed parallelism.
pub(crate) fn apply(
    vertices: &mut [crate::JobVertex],
    batch: bool,
    edges: &[ForwardEdge],
    id: impl Fn(usize) -> String,
) -> Result<(), crate::GraphError> {
    if edges.is_empty() {
        return Ok(());
    }
    let mut union = Union::new(vertices.len());
    // Per set representative, the fixed parallelism of its members, if any has one.
    let mut fixed: Vec<Option<u32>> = vertices
        .iter()
        .map(|v| (!v.undecided).then_some(v.parallelism))
        .collect();
    for e in edges {
        let (a, b) = (union.find(e.source), union.find(e.target));
        if a == b {
            continue;
        }
        if let (Some(p), Some(q)) = (fixed[a], fixed[b]) {
            if p != q {
                return Err(crate::GraphError::ForwardParallelism {
                    edge: e.index,
                    source_id: id(e.source),
                    target_id: id(e.target),
                    source_parallelism: p,
                    target_parallelism: q,
                });
            }
        }
        let joined = fixed[a].or(fixed[b]);
        let root = union.join(a, b);
        fixed[root] = joined;
    }
    if !batch {
        return Ok(());
    }
    let roots: Vec<usize> = (0..vertices.len()).map(|v| union.find(v)).collect();
    // Per representative, the least configured max parallelism of its members (and whose).
    let mut group_max: Vec<Option<(u64, usize)>> = vec![None; vertices.len()];
    for (v, &root) in roots.iter().enumerate() {
        let vertex = &vertices[v];
        if vertex.max_parallelism_configured
            && group_max[root].is_none_or(|(m, _)| vertex.max_parallelism < m)
        {
            group_max[root] = Some((vertex.max_parallelism, v));
        }
    }
    for (v, &root) in roots.iter().enumerate() {
        if union.size[root] < 2 {
            continue;
        }
        if let (Some(p), Some((max, holder))) = (fixed[root], group_max[root]) {
            if max < u64::from(p) {
                return Err(crate::GraphError::ForwardGroupMaxParallelism {
                    vertex: id(holder),
                    max_parallelism: max,
                    group_parallelism: p,
                });
            }
        }
        let vertex = &mut vertices[v];
        if let Some(p) = fixed[root] {
            if vertex.undecided {
                vertex.undecided = false;
                vertex.parallelism = p;
                if !vertex.max_parallelism_configured {
                    vertex.max_parallelism = crate::default_max_parallelism(p);
                }
            }
        }
        if let Some((max, _)) = group_max[root] {
            vertex.max_parallelism = max;
            vertex.max_parallelism_configured = true;
            if vertex.undecided {
                let capped = u64::from(vertex.parallelism).min(max);
                vertex.parallelism = u32::try_from(capped).unwrap_or(u32::MAX);
            }
        }
    }
    Ok(())
}

/// The positions (in `json.vertices`) of the vertices FORWARD edges join to the vertex at
/// `position`, itself included, ascending: its forward group as written, before validation (for
/// editing tools that change a group together). Edges naming unknown vertices are skipped;
/// validation reports them. O(V + E).
pub fn group_in_json(json: &crate::JobGraphJson, position: usize) -> Vec<usize> {
    let by_id: std::collections::HashMap<&str, usize> = json
        .vertices
        .iter()
        .enumerate()
        .map(|(i, v)| (v.id.as_str(), i))
        .collect();
    let mut union = Union::new(json.vertices.len());
    for e in &json.edges {
        if !is_forward(e.ship_strategy.as_deref()) {
            continue;
        }
        if let (Some(&a), Some(&b)) = (by_id.get(e.source.as_str()), by_id.get(e.target.as_str())) {
            union.join(a, b);
        }
    }
    let root = union.find(position);
    (0..json.vertices.len())
        .filter(|&v| union.find(v) == root)
        .collect()
}
