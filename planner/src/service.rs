//! The HTTP planning service (`conflux serve`): the synchronous planning core behind JSON
//! endpoints (axum on tokio). Plans live in memory; statistics are computed once per version
//! (on a blocking thread) and served from a cache afterwards.
//!
//! Every error is `{"error": "...", "code": "..."}` with a 4xx status naming the problem (5xx
//! only for bugs). Request bodies are capped ([`ServiceConfig::max_body_bytes`]). The README
//! lists the endpoints.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use conflux_graph::json::JobGraphJson;
use conflux_graph::load::{self, LoadOptions};
use conflux_graph::{ExecutionGraph, JobGraph, PipelinedRegions};
use serde::Serialize;
use serde_json::{json, Value};

use crate::compat::{self, CompatOptions};
use crate::compiled::{parse_duration_ms, CompiledPlan};
use crate::edit::Edit;
use crate::error::PlanError;
use crate::stats::{PlanStats, StatsConfig};
use crate::versions::{diff, VersionedPlan};

/// Settings of the service.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// Where to listen; port 0 picks a free port. Default `127.0.0.1:8088` (loopback only).
    pub address: SocketAddr,
    /// Largest request body accepted, in bytes (default 16 MiB); larger bodies get 413.
    pub max_body_bytes: usize,
    /// Most plans kept (default 1,000); submitting more gets 507.
    pub max_plans: usize,
    /// Settings of the statistics.
    pub stats: StatsConfig,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            address: SocketAddr::from(([127, 0, 0, 1], 8088)),
            max_body_bytes: 16 << 20,
            max_plans: 1000,
            stats: StatsConfig::default(),
        }
    }
}

/// An error answer: status, a stable code and a message naming the problem.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }
}

impl From<PlanError> for ApiError {
    fn from(e: PlanError) -> Self {
        let (status, code) = match &e {
            PlanError::Graph(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_plan"),
            PlanError::UnknownVertex(_)
            | PlanError::UnknownEdge { .. }
            | PlanError::UnknownOperator { .. }
            | PlanError::UnknownState { .. } => (StatusCode::NOT_FOUND, "unknown_item"),
            PlanError::UnknownVersion { .. } => (StatusCode::NOT_FOUND, "unknown_version"),
            PlanError::Refused { .. } => (StatusCode::CONFLICT, "edit_refused"),
            PlanError::CompiledPlan(_) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "invalid_compiled_plan")
            }
            PlanError::Duration { .. } => (StatusCode::BAD_REQUEST, "invalid_duration"),
            PlanError::Descriptors { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "bug"),
        };
        ApiError::new(status, code, e.to_string())
    }
}

impl From<BytesRejection> for ApiError {
    fn from(r: BytesRejection) -> Self {
        let status = r.status();
        let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "body_too_large"
        } else {
            "bad_body"
        };
        ApiError::new(status, code, r.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({ "error": self.message, "code": self.code }).to_string();
        (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response()
    }
}

type ApiResult = Result<Response, ApiError>;

fn json_response(status: StatusCode, value: &impl Serialize) -> ApiResult {
    let body = serde_json::to_vec(value).map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "bug",
            format!("bug: response does not serialise: {e}"),
        )
    })?;
    Ok(bytes_response(status, Bytes::from(body)))
}

fn bytes_response(status: StatusCode, body: Bytes) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Statistics and regions of one version, serialised once.
struct Cached {
    stats: Bytes,
    regions: Bytes,
}

struct Stored {
    plan: VersionedPlan,
    cache: HashMap<u32, Arc<Cached>>,
}

struct AppState {
    config: ServiceConfig,
    plans: Mutex<HashMap<String, Stored>>,
    next_id: Mutex<u64>,
}

impl AppState {
    fn plans(&self) -> std::sync::MutexGuard<'_, HashMap<String, Stored>> {
        // A panic while holding the lock cannot leave a plan half-edited (edits build a new
        // version before pushing it), so a poisoned map is still consistent.
        self.plans.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The service's routes, with a fresh in-memory store.
pub fn router(config: ServiceConfig) -> Router {
    let limit = config.max_body_bytes;
    let state = Arc::new(AppState {
        config,
        plans: Mutex::new(HashMap::new()),
        next_id: Mutex::new(1),
    });
    Router::new()
        .route(
            "/health",
            get(|| async {
                bytes_response(StatusCode::OK, Bytes::from_static(br#"{"status":"ok"}"#))
            }),
        )
        .route("/plans", post(submit).get(list_plans))
        .route("/plans/{id}", get(plan_summary))
        .route("/plans/{id}/versions", get(list_versions))
        .route("/plans/{id}/versions/{version}", get(get_version))
        .route("/plans/{id}/stats", get(stats))
        .route("/plans/{id}/regions", get(regions))
        .route("/plans/{id}/edits", post(apply_edit))
        .route("/plans/{id}/diff", get(diff_versions))
        .route("/plans/{id}/compat", get(compat_versions))
        .route("/compat", post(compat_plans))
        .route("/compiled-plans/states", post(compiled_states))
        .route("/compiled-plans/ttl", post(compiled_ttl))
        .fallback(|| async {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "unknown_endpoint",
                "no such endpoint (see the README's endpoint table)",
            )
        })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this endpoint does not take this method",
            )
        })
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

