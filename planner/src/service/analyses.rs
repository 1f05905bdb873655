//! Endpoints over posted documents: compatibility of two posted plans, and Flink compiled plans
//! (their states, TTL edits).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use conflux_graph::load::LoadOptions;
use serde_json::Value;

use super::answers::{CompatRequest, CompiledPlanDocument, CompiledStates};
use super::api_error::{bytes_response, to_bytes, ApiError, ApiResult, ErrorBody};
use super::plans::parse_plan;
use super::query::TtlQuery;
use super::state::AppState;
use crate::compat::{self, CompatReport};
use crate::compiled::{parse_duration_ms, CompiledPlan};

/// `POST /v1/compat`: whether one posted plan restores another's state.
///
/// Compiled plans when both have `flinkVersion`, else job graphs or Flink plans.
#[utoipa::path(post, path = "/compat", tag = "analyses",
    request_body(content = CompatRequest, description = "the old and the new plan, and the options"),
    responses((status = 200, description = "the compatibility report", body = CompatReport), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
pub(super) async fn compat_plans(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body?;
    let report = state
        .compute("the compatibility analysis", move || compat_of(&body))
        .await??;
    Ok(bytes_response(StatusCode::OK, report))
}

/// The compatibility report of a `POST /compat` body, as JSON.
fn compat_of(body: &[u8]) -> Result<Bytes, ApiError> {
    let req: CompatRequest = serde_json::from_slice(body).map_err(|e| {
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
    to_bytes(&report)
}

/// `POST /v1/compiled-plans/states`: the stateful ExecNodes of a compiled plan.
#[utoipa::path(post, path = "/compiled-plans/states", tag = "compiled plans",
    request_body(content = CompiledPlanDocument, description = "a Flink compiled plan (COMPILE PLAN)"),
    responses((status = 200, description = "the plan's version, its ExecNodes, and the stateful ones with their states", body = CompiledStates), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
pub(super) async fn compiled_states(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body?;
    let answer = state
        .compute("reading the compiled plan", move || {
            let plan = CompiledPlan::parse(&body)?;
            to_bytes(&CompiledStates {
                flink_version: plan.flink_version().map(str::to_owned),
                nodes: plan.node_count(),
                stateful_operators: plan.stateful_operators().to_vec(),
            })
        })
        .await??;
    Ok(bytes_response(StatusCode::OK, answer))
}

/// `POST /v1/compiled-plans/ttl`: a compiled plan with one state's TTL changed.
///
/// Nothing else changes: the answer is the posted plan byte for byte apart from that value.
#[utoipa::path(post, path = "/compiled-plans/ttl", tag = "compiled plans",
    params(("node" = i64, Query, description = "ExecNode id"), ("state" = String, Query, description = "state name"),
        ("ttl" = String, Query, description = "Flink duration, e.g. `1 h`")),
    request_body(content = CompiledPlanDocument, description = "a Flink compiled plan"),
    responses((status = 200, description = "the compiled plan with that TTL changed, nothing else", body = CompiledPlanDocument), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
pub(super) async fn compiled_ttl(
    State(state): State<Arc<AppState>>,
    query: Result<Query<TtlQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body?;
    let Query(query) = query?;
    let (node, name, ttl) = query.parts()?;
    let (name, ttl) = (name.to_owned(), parse_duration_ms(ttl)?);
    let edited = state
        .compute("the TTL edit", move || {
            let plan = CompiledPlan::parse(&body)?;
            let edited = plan.with_ttl(node, &name, ttl)?;
            Ok::<_, ApiError>(Bytes::from(edited.text().to_owned()))
        })
        .await??;
    Ok(bytes_response(StatusCode::OK, edited))
}
