//! The execution graph: subtasks, partitions, and their connections as groups.
//!
//! **Invariant: nothing here is O(U x D).** A job edge is stored as one [`EdgeConnection`]
//! (a few integers); its [`ConsumedPartitionGroup`]s and [`ConsumerVertexGroup`]s are contiguous
//! ranges computed from it in O(1) on demand, with Flink's index arithmetic
//! (`EdgeManagerBuildUtil`, FLINK-21326; ranges as `VertexInputInfoComputationUtils`, 1.17+).
//! The memory of an execution graph is O(V + E), independent of the parallelism.

use std::ops::Range;

use crate::index_vec::{impl_idx, index_u32};
use crate::{
    DistributionPattern, GraphError, IntermediateDataSetIndex, JobEdgeIndex, JobGraph,
    JobVertexIndex, ResultPartitionType,
};

/// Dense index of an execution vertex over the whole graph. The subtasks of one job vertex are a
/// contiguous range, and job vertices come in topological order, so index order is the order in
/// which Flink's scheduling topology lists vertices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct ExecutionVertexIndex(pub u32);

/// Index of a consumed partition group. Groups are numbered in the order Flink creates them:
/// consumer job vertices in topological order, their inputs in order, then by group within the
/// edge. Each group is paired with the [`ConsumerVertexGroupId`] of the same number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConsumedPartitionGroupId(pub u32);

/// Index of a consumer vertex group; paired with the [`ConsumedPartitionGroupId`] of the same
/// number (Flink 1.17+: every connection creates one of each, linked to each other).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConsumerVertexGroupId(pub u32);

impl ExecutionVertexIndex {
    /// The index as a `usize`.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// Global index of an intermediate result partition over the whole graph: the partitions of one
/// result are a contiguous range, results in data set order (in a dynamic graph, those of
/// producers initialised later follow in the order they were initialised). Indexes
/// per-partition state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PartitionIndex(pub u32);

impl PartitionIndex {
    /// The index as a `usize`.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl_idx!(
    ExecutionVertexIndex,
    ConsumedPartitionGroupId,
    ConsumerVertexGroupId,
    PartitionIndex
);

impl ConsumedPartitionGroupId {
    /// The paired consumer vertex group.
    #[inline]
    pub fn consumer_vertex_group(self) -> ConsumerVertexGroupId {
        ConsumerVertexGroupId(self.0)
    }
}

impl ConsumerVertexGroupId {
    /// The paired consumed partition group.
    #[inline]
    pub fn consumed_partition_group(self) -> ConsumedPartitionGroupId {
        ConsumedPartitionGroupId(self.0)
    }
}

/// An execution vertex named by job vertex and subtask index (Flink's `ExecutionVertexID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExecutionVertexId {
    /// The job vertex.
    pub job_vertex: JobVertexIndex,
    /// The subtask index, `0..parallelism`.
    pub subtask: u32,
}

/// A partition named by its result and partition number, which is also the producer's subtask
/// index (Flink's `IntermediateResultPartitionID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IntermediateResultPartitionId {
    /// The intermediate result (one per data set, same index).
    pub result: IntermediateDataSetIndex,
    /// The partition number, `0..producer parallelism`.
    pub partition: u32,
}

/// How one job edge is expanded: everything needed to compute its groups in O(1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdgeConnection {
    /// The job edge.
    pub edge: JobEdgeIndex,
    /// The consumed intermediate result.
    pub result: IntermediateDataSetIndex,
    /// The producing job vertex.
    pub producer: JobVertexIndex,
    /// The consuming job vertex.
    pub consumer: JobVertexIndex,
    /// Pattern of the edge.
    pub distribution_pattern: DistributionPattern,
    /// Type of the consumed partitions.
    pub result_partition_type: ResultPartitionType,
    /// Producer parallelism `U` (number of partitions).
    pub producer_parallelism: u32,
    /// Consumer parallelism `D`.
    pub consumer_parallelism: u32,
    /// The first group of this edge.
    pub first_group: u32,
    /// Number of groups: 1 for ALL_TO_ALL, `min(U, D)` for POINTWISE.
    pub num_groups: u32,
}

