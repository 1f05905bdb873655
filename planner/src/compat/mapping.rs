//! The operator mapping of the compatibility analysis: the operators of each side and how old
//! operators pair with new ones (uid, rename map, auto-generated id, structure).

use std::collections::HashMap;

use conflux_graph::json::{JobGraphJson, StateJson};
use conflux_graph::JobGraph;

use super::verdict::{CompatOptions, MatchedBy, OperatorRef};
use crate::compiled::CompiledPlan;
use crate::error::PlanError;

/// An operator as the analysis sees it.
#[derive(Clone, Debug)]
pub(super) struct Op {
    /// Who it is.
    pub(super) r: OperatorRef,
    /// Its states (empty when unknown).
    pub(super) states: Vec<StateJson>,
    /// Whether the plan says what state it has: false for a vertex without an operator list
    /// (every vertex of an imported Flink JSON plan), whose state cannot be seen.
    pub(super) state_known: bool,
    /// Head of its vertex: its inputs are the vertex's inputs.
    pub(super) head: bool,
    /// The vertex's input ship strategies as the plan writes them (for heads).
    pub(super) inputs: Vec<Option<String>>,
    /// Its vertex's parallelism.
    pub(super) parallelism: u32,
    /// Its vertex's max parallelism, where the plan sets one.
    pub(super) max_parallelism: Option<u64>,
}

impl Op {
    /// `'name' (uid u, vertex v)`, for findings; the vertex's name follows its id in quotes
    /// when it has one (`vertex v "Flink name"`).
    pub(super) fn label(&self) -> String {
        let vertex = match &self.r.vertex_name {
            Some(n) => format!("{} \"{n}\"", self.r.vertex),
            None => self.r.vertex.clone(),
        };
        match &self.r.uid {
            Some(u) => format!("'{}' (uid {u}, vertex {vertex})", self.r.name),
            None => format!("'{}' (vertex {vertex})", self.r.name),
        }
    }

    /// Whether any of its states is keyed.
    pub(super) fn has_keyed_state(&self) -> bool {
        self.states.iter().any(|s| s.key_type.is_some())
    }

    /// Whether it is known to have no state at all.
    pub(super) fn known_stateless(&self) -> bool {
        self.state_known && self.states.is_empty()
    }

    /// Whether it has keyed state, or may have (its state is unknown).
    pub(super) fn may_have_keyed_state(&self) -> bool {
        !self.state_known || self.has_keyed_state()
    }
}

/// Emulated auto-generated operator ids, after the shape of Flink's `StreamGraphHasherV2`: a
/// hash of the operator's position in a deterministic traversal (vertices in topological order,
/// operators in chain order), the number of its chainable outputs, and its inputs' hashes. Like
/// Flink's, it does not see names or functions, so adding an operator upstream or changing
/// chaining changes the ids downstream, and swapping two functions does not.
fn auto_ids(job: &JobGraph) -> Vec<Vec<u64>> {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mix = |h: u64, x: u64| (h ^ x).wrapping_mul(PRIME).rotate_left(29);
    let mut ids: Vec<Vec<u64>> = Vec::with_capacity(job.vertices().len());
    let mut position = 0u64;
    for j in job.vertex_indices() {
        let n = job.operators(j).len().max(1);
        let mut chain = Vec::with_capacity(n);
        for k in 0..n {
            let mut h = mix(conflux_common::Fnv1a64::OFFSET_BASIS, position);
            position += 1;
            h = mix(h, u64::from(k + 1 < n));
            if k == 0 {
                for &e in job.inputs(j) {
                    let src = job.edge(e).source;
                    let last = ids[src.idx()].last().copied().unwrap_or(0);
                    h = mix(h, last);
                }
            } else {
                h = mix(h, chain[k - 1]);
            }
            chain.push(h);
        }
        ids.push(chain);
    }
    ids
}

