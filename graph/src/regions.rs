//! Logical and scheduling pipelined regions.
//!
//! A pipelined region is the unit of scheduling and failover: vertices joined (undirected) by
//! must-be-pipelined partitions (PIPELINED, PIPELINED_BOUNDED), merged further so that the
//! regions' dependencies through the other partition types form no cycle.
//!
//! As Flink 1.14+ (FLINK-22773), regions are computed per logical region: a logical region with
//! any internal ALL_TO_ALL edge becomes one scheduling region in O(N); otherwise its raw regions
//! over pipelined pointwise edges are merged by Tarjan's SCC over its internal pointwise edges
//! only, O(N) as pointwise edges have O(N) connections.
//!
//! **Deliberate difference from Flink 1.14-1.20:** Flink never merges a dependency cycle that
//! spans several logical regions (A->B blocking, A->C pipelined, B->D blocking, C->D pipelined
//! gives {A,C,D} and {B}, which wait on each other forever). Conflux merges such cycles between
//! logical regions first (cheap: job vertices only), so no region set can deadlock. The result is
//! exactly what a whole-graph SCC over every (producer, consumer) pair gives (Flink 1.12's
//! semantics), which the property tests check.

use std::ops::Range;

use crate::index_vec::index_u32;
use crate::{
    DistributionPattern, ExecutionGraph, ExecutionVertexId, ExecutionVertexIndex, GraphError,
    JobGraph, JobVertexIndex,
};

/// Index of a scheduling pipelined region. Regions are numbered in topological order of their
/// first vertex (as Flink's `SchedulingStrategyUtils.sortPipelinedRegionsInTopologicalOrder`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PipelinedRegionIndex(pub u32);

impl PipelinedRegionIndex {
    /// The index as a `usize`.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// Index of a logical pipelined region (job vertex level), numbered by first job vertex in
/// topological order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LogicalRegionIndex(pub u32);

crate::index_vec::impl_idx!(PipelinedRegionIndex, LogicalRegionIndex);

/// A partition of items `0..n` into regions, stored as item -> region plus region -> members in
/// compressed sparse rows. Members are sorted ascending; regions are numbered by their smallest
/// member.
///
/// When every item is a region of its own (every region of a job without pipelined edges),
/// item i is region i and only `members` (`0..n`, which [`members`](Self::members) slices) is
/// stored: a third of the memory, and no pass over the items to number them. The form is
/// canonical: a partitioning is stored as singletons exactly when it is one, so equal
/// partitionings compare equal.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Partitioning {
    /// Every item is a region of its own; `region_of` and `offsets` are empty.
    singletons: bool,
    region_of: Vec<u32>,
    offsets: Vec<u32>,
    members: Vec<u32>,
}

impl Partitioning {
    /// From a key per item (items with equal keys share a region; keys are `< n`), renumbering
    /// regions by first item. O(n).
    fn from_keys(keys: impl Iterator<Item = u32>, n: usize) -> Partitioning {
        const UNSET: u32 = u32::MAX;
        let mut id_of_key = vec![UNSET; n];
        let mut region_of = Vec::with_capacity(n);
        let mut counts: Vec<u32> = Vec::new();
        for key in keys {
            let slot = &mut id_of_key[key as usize];
            if *slot == UNSET {
                *slot = index_u32(counts.len());
                counts.push(0);
            }
            counts[*slot as usize] += 1;
            region_of.push(*slot);
        }
        drop(id_of_key);
        let mut offsets = Vec::with_capacity(counts.len() + 1);
        let mut sum = 0u32;
        offsets.push(0);
        for c in &counts {
            sum += c;
            offsets.push(sum);
        }
        // Fill in item order so members stay sorted; `counts` becomes the write cursor.
        let mut cursor: Vec<u32> = offsets[..counts.len()].to_vec();
        drop(counts);
        let mut members = vec![0u32; region_of.len()];
        for (item, &r) in region_of.iter().enumerate() {
            members[cursor[r as usize] as usize] = index_u32(item);
            cursor[r as usize] += 1;
        }
        if offsets.len() == region_of.len() + 1 {
            // As many regions as items: each its own.
            return Partitioning::singletons(region_of.len());
        }
        Partitioning {
            singletons: false,
            region_of,
            offsets,
            members,
        }
    }

    /// Every item of `0..n` a region of its own. O(n), one array.
    fn singletons(n: usize) -> Partitioning {
        Partitioning {
            singletons: true,
            region_of: Vec::new(),
            offsets: Vec::new(),
            members: (0..index_u32(n)).collect(),
        }
    }