impl EdgeConnection {
    /// Group ids of this edge.
    pub fn groups(&self) -> Range<u32> {
        self.first_group..self.first_group + self.num_groups
    }

    /// Logical (producer subtask, consumer subtask) connections this edge stands for:
    /// `U x D` for ALL_TO_ALL, `max(U, D)` for POINTWISE. Never materialised.
    pub fn logical_connections(&self) -> u64 {
        let (u, d) = (
            u64::from(self.producer_parallelism),
            u64::from(self.consumer_parallelism),
        );
        match self.distribution_pattern {
            DistributionPattern::AllToAll => u * d,
            DistributionPattern::Pointwise => u.max(d),
        }
    }

    /// The group (local index within this edge) that consumer subtask `subtask` reads.
    /// ALL_TO_ALL: 0. POINTWISE `U >= D`: the subtask itself. POINTWISE `U < D`: the partition
    /// `floor(subtask * U / D)`, the one whose consumer range `[ceil(p*D/U), ceil((p+1)*D/U))`
    /// holds the subtask. 64-bit products, O(1).
    #[inline]
    pub fn local_group_of_consumer(&self, subtask: u32) -> u32 {
        let (u, d) = (self.producer_parallelism, self.consumer_parallelism);
        match self.distribution_pattern {
            DistributionPattern::AllToAll => 0,
            DistributionPattern::Pointwise if u >= d => subtask,
            DistributionPattern::Pointwise => {
                narrow(u64::from(subtask) * u64::from(u) / u64::from(d))
            }
        }
    }

    /// The group (local index within this edge) that contains partition `partition`.
    /// ALL_TO_ALL: 0. POINTWISE `U >= D`: the consumer `ceil((p+1)*D/U) - 1`, whose range
    /// `[floor(i*U/D), floor((i+1)*U/D))` holds `p`. POINTWISE `U < D`: `p` itself. O(1).
    #[inline]
    pub fn local_group_of_partition(&self, partition: u32) -> u32 {
        let (u, d) = (
            u64::from(self.producer_parallelism),
            u64::from(self.consumer_parallelism),
        );
        match self.distribution_pattern {
            DistributionPattern::AllToAll => 0,
            DistributionPattern::Pointwise if u >= d => {
                narrow(((u64::from(partition) + 1) * d).div_ceil(u) - 1)
            }
            DistributionPattern::Pointwise => partition,
        }
    }

    /// Partition numbers (`0..U`) in local group `k` (Flink's consumer range
    /// `[floor(k*U/D), floor((k+1)*U/D))` for `U >= D`).
    #[inline]
    pub fn partitions_of_local_group(&self, k: u32) -> Range<u32> {
        let (u, d) = (
            u64::from(self.producer_parallelism),
            u64::from(self.consumer_parallelism),
        );
        let k = u64::from(k);
        match self.distribution_pattern {
            DistributionPattern::AllToAll => 0..self.producer_parallelism,
            DistributionPattern::Pointwise if u >= d => narrow(k * u / d)..narrow((k + 1) * u / d),
            DistributionPattern::Pointwise => narrow(k)..narrow(k + 1),
        }
    }

    /// Consumer subtasks (`0..D`) in local group `k` (Flink's fan-out
    /// `[ceil(k*D/U), ceil((k+1)*D/U))` for `U < D`).
    #[inline]
    pub fn consumers_of_local_group(&self, k: u32) -> Range<u32> {
        let (u, d) = (
            u64::from(self.producer_parallelism),
            u64::from(self.consumer_parallelism),
        );
        let k = u64::from(k);
        match self.distribution_pattern {
            DistributionPattern::AllToAll => 0..self.consumer_parallelism,
            DistributionPattern::Pointwise if u >= d => narrow(k)..narrow(k + 1),
            DistributionPattern::Pointwise => {
                narrow((k * d).div_ceil(u))..narrow(((k + 1) * d).div_ceil(u))
            }
        }
    }
}

