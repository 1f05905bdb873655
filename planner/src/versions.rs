//! Versioned plans and the diff of two versions.

use std::collections::HashMap;
use std::sync::Arc;

use conflux_graph::json::{JobEdgeJson, JobGraphJson, JobVertexJson};
use conflux_graph::{DistributionPattern, JobGraph};
use serde::Serialize;
use serde_json::{json, Value};

use crate::edit::Edit;
use crate::error::PlanError;
use crate::stats::channels;

/// One version of a plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Version {
    /// Its number, from 1.
    pub number: u32,
    /// The version it was edited from (`None` for the submitted plan).
    pub parent: Option<u32>,
    /// The edit that made it (`None` for the submitted plan).
    pub edit: Option<Edit>,
    /// The plan, shared so that readers (statistics, diffs, edits of the service) can use it
    /// without holding a lock or copying it.
    #[serde(skip)]
    pub plan: Arc<JobGraphJson>,
}

/// A plan and its versions: version 1 is the submitted plan, each accepted edit adds one with
/// the next number. Versions are never changed; one may be removed ([`VersionedPlan::remove`]),
/// and its number is never given again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionedPlan {
    /// By ascending number.
    versions: Vec<Version>,
    /// The number of the next version.
    next: u32,
}

impl VersionedPlan {
    /// A plan with one version, after validating it.
    ///
    /// # Errors
    /// [`PlanError::Graph`] for an invalid plan.
    pub fn new(plan: JobGraphJson) -> Result<VersionedPlan, PlanError> {
        JobGraph::from_json(&plan)?;
        Ok(VersionedPlan {
            versions: vec![Version {
                number: 1,
                parent: None,
                edit: None,
                plan: Arc::new(plan),
            }],
            next: 2,
        })
    }

    /// The newest version.
    pub fn latest(&self) -> &Version {
        // There is always at least version 1.
        &self.versions[self.versions.len() - 1]
    }

    /// All versions, oldest first.
    pub fn versions(&self) -> &[Version] {
        &self.versions
    }

    /// One version.
    ///
    /// # Errors
    /// [`PlanError::UnknownVersion`] for a number the plan does not have (never had, or
    /// removed).
    pub fn get(&self, number: u32) -> Result<&Version, PlanError> {
        self.index(number).map(|i| &self.versions[i])
    }

    fn index(&self, number: u32) -> Result<usize, PlanError> {
        self.versions
            .binary_search_by_key(&number, |v| v.number)
            .map_err(|_| PlanError::UnknownVersion {
                version: number,
                latest: self.latest().number,
            })
    }

    /// Removes version `number` and returns it. Versions edited from it keep it as their
    /// `parent` (the history of how they were made); the numbers of the others do not change,
    /// and the next version still gets a new number.
    ///
    /// # Errors
    /// [`PlanError::UnknownVersion`]; [`PlanError::LastVersion`] when it is the only version
    /// left (a plan has at least one: remove the plan instead).
    pub fn remove(&mut self, number: u32) -> Result<Version, PlanError> {
        let i = self.index(number)?;
        if self.versions.len() == 1 {
            return Err(PlanError::LastVersion { version: number });
        }
        Ok(self.versions.remove(i))
    }

    /// Applies an edit to version `base` (default: the newest) and adds the result as a new
    /// version, which it returns.
    ///
    /// # Errors
    /// [`PlanError::UnknownVersion`] for an unknown base; the edit's errors (see
    /// [`Edit::apply`]).
    pub fn apply(&mut self, edit: Edit, base: Option<u32>) -> Result<&Version, PlanError> {
        let base = match base {
            Some(n) => self.get(n)?,
            None => self.latest(),
        };
        let plan = edit.apply(&base.plan)?;
        let base = base.number;
        Ok(self.push_applied(base, edit, plan))
    }

    /// Adds `plan`, which must be what [`Edit::apply`] of `edit` made of version `base`, as a
    /// new version, and returns it. For the service, which applies edits outside its lock.
    pub(crate) fn push_applied(&mut self, base: u32, edit: Edit, plan: JobGraphJson) -> &Version {
        let version = Version {
            number: self.next,
            parent: Some(base),
            edit: Some(edit),
            plan: Arc::new(plan),
        };
        self.next += 1;
        self.versions.push(version);
        self.latest()
    }
}

