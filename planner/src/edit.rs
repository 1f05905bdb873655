//! Plan edits: validated changes of a job graph, each refused with a reason when it would make
//! the plan invalid or break its state.
//!
//! Edits work on the editable serde types ([`JobGraphJson`]) and validate the result again with
//! [`JobGraph::from_json`], so an accepted edit always yields a valid plan. Each edit is O(V + E)
//! plus the validation.

use conflux_graph::json::{JobEdgeJson, JobGraphJson, JobVertexJson, OperatorJson};
use conflux_graph::{default_max_parallelism, forward_group, JobGraph, ShipStrategy};
use serde::{Deserialize, Serialize};

use crate::error::PlanError;

/// An edge named by its position in the plan's edge list, or by its endpoints (which must then
/// be unique).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum EdgeRef {
    /// Position in the edge list.
    Index(usize),
    /// Source and target vertices, each by id or unique name.
    Endpoints {
        /// Producing vertex (id or unique name).
        source: String,
        /// Consuming vertex (id or unique name).
        target: String,
    },
}

impl std::fmt::Display for EdgeRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EdgeRef::Index(i) => write!(f, "{i}"),
            EdgeRef::Endpoints { source, target } => write!(f, "{source} -> {target}"),
        }
    }
}

/// Which side of a vertex a debug tap reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TapSide {
    /// What the vertex reads: the tap consumes the vertex's inputs as the vertex does.
    Input,
    /// What the vertex writes: the tap consumes a side output of the vertex, one to one.
    Output,
}

/// One edit of a plan. JSON: `{"kind": "set_parallelism", "vertex": "map", "parallelism": 8}`.
///
/// A vertex (`vertex`, an edge's `source` and `target`) is named by its id or by its name
/// (the vertex field `name`; for an imported Flink plan, the head operator's description) when
/// no other vertex has that name: an id wins, an ambiguous name is refused naming the
/// candidates (`resolve_vertex`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Edit {
    /// Set a vertex's parallelism, within its max parallelism (explicit, or Flink's default for
    /// the current parallelism, which a restored job keeps).
    SetParallelism {
        /// The vertex: its id, or a name no other vertex has.
        vertex: String,
        /// The new parallelism, at least 1.
        parallelism: u32,
    },
    /// Switch an edge between REBALANCE (all-to-all) and RESCALE (pointwise). Refused for keyed
    /// (HASH) edges and any other partitioner.
    SetPartitioner {
        /// The edge.
        edge: EdgeRef,
        /// `REBALANCE` or `RESCALE`.
        partitioner: String,
    },
    /// Move a vertex to another slot sharing group (`default` is Flink's default group).
    SetSlotSharingGroup {
        /// The vertex: its id, or a name no other vertex has.
        vertex: String,
        /// The group name.
        group: String,
    },
    /// Chain a forward edge: the target vertex's operators join the source vertex's chain.
    Chain {
        /// The edge.
        edge: EdgeRef,
    },
    /// Split a vertex's chain before operator `at` (1 <= at < operators); the operators from
    /// `at` on form a new vertex fed by a FORWARD edge.
    Unchain {
        /// The vertex: its id, or a name no other vertex has.
        vertex: String,
        /// Index of the first operator of the new vertex.
        at: usize,
        /// Id of the new vertex (default `<vertex>-<at>`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        new_vertex: Option<String>,
    },
    /// Set (or with `null`, remove) the TTL of one state of one operator.
    SetStateTtl {
        /// The vertex: its id, or a name no other vertex has.
        vertex: String,
        /// The operator, by uid, else by name.
        operator: String,
        /// The state's name.
        state: String,
        /// The TTL in milliseconds (at least 1), `null` for none.
        ttl_ms: Option<u64>,
    },
    /// Attach a debug tap: a sink vertex reading what a vertex reads (`input`) or writes
    /// (`output`).
    AddTap {
        /// The vertex: its id, or a name no other vertex has.
        vertex: String,
        /// Which side.
        side: TapSide,
        /// Id of the tap vertex (default `tap-<vertex>-<side>`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
}