/// Serves the planning API on `listener` until `shutdown` completes.
///
/// # Errors
/// The listener's I/O error.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: ServiceConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = {
        use axum::serve::ListenerExt;
        // Small requests must not wait for Nagle's algorithm.
        listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        })
    };
    axum::serve(listener, router(config))
        .with_graceful_shutdown(shutdown)
        .await
}

/// A service running on a thread of its own with its own tokio runtime (for the CLI, tests and
/// benchmarks that are not async themselves). Stops when dropped.
#[derive(Debug)]
pub struct RunningService {
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunningService {
    /// Binds `config.address` and starts serving.
    ///
    /// # Errors
    /// The I/O error of creating the runtime or binding the address (naming it).
    pub fn start(config: ServiceConfig) -> std::io::Result<RunningService> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let address = config.address;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(address))
            .map_err(|e| std::io::Error::new(e.kind(), format!("binding {address}: {e}")))?;
        let addr = listener.local_addr()?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("conflux-planner".to_owned())
            .spawn(move || {
                let _ = runtime.block_on(serve(listener, config, async {
                    let _ = rx.await;
                }));
            })?;
        Ok(RunningService {
            addr,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Blocks until the service stops (it only stops when told to).
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for RunningService {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `a=1&b=x%20y` -> pairs, percent- and plus-decoded.
fn query_pairs(query: Option<&str>) -> HashMap<String, String> {
    fn decode(s: &str) -> String {
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < b.len() => match u8::from_str_radix(&s[i + 1..i + 3], 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                },
                c => out.push(c),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    query
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

fn query_u32(q: &HashMap<String, String>, key: &str) -> Result<Option<u32>, ApiError> {
    q.get(key)
        .map(|v| {
            v.parse::<u32>().map_err(|_| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "bad_query",
                    format!("query parameter '{key}': '{v}' is not a whole number"),
                )
            })
        })
        .transpose()
}

fn unknown_plan(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "unknown_plan",
        format!("unknown plan '{id}'"),
    )
}

fn load_options(q: &HashMap<String, String>) -> Result<LoadOptions, ApiError> {
    let mut options = LoadOptions::default();
    if let Some(p) = query_u32(q, "parallelism")? {
        if p == 0 {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_query",
                "query parameter 'parallelism' must be at least 1",
            ));
        }
        options.parallelism = Some(p);
    }
    if let Some(p) = query_u32(q, "default_parallelism")? {
        options.default_parallelism = p.max(1);
    }
    Ok(options)
}

fn parse_plan(bytes: &[u8], options: &LoadOptions) -> Result<JobGraphJson, ApiError> {
    let (json, _) = load::parse(bytes, options).map_err(PlanError::from)?;
    Ok(json)
}

async fn submit(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body?;
    let q = query_pairs(query.as_deref());
    let json = parse_plan(&body, &load_options(&q)?)?;
    let plan = VersionedPlan::new(json)?;
    let name = plan.latest().plan.name.clone();
    let id = {
        let mut next = state.next_id.lock().unwrap_or_else(PoisonError::into_inner);
        let id = format!("p{}", *next);
        *next += 1;
        id
    };
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

async fn list_plans(State(state): State<Arc<AppState>>) -> ApiResult {
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

async fn plan_summary(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult {
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

async fn list_versions(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult {
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

async fn get_version(
    State(state): State<Arc<AppState>>,
    Path((id, version)): Path<(String, String)>,
) -> ApiResult {
    let number = version_number(&version)?;
    let plans = state.plans();
    let s = plans.get(&id).ok_or_else(|| unknown_plan(&id))?;
    json_response(StatusCode::OK, &s.plan.get(number)?.plan)
}

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

fn to_bytes(value: &impl Serialize) -> Result<Bytes, ApiError> {
    serde_json::to_vec(value).map(Bytes::from).map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "bug",
            format!("bug: statistics do not serialise: {e}"),
        )
    })
}

/// Statistics and regions of a plan: O(V + E + N), see [`PlanStats::compute`].
fn compute_cached(plan: &JobGraphJson, config: &StatsConfig) -> Result<Cached, ApiError> {
    let job = JobGraph::from_json(plan).map_err(PlanError::from)?;
    let graph = ExecutionGraph::build(job).map_err(PlanError::from)?;
    let regions = PipelinedRegions::compute(&graph).map_err(PlanError::from)?;
    let stats = PlanStats::of_graph(&graph, &regions, config)?;
    let mut histogram: std::collections::BTreeMap<u32, u64> = std::collections::BTreeMap::new();
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
        .map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "bug",
                format!("bug: statistics task failed: {e}"),
            )
        })??;
    let computed = Arc::new(computed);
    if let Some(s) = state.plans().get_mut(id) {
        s.cache.insert(number, Arc::clone(&computed));
    }
    Ok(computed)
}

async fn stats(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let q = query_pairs(query.as_deref());
    let c = cached(&state, &id, query_u32(&q, "version")?).await?;
    Ok(bytes_response(StatusCode::OK, c.stats.clone()))
}

async fn regions(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let q = query_pairs(query.as_deref());
    let c = cached(&state, &id, query_u32(&q, "version")?).await?;
    Ok(bytes_response(StatusCode::OK, c.regions.clone()))
}

async fn apply_edit(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body?;
    let q = query_pairs(query.as_deref());
    let edit: Edit = serde_json::from_slice(&body).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_edit",
            format!("invalid edit: {e}"),
        )
    })?;
    let base = query_u32(&q, "base")?;
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
            "channels": crate::versions::total_channels(&v.plan),
        }),
    )
}