/// Values computed from `u32` operands that are provably within `u32` (a subtask or partition
/// index, or a bound of such a range).
#[inline]
fn narrow(x: u64) -> u32 {
    u32::try_from(x).unwrap_or_else(|_| unreachable!("bug: index {x} exceeds u32"))
}

/// A set of partitions of one result, all consumed by the same consumers (Flink's
/// `ConsumedPartitionGroup`): a contiguous range of partition numbers. A value computed on
/// demand; the graph stores none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumedPartitionGroup {
    /// Its id.
    pub id: ConsumedPartitionGroupId,
    /// The job edge it belongs to.
    pub edge: JobEdgeIndex,
    /// The result its partitions belong to.
    pub result: IntermediateDataSetIndex,
    /// The partition numbers, non-empty.
    pub partitions: Range<u32>,
    /// Type of its partitions.
    pub result_partition_type: ResultPartitionType,
    /// Number of consumer vertices reading it (Flink's `numConsumers`, FLINK-28663).
    pub num_consumers: u32,
}

/// A set of consumer vertices of one job vertex that read the same partitions (Flink's
/// `ConsumerVertexGroup`): a contiguous range of subtasks. Computed on demand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerVertexGroup {
    /// Its id.
    pub id: ConsumerVertexGroupId,
    /// The job edge it belongs to.
    pub edge: JobEdgeIndex,
    /// The consuming job vertex.
    pub job_vertex: JobVertexIndex,
    /// Subtask indices, non-empty.
    pub subtasks: Range<u32>,
    /// Type of the consumed partitions.
    pub result_partition_type: ResultPartitionType,
}

/// The expanded job: execution job vertices, execution vertices, intermediate results and
/// partitions, and the grouped edges between them.
///
/// Built in O(V + E) time and memory, whatever the parallelism.
///
/// **Dynamic graphs** (adaptive batch): [`build_partial`](Self::build_partial) expands only a
/// topological prefix of the job vertices; the rest are *uninitialised* (no execution vertices,
/// partitions or groups) until [`initialize_next`](Self::initialize_next) expands them, one at a
/// time and in topological order, once their parallelism is decided. Everything grows at the end
/// (append-only index ranges), so nothing built earlier is renumbered or rebuilt, and a graph
/// grown vertex by vertex is identical to one built whole with the same parallelisms
/// (property-tested). A static graph is simply one whose prefix is every vertex.
#[derive(Clone, Debug)]
pub struct ExecutionGraph {
    job: JobGraph,
    /// `vertex_offsets[j]..vertex_offsets[j + 1]` are the execution vertices of job vertex `j`,
    /// for the initialised prefix `j < vertex_offsets.len() - 1`.
    vertex_offsets: Vec<u32>,
    /// Per result, the global index of its partition 0 ([`UNINITIALIZED`] while its producer
    /// is); its partitions are the producer's parallelism from there.
    partition_starts: Vec<u32>,
    num_partitions: u32,
    /// One per job edge, indexed by [`JobEdgeIndex`]; an edge into an uninitialised vertex has
    /// `num_groups == 0` and `consumer_parallelism == 0` until that vertex is initialised.
    connections: Vec<EdgeConnection>,
    /// Job edges of initialised consumers sorted by their first group, to find a group's edge
    /// by binary search.
    edges_by_group: Vec<JobEdgeIndex>,
    num_groups: u32,
}

/// The partition start of a result whose producer is not initialised.
const UNINITIALIZED: u32 = u32::MAX;