impl Edit {
    /// A short description naming the edit and its target, e.g. `set_partitioner on edge 0`.
    pub fn describe(&self) -> String {
        match self {
            Edit::SetParallelism { vertex, .. } => format!("set_parallelism on vertex '{vertex}'"),
            Edit::SetPartitioner { edge, .. } => format!("set_partitioner on edge {edge}"),
            Edit::SetSlotSharingGroup { vertex, .. } => {
                format!("set_slot_sharing_group on vertex '{vertex}'")
            }
            Edit::Chain { edge } => format!("chain on edge {edge}"),
            Edit::Unchain { vertex, .. } => format!("unchain on vertex '{vertex}'"),
            Edit::SetStateTtl {
                vertex,
                operator,
                state,
                ..
            } => format!(
                "set_state_ttl on vertex '{vertex}', operator '{operator}', state '{state}'"
            ),
            Edit::AddTap { vertex, side, .. } => format!(
                "add_tap on vertex '{vertex}' ({})",
                match side {
                    TapSide::Input => "input",
                    TapSide::Output => "output",
                }
            ),
        }
    }

    /// Applies the edit to a plan and validates the result. The input is unchanged.
    ///
    /// # Errors
    /// [`PlanError::UnknownVertex`], [`PlanError::UnknownEdge`], [`PlanError::UnknownOperator`],
    /// [`PlanError::UnknownState`] for names the plan lacks; [`PlanError::Refused`] with the
    /// reason for an edit that would break the plan or its state.
    pub fn apply(&self, plan: &JobGraphJson) -> Result<JobGraphJson, PlanError> {
        self.with_ids(plan)?.apply_by_id(plan)
    }

    /// The same edit with every vertex named by its id (names resolved by [`resolve_vertex`]).
    ///
    /// # Errors
    /// [`PlanError::UnknownVertex`] for a vertex no id or name matches;
    /// [`PlanError::AmbiguousVertex`] for a name several vertices have.
    pub fn with_ids(&self, plan: &JobGraphJson) -> Result<Edit, PlanError> {
        let id = |v: &str| resolve_vertex(plan, v).map(|pos| plan.vertices[pos].id.clone());
        let edge = |e: &EdgeRef| -> Result<EdgeRef, PlanError> {
            Ok(match e {
                EdgeRef::Index(i) => EdgeRef::Index(*i),
                EdgeRef::Endpoints { source, target } => EdgeRef::Endpoints {
                    source: id(source)?,
                    target: id(target)?,
                },
            })
        };
        let mut out = self.clone();
        match &mut out {
            Edit::SetParallelism { vertex, .. }
            | Edit::SetSlotSharingGroup { vertex, .. }
            | Edit::Unchain { vertex, .. }
            | Edit::SetStateTtl { vertex, .. }
            | Edit::AddTap { vertex, .. } => *vertex = id(vertex)?,
            Edit::SetPartitioner { edge: e, .. } | Edit::Chain { edge: e } => *e = edge(e)?,
        }
        Ok(out)
    }

