//! State-compatibility pre-analysis of an old and a new plan: can the new plan restore from the
//! old plan's state (savepoint or retained checkpoint)?
//!
//! Three layers, after Meituan's:
//! 1. **Topology**: operators mapped old -> new by uid, then by a user rename map, then by
//!    Flink's auto-generated id (emulated after the shape of Flink's `StreamGraphHasherV2`) with
//!    the same name or, for vertices without an operator list, the vertex id (a Flink JobVertexID
//!    is its head operator's id), then by structure (same name), then by auto-generated id alone;
//!    unmatched stateful old operators fail the restore unless non-restored state is allowed.
//! 2. **Business logic**: a positional (auto-id) mapping that pairs different functions, a row
//!    state whose fields were reordered (e.g. two aggregates swapped), a keyed input that is no
//!    longer hash-partitioned.
//! 3. **State schema** per mapped operator: state names, kinds, key and value types, TTL, and
//!    the key groups (max parallelism).
//!
//! The verdict is the worst of all findings, in the order COMPATIBLE_AS_IS <
//! COMPATIBLE_AFTER_RENAME < COMPATIBLE_AFTER_MIGRATION < INCOMPATIBLE. O(V + E + operators x
//! states) with hash maps.

use std::collections::{BTreeMap, HashMap};

use conflux_graph::default_max_parallelism;
use conflux_graph::json::{JobGraphJson, StateJson};
use conflux_graph::JobGraph;
use serde::{Deserialize, Serialize};

use crate::compiled::CompiledPlan;
use crate::stats::is_keyed_strategy;
use crate::PlanError;

/// The verdict of the analysis, worst last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    /// The new plan restores the old state unchanged.
    CompatibleAsIs,
    /// The state restores once operator ids are renamed (State Processor API
    /// `changeOperatorIdentifier`), because the ids changed while the operators did not.
    CompatibleAfterRename,
    /// The state restores after a migration (read with the old serializer, rewritten).
    CompatibleAfterMigration,
    /// The state cannot be restored.
    Incompatible,
}

impl Verdict {
    /// `COMPATIBLE_AS_IS`, `COMPATIBLE_AFTER_RENAME`, `COMPATIBLE_AFTER_MIGRATION` or
    /// `INCOMPATIBLE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::CompatibleAsIs => "COMPATIBLE_AS_IS",
            Verdict::CompatibleAfterRename => "COMPATIBLE_AFTER_RENAME",
            Verdict::CompatibleAfterMigration => "COMPATIBLE_AFTER_MIGRATION",
            Verdict::Incompatible => "INCOMPATIBLE",
        }
    }
}

/// Options of the analysis.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompatOptions {
    /// Old operator uid (or vertex id) -> new one, for operators whose uid changed on purpose.
    #[serde(default)]
    pub renames: BTreeMap<String, String>,
    /// Flink's `--allowNonRestoredState` (`-n`): state of removed operators is dropped instead
    /// of failing the restore.
    #[serde(default)]
    pub allow_non_restored_state: bool,
}

/// One layer's verdict and findings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Layer {
    /// The worst finding of the layer.
    pub verdict: Verdict,
    /// The findings, for people.
    pub findings: Vec<String>,
}

impl Layer {
    fn new() -> Layer {
        Layer {
            verdict: Verdict::CompatibleAsIs,
            findings: Vec::new(),
        }
    }

    fn add(&mut self, verdict: Verdict, finding: String) {
        self.verdict = self.verdict.max(verdict);
        self.findings.push(finding);
    }
}

/// An operator of one side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OperatorRef {
    /// Its vertex.
    pub vertex: String,
    /// Its position in the vertex's chain.
    pub position: usize,
    /// Its name.
    pub name: String,
    /// Its uid, if set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The operator id its state is stored under: `uid:<uid>`, `vertex:<id>` or `auto:<hash>`.
    pub id: String,
}

/// How an old operator was paired with a new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// The same uid.
    Uid,
    /// The user's rename map.
    Rename,
    /// The same (emulated) auto-generated id: same position in the topology.
    AutoId,
    /// The same vertex id (a vertex without operator list stands for its head operator).
    VertexId,
    /// Structure: the same name where ids differ.
    Structure,
    /// Not paired.
    Unmatched,
}