/// The operators of a job graph, in vertex and chain order. A vertex without an operator list
/// stands for one operator, its head. O(V + E + operators).
///
/// # Errors
/// [`PlanError::Graph`] for an invalid plan.
pub(super) fn ops_of_job(json: &JobGraphJson) -> Result<Vec<Op>, PlanError> {
    let job = JobGraph::from_json(json)?;
    let auto = auto_ids(&job);
    let mut out = Vec::new();
    for (vi, j) in job.vertex_indices().enumerate() {
        let (v, id, operators) = (job.vertex(j), job.vertex_id(j), job.operators(j));
        let vertex_name = job.vertex_name(j).map(str::to_owned);
        let inputs: Vec<Option<String>> = job
            .inputs(j)
            .iter()
            .map(|&e| job.edge(e).ship_strategy.clone())
            .collect();
        let explicit = v.max_parallelism_configured.then_some(v.max_parallelism);
        if operators.is_empty() {
            out.push(Op {
                r: OperatorRef {
                    vertex: id.to_owned(),
                    vertex_name: vertex_name.clone(),
                    position: 0,
                    name: id.to_owned(),
                    uid: None,
                    id: format!("vertex:{id}"),
                },
                states: Vec::new(),
                state_known: false,
                head: true,
                inputs,
                parallelism: v.parallelism,
                max_parallelism: explicit,
            });
            continue;
        }
        for (k, o) in operators.iter().enumerate() {
            out.push(Op {
                r: OperatorRef {
                    vertex: id.to_owned(),
                    vertex_name: vertex_name.clone(),
                    position: k,
                    name: o.name.clone(),
                    uid: o.uid.clone(),
                    id: match &o.uid {
                        Some(u) => format!("uid:{u}"),
                        None => format!("auto:{:016x}", auto[vi][k]),
                    },
                },
                states: o.state.clone(),
                state_known: true,
                head: k == 0,
                inputs: if k == 0 { inputs.clone() } else { Vec::new() },
                parallelism: v.parallelism,
                max_parallelism: explicit,
            });
        }
    }
    Ok(out)
}

/// The stateful ExecNodes of a compiled plan as operators. O(nodes + states).
pub(super) fn ops_of_compiled(plan: &CompiledPlan) -> Vec<Op> {
    plan.stateful_operators()
        .iter()
        .map(|o| {
            // Flink SQL's operator uids (table.exec.uid.generation=PLAN_ONLY) are derived from
            // the ExecNode id and transformation, so node id and type identify the operator.
            let uid = format!("{}_{}", o.id, o.kind);
            Op {
                r: OperatorRef {
                    vertex: o.id.to_string(),
                    vertex_name: None,
                    position: 0,
                    name: o.kind.clone(),
                    uid: Some(uid.clone()),
                    id: format!("uid:{uid}"),
                },
                states: o
                    .states
                    .iter()
                    .map(|s| StateJson {
                        name: s.name.clone(),
                        kind: "keyed".to_owned(),
                        key_type: None,
                        value_type: None,
                        ttl_ms: (s.ttl_ms > 0).then_some(s.ttl_ms),
                    })
                    .collect(),
                state_known: true,
                head: false,
                inputs: Vec::new(),
                parallelism: 1,
                max_parallelism: None,
            }
        })
        .collect()
}

/// Old operator i paired with new operator `pair[i].0`, and how.
pub(super) type Pairs = Vec<Option<(usize, MatchedBy)>>;

/// The pairing in progress: which old operator has a partner, which new operator is taken.
struct Pairing<'a> {
    old: &'a [Op],
    new: &'a [Op],
    pair: Pairs,
    taken: Vec<bool>,
}

impl<'a> Pairing<'a> {
    fn new(old: &'a [Op], new: &'a [Op]) -> Self {
        Pairing {
            old,
            new,
            pair: vec![None; old.len()],
            taken: vec![false; new.len()],
        }
    }

    fn link(&mut self, i: usize, j: usize, how: MatchedBy) {
        self.pair[i] = Some((j, how));
        self.taken[j] = true;
    }