    fn len(&self) -> usize {
        if self.singletons {
            self.members.len()
        } else {
            self.offsets.len() - 1
        }
    }

    fn region_of(&self, item: usize) -> u32 {
        if self.singletons {
            index_u32(item)
        } else {
            self.region_of[item]
        }
    }

    /// Items, including those not yet in a region (see [`push_singleton`](Self::push_singleton)).
    fn items(&self) -> usize {
        if self.singletons {
            self.members.len()
        } else {
            self.region_of.len()
        }
    }

    /// Adds the next item as a region of its own.
    fn push_singleton(&mut self) {
        let item = index_u32(self.items());
        if !self.singletons {
            self.region_of.push(index_u32(self.offsets.len() - 1));
            self.members.push(item);
            self.offsets.push(index_u32(self.members.len()));
        } else {
            self.members.push(item);
        }
    }

    fn members(&self, region: usize) -> &[u32] {
        if self.singletons {
            &self.members[region..=region]
        } else {
            &self.members[self.offsets[region] as usize..self.offsets[region + 1] as usize]
        }
    }

    /// Size of each region, in region order.
    fn sizes(&self) -> impl Iterator<Item = u32> + '_ {
        let singletons = if self.singletons {
            self.members.len()
        } else {
            0
        };
        std::iter::repeat_n(1, singletons).chain(self.offsets.windows(2).map(|w| w[1] - w[0]))
    }

    fn heap_bytes(&self) -> usize {
        (self.region_of.capacity() + self.offsets.capacity() + self.members.capacity())
            * std::mem::size_of::<u32>()
    }
}

/// Logical pipelined regions: job vertices joined by must-be-pipelined edges, with dependency
/// cycles between such groups merged (Conflux's deliberate difference, see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogicalPipelinedRegions {
    regions: Partitioning,
    has_internal_all_to_all: Vec<bool>,
}

impl LogicalPipelinedRegions {
    /// Computes the logical regions of a job graph. Time and memory O(V + E).
    pub fn compute(job: &JobGraph) -> LogicalPipelinedRegions {
        let n = job.vertices().len();
        // Flink's logical regions: components over must-be-pipelined edges.
        let mut uf = UnionFind::new(n);
        for e in job.edges() {
            if e.result_partition_type.must_be_pipelined_consumed() {
                uf.union(e.source.0, e.target.0);
            }
        }
        // Conflux: merge strongly connected groups of the dependency graph between them.
        let roots: Vec<u32> = (0..index_u32(n)).map(|v| uf.find(v)).collect();
        let cross: Vec<(u32, u32)> = job
            .edges()
            .iter()
            .map(|e| (roots[e.source.idx()], roots[e.target.idx()]))
            .filter(|(s, t)| s != t)
            .collect();
        let keys = merge_cycles(&roots, &cross, n);
        let regions = Partitioning::from_keys(keys.into_iter(), n);

        let mut has_internal_all_to_all = vec![false; regions.len()];
        for e in job.edges() {
            let r = regions.region_of(e.source.idx());
            if e.distribution_pattern == DistributionPattern::AllToAll
                && r == regions.region_of(e.target.idx())
            {
                has_internal_all_to_all[r as usize] = true;
            }
        }
        LogicalPipelinedRegions {
            regions,
            has_internal_all_to_all,
        }
    }

    /// Number of logical regions.
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// Whether there are none (never, for a valid job graph).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The logical region of a job vertex.
    pub fn region_of(&self, vertex: JobVertexIndex) -> LogicalRegionIndex {
        LogicalRegionIndex(self.regions.region_of(vertex.idx()))
    }

    /// The job vertices of a logical region, in topological order.
    pub fn members(&self, region: LogicalRegionIndex) -> impl Iterator<Item = JobVertexIndex> + '_ {
        self.regions
            .members(region.0 as usize)
            .iter()
            .map(|&v| JobVertexIndex(v))
    }

    /// Whether an ALL_TO_ALL edge (of any partition type) joins two vertices of the region, which
    /// makes the whole logical region one scheduling region.
    pub fn has_internal_all_to_all(&self, region: LogicalRegionIndex) -> bool {
        self.has_internal_all_to_all[region.0 as usize]
    }

    /// Heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.regions.heap_bytes() + self.has_internal_all_to_all.capacity()
    }
}