/// One row of the operator mapping.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OperatorMapping {
    /// The old operator (absent for an added operator).
    pub old: Option<OperatorRef>,
    /// The new operator (absent for a removed operator).
    pub new: Option<OperatorRef>,
    /// How they were paired.
    pub matched_by: MatchedBy,
    /// This operator's verdict.
    pub verdict: Verdict,
    /// Why, one reason per finding.
    pub reasons: Vec<String>,
}

/// The result of the analysis.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CompatReport {
    /// The overall verdict: the worst of the layers.
    pub verdict: Verdict,
    /// Business-logic layer.
    pub business_logic: Layer,
    /// Topology layer.
    pub topology: Layer,
    /// State-schema layer.
    pub state_schema: Layer,
    /// Every old and new operator, paired where possible.
    pub operators: Vec<OperatorMapping>,
}

/// An operator as the analysis sees it.
#[derive(Clone, Debug)]
struct Op {
    r: OperatorRef,
    states: Vec<StateJson>,
    /// Head of its vertex: its inputs are the vertex's inputs.
    head: bool,
    /// The vertex's input ship strategies (for heads).
    inputs: Vec<Option<String>>,
    parallelism: u32,
    max_parallelism: Option<u64>,
}

impl Op {
    fn label(&self) -> String {
        match &self.r.uid {
            Some(u) => format!("'{}' (uid {u}, vertex {})", self.r.name, self.r.vertex),
            None => format!("'{}' (vertex {})", self.r.name, self.r.vertex),
        }
    }