    /// [`Edit::apply`] once every vertex is named by its id.
    fn apply_by_id(&self, plan: &JobGraphJson) -> Result<JobGraphJson, PlanError> {
        let mut out = plan.clone();
        let refuse = |reason: String| PlanError::Refused {
            edit: self.describe(),
            reason,
        };
        match self {
            Edit::SetParallelism {
                vertex,
                parallelism,
            } => {
                if *parallelism == 0 {
                    return Err(refuse("parallelism must be at least 1".to_owned()));
                }
                let pos = vertex_pos(&out, vertex)?;
                if u32::try_from(out.vertices[pos].parallelism).ok() == Some(*parallelism) {
                    return Err(refuse(format!("the parallelism is already {parallelism}")));
                }
                let value = i32::try_from(*parallelism)
                    .map_err(|_| refuse(format!("parallelism {parallelism} is too large")))?;
                // The vertices FORWARD edges join to it run at one parallelism (a forward
                // group): the edit sets them all, each within its max parallelism.
                for member in forward_group::group_in_json(&out, pos) {
                    let v = &mut out.vertices[member];
                    let current = u32::try_from(v.parallelism).ok();
                    let (max, how) = match v.max_parallelism {
                        Some(m) => (u64::from(m), "max parallelism"),
                        None => (
                            // An undecided vertex (-1) counts at the default estimate.
                            default_max_parallelism(current.unwrap_or(
                                conflux_graph::flink_plan::DEFAULT_ADAPTIVE_PARALLELISM,
                            )),
                            "max parallelism (Flink's default for its current parallelism, which a restored job keeps)",
                        ),
                    };
                    if u64::from(*parallelism) > max {
                        let whose = if member == pos {
                            "its".to_owned()
                        } else {
                            format!(
                                "the max parallelism of '{}' in its forward group, whose",
                                v.id
                            )
                        };
                        return Err(refuse(format!(
                            "parallelism {parallelism} is above {whose} {how} {max}"
                        )));
                    }
                    v.parallelism = value;
                }
            }
            Edit::SetPartitioner { edge, partitioner } => {
                let i = edge_index(&out, edge)?;
                let wanted = partitioner.trim().to_ascii_uppercase();
                if wanted != "REBALANCE" && wanted != "RESCALE" {
                    return Err(refuse(format!(
                        "'{partitioner}' is not REBALANCE or RESCALE, the partitioners this edit switches between"
                    )));
                }
                let e = &out.edges[i];
                let current = match e.ship_strategy.as_deref().map(|s| (s, ShipStrategy::parse(s))) {
                    Some((s, strategy)) if strategy.is_keyed() => {
                        return Err(refuse(format!(
                            "the edge is {s}, a keyed edge: records must stay hash-partitioned by key, or the consumer's keyed state and key grouping break"
                        )))
                    }
                    Some((_, strategy)) => strategy,
                    None => {
                        return Err(refuse(
                            "the edge names no partitioner (ship_strategy); only a REBALANCE or RESCALE edge can be switched".to_owned(),
                        ))
                    }
                };
                if !matches!(current, ShipStrategy::Rebalance | ShipStrategy::Rescale) {
                    return Err(refuse(format!(
                        "the edge is {current}; only REBALANCE and RESCALE edges can be switched ({current} has its own semantics)"
                    )));
                }
                if current.name() == wanted {
                    return Err(refuse(format!("the edge is already {wanted}")));
                }
                if let Some(ds) = &e.data_set {
                    if let Some((j, _)) = out
                        .edges
                        .iter()
                        .enumerate()
                        .find(|(j, o)| *j != i && o.data_set.as_ref() == Some(ds))
                    {
                        return Err(refuse(format!(
                            "the edge shares data set '{ds}' with edge {j}; the consumers of one data set must read it with the same pattern"
                        )));
                    }
                }
                let e = &mut out.edges[i];
                e.ship_strategy = Some(wanted.clone());
                e.distribution_pattern = if wanted == "RESCALE" {
                    "pointwise"
                } else {
                    "all_to_all"
                }
                .to_owned();
            }
            Edit::SetSlotSharingGroup { vertex, group } => {
                if group.trim().is_empty() {
                    return Err(refuse("the group name is empty".to_owned()));
                }
                let pos = vertex_pos(&out, vertex)?;
                if let Some(colo) = out.vertices[pos].co_location_group.clone() {
                    let others: Vec<&str> = out
                        .vertices
                        .iter()
                        .filter(|o| o.id != *vertex && o.co_location_group.as_ref() == Some(&colo))
                        .map(|o| o.id.as_str())
                        .collect();
                    if !others.is_empty() {
                        return Err(refuse(format!(
                            "the vertex is co-located (group '{colo}') with {}; co-located vertices must share a slot sharing group",
                            others.join(", ")
                        )));
                    }
                }
                let v = &mut out.vertices[pos];
                let current = v.slot_sharing_group.as_deref().unwrap_or("default");
                if current == group {
                    return Err(refuse(format!("the vertex is already in group '{group}'")));
                }
                v.slot_sharing_group = (group != "default").then(|| group.clone());
            }
            Edit::Chain { edge } => chain(&mut out, edge).map_err(refuse_with(self))?,
            Edit::Unchain {
                vertex,
                at,
                new_vertex,
            } => {
                unchain(&mut out, vertex, *at, new_vertex.as_deref()).map_err(refuse_with(self))?
            }
            Edit::SetStateTtl {
                vertex,
                operator,
                state,
                ttl_ms,
            } => {
                if *ttl_ms == Some(0) {
                    return Err(refuse(
                        "a TTL must be at least 1 ms (null removes the TTL)".to_owned(),
                    ));
                }
                let v = vertex_mut(&mut out, vertex)?;
                let op = find_operator(&mut v.operators, operator).ok_or_else(|| {
                    PlanError::UnknownOperator {
                        vertex: vertex.clone(),
                        operator: operator.clone(),
                    }
                })?;
                let s = op
                    .state
                    .iter_mut()
                    .find(|s| s.name == *state)
                    .ok_or_else(|| PlanError::UnknownState {
                        vertex: vertex.clone(),
                        operator: operator.clone(),
                        state: state.clone(),
                    })?;
                if s.ttl_ms == *ttl_ms {
                    return Err(refuse("the state already has this TTL".to_owned()));
                }
                s.ttl_ms = *ttl_ms;
            }
            Edit::AddTap { vertex, side, name } => {
                add_tap(&mut out, vertex, *side, name.as_deref()).map_err(refuse_with(self))?
            }
        }
        JobGraph::from_json(&out).map_err(|e| refuse(e.to_string()))?;
        Ok(out)
    }
}

