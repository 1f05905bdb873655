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

use super::answers::{
    CompatAnswer, DiffAnswer, EditApplied, PlanCreated, PlanEntry, PlanList, PlanSummary,
    StorablePlan, VersionList,
};
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

/// `POST /v1/plans`: store a plan as version 1 of a new plan id.
#[utoipa::path(post, path = "/plans", tag = "plans",
    params(("parallelism" = Option<u32>, Query, description = "sets every vertex above parallelism 1 to this"),
        ("default_parallelism" = Option<u32>, Query, description = "parallelism of Flink's -1 vertices (default 128)")),
    request_body(content = StorablePlan, description = "job graph JSON or Flink's JSON plan (`/jobs/<id>/plan`)",
        example = json!({"name": "word count", "job_type": "batch",
            "vertices": [{"id": "source", "parallelism": 4}, {"id": "count", "parallelism": 4}],
            "edges": [{"source": "source", "target": "count", "distribution_pattern": "all_to_all",
                       "result_partition_type": "blocking", "ship_strategy": "HASH[word]"}]})),
    responses((status = 201, description = "the stored plan; `Location: /v1/plans/{id}`", body = PlanCreated),
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
    created(
        &location,
        &PlanCreated {
            id,
            name,
            version: 1,
        },
    )
}

