//! The one error type of this crate.

use conflux_deploy::DeployError;
use conflux_graph::GraphError;
use thiserror::Error;

/// Why a plan could not be read, analysed or edited. Every variant names the offending item
/// (vertex, edge, operator, state, version, node) so that a user can find it in the input.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The plan is not a valid job graph (or Flink plan); the graph crate's error says where.
    #[error("invalid plan: {0}")]
    Graph(#[from] GraphError),
    /// An edit or query names a vertex the plan does not have.
    #[error("unknown vertex '{0}'")]
    UnknownVertex(String),
    /// An edit or query names a vertex by a name several vertices have.
    #[error("vertex name '{name}' is ambiguous: vertices {} have it; name one by id", .candidates.join(", "))]
    AmbiguousVertex {
        /// The name as given.
        name: String,
        /// The ids of the vertices with that name, in the plan's order.
        candidates: Vec<String>,
    },
    /// An edit or query names an edge the plan does not have, or names it ambiguously.
    #[error("edge {edge}: {reason}")]
    UnknownEdge {
        /// The edge as the caller named it (`3` or `a -> b`).
        edge: String,
        /// What is wrong (unknown, or ambiguous with the candidates).
        reason: String,
    },
    /// An edit names an operator the vertex does not have (by uid, then by name).
    #[error("vertex '{vertex}': unknown operator '{operator}'")]
    UnknownOperator {
        /// The vertex id.
        vertex: String,
        /// The operator as named.
        operator: String,
    },
    /// An edit names a state the operator does not have.
    #[error("vertex '{vertex}', operator '{operator}': unknown state '{state}'")]
    UnknownState {
        /// The vertex id.
        vertex: String,
        /// The operator.
        operator: String,
        /// The state name as given.
        state: String,
    },
    /// A valid-looking edit that would make the plan wrong or break its state; `reason` says why.
    #[error("{edit} refused: {reason}")]
    Refused {
        /// The edit, e.g. `set_partitioner on edge 0 (a -> b)`.
        edit: String,
        /// Why it is refused.
        reason: String,
    },
    /// A version number the plan does not have.
    #[error("unknown version {version} (the newest is {latest}; removed versions are gone)")]
    UnknownVersion {
        /// The version asked for.
        version: u32,
        /// The newest version.
        latest: u32,
    },
    /// Removing the only version left of a plan (a plan has at least one; remove the plan).
    #[error("version {version} is the plan's only version: delete the plan instead")]
    LastVersion {
        /// The version asked for.
        version: u32,
    },
    /// A Flink compiled plan (FLIP-190) that is not valid JSON or lacks what is needed.
    #[error("compiled plan: {0}")]
    CompiledPlan(String),
    /// A compiled plan with the same key twice in one object. JSON readers disagree on which
    /// value counts (serde_json and Flink's Jackson take the last), so an edit could change a
    /// value nobody reads; such a plan is refused.
    #[error("compiled plan: duplicate key '{key}' at byte {offset}; JSON readers disagree on which value counts")]
    DuplicateKey {
        /// The key, unescaped.
        key: String,
        /// Byte offset (from 0) of the second occurrence's opening quote.
        offset: usize,
    },
    /// A duration in Flink's notation (`3600000 ms`, `1 h`, `1d`) that cannot be read.
    #[error("invalid duration '{text}': {reason}")]
    Duration {
        /// The text as given.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Shuffle descriptors could not be built or serialised to measure them (a bug, or a plan
    /// above the wire format's limits); the deployment crate's error is the source.
    #[error("descriptors of edge {edge}: {source}")]
    Descriptors {
        /// The edge, `index (a -> b)`.
        edge: String,
        /// Why, as `conflux-deploy` reports it.
        #[source]
        source: DeployError,
    },
}

impl PlanError {
    /// A failed vertex lookup by id or name ([`JobGraphJson::resolve_vertex`]) as this crate
    /// reports it: [`PlanError::UnknownVertex`] or [`PlanError::AmbiguousVertex`]; any other
    /// graph error as [`PlanError::Graph`].
    ///
    /// [`JobGraphJson::resolve_vertex`]: conflux_graph::JobGraphJson::resolve_vertex
    pub fn from_vertex_ref(e: GraphError) -> PlanError {
        match e {
            GraphError::UnknownVertexRef(v) => PlanError::UnknownVertex(v),
            GraphError::AmbiguousVertexName { name, candidates } => {
                PlanError::AmbiguousVertex { name, candidates }
            }
            other => PlanError::Graph(other),
        }
    }
}
