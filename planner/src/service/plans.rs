//! Plan endpoints: submit, list, versions, edits, diff and compatibility of two versions.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use conflux_graph::json::JobGraphJson;
use conflux_graph::load::{self, LoadOptions};
use serde_json::{json, Value};

use super::api_error::{json_response, ApiError, ApiResult};
use super::query::{EditQuery, LoadQuery, RangeQuery};
use super::state::{AppState, Stored};
use crate::compat::{self, CompatOptions};
use crate::edit::Edit;
use crate::error::PlanError;
use crate::versions::{diff, total_channels, VersionedPlan};

/// A plan from job graph JSON or a Flink plan.
pub(super) fn parse_plan(bytes: &[u8], options: &LoadOptions) -> Result<JobGraphJson, ApiError> {
    let (json, _) = load::parse(bytes, options).map_err(PlanError::from)?;
    Ok(json)
}

/// 404 `unknown_plan`.
pub(super) fn unknown_plan(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "unknown_plan",
        format!("unknown plan '{id}'"),
    )
}

/// `POST /plans`.
pub(super) async fn submit(
    State(state): State<Arc<AppState>>,
    query: Result<Query<LoadQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body?;
    let Query(query) = query?;
    let json = parse_plan(&body, &query.options()?)?;
    let plan = VersionedPlan::new(json)?;
    let name = plan.latest().plan.name.clone();
    let id = state.next_id();
    {
        let mut plans = state.plans();
        if plans.len() >= state.config.max_plans {
            return Err(ApiError::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "too_many_plans",
                format!("the service keeps at most {} plans", state.config.max_plans),
            ));
        }
        plans.insert(
            id.clone(),
            Stored {
                plan,
                cache: HashMap::new(),
            },
        );
    }
    json_response(
        StatusCode::CREATED,
        &json!({ "id": id, "name": name, "version": 1 }),
    )
}

/// `GET /plans`.
pub(super) async fn list_plans(State(state): State<Arc<AppState>>) -> ApiResult {
    let plans = state.plans();
    let mut list: Vec<Value> = plans
        .iter()
        .map(|(id, s)| {
            json!({
                "id": id,
                "name": s.plan.latest().plan.name,
                "versions": s.plan.latest().number,
            })
        })
        .collect();
    list.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    json_response(StatusCode::OK, &json!({ "plans": list }))
}

/// `GET /plans/{id}`.
pub(super) async fn plan_summary(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult {
    let plans = state.plans();
    let s = plans.get(&id).ok_or_else(|| unknown_plan(&id))?;
    let latest = s.plan.latest();
    json_response(
        StatusCode::OK,
        &json!({
            "id": id,
            "name": latest.plan.name,
            "latest": latest.number,
            "versions": s.plan.versions(),
        }),
    )
}

/// `GET /plans/{id}/versions`.
pub(super) async fn list_versions(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult {
    let plans = state.plans();
    let s = plans.get(&id).ok_or_else(|| unknown_plan(&id))?;
    json_response(StatusCode::OK, &json!({ "versions": s.plan.versions() }))
}

fn version_number(text: &str) -> Result<u32, ApiError> {
    text.parse().map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_version",
            format!("version '{text}' is not a whole number"),
        )
    })
}

/// `GET /plans/{id}/versions/{version}`.
pub(super) async fn get_version(
    State(state): State<Arc<AppState>>,
    Path((id, version)): Path<(String, String)>,
) -> ApiResult {
    let number = version_number(&version)?;
    let plans = state.plans();
    let s = plans.get(&id).ok_or_else(|| unknown_plan(&id))?;
    json_response(StatusCode::OK, &s.plan.get(number)?.plan)
}

/// `POST /plans/{id}/edits`.
pub(super) async fn apply_edit(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    query: Result<Query<EditQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body?;
    let Query(query) = query?;
    let edit: Edit = serde_json::from_slice(&body).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_edit",
            format!("invalid edit: {e}"),
        )
    })?;
    let base = query.base()?;
    let mut plans = state.plans();
    let s = plans.get_mut(&id).ok_or_else(|| unknown_plan(&id))?;
    let v = s.plan.apply(edit, base)?;
    json_response(
        StatusCode::CREATED,
        &json!({
            "id": id,
            "version": v.number,
            "parent": v.parent,
            "edit": v.edit,
            "channels": total_channels(&v.plan),
        }),
    )
}

/// `GET /plans/{id}/diff`.
pub(super) async fn diff_versions(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    query: Result<Query<RangeQuery>, QueryRejection>,
) -> ApiResult {
    let Query(query) = query?;
    let plans = state.plans();
    let s = plans.get(&id).ok_or_else(|| unknown_plan(&id))?;
    let (from, to) = query.range(s.plan.latest().number)?;
    let d = diff(&s.plan.get(from)?.plan, &s.plan.get(to)?.plan);
    json_response(
        StatusCode::OK,
        &json!({ "from": from, "to": to, "diff": d }),
    )
}

/// `GET /plans/{id}/compat`.
pub(super) async fn compat_versions(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    query: Result<Query<RangeQuery>, QueryRejection>,
) -> ApiResult {
    let Query(query) = query?;
    let (old, new, from, to) = {
        let plans = state.plans();
        let s = plans.get(&id).ok_or_else(|| unknown_plan(&id))?;
        let (from, to) = query.range(s.plan.latest().number)?;
        (
            s.plan.get(from)?.plan.clone(),
            s.plan.get(to)?.plan.clone(),
            from,
            to,
        )
    };
    let options = CompatOptions {
        allow_non_restored_state: query.allow_non_restored_state(),
        ..CompatOptions::default()
    };
    let report = compat::analyze(&old, &new, &options)?;
    json_response(
        StatusCode::OK,
        &json!({ "from": from, "to": to, "report": report }),
    )
}