fn from_to(q: &HashMap<String, String>, latest: u32) -> Result<(u32, u32), ApiError> {
    let to = query_u32(q, "to")?.unwrap_or(latest);
    let from = query_u32(q, "from")?.unwrap_or_else(|| to.saturating_sub(1).max(1));
    Ok((from, to))
}

async fn diff_versions(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let q = query_pairs(query.as_deref());
    let plans = state.plans();
    let s = plans.get(&id).ok_or_else(|| unknown_plan(&id))?;
    let (from, to) = from_to(&q, s.plan.latest().number)?;
    let d = diff(&s.plan.get(from)?.plan, &s.plan.get(to)?.plan);
    json_response(
        StatusCode::OK,
        &json!({ "from": from, "to": to, "diff": d }),
    )
}

async fn compat_versions(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let q = query_pairs(query.as_deref());
    let (old, new, from, to) = {
        let plans = state.plans();
        let s = plans.get(&id).ok_or_else(|| unknown_plan(&id))?;
        let (from, to) = from_to(&q, s.plan.latest().number)?;
        (
            s.plan.get(from)?.plan.clone(),
            s.plan.get(to)?.plan.clone(),
            from,
            to,
        )
    };
    let options = CompatOptions {
        allow_non_restored_state: q
            .get("allow_non_restored_state")
            .is_some_and(|v| v == "true" || v.is_empty()),
        ..CompatOptions::default()
    };
    let report = compat::analyze(&old, &new, &options)?;
    json_response(
        StatusCode::OK,
        &json!({ "from": from, "to": to, "report": report }),
    )
}

/// `POST /compat` body.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CompatRequest {
    old: Value,
    new: Value,
    #[serde(default)]
    options: CompatOptions,
}

async fn compat_plans(body: Result<Bytes, BytesRejection>) -> ApiResult {
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

async fn compiled_states(body: Result<Bytes, BytesRejection>) -> ApiResult {
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

async fn compiled_ttl(RawQuery(query): RawQuery, body: Result<Bytes, BytesRejection>) -> ApiResult {
    let body = body?;
    let q = query_pairs(query.as_deref());
    let need = |key: &str| {
        q.get(key).cloned().ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_query",
                format!("query parameter '{key}' is missing (node, state, ttl)"),
            )
        })
    };
    let node_text = need("node")?;
    let node: i64 = node_text.parse().map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_query",
            format!("query parameter 'node': '{node_text}' is not a node id"),
        )
    })?;
    let ttl = parse_duration_ms(&need("ttl")?)?;
    let plan = CompiledPlan::parse(&body)?;
    let edited = plan.with_ttl(node, &need("state")?, ttl)?;
    Ok(bytes_response(
        StatusCode::OK,
        Bytes::from(edited.text().to_owned()),
    ))
}