/// What changed between two plans.
#[derive(Clone, Debug, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PlanDiff {
    /// Vertices only in the new plan.
    pub vertices_added: Vec<String>,
    /// Vertices only in the old plan.
    pub vertices_removed: Vec<String>,
    /// Vertices in both with changed fields.
    pub vertices_changed: Vec<Change>,
    /// Edges only in the new plan, as `source -> target` (with `#k` for the k-th parallel edge).
    pub edges_added: Vec<String>,
    /// Edges only in the old plan.
    pub edges_removed: Vec<String>,
    /// Edges in both with changed fields.
    pub edges_changed: Vec<Change>,
    /// Total logical connections, old and new.
    pub channels: (u64, u64),
}

/// Changed fields of one vertex or edge.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Change {
    /// The vertex id or edge name.
    pub id: String,
    /// The fields that changed.
    pub fields: Vec<FieldChange>,
}

/// One changed field.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct FieldChange {
    /// The field, e.g. `parallelism` or `operators[dedup].state[seen].ttl_ms`.
    pub field: String,
    /// The old value.
    pub old: Value,
    /// The new value.
    pub new: Value,
}

impl PlanDiff {
    /// Whether the plans are the same.
    pub fn is_empty(&self) -> bool {
        self.vertices_added.is_empty()
            && self.vertices_removed.is_empty()
            && self.vertices_changed.is_empty()
            && self.edges_added.is_empty()
            && self.edges_removed.is_empty()
            && self.edges_changed.is_empty()
    }
}

/// Total logical connections of an unvalidated plan (edges naming unknown vertices count 0).
/// O(V + E).
pub fn total_channels(plan: &JobGraphJson) -> u64 {
    let p: HashMap<&str, u32> = plan
        .vertices
        .iter()
        .map(|v| {
            // An undecided vertex (-1) counts at the default estimate.
            let p = u32::try_from(v.parallelism)
                .unwrap_or(conflux_graph::flink_plan::DEFAULT_ADAPTIVE_PARALLELISM);
            (v.id.as_str(), p)
        })
        .collect();
    plan.edges
        .iter()
        .map(|e| {
            let (Some(u), Some(d)) = (p.get(e.source.as_str()), p.get(e.target.as_str())) else {
                return 0;
            };
            let pattern = DistributionPattern::parse(&e.distribution_pattern)
                .unwrap_or(DistributionPattern::AllToAll);
            channels(pattern, *u, *d)
        })
        .sum()
}

/// Edges keyed by `source -> target` plus `#k` for the k-th edge between the same vertices.
fn keyed_edges(plan: &JobGraphJson) -> Vec<(String, &JobEdgeJson)> {
    let mut seen: HashMap<(&str, &str), usize> = HashMap::new();
    plan.edges
        .iter()
        .map(|e| {
            let k = seen.entry((&e.source, &e.target)).or_insert(0);
            let name = if *k == 0 {
                format!("{} -> {}", e.source, e.target)
            } else {
                format!("{} -> {} #{k}", e.source, e.target)
            };
            *k += 1;
            (name, e)
        })
        .collect()
}

fn push<T: Serialize + PartialEq>(out: &mut Vec<FieldChange>, field: String, old: &T, new: &T) {
    if old != new {
        out.push(FieldChange {
            field,
            old: json!(old),
            new: json!(new),
        });
    }
}

