//! Plan endpoints: submit, list, versions, edits, diff and compatibility of two versions.
//! Parsing, edits, diffs, analyses and whole-plan answers run as computations (see
//! [`AppState::compute`]); the store's lock is only held to look up and add.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use conflux_graph::json::JobGraphJson;
use conflux_graph::load::{self, LoadOptions};
use serde_json::{json, Value};

use super::api_error::{
    bytes_response, created, json_response, to_bytes, ApiError, ApiResult, ErrorBody,
};
use super::query::{EditQuery, LoadQuery, RangeQuery, RescaleQuery};
use super::state::{release, AppState};
use super::store::plan_heap_bytes;
use crate::compat::{self, CompatOptions};
use crate::edit::Edit;
use crate::error::PlanError;
use crate::versions::{diff, total_channels, VersionedPlan};

/// A plan from job graph JSON or a Flink plan. The service stores numbers: undecided vertices
/// (`-1`) are stored at their estimate (`default_parallelism`), as it always has.
pub(super) fn parse_plan(bytes: &[u8], options: &LoadOptions) -> Result<JobGraphJson, ApiError> {
    let (mut json, _) = load::parse(bytes, options).map_err(PlanError::from)?;
    json.estimate_undecided(options.default_parallelism);
    Ok(json)
}

/// `POST /plans`.
#[utoipa::path(post, path = "/plans", tag = "plans",
    params(("parallelism" = Option<u32>, Query, description = "sets every vertex above parallelism 1 to this"),
        ("default_parallelism" = Option<u32>, Query, description = "parallelism of Flink's -1 vertices (default 128)")),
    request_body(content = Object, description = "job graph JSON or Flink's JSON plan (`/jobs/<id>/plan`)"),
    responses((status = 201, description = "`{id, name, version: 1}`; `Location: /v1/plans/{id}`", body = Object),
        (status = "4XX", description = "the problem, named", body = ErrorBody), (status = 507, description = "too many plans, or over the memory budget", body = ErrorBody)))]
pub(super) async fn submit(
    State(state): State<Arc<AppState>>,
    query: Result<Query<LoadQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body?;
    let Query(query) = query?;
    let options = query.options()?;
    let (plan, bytes) = state
        .compute("reading the plan", move || {
            let json = parse_plan(&body, &options)?;
            let bytes = plan_heap_bytes(&json);
            Ok::<_, ApiError>((VersionedPlan::new(json)?, bytes))
        })
        .await??;
    let name = plan.latest().plan.name.clone();
    let id = state.next_id();
    let evicted = state.store().insert(id.clone(), plan, bytes)?;
    release(evicted);
    let location = format!("/v1/plans/{id}");
    created(&location, &json!({ "id": id, "name": name, "version": 1 }))
}