/// `DELETE /v1/plans/{id}`: delete a plan.
///
/// The plan, its versions and statistics are gone, and its bytes and its
/// place among the `max_plans` are free.
#[utoipa::path(delete, path = "/plans/{id}", tag = "plans", params(("id" = String, Path, description = "plan id, e.g. p2", example = "p2")),
    responses((status = 204, description = "deleted"), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
pub(super) async fn delete_plan(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult {
    let removed = state.store().remove(&id)?;
    release(vec![removed]);
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `DELETE /v1/plans/{id}/versions/{version}`: delete a version.
///
/// That version and its statistics are gone (versions
/// edited from it keep it as their `parent`); the only version left is refused (409
/// `last_version`: delete the plan).
#[utoipa::path(delete, path = "/plans/{id}/versions/{version}", tag = "plans",
    params(("id" = String, Path, description = "plan id, e.g. p1", example = "p1"), ("version" = u32, Path, description = "version number", example = 1)),
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

/// `GET /v1/plans`: the stored plans.
#[utoipa::path(get, path = "/plans", tag = "plans",
    responses((status = 200, description = "every stored plan, by id", body = PlanList)))]
pub(super) async fn list_plans(State(state): State<Arc<AppState>>) -> ApiResult {
    let mut plans: Vec<PlanEntry> = state
        .store()
        .iter()
        .map(|(id, s)| PlanEntry {
            id: id.clone(),
            name: s.plan.latest().plan.name.clone(),
            versions: s.plan.latest().number,
        })
        .collect();
    plans.sort_by(|a, b| a.id.cmp(&b.id));
    json_response(StatusCode::OK, &PlanList { plans })
}

/// `GET /v1/plans/{id}`: a plan and its versions.
#[utoipa::path(get, path = "/plans/{id}", tag = "plans", params(("id" = String, Path, description = "plan id, e.g. p1", example = "p1")),
    responses((status = 200, description = "the plan's latest version and every version", body = PlanSummary), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
pub(super) async fn plan_summary(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult {
    let mut store = state.store();
    let s = store.get(&id)?;
    let latest = s.plan.latest();
    json_response(
        StatusCode::OK,
        &PlanSummary {
            name: latest.plan.name.clone(),
            latest: latest.number,
            versions: s.plan.versions().to_vec(),
            id,
        },
    )
}

/// `GET /v1/plans/{id}/versions`: a plan's versions.
#[utoipa::path(get, path = "/plans/{id}/versions", tag = "plans", params(("id" = String, Path, description = "plan id, e.g. p1", example = "p1")),
    responses((status = 200, description = "the versions, oldest first", body = VersionList), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
pub(super) async fn list_versions(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult {
    let mut store = state.store();
    let s = store.get(&id)?;
    json_response(
        StatusCode::OK,
        &VersionList {
            versions: s.plan.versions().to_vec(),
        },
    )
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

/// `GET /v1/plans/{id}/versions/{version}`: the plan of a version.
#[utoipa::path(get, path = "/plans/{id}/versions/{version}", tag = "plans",
    params(("id" = String, Path, description = "plan id, e.g. p1", example = "p1"), ("version" = u32, Path, description = "version number", example = 1)),
    responses((status = 200, description = "the plan of that version (job graph JSON)", body = JobGraphJson), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
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

/// `POST /v1/plans/{id}/edits`: apply an edit, making a new version.
#[utoipa::path(post, path = "/plans/{id}/edits", tag = "edits",
    params(("id" = String, Path, description = "plan id, e.g. p1", example = "p1"), ("base" = Option<u32>, Query, description = "the version to edit (default: the latest)")),
    request_body(content = Edit, description = "an edit: `{kind, ...}`",
        example = json!({"kind": "set_parallelism", "vertex": "count", "parallelism": 3})),
    responses((status = 201, description = "the new version; `Location: /v1/plans/{id}/versions/{version}`", body = EditApplied),
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
        let answer = EditApplied {
            id: id.clone(),
            version: v.number,
            parent: v.parent,
            edit: v.edit.clone(),
            channels,
        };
        (answer, evicted)
    };
    release(evicted);
    let location = format!("/v1/plans/{id}/versions/{}", answer.version);
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

/// `GET /v1/plans/{id}/diff`: what changed between two versions.
#[utoipa::path(get, path = "/plans/{id}/diff", tag = "analyses",
    params(("id" = String, Path, description = "plan id, e.g. p1", example = "p1"), ("from" = Option<u32>, Query, description = "default: the version before `to`"),
        ("to" = Option<u32>, Query, description = "default: the latest")),
    responses((status = 200, description = "the two versions and what changed", body = DiffAnswer), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
pub(super) async fn diff_versions(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    query: Result<Query<RangeQuery>, QueryRejection>,
) -> ApiResult {
    let Query(query) = query?;
    let (from, old, to, new) = two_versions(&state, &id, &query)?;
    let body = state
        .compute("the diff", move || {
            to_bytes(&DiffAnswer {
                from,
                to,
                diff: diff(&old, &new),
            })
        })
        .await??;
    Ok(bytes_response(StatusCode::OK, body))
}

/// `GET /v1/plans/{id}/compat`: whether a version restores an older version's state.
#[utoipa::path(get, path = "/plans/{id}/compat", tag = "analyses",
    params(("id" = String, Path, description = "plan id, e.g. p1", example = "p1"), ("from" = Option<u32>, Query, description = "default: the version before `to`"),
        ("to" = Option<u32>, Query, description = "default: the latest"),
        ("allow_non_restored_state" = Option<bool>, Query, description = "state of removed operators may be dropped")),
    responses((status = 200, description = "the two versions and the compatibility report", body = CompatAnswer), (status = "4XX", description = "the problem, named", body = ErrorBody)))]
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
            to_bytes(&CompatAnswer { from, to, report })
        })
        .await??;
    Ok(bytes_response(StatusCode::OK, body))
}

/// `GET /v1/plans/{id}/rescale`: a vertex's key groups before and after a parallelism change.
///
/// The vertex is named by id or unique name; the answer is what `conflux plan rescale --format
/// json` prints.
#[utoipa::path(get, path = "/plans/{id}/rescale", tag = "analyses",
    params(("id" = String, Path, description = "plan id, e.g. p1", example = "p1"), ("vertex" = String, Query, description = "vertex id or unique name", example = "count"),
        ("parallelism" = u32, Query, description = "the new parallelism", example = 3),
        ("max_parallelism" = Option<u32>, Query, description = "must be the max parallelism the state was written with"),
        ("version" = Option<u32>, Query, description = "default: the latest")),
    responses((status = 200, description = "key groups per old and new subtask, as `conflux plan rescale --format json`", body = crate::rescale::Rescale),
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