impl ExecutionGraph {
    /// Expands a job graph, every vertex at its job graph parallelism. Connects every consumer
    /// to its inputs as Flink's `DefaultExecutionGraph.attachJobGraph` does (job vertices in
    /// topological order, inputs in order), but stores one [`EdgeConnection`] per edge instead
    /// of groups or edges. Undecided vertices get their estimate.
    ///
    /// Time and memory O(V + E).
    ///
    /// # Errors
    /// [`GraphError::TooLarge`] if the partitions or groups do not fit in `u32` indices.
    pub fn build(job: JobGraph) -> Result<ExecutionGraph, GraphError> {
        let parallelisms: Vec<u32> = job.vertices().iter().map(|v| v.parallelism).collect();
        ExecutionGraph::build_partial(job, &parallelisms)
    }

    /// Expands the first `parallelisms.len()` job vertices (a topological prefix), vertex `j`
    /// with `parallelisms[j]` subtasks; the others stay uninitialised until
    /// [`initialize_next`](Self::initialize_next). Time and memory O(V + E).
    ///
    /// # Errors
    /// As [`initialize_next`](Self::initialize_next); [`GraphError::TooLarge`] if
    /// `parallelisms` is longer than the job's vertices.
    pub fn build_partial(
        job: JobGraph,
        parallelisms: &[u32],
    ) -> Result<ExecutionGraph, GraphError> {
        if parallelisms.len() > job.vertices().len() {
            return Err(GraphError::TooLarge {
                what: "initialised job vertices",
                count: parallelisms.len() as u64,
                limit: job.vertices().len() as u64,
            });
        }
        let connections = job
            .edges()
            .iter()
            .enumerate()
            .map(|(i, edge)| EdgeConnection {
                edge: JobEdgeIndex(index_u32(i)),
                result: edge.data_set,
                producer: edge.source,
                consumer: edge.target,
                distribution_pattern: edge.distribution_pattern,
                result_partition_type: edge.result_partition_type,
                producer_parallelism: 0,
                consumer_parallelism: 0,
                first_group: 0,
                num_groups: 0,
            })
            .collect();
        let mut vertex_offsets = Vec::with_capacity(job.vertices().len() + 1);
        vertex_offsets.push(0);
        let mut graph = ExecutionGraph {
            partition_starts: vec![UNINITIALIZED; job.data_sets().len()],
            num_partitions: 0,
            connections,
            edges_by_group: Vec::with_capacity(job.edges().len()),
            num_groups: 0,
            vertex_offsets,
            job,
        };
        // The prefix's partitions are numbered by result, as a static graph always was; results
        // of vertices initialised later are appended as they come.
        for (r, ds) in graph.job.data_sets().iter().enumerate() {
            if let Some(&p) = parallelisms.get(ds.producer.idx()) {
                let partitions = u64::from(graph.num_partitions) + u64::from(p);
                graph.num_partitions =
                    u32::try_from(partitions).map_err(|_| GraphError::TooLarge {
                        what: "partitions",
                        count: partitions,
                        limit: u64::from(u32::MAX),
                    })?;
                graph.partition_starts[r] = graph.num_partitions - p;
            }
        }
        for &p in parallelisms {
            graph.initialize_next(p)?;
        }
        Ok(graph)
    }

    /// The first uninitialised job vertex (in topological order), or `None` when every vertex
    /// is initialised. O(1).
    pub fn next_uninitialized(&self) -> Option<JobVertexIndex> {
        let j = self.vertex_offsets.len() - 1;
        (j < self.job.vertices().len()).then(|| JobVertexIndex(index_u32(j)))
    }

    /// Whether a job vertex has its execution vertices. O(1).
    pub fn is_initialized(&self, job_vertex: JobVertexIndex) -> bool {
        job_vertex.idx() + 1 < self.vertex_offsets.len()
    }