/// Internal result of the structural edits: a name error passes through, a reason becomes a
/// refusal.
enum Why {
    Name(PlanError),
    Reason(String),
}

impl From<PlanError> for Why {
    fn from(e: PlanError) -> Self {
        Why::Name(e)
    }
}

fn refuse_with(edit: &Edit) -> impl Fn(Why) -> PlanError + '_ {
    move |why| match why {
        Why::Name(e) => e,
        Why::Reason(reason) => PlanError::Refused {
            edit: edit.describe(),
            reason,
        },
    }
}

fn vertex_pos(plan: &JobGraphJson, id: &str) -> Result<usize, PlanError> {
    plan.vertices
        .iter()
        .position(|v| v.id == id)
        .ok_or_else(|| PlanError::UnknownVertex(id.to_owned()))
}

/// The position in `plan.vertices` of the vertex with this id, else of the one vertex with this
/// exact name (as [`JobGraphJson::resolve_vertex`]). O(V).
///
/// # Errors
/// [`PlanError::UnknownVertex`] when no id or name matches; [`PlanError::AmbiguousVertex`]
/// naming the ids of the vertices that share the name.
pub fn resolve_vertex(plan: &JobGraphJson, id_or_name: &str) -> Result<usize, PlanError> {
    plan.resolve_vertex(id_or_name)
        .map_err(PlanError::from_vertex_ref)
}

fn vertex_mut<'a>(
    plan: &'a mut JobGraphJson,
    id: &str,
) -> Result<&'a mut JobVertexJson, PlanError> {
    let pos = vertex_pos(plan, id)?;
    Ok(&mut plan.vertices[pos])
}

/// Resolves an edge reference. O(E).
///
/// # Errors
/// [`PlanError::UnknownEdge`] for an index out of range, or endpoints matching no edge or
/// several.
pub fn edge_index(plan: &JobGraphJson, edge: &EdgeRef) -> Result<usize, PlanError> {
    match edge {
        EdgeRef::Index(i) if *i < plan.edges.len() => Ok(*i),
        EdgeRef::Index(i) => Err(PlanError::UnknownEdge {
            edge: i.to_string(),
            reason: format!("the plan has {} edges", plan.edges.len()),
        }),
        EdgeRef::Endpoints { source, target } => {
            let found: Vec<usize> = plan
                .edges
                .iter()
                .enumerate()
                .filter(|(_, e)| e.source == *source && e.target == *target)
                .map(|(i, _)| i)
                .collect();
            match found.as_slice() {
                [i] => Ok(*i),
                [] => Err(PlanError::UnknownEdge {
                    edge: edge.to_string(),
                    reason: "no such edge".to_owned(),
                }),
                many => Err(PlanError::UnknownEdge {
                    edge: edge.to_string(),
                    reason: format!(
                        "ambiguous: edges {} connect these vertices; name one by index",
                        many.iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }),
            }
        }
    }
}

fn find_operator<'a>(ops: &'a mut [OperatorJson], name: &str) -> Option<&'a mut OperatorJson> {
    let pos = ops
        .iter()
        .position(|o| o.uid.as_deref() == Some(name))
        .or_else(|| ops.iter().position(|o| o.name == name))?;
    ops.get_mut(pos)
}

