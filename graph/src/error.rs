//! The one error type of this crate.

use thiserror::Error;

/// Why a job graph could not be read, validated, expanded or divided into regions.
///
/// Every variant names the offending item (vertex id, edge index and endpoints, data set, byte
/// position) so that a user can find it in the input.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GraphError {
    /// The input is not valid JSON, or does not have the expected shape (wrong type, missing or
    /// unknown field). The message carries serde_json's line and column.
    #[error("invalid {format} JSON: {message}")]
    Json {
        /// `job graph` or `Flink plan`.
        format: &'static str,
        /// serde_json's message, with line and column.
        message: String,
    },
    /// The job graph has no vertices.
    #[error("the job graph has no vertices")]
    NoVertices,
    /// A vertex id is empty or contains `#`, which separates vertex id and subtask index in
    /// execution vertex names (`"A#3"`).
    #[error("vertex {index}: invalid id {id:?}: {reason}")]
    InvalidVertexId {
        /// Position of the vertex in the input's vertex list.
        index: usize,
        /// The id as written.
        id: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two vertices have the same id.
    #[error("duplicate vertex id '{0}'")]
    DuplicateVertex(String),
    /// A vertex's parallelism is 0.
    #[error("vertex '{0}': parallelism must be at least 1, not 0")]
    ZeroParallelism(String),
    /// A vertex's parallelism is negative and not `-1` (undecided).
    #[error(
        "vertex '{vertex}': parallelism must be at least 1, or -1 (undecided), not {parallelism}"
    )]
    NegativeParallelism {
        /// The vertex id.
        vertex: String,
        /// The parallelism as written.
        parallelism: i32,
    },
    /// A streaming job has a vertex of undecided parallelism (`-1`): only batch jobs decide
    /// parallelism at run time, as Flink's adaptive batch scheduler.
    #[error("vertex '{0}': parallelism -1 (undecided) is only valid in a batch job")]
    UndecidedInStreamingJob(String),
    /// A vertex's parallelism exceeds its explicit max parallelism.
    #[error("vertex '{vertex}': parallelism {parallelism} is above its max parallelism {max_parallelism}")]
    ParallelismAboveMax {
        /// The vertex id.
        vertex: String,
        /// Its parallelism.
        parallelism: u32,
        /// Its explicit max parallelism.
        max_parallelism: u32,
    },
    /// A command names a vertex by id or name and no vertex has that id or name.
    #[error("unknown vertex '{0}' (no vertex has that id or name)")]
    UnknownVertexRef(String),
    /// A command names a vertex by a name that several vertices have.
    #[error("vertex name '{name}' is ambiguous: vertices {} have it; name one by id", .candidates.join(", "))]
    AmbiguousVertexName {
        /// The name as given.
        name: String,
        /// The ids of the vertices with that name, in listing order.
        candidates: Vec<String>,
    },
    /// An edge names a vertex that does not exist.
    #[error("edge {edge} ({source_id} -> {target_id}): unknown {end} vertex '{vertex}'")]
    UnknownVertex {
        /// Position of the edge in the input's edge list.
        edge: usize,
        /// The edge's source as written.
        source_id: String,
        /// The edge's target as written.
        target_id: String,
        /// `source` or `target`.
        end: &'static str,
        /// The unknown id.
        vertex: String,
    },
    /// An edge field has a value outside its vocabulary.
    #[error("edge {edge} ({source_id} -> {target_id}): unknown {field} '{value}' (expected one of: {expected})")]
    UnknownEdgeValue {
        /// Position of the edge in the input's edge list.
        edge: usize,
        /// The edge's source.
        source_id: String,
        /// The edge's target.
        target_id: String,
        /// The field, e.g. `result_partition_type`.
        field: &'static str,
        /// The value as written.
        value: String,
        /// The accepted values.
        expected: &'static str,
    },
    /// An unknown `job_type`.
    #[error("unknown job_type '{0}' (expected streaming or batch)")]
    UnknownJobType(String),
    /// Edges that share a data set disagree on what the data set is.
    #[error("data set '{data_set}': edge {edge} has {field} '{found}' but an earlier edge of the data set has '{expected}'")]
    DataSetMismatch {
        /// The data set id.
        data_set: String,
        /// Position of the disagreeing edge in the input's edge list.
        edge: usize,
        /// `source`, `distribution_pattern` or `result_partition_type`.
        field: &'static str,
        /// The value on this edge.
        found: String,
        /// The value on the earlier edge.
        expected: String,
    },
    /// Consumers of one data set must have the same parallelism (as Flink requires since
    /// FLINK-28663).
    #[error("data set '{data_set}': consumers '{first}' (parallelism {first_parallelism}) and '{other}' (parallelism {other_parallelism}) must have the same parallelism")]
    DataSetConsumerParallelism {
        /// The data set id.
        data_set: String,
        /// The first consumer.
        first: String,
        /// Its parallelism.
        first_parallelism: u32,
        /// A consumer with another parallelism.
        other: String,
        /// Its parallelism.
        other_parallelism: u32,
    },
    /// Consumers of one data set must be all undecided or all fixed: the producer's
    /// subpartitions serve them all, so they are decided together or not at all.
    #[error("data set '{data_set}': consumer '{undecided}' has undecided parallelism (-1) and consumer '{fixed}' a fixed one; make both -1 or both fixed")]
    DataSetConsumerUndecided {
        /// The data set id.
        data_set: String,
        /// The undecided consumer.
        undecided: String,
        /// The fixed consumer.
        fixed: String,
    },
    /// A vertex after the first undecided consumer (topological order) cannot be initialised
    /// on its own at run time (see [`first_dynamic_vertex`](crate::dynamic::first_dynamic_vertex)).
    #[error("vertex '{vertex}' cannot be initialised when its producers finish: {reason}")]
    NotDynamic {
        /// The vertex id.
        vertex: String,
        /// Why not.
        reason: &'static str,
    },
    /// The job graph has a directed cycle; `cycle` lists it as `a -> b -> a`.
    #[error("the job graph has a cycle: {cycle}")]
    Cycle {
        /// The vertices of one cycle, first vertex repeated at the end.
        cycle: String,
    },
    /// The job is larger than this build supports.
    #[error("the job has {count} {what}, above the limit of {limit}")]
    TooLarge {
        /// `execution vertices`, `partitions` or `partition groups`.
        what: &'static str,
        /// How many there would be.
        count: u64,
        /// The limit.
        limit: u64,
    },
    /// Co-located subtasks (same co-location group, same subtask index) ended up in different
    /// pipelined regions (Flink raises the same error when building its scheduling topology).
    #[error("co-located tasks must be in the same pipelined region: '{first}' and '{second}' (co-location group '{group}')")]
    CoLocationAcrossRegions {
        /// The co-location group.
        group: String,
        /// One execution vertex, e.g. `head#0`.
        first: String,
        /// A co-located execution vertex in another region.
        second: String,
    },
    /// Co-located vertices must have the same parallelism.
    #[error(
        "co-location group '{group}': vertices '{first}' and '{second}' have different parallelism"
    )]
    CoLocationParallelism {
        /// The co-location group.
        group: String,
        /// One vertex id.
        first: String,
        /// Another vertex id.
        second: String,
    },
    /// A FORWARD edge joins two different fixed parallelisms (directly, or through the other
    /// vertices of its forward group): Flink's "Forward partitioning does not allow change of
    /// parallelism".
    #[error("edge {edge} ({source_id} -> {target_id}): Forward partitioning does not allow change of parallelism ({source_id} runs at {source_parallelism}, {target_id} at {target_parallelism}, counting the vertices FORWARD edges join to each); make them equal or use another ship strategy, e.g. REBALANCE")]
    ForwardParallelism {
        /// Position of the FORWARD edge in the input's edge list.
        edge: usize,
        /// The edge's source.
        source_id: String,
        /// The edge's target.
        target_id: String,
        /// The fixed parallelism of the source's forward group.
        source_parallelism: u32,
        /// The fixed parallelism of the target's forward group.
        target_parallelism: u32,
    },
    /// A vertex's configured max parallelism is below the fixed parallelism of its forward
    /// group (Flink: "There is a job vertex in the forward group whose maximum parallelism is
    /// smaller than the group's parallelism").
    #[error("vertex '{vertex}': max parallelism {max_parallelism} is below the parallelism {group_parallelism} of its forward group (vertices joined by FORWARD edges)")]
    ForwardGroupMaxParallelism {
        /// The vertex id.
        vertex: String,
        /// Its max parallelism.
        max_parallelism: u64,
        /// The group's parallelism.
        group_parallelism: u32,
    },
    /// A Flink plan is well-formed JSON but not a valid plan.
    #[error("Flink plan: {0}")]
    FlinkPlan(String),
}