    /// Initialises [`next_uninitialized`](Self::next_uninitialized) with `parallelism`
    /// subtasks: appends its execution vertices, the partitions of the results it produces and
    /// the groups of its inputs (all of whose producers come earlier in topological order, so
    /// are initialised). O(its inputs + produced results) time; nothing existing changes.
    ///
    /// # Errors
    /// [`GraphError::TooLarge`] when every vertex is initialised already, when `parallelism` is
    /// 0 or the execution vertices would exceed [`MAX_EXECUTION_VERTICES`](crate::MAX_EXECUTION_VERTICES),
    /// or when partitions or groups would not fit in `u32` indices. On error nothing changed.
    pub fn initialize_next(&mut self, parallelism: u32) -> Result<JobVertexIndex, GraphError> {
        let too_large = |what, count, limit| GraphError::TooLarge { what, count, limit };
        let Some(j) = self.next_uninitialized() else {
            return Err(too_large(
                "initialised job vertices",
                self.job.vertices().len() as u64 + 1,
                self.job.vertices().len() as u64,
            ));
        };
        let vertices = u64::from(self.num_execution_vertices()) + u64::from(parallelism);
        if parallelism == 0 || vertices > crate::MAX_EXECUTION_VERTICES {
            return Err(too_large(
                "execution vertices",
                vertices,
                crate::MAX_EXECUTION_VERTICES,
            ));
        }
        let produced = self
            .job
            .produced_data_sets(j)
            .iter()
            .filter(|r| self.partition_starts[r.idx()] == UNINITIALIZED)
            .count() as u64;
        let partitions = u64::from(self.num_partitions) + produced * u64::from(parallelism);
        if partitions > u64::from(u32::MAX) {
            return Err(too_large("partitions", partitions, u64::from(u32::MAX)));
        }
        let mut groups = u64::from(self.num_groups);
        for &edge_index in self.job.inputs(j) {
            let edge = self.job.edge(edge_index);
            let u = self.parallelism_of(edge.source);
            groups += match edge.distribution_pattern {
                DistributionPattern::AllToAll => 1,
                DistributionPattern::Pointwise => u64::from(u.min(parallelism)),
            };
        }
        if groups > u64::from(u32::MAX) {
            return Err(too_large("partition groups", groups, u64::from(u32::MAX)));
        }

        // Checked: from here on nothing fails.
        for &result in self.job.produced_data_sets(j) {
            if self.partition_starts[result.idx()] == UNINITIALIZED {
                self.partition_starts[result.idx()] = self.num_partitions;
                self.num_partitions += parallelism;
            }
        }
        for i in 0..self.job.inputs(j).len() {
            let edge_index = self.job.inputs(j)[i];
            let u = self.parallelism_of(self.job.edge(edge_index).source);
            let c = &mut self.connections[edge_index.idx()];
            c.producer_parallelism = u;
            c.consumer_parallelism = parallelism;
            c.num_groups = match c.distribution_pattern {
                DistributionPattern::AllToAll => 1,
                DistributionPattern::Pointwise => u.min(parallelism),
            };
            c.first_group = self.num_groups;
            self.num_groups += c.num_groups;
            self.edges_by_group.push(edge_index);
        }
        let end = self.num_execution_vertices() + parallelism;
        self.vertex_offsets.push(end);
        Ok(j)
    }

    /// The number of subtasks of an initialised job vertex (0 while uninitialised). O(1).
    pub fn parallelism_of(&self, job_vertex: JobVertexIndex) -> u32 {
        let range = self.execution_vertices_of(job_vertex);
        range.end - range.start
    }

    /// The job graph this was built from.
    pub fn job_graph(&self) -> &JobGraph {
        &self.job
    }

    /// Total number of execution vertices `N`.
    pub fn num_execution_vertices(&self) -> u32 {
        *self.vertex_offsets.last().unwrap_or(&0)
    }

    /// Total number of result partitions over all results (of initialised producers).
    pub fn num_partitions(&self) -> u32 {
        self.num_partitions
    }

    /// Total number of consumed partition groups, equal to the number of consumer vertex groups.
    pub fn num_groups(&self) -> u32 {
        self.num_groups
    }

