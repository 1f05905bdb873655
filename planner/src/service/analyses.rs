//! Endpoints over posted documents: compatibility of two posted plans, and Flink compiled plans
//! (their states, TTL edits).

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::Query;
use axum::http::StatusCode;
use conflux_graph::load::LoadOptions;
use serde_json::{json, Value};

use super::api_error::{bytes_response, json_response, ApiError, ApiResult};
use super::plans::parse_plan;
use super::query::TtlQuery;
use crate::compat::{self, CompatOptions};
use crate::compiled::{parse_duration_ms, CompiledPlan};

/// `POST /compat` body.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CompatRequest {
    old: Value,
    new: Value,
    #[serde(default)]
    options: CompatOptions,
}

/// `POST /compat`: compiled plans when both have `flinkVersion`, else job graphs or Flink plans.
pub(super) async fn compat_plans(body: Result<Bytes, BytesRejection>) -> ApiResult {
    let body = body?;
    let req: CompatRequest = serde_json::from_slice(&body).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_body",
            format!("expected {{\"old\": plan, \"new\": plan, \"options\"?: {{...}}}}: {e}"),
        )
    })?;
    let is_compiled = |v: &Value| v.get("flinkVersion").is_some();
    let bytes = |v: &Value| serde_json::to_vec(v).unwrap_or_default();
    let report = if is_compiled(&req.old) && is_compiled(&req.new) {
        let old = CompiledPlan::parse(&bytes(&req.old))?;
        let new = CompiledPlan::parse(&bytes(&req.new))?;
        compat::analyze_compiled(&old, &new, &req.options)
    } else {
        let options = LoadOptions::default();
        let old = parse_plan(&bytes(&req.old), &options)?;
        let new = parse_plan(&bytes(&req.new), &options)?;
        compat::analyze(&old, &new, &req.options)?
    };
    json_response(StatusCode::OK, &report)
}

/// `POST /compiled-plans/states`.
pub(super) async fn compiled_states(body: Result<Bytes, BytesRejection>) -> ApiResult {
    let body = body?;
    let plan = CompiledPlan::parse(&body)?;
    json_response(
        StatusCode::OK,
        &json!({
            "flink_version": plan.flink_version(),
            "nodes": plan.node_count(),
            "stateful_operators": plan.stateful_operators(),
        }),
    )
}

/// `POST /compiled-plans/ttl?node=n&state=s&ttl=d`: the plan with that TTL, nothing else
/// changed.
pub(super) async fn compiled_ttl(
    query: Result<Query<TtlQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body?;
    let Query(query) = query?;
    let (node, state, ttl) = query.parts()?;
    let ttl = parse_duration_ms(ttl)?;
    let plan = CompiledPlan::parse(&body)?;
    let edited = plan.with_ttl(node, state, ttl)?;
    Ok(bytes_response(
        StatusCode::OK,
        Bytes::from(edited.text().to_owned()),
    ))
}