/// Scheduling pipelined regions (Flink's `SchedulingPipelinedRegion`s) of an execution graph,
/// stored compactly: vertex -> region (one `u32` per vertex) and region -> members (CSR).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelinedRegions {
    logical: LogicalPipelinedRegions,
    regions: Partitioning,
}

impl PipelinedRegions {
    /// Computes the scheduling regions. Time and memory O(N + V + E): O(N) for logical regions
    /// with an internal ALL_TO_ALL edge, and for the others O(N) too, since their internal edges
    /// are pointwise (`max(U, D)` connections each).
    ///
    /// # Errors
    /// [`GraphError::CoLocationAcrossRegions`] when co-located subtasks land in different
    /// regions (Flink's "co-located tasks must be in the same pipelined region").
    pub fn compute(graph: &ExecutionGraph) -> Result<PipelinedRegions, GraphError> {
        let job = graph.job_graph();
        let logical = LogicalPipelinedRegions::compute(job);
        let n = graph.num_execution_vertices() as usize;

        // Raw regions: union-find over execution vertices. A logical region with an internal
        // all-to-all edge is linked to one root directly.
        let mut uf = UnionFind::new(n);
        for r in 0..logical.len() {
            let region = LogicalRegionIndex(index_u32(r));
            if !logical.has_internal_all_to_all(region) {
                continue;
            }
            let mut members = logical.members(region);
            let Some(first) = members.next() else {
                continue;
            };
            let root = graph.execution_vertices_of(first).start;
            for v in std::iter::once(first).chain(members) {
                for ev in graph.execution_vertices_of(v) {
                    uf.link(ev, root);
                }
            }
        }
        // Pipelined edges of the other logical regions are pointwise: each group joins one
        // partition with its consumers or one consumer with its partitions.
        let mut blocking_internal = Vec::new();
        for c in graph.connections() {
            let region = logical.region_of(c.producer);
            if logical.has_internal_all_to_all(region) || region != logical.region_of(c.consumer) {
                continue;
            }
            if !c.result_partition_type.must_be_pipelined_consumed() {
                blocking_internal.push(c);
                continue;
            }
            let producers = graph.execution_vertices_of(c.producer).start;
            let consumers = graph.execution_vertices_of(c.consumer).start;
            for k in 0..c.num_groups {
                let parts = c.partitions_of_local_group(k);
                let cons = c.consumers_of_local_group(k);
                let anchor = producers + parts.start;
                for p in parts.start + 1..parts.end {
                    uf.union(anchor, producers + p);
                }
                for s in cons {
                    uf.union(anchor, consumers + s);
                }
            }
        }

        // Nothing joined and nothing to merge: every vertex is a region of its own (every job
        // without pipelined edges), known without a pass over the vertices.
        if uf.is_untouched() && blocking_internal.is_empty() {
            let result = PipelinedRegions {
                logical,
                regions: Partitioning::singletons(n),
            };
            result.check_co_location(graph)?;
            return Ok(result);
        }
        let mut keys: Vec<u32> = (0..index_u32(n)).map(|v| uf.find(v)).collect();
        drop(uf);
        if !blocking_internal.is_empty() {
            // Dependencies between raw regions through internal non-pipelined pointwise edges;
            // one side of each group is a single vertex, so this is O(U + D) per edge.
            let mut deps = Vec::new();
            for c in blocking_internal {
                let producers = graph.execution_vertices_of(c.producer).start;
                let consumers = graph.execution_vertices_of(c.consumer).start;
                for k in 0..c.num_groups {
                    for p in c.partitions_of_local_group(k) {
                        let from = keys[(producers + p) as usize];
                        for s in c.consumers_of_local_group(k) {
                            let to = keys[(consumers + s) as usize];
                            if from != to {
                                deps.push((from, to));
                            }
                        }
                    }
                }
            }
            keys = merge_cycles(&keys, &deps, n);
        }

        let regions = Partitioning::from_keys(keys.into_iter(), n);
        let result = PipelinedRegions { logical, regions };
        result.check_co_location(graph)?;
        Ok(result)
    }