    /// The execution vertices of a job vertex, as a contiguous index range (empty, at the
    /// end, while it is uninitialised). O(1).
    pub fn execution_vertices_of(&self, job_vertex: JobVertexIndex) -> Range<u32> {
        match self.vertex_offsets.get(job_vertex.idx() + 1) {
            Some(&end) => self.vertex_offsets[job_vertex.idx()]..end,
            None => {
                let n = self.num_execution_vertices();
                n..n
            }
        }
    }

    /// Dense index of `(job vertex, subtask)`. O(1).
    ///
    /// # Panics
    /// If the subtask is not below the vertex's parallelism.
    pub fn execution_vertex_index(&self, id: ExecutionVertexId) -> ExecutionVertexIndex {
        let range = self.execution_vertices_of(id.job_vertex);
        assert!(
            id.subtask < range.end - range.start,
            "subtask {} out of range for job vertex {}",
            id.subtask,
            id.job_vertex.0
        );
        ExecutionVertexIndex(range.start + id.subtask)
    }

    /// `(job vertex, subtask)` of a dense index. O(log V).
    ///
    /// # Panics
    /// If the index is not below [`num_execution_vertices`](Self::num_execution_vertices).
    pub fn execution_vertex_id(&self, index: ExecutionVertexIndex) -> ExecutionVertexId {
        assert!(
            index.0 < self.num_execution_vertices(),
            "execution vertex {} out of range",
            index.0
        );
        // The last offset <= index; offsets of zero-width vertices cannot occur (parallelism >= 1).
        let j = self.vertex_offsets.partition_point(|&o| o <= index.0) - 1;
        ExecutionVertexId {
            job_vertex: JobVertexIndex(index_u32(j)),
            subtask: index.0 - self.vertex_offsets[j],
        }
    }

    /// The display name of an execution vertex, `"<job vertex id>#<subtask>"`.
    pub fn execution_vertex_name(&self, index: ExecutionVertexIndex) -> String {
        let id = self.execution_vertex_id(index);
        format!("{}#{}", self.job.vertex_id(id.job_vertex), id.subtask)
    }

    /// Global index of a partition (for per-partition state arrays), O(1).
    ///
    /// # Panics
    /// If `id.result` is not a result of this graph or `id.partition` is not below its producer's
    /// parallelism (a bad partition number would otherwise name the next result's partition).
    /// Use [`checked_partition_index`](Self::checked_partition_index) for untrusted ids.
    pub fn partition_index(&self, id: IntermediateResultPartitionId) -> PartitionIndex {
        self.checked_partition_index(id).unwrap_or_else(|| {
            panic!(
                "partition {} of result {} is not in this execution graph",
                id.partition, id.result.0
            )
        })
    }

    /// Global index of a partition, or `None` when the result or partition number is out of
    /// range. O(1).
    pub fn checked_partition_index(
        &self,
        id: IntermediateResultPartitionId,
    ) -> Option<PartitionIndex> {
        let start = *self.partition_starts.get(id.result.idx())?;
        if start == UNINITIALIZED {
            return None;
        }
        let producer = self.job.data_set(id.result).producer;
        (id.partition < self.parallelism_of(producer))
            .then_some(PartitionIndex(start + id.partition))
    }

    /// The expansion of one job edge.
    pub fn connection(&self, edge: JobEdgeIndex) -> &EdgeConnection {
        &self.connections[edge.idx()]
    }

    /// Every edge's expansion, indexed by [`JobEdgeIndex`].
    pub fn connections(&self) -> &[EdgeConnection] {
        &self.connections
    }

    /// The edge a group belongs to. O(log E).
    ///
    /// # Panics
    /// If the group id is not below [`num_groups`](Self::num_groups).
    pub fn connection_of_group(&self, group: ConsumedPartitionGroupId) -> &EdgeConnection {
        assert!(group.0 < self.num_groups, "group {} out of range", group.0);
        let i = self
            .edges_by_group
            .partition_point(|&e| self.connections[e.idx()].first_group <= group.0)
            - 1;
        &self.connections[self.edges_by_group[i].idx()]
    }