/// The chain of a vertex, with a vertex without an operator list standing for one operator
/// named after it.
fn chain_of(v: &JobVertexJson) -> Vec<OperatorJson> {
    if v.operators.is_empty() {
        vec![OperatorJson {
            uid: None,
            name: v.id.clone(),
            state: Vec::new(),
        }]
    } else {
        v.operators.clone()
    }
}

fn chain(plan: &mut JobGraphJson, edge: &EdgeRef) -> Result<(), Why> {
    let i = edge_index(plan, edge)?;
    let e = plan.edges[i].clone();
    let strategy = e.ship_strategy.as_deref().map(ShipStrategy::parse);
    if e.distribution_pattern != "pointwise"
        || !matches!(strategy, None | Some(ShipStrategy::Forward))
    {
        return Err(Why::Reason(format!(
            "the edge is {} ({}); only a FORWARD edge can be chained",
            strategy.as_ref().map_or("unnamed", ShipStrategy::name),
            e.distribution_pattern
        )));
    }
    if e.source == e.target {
        return Err(Why::Reason("the edge is a self-loop".to_owned()));
    }
    let s = vertex_pos(plan, &e.source)?;
    let t = vertex_pos(plan, &e.target)?;
    let (sv, tv) = (&plan.vertices[s], &plan.vertices[t]);
    if sv.parallelism != tv.parallelism {
        return Err(Why::Reason(format!(
            "'{}' has parallelism {} and '{}' {}; chained operators share one parallelism",
            sv.id, sv.parallelism, tv.id, tv.parallelism
        )));
    }
    let group = |v: &JobVertexJson| {
        v.slot_sharing_group
            .clone()
            .unwrap_or_else(|| "default".into())
    };
    if group(sv) != group(tv) {
        return Err(Why::Reason(format!(
            "'{}' is in slot sharing group '{}' and '{}' in '{}'; chained operators share a group",
            sv.id,
            group(sv),
            tv.id,
            group(tv)
        )));
    }
    if sv.co_location_group != tv.co_location_group {
        return Err(Why::Reason(
            "the vertices are in different co-location groups".to_owned(),
        ));
    }
    if let (Some(a), Some(b)) = (sv.max_parallelism, tv.max_parallelism) {
        if a != b {
            return Err(Why::Reason(format!(
                "the vertices have different max parallelism ({a} and {b})"
            )));
        }
    }
    let outputs = plan.edges.iter().filter(|o| o.source == e.source).count();
    if outputs != 1 {
        return Err(Why::Reason(format!(
            "'{}' has {outputs} outputs; only a vertex's single output can be chained",
            e.source
        )));
    }
    let inputs = plan.edges.iter().filter(|o| o.target == e.target).count();
    if inputs != 1 {
        return Err(Why::Reason(format!(
            "'{}' has {inputs} inputs; a chained operator must have the chain as its only input",
            e.target
        )));
    }
    // A vertex runs one task: the chain's head keeps its own, so the tail may not name one.
    if tv.invokable.is_some() || !tv.config.is_empty() {
        return Err(Why::Reason(format!(
            "'{}' names a task (invokable or config); a vertex runs one task, so only a vertex \
             without one can be chained into another",
            e.target
        )));
    }
    let mut ops = chain_of(sv);
    ops.extend(chain_of(tv));
    let max = sv.max_parallelism.or(tv.max_parallelism);
    let target_id = e.target.clone();
    let source_id = e.source.clone();
    plan.vertices[s].operators = ops;
    plan.vertices[s].max_parallelism = max;
    plan.vertices.remove(t);
    plan.edges.remove(i);
    for o in &mut plan.edges {
        if o.source == target_id {
            o.source.clone_from(&source_id);
        }
    }
    Ok(())
}