    /// Co-located subtasks (same group, same subtask index) must share a region. O(N).
    fn check_co_location(&self, graph: &ExecutionGraph) -> Result<(), GraphError> {
        let job = graph.job_graph();
        let mut first_of_group: Vec<(&str, JobVertexIndex)> = Vec::new();
        for j in 0..job.vertices().len() {
            let j = JobVertexIndex(index_u32(j));
            let Some(group) = job.co_location_group(j) else {
                continue;
            };
            let Some(&(_, first)) = first_of_group.iter().find(|(g, _)| *g == group) else {
                first_of_group.push((group, j));
                continue;
            };
            let (a, b) = (
                graph.execution_vertices_of(first),
                graph.execution_vertices_of(j),
            );
            for (x, y) in a.zip(b) {
                if self.regions.region_of(x as usize) != self.regions.region_of(y as usize) {
                    return Err(GraphError::CoLocationAcrossRegions {
                        group: group.to_owned(),
                        first: graph.execution_vertex_name(ExecutionVertexIndex(x)),
                        second: graph.execution_vertex_name(ExecutionVertexIndex(y)),
                    });
                }
            }
        }
        Ok(())
    }

    /// Appends the regions of job vertex `job_vertex`, just initialised in `graph`
    /// ([`ExecutionGraph::initialize_next`]) after every vertex these regions cover: each of its
    /// subtasks is a region of its own, numbered after every existing region (as
    /// [`compute`](Self::compute) numbers them, by first vertex). Existing regions do not change.
    /// O(its parallelism).
    ///
    /// # Errors
    /// [`GraphError::NotDynamic`] if the vertex has a must-be-pipelined input or output edge or a
    /// co-location group (its region would not be its own, see
    /// [`first_dynamic_vertex`](crate::dynamic::first_dynamic_vertex));
    /// [`GraphError::TooLarge`] if it is not the vertex that follows these regions' vertices.
    pub fn extend(
        &mut self,
        graph: &ExecutionGraph,
        job_vertex: JobVertexIndex,
    ) -> Result<(), GraphError> {
        let job = graph.job_graph();
        let not_dynamic = |reason| GraphError::NotDynamic {
            vertex: job.vertex_id(job_vertex).to_owned(),
            reason,
        };
        if job.co_location_group(job_vertex).is_some() {
            return Err(not_dynamic("it is in a co-location group"));
        }
        let pipelined_in = job
            .inputs(job_vertex)
            .iter()
            .any(|&e| !job.edge(e).result_partition_type.is_region_boundary());
        let pipelined_out = job
            .produced_data_sets(job_vertex)
            .iter()
            .any(|&d| !job.data_set(d).result_partition_type.is_region_boundary());
        if pipelined_in || pipelined_out {
            return Err(not_dynamic("it has a pipelined input or output"));
        }
        let range = graph.execution_vertices_of(job_vertex);
        let covered = self.regions.items() as u64;
        if u64::from(range.start) != covered || range.is_empty() {
            return Err(GraphError::TooLarge {
                what: "execution vertices before the extended vertex",
                count: u64::from(range.start),
                limit: covered,
            });
        }
        for _ in range {
            self.regions.push_singleton();
        }
        Ok(())
    }

    /// Number of scheduling regions.
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// Whether there are none (never, for a valid job graph).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The logical regions these were derived from.
    pub fn logical(&self) -> &LogicalPipelinedRegions {
        &self.logical
    }

    /// The region of an execution vertex. O(1).
    pub fn region_of(&self, vertex: ExecutionVertexIndex) -> PipelinedRegionIndex {
        PipelinedRegionIndex(self.regions.region_of(vertex.idx()))
    }

    /// The vertices of a region, ascending (topological order). O(1) to start, O(1) per item.
    pub fn members(
        &self,
        region: PipelinedRegionIndex,
    ) -> impl ExactSizeIterator<Item = ExecutionVertexIndex> + '_ {
        self.member_indices(region)
            .iter()
            .map(|&v| ExecutionVertexIndex(v))
    }

    /// The vertices of a region as raw dense indices, ascending (topological order). O(1).
    pub fn member_indices(&self, region: PipelinedRegionIndex) -> &[u32] {
        self.regions.members(region.idx())
    }

    /// Every region index, ascending (topological order of first vertices).
    pub fn indices(&self) -> impl Iterator<Item = PipelinedRegionIndex> + use<> {
        (0..self.len()).map(|r| PipelinedRegionIndex(index_u32(r)))
    }

    /// Size of each region, in region order.
    pub fn sizes(&self) -> impl Iterator<Item = u32> + '_ {
        self.regions.sizes()
    }

    /// Heap bytes of the regions, logical ones included.
    pub fn heap_bytes(&self) -> usize {
        self.regions.heap_bytes() + self.logical.heap_bytes()
    }

    /// The region of `(job vertex, subtask)`.
    pub fn region_of_id(
        &self,
        graph: &ExecutionGraph,
        id: ExecutionVertexId,
    ) -> PipelinedRegionIndex {
        self.region_of(graph.execution_vertex_index(id))
    }

    /// Execution vertex ranges of a region's members grouped by job vertex; handy for display.
    pub fn member_ranges(&self, region: PipelinedRegionIndex) -> Vec<Range<u32>> {
        let mut out: Vec<Range<u32>> = Vec::new();
        for &v in self.member_indices(region) {
            match out.last_mut() {
                Some(r) if r.end == v => r.end += 1,
                _ => out.push(v..v + 1),
            }
        }
        out
    }
}

