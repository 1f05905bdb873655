//! Metric queries (`/jobs/:jobid/vertices/:vertexid/metrics`, `/taskmanagers/:id/metrics`,
//! ...) and a vertex's accumulators: Conflux keeps no Flink metric store, so the lists are
//! empty, which is what Flink answers for metrics it does not know.

use serde::Serialize;
use utoipa::ToSchema;

/// One metric of a metric query (Flink's `Metric`): `value` only when asked for by `get`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct MetricValue {
    /// The metric's name, e.g. `0.numRecordsIn`.
    pub id: String,
    /// Its value as text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// `GET /jobs/:jobid/vertices/:vertexid/accumulators` (Flink's `JobVertexAccumulatorsInfo`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct VertexAccumulators {
    /// The JobVertexID.
    pub id: String,
    /// The user's accumulators: none (Conflux's tasks have no user code).
    #[serde(rename = "user-accumulators")]
    pub user_accumulators: Vec<UserAccumulator>,
}

/// A user accumulator (Flink's `UserAccumulator`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct UserAccumulator {
    /// Its name.
    pub name: String,
    /// Its type, a Java class name.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its value as text.
    pub value: String,
}