    fn has_keyed_state(&self) -> bool {
        self.states.iter().any(|s| s.key_type.is_some())
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
    for v in job.vertices() {
        let n = v.operators.len().max(1);
        let mut chain = Vec::with_capacity(n);
        for k in 0..n {
            let mut h = mix(0xcbf2_9ce4_8422_2325, position);
            position += 1;
            h = mix(h, u64::from(k + 1 < n));
            if k == 0 {
                for &e in &v.inputs {
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

fn ops_of_job(json: &JobGraphJson) -> Result<Vec<Op>, PlanError> {
    let job = JobGraph::from_json(json)?;
    let auto = auto_ids(&job);
    let mut out = Vec::new();
    for (vi, v) in job.vertices().iter().enumerate() {
        let inputs: Vec<Option<String>> = v
            .inputs
            .iter()
            .map(|&e| job.edge(e).ship_strategy.clone())
            .collect();
        let explicit = v.max_parallelism_configured.then_some(v.max_parallelism);
        if v.operators.is_empty() {
            out.push(Op {
                r: OperatorRef {
                    vertex: v.id.clone(),
                    position: 0,
                    name: v.id.clone(),
                    uid: None,
                    id: format!("vertex:{}", v.id),
                },
                states: Vec::new(),
                head: true,
                inputs,
                parallelism: v.parallelism,
                max_parallelism: explicit,
            });
            continue;
        }
        for (k, o) in v.operators.iter().enumerate() {
            out.push(Op {
                r: OperatorRef {
                    vertex: v.id.clone(),
                    position: k,
                    name: o.name.clone(),
                    uid: o.uid.clone(),
                    id: match &o.uid {
                        Some(u) => format!("uid:{u}"),
                        None => format!("auto:{:016x}", auto[vi][k]),
                    },
                },
                states: o.state.clone(),
                head: k == 0,
                inputs: if k == 0 { inputs.clone() } else { Vec::new() },
                parallelism: v.parallelism,
                max_parallelism: explicit,
            });
        }
    }
    Ok(out)
}

fn ops_of_compiled(plan: &CompiledPlan) -> Vec<Op> {
    plan.stateful_operators()
        .iter()
        .map(|o| {
            // Flink SQL's operator uids (table.exec.uid.generation=PLAN_ONLY) are derived from
            // the ExecNode id and transformation, so node id and type identify the operator.
            let uid = format!("{}_{}", o.id, o.kind);
            Op {
                r: OperatorRef {
                    vertex: o.id.to_string(),
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
                head: false,
                inputs: Vec::new(),
                parallelism: 1,
                max_parallelism: None,
            }
        })
        .collect()
}

/// Analyses whether `new` can restore from `old`'s state. Both are job graphs (or imported
/// Flink plans).
///
/// # Errors
/// [`PlanError::Graph`] when either plan is invalid.
pub fn analyze(
    old: &JobGraphJson,
    new: &JobGraphJson,
    options: &CompatOptions,
) -> Result<CompatReport, PlanError> {
    Ok(analyze_ops(&ops_of_job(old)?, &ops_of_job(new)?, options))
}

/// [`analyze`] for two Flink compiled plans: stateful ExecNodes are mapped by node id and type
/// (what Flink SQL derives their uids from), and their states compared by name and TTL.
pub fn analyze_compiled(
    old: &CompiledPlan,
    new: &CompiledPlan,
    options: &CompatOptions,
) -> CompatReport {
    analyze_ops(&ops_of_compiled(old), &ops_of_compiled(new), options)
}

fn analyze_ops(old: &[Op], new: &[Op], options: &CompatOptions) -> CompatReport {
    let mut business = Layer::new();
    let mut topology = Layer::new();
    let mut schema = Layer::new();
    let mut pair: Vec<Option<(usize, MatchedBy)>> = vec![None; old.len()];
    let mut taken = vec![false; new.len()];
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
    // 1. Same uid.
    for (i, o) in old.iter().enumerate() {
        if let Some(&j) = o.r.uid.as_deref().and_then(|u| by_uid.get(u)) {
            pair[i] = Some((j, MatchedBy::Uid));
            taken[j] = true;
        }
    }
    // 2. The rename map (old uid or vertex id -> new uid or vertex id).
    for (i, o) in old.iter().enumerate() {
        if pair[i].is_some() {
            continue;
        }
        let key = o.r.uid.as_deref().unwrap_or(&o.r.vertex);
        if let Some(to) = options.renames.get(key) {
            let j = by_uid
                .get(to.as_str())
                .or_else(|| by_vertex.get(to.as_str()))
                .copied();
            if let Some(j) = j.filter(|&j| !taken[j]) {
                pair[i] = Some((j, MatchedBy::Rename));
                taken[j] = true;
            }
        }
    }
    // 3. Same auto-generated id or vertex id (operators without uid) and the same name.
    let auto_pair = |o: &Op, taken: &[bool], same_name: bool| -> Option<(usize, MatchedBy)> {
        if o.r.uid.is_some() {
            return None;
        }
        let &j = by_id.get(o.r.id.as_str())?;
        if taken[j] || new[j].r.uid.is_some() || (same_name && new[j].r.name != o.r.name) {
            return None;
        }
        let how = if o.r.id.starts_with("vertex:") {
            MatchedBy::VertexId
        } else {
            MatchedBy::AutoId
        };
        Some((j, how))
    };
    for (i, o) in old.iter().enumerate() {
        if pair[i].is_none() {
            if let Some((j, how)) = auto_pair(o, &taken, true) {
                pair[i] = Some((j, how));
                taken[j] = true;
            }
        }
    }
    // 4. Structure: the same name, in order, among what is left (the ids differ).
    for (i, o) in old.iter().enumerate() {
        if pair[i].is_some() {
            continue;
        }
        if let Some(j) = (0..new.len()).find(|&j| !taken[j] && new[j].r.name == o.r.name) {
            pair[i] = Some((j, MatchedBy::Structure));
            taken[j] = true;
        }
    }
    // 5. What Flink itself would do with what is left: pair by auto-generated id even where the
    // functions differ (reported below as a business-logic conflict).
    for (i, o) in old.iter().enumerate() {
        if pair[i].is_none() {
            if let Some((j, how)) = auto_pair(o, &taken, false) {
                pair[i] = Some((j, how));
                taken[j] = true;
            }
        }
    }

    let mut operators = Vec::with_capacity(old.len() + new.len());
    for (i, o) in old.iter().enumerate() {
        let mut row = OperatorMapping {
            old: Some(o.r.clone()),
            new: None,
            matched_by: MatchedBy::Unmatched,
            verdict: Verdict::CompatibleAsIs,
            reasons: Vec::new(),
        };
        let note = |layer: &mut Layer, row: &mut OperatorMapping, v: Verdict, reason: String| {
            layer.add(v, format!("{}: {reason}", o.label()));
            row.verdict = row.verdict.max(v);
            row.reasons.push(reason);
        };
        let Some((j, how)) = pair[i] else {
            if o.states.is_empty() {
                note(
                    &mut topology,
                    &mut row,
                    Verdict::CompatibleAsIs,
                    "removed; it has no state".to_owned(),
                );
            } else if options.allow_non_restored_state {
                note(
                    &mut topology,
                    &mut row,
                    Verdict::CompatibleAsIs,
                    "removed; its state is dropped (non-restored state allowed)".to_owned(),
                );
            } else {
                note(
                    &mut topology,
                    &mut row,
                    Verdict::Incompatible,
                    "removed, but it has state: the restore fails unless non-restored state is allowed (-n), which drops it".to_owned(),
                );
            }
            operators.push(row);
            continue;
        };
        let n = &new[j];
        row.new = Some(n.r.clone());
        row.matched_by = how;
        let stateful = !o.states.is_empty();
        // Topology: ids that changed need a rename of the state's operator id.
        match how {
            MatchedBy::Rename | MatchedBy::Structure if stateful => note(
                &mut topology,
                &mut row,
                Verdict::CompatibleAfterRename,
                format!(
                    "mapped by {} to {}, whose operator id differs ({} -> {}); its state must be moved to the new id (State Processor API changeOperatorIdentifier)",
                    if how == MatchedBy::Rename { "the rename map" } else { "structure" },
                    n.label(),
                    o.r.id,
                    n.r.id
                ),
            ),
            _ => {}
        }
        // Business logic.
        if o.r.name != n.r.name {
            if matches!(how, MatchedBy::AutoId) && (stateful || !n.states.is_empty()) {
                note(
                    &mut business,
                    &mut row,
                    Verdict::Incompatible,
                    format!(
                        "auto-generated ids pair it with '{}', a different function at the same place in the topology: its state would be restored into the wrong operator; set uids",
                        n.r.name
                    ),
                );
            } else {
                note(
                    &mut business,
                    &mut row,
                    Verdict::CompatibleAsIs,
                    format!("renamed to '{}'", n.r.name),
                );
            }
        }
        if o.has_keyed_state() && n.head && o.head {
            let was_keyed = !o.inputs.is_empty()
                && o.inputs
                    .iter()
                    .all(|s| s.as_deref().is_some_and(is_keyed_strategy));
            let lost = n
                .inputs
                .iter()
                .filter_map(|s| s.as_deref())
                .find(|s| !is_keyed_strategy(s));
            if let (true, Some(s)) = (was_keyed, lost) {
                note(
                    &mut business,
                    &mut row,
                    Verdict::Incompatible,
                    format!(
                        "its input was hash-partitioned and is now {s}: keyed state would be read by subtasks that do not own the keys"
                    ),
                );
            }
        }
        // Key groups.
        if stateful {
            let old_max = o
                .max_parallelism
                .unwrap_or_else(|| default_max_parallelism(o.parallelism));
            let new_max = n.max_parallelism.unwrap_or(old_max);
            if o.has_keyed_state() && new_max != old_max {
                note(
                    &mut schema,
                    &mut row,
                    Verdict::Incompatible,
                    format!(
                        "max parallelism changes from {old_max} to {new_max}: keyed state is split into key groups fixed by the max parallelism"
                    ),
                );
            }
            if u64::from(n.parallelism) > new_max {
                note(
                    &mut schema,
                    &mut row,
                    Verdict::Incompatible,
                    format!(
                        "parallelism {} is above the max parallelism {new_max} the state was written with",
                        n.parallelism
                    ),
                );
            } else if o.parallelism != n.parallelism {
                note(
                    &mut schema,
                    &mut row,
                    Verdict::CompatibleAsIs,
                    format!(
                        "parallelism {} -> {}: state is redistributed by key group on restore",
                        o.parallelism, n.parallelism
                    ),
                );
            }
        }
        // State schema.
        for s in &o.states {
            let Some(t) = n.states.iter().find(|t| t.name == s.name) else {
                note(
                    &mut schema,
                    &mut row,
                    Verdict::CompatibleAsIs,
                    format!(
                        "state '{}' is no longer registered; it is not restored",
                        s.name
                    ),
                );
                continue;
            };
            compare_state(s, t, &mut |layer_is_business, v, reason| {
                let layer = if layer_is_business {
                    &mut business
                } else {
                    &mut schema
                };
                note(layer, &mut row, v, reason);
            });
        }
        for t in n
            .states
            .iter()
            .filter(|t| !o.states.iter().any(|s| s.name == t.name))
        {
            note(
                &mut schema,
                &mut row,
                Verdict::CompatibleAsIs,
                format!("state '{}' is new; it starts empty", t.name),
            );
        }
        operators.push(row);
    }
    for (_, n) in new.iter().enumerate().filter(|(j, _)| !taken[*j]) {
        let reason = if n.states.is_empty() {
            "added; it has no state".to_owned()
        } else {
            "added; its state starts empty".to_owned()
        };
        topology.findings.push(format!("{}: {reason}", n.label()));
        operators.push(OperatorMapping {
            old: None,
            new: Some(n.r.clone()),
            matched_by: MatchedBy::Unmatched,
            verdict: Verdict::CompatibleAsIs,
            reasons: vec![reason],
        });
    }
    topology.findings.insert(
        0,
        format!(
            "{} old and {} new operators, {} paired",
            old.len(),
            new.len(),
            pair.iter().filter(|p| p.is_some()).count()
        ),
    );
    CompatReport {
        verdict: business.verdict.max(topology.verdict).max(schema.verdict),
        business_logic: business,
        topology,
        state_schema: schema,
        operators,
    }
}

/// A value type as the analysis reads it: `ROW<name TYPE, ...>` (positional, as Flink SQL's
/// RowData), `POJO<name TYPE, ...>` (by field name, as Flink's PojoSerializer), or anything else
/// (compared as a whole).
#[derive(Debug, PartialEq, Eq)]
enum TypeShape {
    Row(Vec<(String, String)>),
    Pojo(Vec<(String, String)>),
    Atomic(String),
}

fn shape_of(t: &str) -> TypeShape {
    let t = t.trim();
    let upper = t.to_ascii_uppercase();
    for (prefix, row) in [("ROW<", true), ("POJO<", false)] {
        if upper.starts_with(prefix) && t.ends_with('>') {
            let inner = &t[prefix.len()..t.len() - 1];
            let fields = split_top_level(inner)
                .into_iter()
                .map(|f| {
                    let f = f.trim();
                    match f.split_once(char::is_whitespace) {
                        Some((n, ty)) => (n.trim().to_owned(), ty.trim().to_owned()),
                        None => (f.to_owned(), String::new()),
                    }
                })
                .filter(|(n, _)| !n.is_empty())
                .collect();
            return if row {
                TypeShape::Row(fields)
            } else {
                TypeShape::Pojo(fields)
            };
        }
    }
    TypeShape::Atomic(t.to_owned())
}

/// Splits on commas outside `<>`, `()` and `[]`.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Compares one state across versions; `report(business_layer, verdict, reason)`.
fn compare_state(s: &StateJson, t: &StateJson, report: &mut dyn FnMut(bool, Verdict, String)) {
    let name = &s.name;
    if s.kind != t.kind {
        report(
            false,
            Verdict::Incompatible,
            format!("state '{name}': kind changes from {} to {}", s.kind, t.kind),
        );
    }
    if s.key_type != t.key_type {
        report(
            false,
            Verdict::Incompatible,
            format!(
                "state '{name}': key type changes from {} to {} (a key serializer cannot migrate)",
                s.key_type.as_deref().unwrap_or("none"),
                t.key_type.as_deref().unwrap_or("none")
            ),
        );
    }
    match (&s.value_type, &t.value_type) {
        (Some(a), Some(b)) if a != b => compare_value_types(name, a, b, report),
        (None, Some(_)) | (Some(_), None) => report(
            false,
            Verdict::Incompatible,
            format!("state '{name}': value type is given on one side only"),
        ),
        _ => {}
    }
    match (s.ttl_ms, t.ttl_ms) {
        (Some(a), Some(b)) if a != b => report(
            false,
            Verdict::CompatibleAsIs,
            format!("state '{name}': TTL {a} ms -> {b} ms (a changed duration is compatible)"),
        ),
        (None, Some(b)) => report(
            false,
            Verdict::Incompatible,
            format!(
                "state '{name}': TTL enabled ({b} ms) on state written without TTL; Flink 1.20 cannot restore it (migration exists from Flink 2.0, FLINK-35780)"
            ),
        ),
        (Some(a), None) => report(
            false,
            Verdict::Incompatible,
            format!(
                "state '{name}': TTL ({a} ms) disabled on state written with TTL; Flink 1.20 cannot restore it (migration exists from Flink 2.0, FLINK-35780)"
            ),
        ),
        _ => {}
    }
}

fn compare_value_types(
    name: &str,
    a: &str,
    b: &str,
    report: &mut dyn FnMut(bool, Verdict, String),
) {
    match (shape_of(a), shape_of(b)) {
        (TypeShape::Row(x), TypeShape::Row(y)) => {
            let common_old: Vec<&(String, String)> =
                x.iter().filter(|f| y.iter().any(|g| g.0 == f.0)).collect();
            let common_new: Vec<&(String, String)> =
                y.iter().filter(|g| x.iter().any(|f| f.0 == g.0)).collect();
            if let Some(((n, t1), (_, t2))) = common_old
                .iter()
                .filter_map(|f| common_new.iter().find(|g| g.0 == f.0).map(|g| (*f, *g)))
                .find(|(f, g)| f.1 != g.1)
            {
                report(
                    false,
                    Verdict::Incompatible,
                    format!("state '{name}': field '{n}' changes type from {t1} to {t2}"),
                );
                return;
            }
            let old_order: Vec<&str> = common_old.iter().map(|f| f.0.as_str()).collect();
            let new_order: Vec<&str> = common_new.iter().map(|f| f.0.as_str()).collect();
            if old_order != new_order {
                report(
                    true,
                    Verdict::Incompatible,
                    format!(
                        "state '{name}': row fields reordered ({} -> {}), e.g. aggregates swapped: a positional row state would be read into the wrong fields",
                        old_order.join(", "),
                        new_order.join(", ")
                    ),
                );
                return;
            }
            let added: Vec<&str> = y
                .iter()
                .filter(|g| !x.iter().any(|f| f.0 == g.0))
                .map(|g| g.0.as_str())
                .collect();
            let removed: Vec<&str> = x
                .iter()
                .filter(|f| !y.iter().any(|g| g.0 == f.0))
                .map(|f| f.0.as_str())
                .collect();
            report(
                false,
                Verdict::CompatibleAfterMigration,
                format!(
                    "state '{name}': row fields added [{}] removed [{}]: the state must be migrated (read with the old schema, rewritten with the new)",
                    added.join(", "),
                    removed.join(", ")
                ),
            );
        }
        (TypeShape::Pojo(x), TypeShape::Pojo(y)) => {
            if let Some((f, g)) = x
                .iter()
                .filter_map(|f| y.iter().find(|g| g.0 == f.0).map(|g| (f, g)))
                .find(|(f, g)| f.1 != g.1)
            {
                report(
                    false,
                    Verdict::Incompatible,
                    format!(
                        "state '{name}': POJO field '{}' changes type from {} to {}",
                        f.0, f.1, g.1
                    ),
                );
                return;
            }
            let same_set = x.len() == y.len() && x.iter().all(|f| y.contains(f));
            if same_set {
                report(
                    false,
                    Verdict::CompatibleAsIs,
                    format!("state '{name}': POJO fields reordered (read by name with a reconfigured serializer)"),
                );
            } else {
                report(
                    false,
                    Verdict::CompatibleAfterMigration,
                    format!("state '{name}': POJO fields added or removed: the state is migrated (POJO schema evolution)"),
                );
            }
        }
        _ => report(
            false,
            Verdict::Incompatible,
            format!("state '{name}': value type changes from {a} to {b}, not an evolvable change"),
        ),
    }
}