    /// The consumed partition group with this id. O(log E).
    pub fn consumed_partition_group(&self, id: ConsumedPartitionGroupId) -> ConsumedPartitionGroup {
        let c = self.connection_of_group(id);
        let k = id.0 - c.first_group;
        let consumers = c.consumers_of_local_group(k);
        ConsumedPartitionGroup {
            id,
            edge: c.edge,
            result: c.result,
            partitions: c.partitions_of_local_group(k),
            result_partition_type: c.result_partition_type,
            num_consumers: consumers.end - consumers.start,
        }
    }

    /// The consumer vertex group with this id. O(log E).
    pub fn consumer_vertex_group(&self, id: ConsumerVertexGroupId) -> ConsumerVertexGroup {
        let c = self.connection_of_group(id.consumed_partition_group());
        let k = id.0 - c.first_group;
        ConsumerVertexGroup {
            id,
            edge: c.edge,
            job_vertex: c.consumer,
            subtasks: c.consumers_of_local_group(k),
            result_partition_type: c.result_partition_type,
        }
    }

    /// The groups an execution vertex consumes, one per input edge, in input order (Flink's
    /// `ExecutionVertex.getAllConsumedPartitionGroups`). O(1) per group.
    pub fn consumed_partition_groups(
        &self,
        vertex: ExecutionVertexIndex,
    ) -> impl Iterator<Item = ConsumedPartitionGroupId> + '_ {
        let id = self.execution_vertex_id(vertex);
        self.job.inputs(id.job_vertex).iter().map(move |&e| {
            let c = &self.connections[e.idx()];
            ConsumedPartitionGroupId(c.first_group + c.local_group_of_consumer(id.subtask))
        })
    }

    /// The consumer vertex groups of a partition, one per consumer edge of its result, in edge
    /// order (Flink's `IntermediateResultPartition.getConsumerVertexGroups`). The paired consumed
    /// partition groups are the groups containing the partition. O(1) per group.
    pub fn consumer_vertex_groups(
        &self,
        partition: IntermediateResultPartitionId,
    ) -> impl Iterator<Item = ConsumerVertexGroupId> + '_ {
        self.job
            .data_set(partition.result)
            .consumers
            .iter()
            .map(move |&e| &self.connections[e.idx()])
            // Consumers not yet initialised have no groups.
            .filter(|c| c.num_groups > 0)
            .map(move |c| {
                ConsumerVertexGroupId(
                    c.first_group + c.local_group_of_partition(partition.partition),
                )
            })
    }

    /// The partitions an execution vertex produces, one per produced data set.
    pub fn produced_partitions(
        &self,
        vertex: ExecutionVertexIndex,
    ) -> impl Iterator<Item = IntermediateResultPartitionId> + '_ {
        let id = self.execution_vertex_id(vertex);
        self.job
            .produced_data_sets(id.job_vertex)
            .iter()
            .map(move |&result| IntermediateResultPartitionId {
                result,
                partition: id.subtask,
            })
    }

    /// The execution vertex producing a partition. O(1).
    pub fn producer_of(&self, partition: IntermediateResultPartitionId) -> ExecutionVertexIndex {
        let producer = self.job.data_set(partition.result).producer;
        self.execution_vertex_index(ExecutionVertexId {
            job_vertex: producer,
            subtask: partition.partition,
        })
    }

    /// Total logical connections over all edges (what Flink 1.12 held as ExecutionEdges).
    pub fn logical_connections(&self) -> u64 {
        self.connections
            .iter()
            .map(EdgeConnection::logical_connections)
            .sum()
    }

    /// Heap bytes of this graph, the job graph included. O(V + E).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.job.heap_bytes()
            + (self.vertex_offsets.capacity() + self.partition_starts.capacity()) * size_of::<u32>()
            + self.connections.capacity() * size_of::<EdgeConnection>()
            + self.edges_by_group.capacity() * size_of::<JobEdgeIndex>()
    }
}
