//! The job graph JSON format (a contract of the CLI and the planning service), as plain serde types.
//!
//! These types are the boundary: they hold what the file says, strings and all, and are
//! converted into a validated [`JobGraph`](crate::JobGraph) by
//! [`JobGraph::from_json`](crate::JobGraph::from_json). Editing tools (the planner) change these
//! and validate again.
//!
//! ```json
//! {"name": "word count", "job_type": "batch",
//!  "vertices": [{"id": "source", "parallelism": 4}, {"id": "count", "parallelism": 4}],
//!  "edges": [{"source": "source", "target": "count", "distribution_pattern": "all_to_all",
//!             "result_partition_type": "blocking", "ship_strategy": "HASH"}]}
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::GraphError;

/// A whole job graph file. Unknown fields anywhere are an error naming them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JobGraphJson {
    /// The job's name (free text; empty when absent).
    #[serde(default)]
    pub name: String,
    /// `streaming` or `batch`.
    pub job_type: String,
    /// The job vertices; their order is the tie-break of the topological order.
    pub vertices: Vec<JobVertexJson>,
    /// The job edges; the edges into one vertex are its inputs, in this order.
    #[serde(default)]
    pub edges: Vec<JobEdgeJson>,
}

/// One job vertex.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JobVertexJson {
    /// Unique, non-empty, without `#`.
    pub id: String,
    /// Display name, free text (Flink's vertex name; for an imported Flink plan, the node's
    /// `operator` or `contents` when non-empty, else the first line of its `description`, as
    /// Flink wrote it). Commands that take a vertex accept an exact name that no other vertex
    /// has as well as an id (see `JobGraphJson::resolve_vertex`). Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Description, free text (for an imported Flink plan, the node's `description` verbatim:
    /// the chained operators, HTML-escaped, lines separated by `<br/>`). Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Number of subtasks, at least 1, or `PARALLELISM_UNDECIDED` (`-1`, batch jobs only):
    /// decided at run time from the bytes the inputs produced, as Flink's adaptive batch
    /// scheduler. `i32` as Flink's `int parallelism`.
    pub parallelism: i32,
    /// Upper bound for rescaling (key groups); Flink's default applies when absent
    /// (see `conflux_graph::default_max_parallelism`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallelism: Option<u32>,
    /// Slot sharing group name; `default` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_sharing_group: Option<String>,
    /// Co-location group name: subtask `i` of every vertex in the group runs in the same slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub co_location_group: Option<String>,
    /// The chained operators of the vertex, with their state (used by the planner).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operators: Vec<OperatorJson>,
    /// The task the vertex runs, by name (as Flink's `JobVertex` names its invokable class),
    /// e.g. `wordcount-source`. Absent: a synthetic task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invokable: Option<String>,
    /// The task's configuration, key to value (as Flink's task configuration), e.g.
    /// `{"words-per-source": "1000"}`. Absent: empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config: BTreeMap<String, String>,
    /// Bytes a source produces in all, over all its subtasks (for the simulator); absent: the
    /// run's `--source-bytes`. Only meaningful for a vertex without inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_bytes: Option<u64>,
    /// Whether a subpartition this vertex consumes may be split across several of its subtasks
    /// when it is skewed (its records need not meet in one subtask, e.g. no grouping by key).
    /// Absent: `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skew_splittable: bool,
}

impl JobVertexJson {
    /// A vertex `id` of `parallelism` subtasks (`-1`: undecided) with every optional field
    /// absent, to be completed with struct update syntax, so that a new optional field is
    /// added here once rather than at every place that builds a vertex.
    pub fn new(id: impl Into<String>, parallelism: i32) -> JobVertexJson {
        JobVertexJson {
            id: id.into(),
            name: None,
            description: None,
            parallelism,
            max_parallelism: None,
            slot_sharing_group: None,
            co_location_group: None,
            operators: Vec::new(),
            invokable: None,
            config: BTreeMap::new(),
            source_bytes: None,
            skew_splittable: false,
        }
    }
}

/// The parallelism written for a vertex whose parallelism is decided at run time (Flink's
/// `ExecutionConfig.PARALLELISM_DEFAULT`).
pub const PARALLELISM_UNDECIDED: i32 = -1;

/// The default estimate of undecided vertices (parallelism `-1`, `--default-parallelism`): 128,
/// the default of Flink's `execution.batch.adaptive.auto-parallelism.max-parallelism`, i.e. the
/// most Flink's adaptive batch scheduler would choose by default. A conservative figure for
/// planning.
pub const DEFAULT_ADAPTIVE_PARALLELISM: u32 = 128;