    /// Old operators still without a partner.
    fn unpaired(&self) -> Vec<usize> {
        (0..self.old.len())
            .filter(|&i| self.pair[i].is_none())
            .collect()
    }

    /// Step 1: the same uid.
    fn by_uid(&mut self, by_uid: &HashMap<&str, usize>) {
        for i in 0..self.old.len() {
            if let Some(&j) = self.old[i].r.uid.as_deref().and_then(|u| by_uid.get(u)) {
                self.link(i, j, MatchedBy::Uid);
            }
        }
    }

    /// Step 2: the rename map (old uid or vertex id -> new uid or vertex id).
    fn by_rename(
        &mut self,
        renames: &std::collections::BTreeMap<String, String>,
        by_uid: &HashMap<&str, usize>,
        by_vertex: &HashMap<&str, usize>,
    ) {
        for i in self.unpaired() {
            let o = &self.old[i];
            let key = o.r.uid.as_deref().unwrap_or(&o.r.vertex);
            let Some(to) = renames.get(key) else {
                continue;
            };
            let j = by_uid
                .get(to.as_str())
                .or_else(|| by_vertex.get(to.as_str()))
                .copied();
            if let Some(j) = j.filter(|&j| !self.taken[j]) {
                self.link(i, j, MatchedBy::Rename);
            }
        }
    }

    /// Steps 3 and 5: the same auto-generated id or vertex id (operators without uid on
    /// both sides), with the same name when `same_name`.
    fn by_auto_id(&mut self, by_id: &HashMap<&str, usize>, same_name: bool) {
        for i in self.unpaired() {
            let o = &self.old[i];
            if o.r.uid.is_some() {
                continue;
            }
            let Some(&j) = by_id.get(o.r.id.as_str()) else {
                continue;
            };
            let n = &self.new[j];
            if self.taken[j] || n.r.uid.is_some() || (same_name && n.r.name != o.r.name) {
                continue;
            }
            let how = if o.r.id.starts_with("vertex:") {
                MatchedBy::VertexId
            } else {
                MatchedBy::AutoId
            };
            self.link(i, j, how);
        }
    }

    /// Step 4, structure: the same name, in order, among what is left (the ids differ).
    fn by_structure(&mut self) {
        for i in self.unpaired() {
            let name = &self.old[i].r.name;
            if let Some(j) =
                (0..self.new.len()).find(|&j| !self.taken[j] && self.new[j].r.name == *name)
            {
                self.link(i, j, MatchedBy::Structure);
            }
        }
    }
}

/// Pairs old operators with new ones, in this order: the same uid, the user's rename map, the
/// same auto-generated id (or vertex id) and name, the same name (structure), and last what
/// Flink itself would do with what is left: the same auto-generated id even where the
/// functions differ (reported as a business-logic conflict). Returns the pairs and which new
/// operators are taken. O(old + new) with hash maps, plus O(old x new) for the structure step
/// over what is left.
pub(super) fn pair_operators(
    old: &[Op],
    new: &[Op],
    options: &CompatOptions,
) -> (Pairs, Vec<bool>) {
    let by_id: HashMap<&str, usize> = new
        .iter()
        .enumerate()
        .map(|(i, o)| (o.r.id.as_str(), i))
        .collect();
    let by_uid: HashMap<&str, usize> = new
        .iter()
        .enumerate()
        .filter_map(|(i, o)| o.r.uid.as_deref().map(|u| (u, i)))
        .collect();
    let by_vertex: HashMap<&str, usize> = new
        .iter()
        .enumerate()
        .map(|(i, o)| (o.r.vertex.as_str(), i))
        .collect();
    let mut p = Pairing::new(old, new);
    p.by_uid(&by_uid);
    p.by_rename(&options.renames, &by_uid, &by_vertex);
    p.by_auto_id(&by_id, true);
    p.by_structure();
    p.by_auto_id(&by_id, false);
    (p.pair, p.taken)
}