fn unchain(
    plan: &mut JobGraphJson,
    vertex: &str,
    at: usize,
    new_vertex: Option<&str>,
) -> Result<(), Why> {
    let pos = vertex_pos(plan, vertex)?;
    let n = plan.vertices[pos].operators.len();
    if n < 2 {
        return Err(Why::Reason(format!(
            "the vertex has {n} operator(s); only a chain of two or more can be split"
        )));
    }
    if at == 0 || at >= n {
        return Err(Why::Reason(format!(
            "split position {at} is outside 1..{}",
            n - 1
        )));
    }
    let id = new_vertex.map_or_else(|| format!("{vertex}-{at}"), str::to_owned);
    if plan.vertices.iter().any(|v| v.id == id) {
        return Err(Why::Reason(format!("vertex '{id}' already exists")));
    }
    let tail = plan.vertices[pos].operators.split_off(at);
    let v = &plan.vertices[pos];
    let split = JobVertexJson {
        max_parallelism: v.max_parallelism,
        slot_sharing_group: v.slot_sharing_group.clone(),
        operators: tail,
        ..JobVertexJson::new(id.clone(), v.parallelism)
    };
    for e in &mut plan.edges {
        if e.source == vertex {
            e.source.clone_from(&id);
        }
    }
    let result_type = default_forward_type(plan);
    plan.edges.push(JobEdgeJson {
        source: vertex.to_owned(),
        target: id,
        distribution_pattern: "pointwise".to_owned(),
        result_partition_type: result_type.to_owned(),
        ship_strategy: Some("FORWARD".to_owned()),
        data_set: None,
    });
    plan.vertices.insert(pos + 1, split);
    Ok(())
}

/// The exchange of a new non-chained forward edge: pipelined (bounded) in streaming jobs,
/// blocking in batch jobs (Flink's default batch shuffle mode, ALL_EXCHANGES_BLOCKING).
fn default_forward_type(plan: &JobGraphJson) -> &'static str {
    if plan.job_type.eq_ignore_ascii_case("batch") {
        "blocking"
    } else {
        "pipelined_bounded"
    }
}

fn add_tap(
    plan: &mut JobGraphJson,
    vertex: &str,
    side: TapSide,
    name: Option<&str>,
) -> Result<(), Why> {
    let pos = vertex_pos(plan, vertex)?;
    let side_name = match side {
        TapSide::Input => "input",
        TapSide::Output => "output",
    };
    let id = name.map_or_else(|| format!("tap-{vertex}-{side_name}"), str::to_owned);
    if plan.vertices.iter().any(|v| v.id == id) {
        return Err(Why::Reason(format!("vertex '{id}' already exists")));
    }
    let v = &plan.vertices[pos];
    let tap = JobVertexJson {
        slot_sharing_group: v.slot_sharing_group.clone(),
        operators: vec![OperatorJson {
            uid: Some(id.clone()),
            name: format!("tap: {vertex} {side_name}"),
            state: Vec::new(),
        }],
        ..JobVertexJson::new(id.clone(), v.parallelism)
    };
    let new_edges: Vec<JobEdgeJson> = match side {
        TapSide::Output => vec![JobEdgeJson {
            source: vertex.to_owned(),
            target: id.clone(),
            distribution_pattern: "pointwise".to_owned(),
            result_partition_type: default_forward_type(plan).to_owned(),
            ship_strategy: Some("FORWARD".to_owned()),
            data_set: None,
        }],
        TapSide::Input => {
            // The tap reads each input as the vertex does (same producer, pattern, exchange and
            // partitioner, same parallelism), through a data set of its own.
            let inputs: Vec<JobEdgeJson> = plan
                .edges
                .iter()
                .filter(|e| e.target == vertex)
                .map(|e| JobEdgeJson {
                    source: e.source.clone(),
                    target: id.clone(),
                    distribution_pattern: e.distribution_pattern.clone(),
                    result_partition_type: e.result_partition_type.clone(),
                    ship_strategy: e.ship_strategy.clone(),
                    data_set: None,
                })
                .collect();
            if inputs.is_empty() {
                return Err(Why::Reason(
                    "the vertex is a source: it has no inputs to tap".to_owned(),
                ));
            }
            inputs
        }
    };
    plan.vertices.insert(pos + 1, tap);
    plan.edges.extend(new_edges);
    Ok(())
}