fn vertex_changes(a: &JobVertexJson, b: &JobVertexJson) -> Vec<FieldChange> {
    let mut out = Vec::new();
    push(&mut out, "name".into(), &a.name, &b.name);
    push(
        &mut out,
        "description".into(),
        &a.description,
        &b.description,
    );
    push(
        &mut out,
        "parallelism".into(),
        &a.parallelism,
        &b.parallelism,
    );
    push(
        &mut out,
        "max_parallelism".into(),
        &a.max_parallelism,
        &b.max_parallelism,
    );
    push(
        &mut out,
        "slot_sharing_group".into(),
        &a.slot_sharing_group,
        &b.slot_sharing_group,
    );
    push(
        &mut out,
        "co_location_group".into(),
        &a.co_location_group,
        &b.co_location_group,
    );
    let label =
        |o: &conflux_graph::json::OperatorJson| o.uid.clone().unwrap_or_else(|| o.name.clone());
    let names = |v: &JobVertexJson| v.operators.iter().map(label).collect::<Vec<_>>();
    push(&mut out, "operators".into(), &names(a), &names(b));
    for oa in &a.operators {
        let Some(ob) = b.operators.iter().find(|ob| label(ob) == label(oa)) else {
            continue;
        };
        let op = label(oa);
        push(
            &mut out,
            format!("operators[{op}].name"),
            &oa.name,
            &ob.name,
        );
        for sa in &oa.state {
            match ob.state.iter().find(|sb| sb.name == sa.name) {
                None => push(
                    &mut out,
                    format!("operators[{op}].state[{}]", sa.name),
                    &json!(sa),
                    &Value::Null,
                ),
                Some(sb) => {
                    let f = |k: &str| format!("operators[{op}].state[{}].{k}", sa.name);
                    push(&mut out, f("kind"), &sa.kind, &sb.kind);
                    push(&mut out, f("key_type"), &sa.key_type, &sb.key_type);
                    push(&mut out, f("value_type"), &sa.value_type, &sb.value_type);
                    push(&mut out, f("ttl_ms"), &sa.ttl_ms, &sb.ttl_ms);
                }
            }
        }
        for sb in ob
            .state
            .iter()
            .filter(|sb| !oa.state.iter().any(|sa| sa.name == sb.name))
        {
            push(
                &mut out,
                format!("operators[{op}].state[{}]", sb.name),
                &Value::Null,
                &json!(sb),
            );
        }
    }
    out
}

/// The diff of two plans: vertices by id, edges by endpoints (and position among parallel
/// edges), operators by uid else name, states by name. O(V + E + operators x states).
pub fn diff(old: &JobGraphJson, new: &JobGraphJson) -> PlanDiff {
    let mut d = PlanDiff {
        channels: (total_channels(old), total_channels(new)),
        ..PlanDiff::default()
    };
    let new_vertices: HashMap<&str, &JobVertexJson> =
        new.vertices.iter().map(|v| (v.id.as_str(), v)).collect();
    let old_vertices: HashMap<&str, &JobVertexJson> =
        old.vertices.iter().map(|v| (v.id.as_str(), v)).collect();
    for a in &old.vertices {
        match new_vertices.get(a.id.as_str()) {
            None => d.vertices_removed.push(a.id.clone()),
            Some(b) => {
                let fields = vertex_changes(a, b);
                if !fields.is_empty() {
                    d.vertices_changed.push(Change {
                        id: a.id.clone(),
                        fields,
                    });
                }
            }
        }
    }
    d.vertices_added = new
        .vertices
        .iter()
        .filter(|v| !old_vertices.contains_key(v.id.as_str()))
        .map(|v| v.id.clone())
        .collect();
    let old_edges = keyed_edges(old);
    let new_edges = keyed_edges(new);
    let new_by_name: HashMap<&str, &JobEdgeJson> =
        new_edges.iter().map(|(n, e)| (n.as_str(), *e)).collect();
    let old_by_name: HashMap<&str, &JobEdgeJson> =
        old_edges.iter().map(|(n, e)| (n.as_str(), *e)).collect();
    for (name, a) in &old_edges {
        match new_by_name.get(name.as_str()) {
            None => d.edges_removed.push(name.clone()),
            Some(b) => {
                let mut fields = Vec::new();
                push(
                    &mut fields,
                    "distribution_pattern".into(),
                    &a.distribution_pattern,
                    &b.distribution_pattern,
                );
                push(
                    &mut fields,
                    "result_partition_type".into(),
                    &a.result_partition_type,
                    &b.result_partition_type,
                );
                push(
                    &mut fields,
                    "ship_strategy".into(),
                    &a.ship_strategy,
                    &b.ship_strategy,
                );
                push(&mut fields, "data_set".into(), &a.data_set, &b.data_set);
                if !fields.is_empty() {
                    d.edges_changed.push(Change {
                        id: name.clone(),
                        fields,
                    });
                }
            }
        }
    }
    d.edges_added = new_edges
        .iter()
        .filter(|(n, _)| !old_by_name.contains_key(n.as_str()))
        .map(|(n, _)| n.clone())
        .collect();
    d
}