/// Union-find over `0..n` with path halving and union by size. Its arrays are made on the first
/// join: until then every item is its own root.
struct UnionFind {
    n: usize,
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl UnionFind {
    fn new(n: usize) -> UnionFind {
        UnionFind {
            n,
            parent: Vec::new(),
            size: Vec::new(),
        }
    }

    /// Whether nothing was joined yet.
    fn is_untouched(&self) -> bool {
        self.parent.is_empty()
    }

    fn make_parents(&mut self) {
        if self.parent.is_empty() {
            self.parent = (0..index_u32(self.n)).collect();
        }
    }

    /// Makes `root` the parent of `x` directly (`x` must be a root).
    fn link(&mut self, x: u32, root: u32) {
        if x != root {
            self.make_parents();
            self.parent[x as usize] = root;
        }
    }

    fn find(&mut self, mut x: u32) -> u32 {
        if self.parent.is_empty() {
            return x;
        }
        while self.parent[x as usize] != x {
            let grandparent = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = grandparent;
            x = grandparent;
        }
        x
    }

    fn union(&mut self, a: u32, b: u32) {
        let (a, b) = (self.find(a), self.find(b));
        if a == b {
            return;
        }
        self.make_parents();
        if self.size.is_empty() {
            self.size = vec![1; self.parent.len()];
        }
        let (big, small) = if self.size[a as usize] >= self.size[b as usize] {
            (a, b)
        } else {
            (b, a)
        };
        self.parent[small as usize] = big;
        self.size[big as usize] += self.size[small as usize];
    }
}

/// Merges groups that depend on each other in a cycle. `keys[i]` is item i's group (a value
/// `< keys.len()`), `deps` are dependencies between groups. Returns new keys: groups in one
/// strongly connected component get one key. O(n + deps).
fn merge_cycles(keys: &[u32], deps: &[(u32, u32)], n: usize) -> Vec<u32> {
    if deps.is_empty() {
        return keys.to_vec();
    }
    // Compact the groups that take part in a dependency to nodes 0..m.
    const NONE: u32 = u32::MAX;
    let mut node_of = vec![NONE; n];
    let mut key_of_node = Vec::new();
    for &(a, b) in deps {
        for k in [a, b] {
            if node_of[k as usize] == NONE {
                node_of[k as usize] = index_u32(key_of_node.len());
                key_of_node.push(k);
            }
        }
    }
    let m = key_of_node.len();
    let mut offsets = vec![0u32; m + 1];
    for &(a, _) in deps {
        offsets[node_of[a as usize] as usize + 1] += 1;
    }
    for i in 0..m {
        offsets[i + 1] += offsets[i];
    }
    let mut cursor = offsets.clone();
    let mut targets = vec![0u32; deps.len()];
    for &(a, b) in deps {
        let from = node_of[a as usize] as usize;
        targets[cursor[from] as usize] = node_of[b as usize];
        cursor[from] += 1;
    }
    let component = strongly_connected_components(&offsets, &targets);
    // Every component takes the key of its first node.
    let mut key_of_component = vec![NONE; m];
    for node in 0..m {
        let c = component[node] as usize;
        if key_of_component[c] == NONE {
            key_of_component[c] = key_of_node[node];
        }
    }
    keys.iter()
        .map(|&k| match node_of[k as usize] {
            NONE => k,
            node => key_of_component[component[node as usize] as usize],
        })
        .collect()
}

/// Tarjan's strongly connected components over a graph in CSR form (`offsets` has one entry per
/// node plus one). Iterative, so a 100,000-node ring does not overflow the stack (Flink's
/// `StronglyConnectedComponentsComputeUtils` has the same test). Returns the component of each
/// node. O(nodes + edges).
pub(crate) fn strongly_connected_components(offsets: &[u32], targets: &[u32]) -> Vec<u32> {
    const UNVISITED: u32 = u32::MAX;
    let n = offsets.len() - 1;
    let mut index = vec![UNVISITED; n];
    let mut lowlink = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut component = vec![UNVISITED; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut frames: Vec<(u32, u32)> = Vec::new();
    let mut next_index = 0u32;
    let mut next_component = 0u32;
    for start in 0..n {
        if index[start] != UNVISITED {
            continue;
        }
        let start = index_u32(start);
        index[start as usize] = next_index;
        lowlink[start as usize] = next_index;
        next_index += 1;
        stack.push(start);
        on_stack[start as usize] = true;
        frames.push((start, offsets[start as usize]));
        while let Some(frame) = frames.last_mut() {
            let v = frame.0 as usize;
            if frame.1 < offsets[v + 1] {
                let w = targets[frame.1 as usize] as usize;
                frame.1 += 1;
                if index[w] == UNVISITED {
                    index[w] = next_index;
                    lowlink[w] = next_index;
                    next_index += 1;
                    stack.push(index_u32(w));
                    on_stack[w] = true;
                    frames.push((index_u32(w), offsets[w]));
                } else if on_stack[w] {
                    lowlink[v] = lowlink[v].min(index[w]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                let parent = parent as usize;
                lowlink[parent] = lowlink[parent].min(lowlink[v]);
            }
            if lowlink[v] == index[v] {
                loop {
                    let w = stack
                        .pop()
                        .unwrap_or_else(|| unreachable!("bug: Tarjan stack empty"));
                    on_stack[w as usize] = false;
                    component[w as usize] = next_component;
                    if w as usize == v {
                        break;
                    }
                }
                next_component += 1;
            }
        }
    }
    component
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tarjan_on_a_100k_ring_is_one_component_without_stack_overflow() {
        let n = 100_000u32;
        let offsets: Vec<u32> = (0..=n).collect();
        let targets: Vec<u32> = (0..n).map(|v| (v + 1) % n).collect();
        let c = strongly_connected_components(&offsets, &targets);
        assert!(c.iter().all(|&x| x == c[0]));
    }

    #[test]
    fn tarjan_separates_a_chain_and_finds_a_cycle() {
        // 0 -> 1 -> 2 -> 1, 3 alone.
        let offsets = [0, 1, 2, 3, 3];
        let targets = [1, 2, 1];
        let c = strongly_connected_components(&offsets, &targets);
        assert_eq!(c[1], c[2]);
        assert_ne!(c[0], c[1]);
        assert_ne!(c[3], c[0]);
        assert_ne!(c[3], c[1]);
    }

    /// Singletons are stored as such whichever way they come (canonical, so equal partitionings
    /// compare equal), with one array, and grow as the general form does.
    #[test]
    fn singletons_are_canonical_and_one_array() {
        let p = Partitioning::from_keys([0, 1, 2, 3].into_iter(), 4);
        assert_eq!(p, Partitioning::singletons(4));
        assert!(p.singletons && p.region_of.is_empty() && p.offsets.is_empty());
        assert_eq!((p.len(), p.items(), p.region_of(2)), (4, 4, 2));
        assert_eq!(p.members(3), &[3]);
        assert_eq!(p.sizes().collect::<Vec<_>>(), [1, 1, 1, 1]);
        assert_eq!(p.heap_bytes(), 4 * 4);
        let mut grown = Partitioning::singletons(2);
        grown.push_singleton();
        grown.push_singleton();
        assert_eq!(grown, p);
        // The general form grows the same way.
        let mut general = Partitioning::from_keys([0, 0, 2].into_iter(), 3);
        general.push_singleton();
        assert_eq!(
            general,
            Partitioning::from_keys([0, 0, 2, 3].into_iter(), 4)
        );
        assert_eq!(general.sizes().collect::<Vec<_>>(), [2, 1, 1]);
    }

    #[test]
    fn partitioning_numbers_regions_by_first_member() {
        let p = Partitioning::from_keys([3, 3, 0, 1, 0].into_iter(), 5);
        assert_eq!(p.region_of, vec![0, 0, 1, 2, 1]);
        assert_eq!(p.members(0), &[0, 1]);
        assert_eq!(p.members(1), &[2, 4]);
        assert_eq!(p.members(2), &[3]);
    }
}