/// The name of Flink's configuration option that sets the parallelism of job vertices by their
/// `JobVertexID` (`PipelineOptions.PARALLELISM_OVERRIDES`, a map option written
/// `<JobVertexID>:<parallelism>,...`; the adaptive scheduler and the Kubernetes operator's
/// autoscaler apply it).
pub const FLINK_PARALLELISM_OVERRIDES: &str = "pipeline.jobvertex-parallelism-overrides";

/// Parallelism edits of a Flink plan, as Flink's [`FLINK_PARALLELISM_OVERRIDES`] sets them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ParallelismOverrides {
    /// `(JobVertexID, parallelism)` of every vertex an edit set, in the plan's vertex order, with
    /// the parallelism it has after all the edits.
    pub overrides: Vec<(String, u32)>,
}

impl ParallelismOverrides {
    /// Flink's map-option syntax: `<JobVertexID>:<parallelism>` joined by `,`, e.g.
    /// `23149c2f4012e830eebb47b5587a5f2f:2,a0ee7b14d617ba4d8109c408f52753c7:4`.
    pub fn value(&self) -> String {
        self.overrides
            .iter()
            .map(|(id, p)| format!("{id}:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Whether `id` is a Flink `JobVertexID` as Flink writes it: 32 hexadecimal digits (its
/// `AbstractID`'s 16 bytes).
pub fn is_flink_vertex_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Applies parallelism edits to a plan from Flink and expresses them as Flink's
/// [`FLINK_PARALLELISM_OVERRIDES`], so that they reach Flink (which cannot read job graph JSON).
/// Each edit is validated as [`Edit::apply`] does; a vertex set twice gets its last value.
///
/// # Errors
/// [`PlanError::Refused`] naming the edits that are not `set_parallelism` (the option sets
/// parallelism only), or naming the edited vertices whose ids are not Flink `JobVertexID`s (32
/// hex digits: the plan must be Flink's JSON plan or an edit of one); any error of
/// [`Edit::apply`]; a refusal when there are no edits.
pub fn flink_parallelism_overrides(
    plan: &JobGraphJson,
    edits: &[Edit],
) -> Result<ParallelismOverrides, PlanError> {
    let refuse = |reason: String| PlanError::Refused {
        edit: format!("emitting {FLINK_PARALLELISM_OVERRIDES}"),
        reason,
    };
    let others: Vec<String> = edits
        .iter()
        .filter(|e| !matches!(e, Edit::SetParallelism { .. }))
        .map(Edit::describe)
        .collect();
    if !others.is_empty() {
        return Err(refuse(format!(
            "{} cannot be expressed: the option sets parallelism only",
            others.join(", ")
        )));
    }
    if edits.is_empty() {
        return Err(refuse("no parallelism edit given".to_owned()));
    }
    let mut edited: Vec<String> = Vec::new();
    let mut current = plan.clone();
    for e in edits {
        let e = e.with_ids(&current)?;
        let next = e.apply(&current)?;
        // The vertex and the rest of its forward group, which the edit sets together.
        for (before, after) in current.vertices.iter().zip(&next.vertices) {
            if before.parallelism != after.parallelism && !edited.contains(&after.id) {
                edited.push(after.id.clone());
            }
        }
        current = next;
    }
    let not_flink: Vec<&str> = edited
        .iter()
        .map(String::as_str)
        .filter(|id| !is_flink_vertex_id(id))
        .collect();
    if !not_flink.is_empty() {
        let quoted: Vec<String> = not_flink.iter().map(|id| format!("'{id}'")).collect();
        let (which, have) = if quoted.len() == 1 {
            ("vertex", "has")
        } else {
            ("vertices", "have")
        };
        return Err(refuse(format!(
            "{which} {} {have} no Flink JobVertexID (32 hex digits); the option names vertices by it, so the plan must be Flink's JSON plan or an edit of one",
            quoted.join(", ")
        )));
    }
    Ok(ParallelismOverrides {
        overrides: current
            .vertices
            .iter()
            .filter(|v| edited.contains(&v.id))
            .filter_map(|v| Some((v.id.clone(), u32::try_from(v.parallelism).ok()?)))
            .collect(),
    })
}
