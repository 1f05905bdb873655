//! Statistics endpoints: `GET /plans/{id}/stats` and `/regions`, computed once per version on a
//! blocking thread and served from the cache afterwards.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use conflux_graph::json::JobGraphJson;
use conflux_graph::{ExecutionGraph, JobGraph, PipelinedRegions};
use serde_json::{json, Value};

use super::api_error::{bytes_response, to_bytes, ApiError, ApiResult};
use super::plans::unknown_plan;
use super::query::VersionQuery;
use super::state::{AppState, Cached};
use crate::error::PlanError;
use crate::stats::{PlanStats, StatsConfig};

/// A version's cached statistics, or its plan to compute them from.
enum Lookup {
    Hit(Arc<Cached>),
    Miss(u32, JobGraphJson),
}

/// Looks a version (default: latest) up in the cache.
fn lookup(state: &AppState, id: &str, version: Option<u32>) -> Result<Lookup, ApiError> {
    let plans = state.plans();
    let s = plans.get(id).ok_or_else(|| unknown_plan(id))?;
    let v = match version {
        Some(n) => s.plan.get(n)?,
        None => s.plan.latest(),
    };
    Ok(match s.cache.get(&v.number) {
        Some(c) => Lookup::Hit(Arc::clone(c)),
        None => Lookup::Miss(v.number, v.plan.clone()),
    })
}

/// Statistics and regions of a plan: O(V + E + N), see [`PlanStats::compute`].
fn compute_cached(plan: &JobGraphJson, config: &StatsConfig) -> Result<Cached, ApiError> {
    let job = JobGraph::from_json(plan).map_err(PlanError::from)?;
    let graph = ExecutionGraph::build(job).map_err(PlanError::from)?;
    let regions = PipelinedRegions::compute(&graph).map_err(PlanError::from)?;
    let stats = PlanStats::of_graph(&graph, &regions, config)?;
    let mut histogram: BTreeMap<u32, u64> = BTreeMap::new();
    for size in regions.sizes() {
        *histogram.entry(size).or_insert(0) += 1;
    }
    let sizes: Vec<Value> = histogram
        .iter()
        .map(|(size, count)| json!({"size": size, "count": count}))
        .collect();
    let regions_json = json!({
        "count": stats.regions.count,
        "largest": stats.regions.largest,
        "logical": stats.regions.logical,
        "sizes": sizes,
    });
    Ok(Cached {
        stats: to_bytes(&stats)?,
        regions: to_bytes(&regions_json)?,
    })
}

async fn cached(
    state: &Arc<AppState>,
    id: &str,
    version: Option<u32>,
) -> Result<Arc<Cached>, ApiError> {
    let (number, plan) = match lookup(state, id, version)? {
        Lookup::Hit(c) => return Ok(c),
        Lookup::Miss(number, plan) => (number, plan),
    };
    let config = state.config.stats;
    let computed = tokio::task::spawn_blocking(move || compute_cached(&plan, &config))
        .await
        .map_err(|e| ApiError::bug(format!("bug: statistics task failed: {e}")))??;
    let computed = Arc::new(computed);
    if let Some(s) = state.plans().get_mut(id) {
        s.cache.insert(number, Arc::clone(&computed));
    }
    Ok(computed)
}

/// `GET /plans/{id}/stats`.
pub(super) async fn stats(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    query: Result<Query<VersionQuery>, QueryRejection>,
) -> ApiResult {
    let Query(query) = query?;
    let c = cached(&state, &id, query.version()?).await?;
    Ok(bytes_response(StatusCode::OK, c.stats.clone()))
}

/// `GET /plans/{id}/regions`.
pub(super) async fn regions(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    query: Result<Query<VersionQuery>, QueryRejection>,
) -> ApiResult {
    let Query(query) = query?;
    let c = cached(&state, &id, query.version()?).await?;
    Ok(bytes_response(StatusCode::OK, c.regions.clone()))
}
