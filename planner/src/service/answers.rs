//! The bodies the service answers with and the documents it reads, as typed values: what the
//! handlers serialise, and what the OpenAPI document describes (`utoipa::ToSchema`). Bodies the
//! service reads through its own readers (a plan in either format, a Flink compiled plan) are
//! described by the schema-only types at the end.

use std::collections::BTreeMap;

use conflux_graph::json::JobGraphJson;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::compat::{CompatOptions, CompatReport};
use crate::compiled::CompiledOperator;
use crate::edit::Edit;
use crate::versions::{PlanDiff, Version};

/// `GET /v1/health`.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct Health {
    /// Always `ok`.
    pub(super) status: &'static str,
}

/// `POST /v1/plans`: the stored plan.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct PlanCreated {
    /// Its id, e.g. `p1`.
    pub(super) id: String,
    /// The job's name.
    pub(super) name: String,
    /// Its first version: 1.
    pub(super) version: u32,
}

/// One stored plan in `GET /v1/plans`.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct PlanEntry {
    /// Its id.
    pub(super) id: String,
    /// The name of its latest version.
    pub(super) name: String,
    /// The number of its latest version.
    pub(super) versions: u32,
}

/// `GET /v1/plans`: every stored plan, by id.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct PlanList {
    /// The plans.
    pub(super) plans: Vec<PlanEntry>,
}

/// `GET /v1/plans/{id}`.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct PlanSummary {
    /// Its id.
    pub(super) id: String,
    /// The name of its latest version.
    pub(super) name: String,
    /// The number of its latest version.
    pub(super) latest: u32,
    /// Its versions, oldest first.
    pub(super) versions: Vec<Version>,
}

/// `GET /v1/plans/{id}/versions`.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct VersionList {
    /// The versions, oldest first.
    pub(super) versions: Vec<Version>,
}

/// `POST /v1/plans/{id}/edits`: the version the edit made.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct EditApplied {
    /// The plan's id.
    pub(super) id: String,
    /// The new version's number.
    pub(super) version: u32,
    /// The version it was edited from.
    pub(super) parent: Option<u32>,
    /// The edit.
    pub(super) edit: Option<Edit>,
    /// Total logical connections of the new version.
    pub(super) channels: u64,
}

/// `GET /v1/plans/{id}/diff`.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct DiffAnswer {
    /// The old version.
    pub(super) from: u32,
    /// The new version.
    pub(super) to: u32,
    /// What changed.
    pub(super) diff: PlanDiff,
}

/// `GET /v1/plans/{id}/compat`.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct CompatAnswer {
    /// The old version.
    pub(super) from: u32,
    /// The new version.
    pub(super) to: u32,
    /// Whether the new version restores the old one's state.
    pub(super) report: CompatReport,
}

/// How many scheduling regions have one size.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct RegionSize {
    /// Execution vertices per region.
    pub(super) size: u32,
    /// Regions of that size.
    pub(super) count: u64,
}

/// `GET /v1/plans/{id}/regions`.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct Regions {
    /// Scheduling (execution) regions.
    pub(super) count: usize,
    /// Execution vertices of the largest region.
    pub(super) largest: u32,
    /// Logical regions (over job vertices).
    pub(super) logical: usize,
    /// Scheduling regions by size, smallest first.
    pub(super) sizes: Vec<RegionSize>,
    /// The job vertex ids of each logical region.
    pub(super) logical_regions: Vec<Vec<String>>,
}

/// `POST /v1/compiled-plans/states`.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct CompiledStates {
    /// The plan's `flinkVersion`, when it has one.
    pub(super) flink_version: Option<String>,
    /// Its ExecNodes.
    pub(super) nodes: usize,
    /// The ExecNodes with state, and their states.
    pub(super) stateful_operators: Vec<CompiledOperator>,
}

/// `POST /v1/compat`: two plans and the options of the analysis.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CompatRequest {
    /// The old plan: job graph JSON, a Flink plan, or a Flink compiled plan.
    #[schema(value_type = PlanDocument)]
    pub(super) old: serde_json::Value,
    /// The new plan, in the same form (two compiled plans are compared as compiled plans).
    #[schema(value_type = PlanDocument)]
    pub(super) new: serde_json::Value,
    /// Renames and whether state may be dropped.
    #[serde(default)]
    pub(super) options: CompatOptions,
}

/// A plan as the service reads it: job graph JSON, Flink's JSON plan (with or without REST's
/// `{"plan": ...}` wrapper), or, where the endpoint says so, a Flink compiled plan. Read by
/// `conflux_graph::load` and the compiled plan reader; this type only describes it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum PlanDocument {
    /// Job graph JSON.
    JobGraph(JobGraphJson),
    /// Flink's JSON plan (`JsonPlanGenerator`).
    FlinkPlan(FlinkPlan),
    /// Flink's REST answer `GET /jobs/<id>/plan`.
    FlinkRestPlan(FlinkRestPlan),
    /// A Flink compiled plan (`POST /v1/compat` only).
    CompiledPlan(CompiledPlanDocument),
}

/// A plan the service stores: job graph JSON or Flink's JSON plan.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum StorablePlan {
    /// Job graph JSON.
    JobGraph(JobGraphJson),
    /// Flink's JSON plan (`JsonPlanGenerator`).
    FlinkPlan(FlinkPlan),
    /// Flink's REST answer `GET /jobs/<id>/plan`.
    FlinkRestPlan(FlinkRestPlan),
}

/// Flink's JSON plan, as far as the importer reads it (other fields are ignored).
#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)]
pub(super) struct FlinkPlan {
    /// The job's name.
    #[serde(default)]
    name: Option<String>,
    /// `STREAMING` or `BATCH` (default streaming).
    #[serde(default, rename = "type")]
    job_type: Option<String>,
    /// The job vertices.
    nodes: Vec<FlinkPlanNode>,
}

/// `{"plan": <Flink plan>}`, as Flink's REST API answers.
#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)]
pub(super) struct FlinkRestPlan {
    /// The plan.
    plan: FlinkPlan,
}

/// One node (job vertex) of a Flink plan.
#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)]
pub(super) struct FlinkPlanNode {
    /// Flink's `JobVertexID` (32 hex digits).
    id: String,
    /// At least 1, or -1 (decided at run time).
    parallelism: i64,
    /// The head operator's name.
    #[serde(default)]
    operator: Option<String>,
    /// Older plans' name.
    #[serde(default)]
    contents: Option<String>,
    /// The chained operators (HTML-escaped, lines joined by `<br/>`).
    #[serde(default)]
    description: Option<String>,
    /// Its inputs.
    #[serde(default)]
    inputs: Vec<FlinkPlanInput>,
}

/// One input of a Flink plan node.
#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)]
pub(super) struct FlinkPlanInput {
    /// Its position among the node's inputs.
    num: u32,
    /// The producing node's id.
    id: String,
    /// `FORWARD`, `HASH[...]`, `REBALANCE`, ...
    ship_strategy: String,
    /// The result partition type, lower case (`pipelined_bounded`, `blocking`, ...).
    exchange: String,
}

/// A Flink compiled plan (`COMPILE PLAN`, FLIP-190), as far as the reader reads it: other fields
/// are kept byte for byte.
#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)]
pub(super) struct CompiledPlanDocument {
    /// Flink's version, e.g. `1.20`.
    #[serde(default, rename = "flinkVersion")]
    flink_version: Option<String>,
    /// The ExecNodes; stateful ones have a `state` list.
    nodes: Vec<BTreeMap<String, serde_json::Value>>,
}