/// One operator of a vertex's chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct OperatorJson {
    /// The operator's stable uid (Flink's `.uid(...)`), which maps state across job versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Display name.
    #[serde(default)]
    pub name: String,
    /// The operator's state descriptors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state: Vec<StateJson>,
}

/// One state descriptor of an operator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StateJson {
    /// The state's name, unique within the operator.
    pub name: String,
    /// Its kind, e.g. `value`, `list`, `map`, `reducing`, `aggregating`, `broadcast`.
    pub kind: String,
    /// The key type for keyed state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_type: Option<String>,
    /// The value type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_type: Option<String>,
    /// State time-to-live in milliseconds; absent means no TTL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
}

/// One job edge: the target consumes a data set produced by the source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JobEdgeJson {
    /// Producing vertex id.
    pub source: String,
    /// Consuming vertex id.
    pub target: String,
    /// `pointwise` or `all_to_all`.
    pub distribution_pattern: String,
    /// `pipelined`, `pipelined_bounded`, `blocking`, `hybrid_full`, `hybrid_selective` (also
    /// Flink's `blocking_persistent` and `pipelined_approximate`).
    pub result_partition_type: String,
    /// The partitioner's name, for display (`HASH[word]`, `FORWARD`, `REBALANCE`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ship_strategy: Option<String>,
    /// The intermediate data set; edges naming the same data set share one intermediate result.
    /// Absent: the edge has a data set of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_set: Option<String>,
}

impl JobGraphJson {
    /// Parses job graph JSON. Unknown fields, wrong types and missing fields are errors with
    /// line and column; nothing is validated beyond the shape (see
    /// [`JobGraph::from_json`](crate::JobGraph::from_json)).
    ///
    /// # Errors
    /// [`GraphError::Json`] when the bytes are not job graph JSON.
    pub fn parse(bytes: &[u8]) -> Result<Self, GraphError> {
        serde_json::from_slice(bytes).map_err(|e| GraphError::Json {
            format: "job graph",
            message: e.to_string(),
        })
    }

    /// Finds a vertex by id or by name: an exact id wins; otherwise the one vertex whose
    /// [`name`](JobVertexJson::name) is exactly `id_or_name`. Returns its position in
    /// `vertices`. O(V).
    ///
    /// # Errors
    /// [`GraphError::UnknownVertexRef`] when no id or name matches;
    /// [`GraphError::AmbiguousVertexName`] naming the candidates' ids when several vertices
    /// have that name.
    pub fn resolve_vertex(&self, id_or_name: &str) -> Result<usize, GraphError> {
        if let Some(pos) = self.vertices.iter().position(|v| v.id == id_or_name) {
            return Ok(pos);
        }
        resolve_by_name(
            id_or_name,
            self.vertices
                .iter()
                .enumerate()
                .map(|(i, v)| (i, v.id.as_str(), v.name.as_deref())),
        )
    }

    /// Sets every undecided vertex (`-1`) to `estimate`, capped by its explicit max parallelism
    /// (at least 1), as [`JobGraph::from_json_estimating`](crate::JobGraph::from_json_estimating)
    /// counts it; for tools that need a number. Returns how many vertices changed. O(V).
    pub fn estimate_undecided(&mut self, estimate: u32) -> usize {
        let mut changed = 0;
        for v in &mut self.vertices {
            if v.parallelism == PARALLELISM_UNDECIDED {
                let p = v
                    .max_parallelism
                    .map_or(estimate, |m| estimate.min(m))
                    .max(1);
                v.parallelism = i32::try_from(p).unwrap_or(i32::MAX);
                changed += 1;
            }
        }
        changed
    }

    /// Writes the job graph as pretty JSON.
    pub fn to_json_pretty(&self) -> String {
        // Serialising plain structs of strings and numbers cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_else(|e| unreachable!("bug: {e}"))
    }
}

/// The one vertex named `name` among `(position, id, name)`; the rule of
/// [`JobGraphJson::resolve_vertex`] once no id matched. Shared with
/// [`JobGraph::resolve_vertex`](crate::JobGraph::resolve_vertex).
pub(crate) fn resolve_by_name<'a, T: Copy>(
    name: &str,
    vertices: impl Iterator<Item = (T, &'a str, Option<&'a str>)>,
) -> Result<T, GraphError> {
    let mut found: Option<T> = None;
    let mut candidates: Vec<String> = Vec::new();
    for (at, id, vertex_name) in vertices {
        if vertex_name == Some(name) {
            found.get_or_insert(at);
            candidates.push(id.to_owned());
        }
    }
    match (found, candidates.len()) {
        (Some(at), 1) => Ok(at),
        (Some(_), _) => Err(GraphError::AmbiguousVertexName {
            name: name.to_owned(),
            candidates,
        }),
        (None, _) => Err(GraphError::UnknownVertexRef(name.to_owned())),
    }
}
