//! Statistics endpoints: `GET /plans/{id}/stats` and `/regions`, computed once per version as
//! a computation (see [`AppState::compute`]) and served from the cache afterwards; concurrent
//! requests for the same version share that one computation.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use conflux_graph::json::JobGraphJson;
use conflux_graph::{ExecutionGraph, Idx, JobGraph, LogicalRegionIndex, PipelinedRegions};

use super::answers::{RegionSize, Regions};
use super::api_error::{bytes_response, to_bytes, ApiError, ApiResult, ErrorBody};
use super::query::VersionQuery;
use super::state::{release, AppState};
use super::store::Cached;
use crate::error::PlanError;
use crate::stats::{PlanStats, StatsConfig};

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
    let sizes: Vec<RegionSize> = histogram
        .iter()
        .map(|(&size, &count)| RegionSize { size, count })
        .collect();
    // The job vertices of each logical region (region index = position), by id, for the
    // plan viewer's colours: the numbering of `inspect` and the scheduler (regions by first
    // vertex in topological order, members in topological order), whatever the plan's order.
    let logical = regions.logical();
    let job = graph.job_graph();
    let members: Vec<Vec<String>> = (0..logical.len())
        .map(|r| {
            logical
                .members(LogicalRegionIndex::from_usize(r))
                .map(|v| job.vertex_id(v).to_owned())
                .collect()
        })
        .collect();
    let regions_json = Regions {
        count: stats.regions.count,
        largest: stats.regions.largest,
        logical: stats.regions.logical,
        sizes,
        logical_regions: members,
    };
    Ok(Cached {
        stats: to_bytes(&stats)?,
        regions: to_bytes(&regions_json)?,
    })
}

/// The statistics of a version (default: the latest): from the cache, or computed once by the
/// first request while identical requests wait for it.
async fn cached(
    state: &Arc<AppState>,
    id: &str,
    version: Option<u32>,
) -> Result<Arc<Cached>, ApiError> {
    let (cell, number, plan) = {
        let mut store = state.store();
        let (number, plan) = store.version(id, version)?;
        (store.stats_cell(id, number)?, number, plan)
    };
    let name = plan.name.clone();
    let cached = cell
        .get_or_try_init(|| async {
            let config = state.config.stats;
            let computed = state
                .compute("statistics", move || compute_cached(&plan, &config))
                .await??;
            tracing::info!(
                plan = %id,
                version = number,
                name = %name,
                bytes = computed.stats.len() + computed.regions.len(),
                "statistics computed"
            );
            release(state.store().charge_stats(id, number, &computed));
            Ok::<_, ApiError>(Arc::new(computed))
        })
        .await?;
    Ok(Arc::clone(cached))
}

/// `GET /v1/plans/{id}/stats`: a version's statistics.
#[utoipa::path(get, path = "/plans/{id}/stats", tag = "statistics",
    params(("id" = String, Path, description = "plan id, e.g. p1", example = "p1"),
        ("version" = Option<u32>, Query, description = "version number (default: the latest)")),
    responses((status = 200, description = "statistics, as `conflux plan stats --format json`", body = crate::stats::PlanStats),
        (status = "4XX", description = "unknown plan or version, bad query", body = ErrorBody)))]
pub(super) async fn stats(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    query: Result<Query<VersionQuery>, QueryRejection>,
) -> ApiResult {
    let Query(query) = query?;
    let c = cached(&state, &id, query.version()?).await?;
    Ok(bytes_response(StatusCode::OK, c.stats.clone()))
}

/// `GET /v1/plans/{id}/regions`: a version's pipelined regions.
#[utoipa::path(get, path = "/plans/{id}/regions", tag = "statistics",
    params(("id" = String, Path, description = "plan id, e.g. p1", example = "p1"),
        ("version" = Option<u32>, Query, description = "version number (default: the latest)")),
    responses((status = 200, description = "scheduling regions by size and the job vertices of each logical region", body = Regions),
        (status = "4XX", description = "unknown plan or version, bad query", body = ErrorBody)))]
pub(super) async fn regions(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    query: Result<Query<VersionQuery>, QueryRejection>,
) -> ApiResult {
    let Query(query) = query?;
    let c = cached(&state, &id, query.version()?).await?;
    Ok(bytes_response(StatusCode::OK, c.regions.clone()))
}