/// `DELETE /plans/{id}`: the plan, its versions and statistics are gone, and its bytes and its
/// place among the `max_plans` are free.
#[utoipa::path(delete, path = "/plans/{id}", tag = "plans", params(("id" = String, Path, description = "plan id, e.g. p1")),
    responses((status = 204, description = "deleted"), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
pub(super) async fn delete_plan(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult {
    let removed = state.store().remove(&id)?;
    release(vec![removed]);
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `DELETE /plans/{id}/versions/{version}`: that version and its statistics are gone (versions
/// edited from it keep it as their `parent`); the only version left is refused (409
/// `last_version`: delete the plan).
#[utoipa::path(delete, path = "/plans/{id}/versions/{version}", tag = "plans",
    params(("id" = String, Path, description = "plan id, e.g. p1"), ("version" = u32, Path, description = "version number")),
    responses((status = 204, description = "deleted"),
        (status = 409, description = "the plan's only version", body = ErrorBody), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
pub(super) async fn delete_version(
    State(state): State<Arc<AppState>>,
    Path((id, version)): Path<(String, String)>,
) -> ApiResult {
    let number = version_number(&version)?;
    let edits = Arc::clone(&state.store().get(&id)?.edits);
    // Not while an edit of this plan is computed (it may be based on this version).
    let _turn = edits.lock().await;
    let removed = state.store().remove_version(&id, number)?;
    drop(tokio::task::spawn_blocking(move || drop(removed)));
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET /plans`.
#[utoipa::path(get, path = "/plans", tag = "plans",
    responses((status = 200, description = "`{plans: [{id, name, versions}]}`", body = Object)))]
pub(super) async fn list_plans(State(state): State<Arc<AppState>>) -> ApiResult {
    let mut list: Vec<Value> = state
        .store()
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
#[utoipa::path(get, path = "/plans/{id}", tag = "plans", params(("id" = String, Path, description = "plan id, e.g. p1")),
    responses((status = 200, description = "`{id, name, latest, versions: [{number, parent, edit}]}`", body = Object), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
pub(super) async fn plan_summary(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult {
    let mut store = state.store();
    let s = store.get(&id)?;
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
#[utoipa::path(get, path = "/plans/{id}/versions", tag = "plans", params(("id" = String, Path, description = "plan id, e.g. p1")),
    responses((status = 200, description = "`{versions: [{number, parent, edit}]}`", body = Object), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
pub(super) async fn list_versions(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult {
    let mut store = state.store();
    let s = store.get(&id)?;
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
#[utoipa::path(get, path = "/plans/{id}/versions/{version}", tag = "plans",
    params(("id" = String, Path, description = "plan id, e.g. p1"), ("version" = u32, Path, description = "version number")),
    responses((status = 200, description = "the plan of that version (job graph JSON)", body = Object), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
pub(super) async fn get_version(
    State(state): State<Arc<AppState>>,
    Path((id, version)): Path<(String, String)>,
) -> ApiResult {
    let number = version_number(&version)?;
    let (_, plan) = state.store().version(&id, Some(number))?;
    let body = state
        .compute("writing the plan", move || to_bytes(&*plan))
        .await??;
    Ok(bytes_response(StatusCode::OK, body))
}

/// `POST /plans/{id}/edits`.
#[utoipa::path(post, path = "/plans/{id}/edits", tag = "edits",
    params(("id" = String, Path, description = "plan id, e.g. p1"), ("base" = Option<u32>, Query, description = "the version to edit (default: the latest)")),
    request_body(content = Object, description = "an edit: `{kind, ...}` (README: Edits)"),
    responses((status = 201, description = "`{id, version, parent, edit, channels}`; `Location: /v1/plans/{id}/versions/{version}`", body = Object),
        (status = 409, description = "the edit is refused, with the reason", body = ErrorBody), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
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
    let edits = Arc::clone(&state.store().get(&id)?.edits);
    // Edits of one plan apply in turn, so that an edit without base sees the version the
    // previous one made; waiting here blocks no worker.
    let _turn = edits.lock().await;
    let (base, plan) = state.store().version(&id, base)?;
    let applied = edit.clone();
    let (plan, bytes, channels) = state
        .compute("the edit", move || {
            let edited = applied.apply(&plan)?;
            let (bytes, channels) = (plan_heap_bytes(&edited), total_channels(&edited));
            Ok::<_, ApiError>((edited, bytes, channels))
        })
        .await??;
    let (answer, evicted) = {
        let mut store = state.store();
        let (v, evicted) = store.add_version(&id, base, edit, plan, bytes)?;
        let answer = json!({
            "id": id,
            "version": v.number,
            "parent": v.parent,
            "edit": v.edit,
            "channels": channels,
        });
        (answer, evicted)
    };
    release(evicted);
    let location = format!("/v1/plans/{id}/versions/{}", answer["version"]);
    created(&location, &answer)
}

/// The plans of versions `from` and `to` (defaults: see [`RangeQuery::range`]).
fn two_versions(
    state: &AppState,
    id: &str,
    query: &RangeQuery,
) -> Result<(u32, Arc<JobGraphJson>, u32, Arc<JobGraphJson>), ApiError> {
    let mut store = state.store();
    let s = store.get(id)?;
    let (from, to) = query.range(s.plan.latest().number)?;
    Ok((
        from,
        Arc::clone(&s.plan.get(from)?.plan),
        to,
        Arc::clone(&s.plan.get(to)?.plan),
    ))
}

/// `GET /plans/{id}/diff`.
#[utoipa::path(get, path = "/plans/{id}/diff", tag = "analyses",
    params(("id" = String, Path, description = "plan id, e.g. p1"), ("from" = Option<u32>, Query, description = "default: the version before `to`"),
        ("to" = Option<u32>, Query, description = "default: the latest")),
    responses((status = 200, description = "`{from, to, diff}`", body = Object), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
pub(super) async fn diff_versions(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    query: Result<Query<RangeQuery>, QueryRejection>,
) -> ApiResult {
    let Query(query) = query?;
    let (from, old, to, new) = two_versions(&state, &id, &query)?;
    let body = state
        .compute("the diff", move || {
            to_bytes(&json!({ "from": from, "to": to, "diff": diff(&old, &new) }))
        })
        .await??;
    Ok(bytes_response(StatusCode::OK, body))
}

/// `GET /plans/{id}/compat`.
#[utoipa::path(get, path = "/plans/{id}/compat", tag = "analyses",
    params(("id" = String, Path, description = "plan id, e.g. p1"), ("from" = Option<u32>, Query, description = "default: the version before `to`"),
        ("to" = Option<u32>, Query, description = "default: the latest"),
        ("allow_non_restored_state" = Option<bool>, Query, description = "state of removed operators may be dropped")),
    responses((status = 200, description = "`{from, to, report}`", body = Object), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
pub(super) async fn compat_versions(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    query: Result<Query<RangeQuery>, QueryRejection>,
) -> ApiResult {
    let Query(query) = query?;
    let (from, old, to, new) = two_versions(&state, &id, &query)?;
    let options = CompatOptions {
        allow_non_restored_state: query.allow_non_restored_state(),
        ..CompatOptions::default()
    };
    let body = state
        .compute("the compatibility analysis", move || {
            let report = compat::analyze(&old, &new, &options)?;
            to_bytes(&json!({ "from": from, "to": to, "report": report }))
        })
        .await??;
    Ok(bytes_response(StatusCode::OK, body))
}

/// `GET /plans/{id}/rescale?vertex=v&parallelism=p[&max_parallelism=m&version=n]`: the key
/// groups of the vertex (by id or unique name) before and after, as [`crate::rescale::rescale`]
/// computes them.
#[utoipa::path(get, path = "/plans/{id}/rescale", tag = "analyses",
    params(("id" = String, Path, description = "plan id, e.g. p1"), ("vertex" = String, Query, description = "vertex id or unique name"),
        ("parallelism" = u32, Query, description = "the new parallelism"),
        ("max_parallelism" = Option<u32>, Query, description = "must be the max parallelism the state was written with"),
        ("version" = Option<u32>, Query, description = "default: the latest")),
    responses((status = 200, description = "key groups per old and new subtask, as `conflux plan rescale --format json`", body = Object),
        (status = 409, description = "refused, with the reason", body = ErrorBody), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
pub(super) async fn rescale_vertex(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    query: Result<Query<RescaleQuery>, QueryRejection>,
) -> ApiResult {
    let Query(query) = query?;
    let parts = query.parts()?;
    let (vertex, parallelism, max, version) = (
        parts.vertex.to_owned(),
        parts.parallelism,
        parts.max_parallelism,
        parts.version,
    );
    let (_, plan) = state.store().version(&id, version)?;
    let body = state
        .compute("the rescale", move || {
            to_bytes(&crate::rescale::rescale(&plan, &vertex, parallelism, max)?)
        })
        .await??;
    Ok(bytes_response(StatusCode::OK, body))
}
