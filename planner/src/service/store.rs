//! The service's plan store: plans, their versions and their cached statistics, kept within a
//! memory budget by evicting the least recently used plans.
//!
//! **Invariant**: the accounted bytes never exceed the budget after an operation returns; an
//! operation that cannot fit fails with 507 and changes nothing.

use std::collections::HashMap;
use std::mem::size_of;
use std::sync::Arc;

use axum::body::Bytes;
use axum::http::StatusCode;
use conflux_graph::json::{JobEdgeJson, JobGraphJson, JobVertexJson, OperatorJson, StateJson};
use tokio::sync::OnceCell;

use super::api_error::ApiError;
use crate::edit::Edit;
use crate::versions::{Version, VersionedPlan};

/// Statistics and regions of one version, serialised once.
#[derive(Debug)]
pub(super) struct Cached {
    /// `GET /plans/{id}/stats`.
    pub(super) stats: Bytes,
    /// `GET /plans/{id}/regions`.
    pub(super) regions: Bytes,
}

impl Cached {
    fn heap_bytes(&self) -> usize {
        size_of::<Cached>() + self.stats.len() + self.regions.len()
    }
}

/// The statistics of one version, filled by the first request that needs them; concurrent
/// requests wait for that one computation instead of starting their own.
pub(super) type StatsCell = Arc<OnceCell<Arc<Cached>>>;

/// A stored plan, its statistics cells by version number, and what it is charged.
#[derive(Debug)]
pub(super) struct StoredPlan {
    pub(super) plan: VersionedPlan,
    /// Held while an edit of this plan is computed: edits of one plan apply one after the
    /// other (each to the version the previous one made), without blocking readers.
    pub(super) edits: Arc<tokio::sync::Mutex<()>>,
    cache: HashMap<u32, StatsCell>,
    /// Bytes charged per version: its plan, and its statistics once charged.
    charged: HashMap<u32, usize>,
    bytes: usize,
    last_used: u64,
}

/// The plans, the bytes they are charged, and the limits.
#[derive(Debug)]
pub(super) struct Store {
    plans: HashMap<String, StoredPlan>,
    bytes: usize,
    budget: usize,
    max_plans: usize,
    clock: u64,
}

/// Plans evicted to make room, to be dropped outside the store's lock (freeing a large plan
/// takes a while).
pub(super) type Evicted = Vec<StoredPlan>;

/// 404 `unknown_plan`.
pub(super) fn unknown_plan(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "unknown_plan",
        format!("unknown plan '{id}'"),
    )
}

impl Store {
    /// An empty store with a budget of `budget` bytes and at most `max_plans` plans.
    pub(super) fn new(budget: usize, max_plans: usize) -> Store {
        Store {
            plans: HashMap::new(),
            bytes: 0,
            budget,
            max_plans,
            clock: 0,
        }
    }

    /// Bytes charged to the stored plans.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.bytes
    }

    /// Every plan, in no order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&String, &StoredPlan)> {
        self.plans.iter()
    }

    /// A plan, marked as used.
    ///
    /// # Errors
    /// 404 `unknown_plan`.
    pub(super) fn get(&mut self, id: &str) -> Result<&mut StoredPlan, ApiError> {
        self.clock += 1;
        let clock = self.clock;
        let stored = self.plans.get_mut(id).ok_or_else(|| unknown_plan(id))?;
        stored.last_used = clock;
        Ok(stored)
    }

    /// Version `number` (default: the latest) of plan `id`: its number and its plan.
    ///
    /// # Errors
    /// 404 `unknown_plan` or `unknown_version`.
    pub(super) fn version(
        &mut self,
        id: &str,
        number: Option<u32>,
    ) -> Result<(u32, Arc<JobGraphJson>), ApiError> {
        let plan = &self.get(id)?.plan;
        let v = match number {
            Some(n) => plan.get(n)?,
            None => plan.latest(),
        };
        Ok((v.number, Arc::clone(&v.plan)))
    }

    /// Stores a new plan whose versions take `bytes`.
    ///
    /// # Errors
    /// 507 `too_many_plans` at `max_plans` plans; 507 `over_memory_budget` when it does not
    /// fit even after evicting every other plan.
    pub(super) fn insert(
        &mut self,
        id: String,
        plan: VersionedPlan,
        bytes: usize,
    ) -> Result<Evicted, ApiError> {
        if self.plans.len() >= self.max_plans {
            return Err(ApiError::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "too_many_plans",
                format!("the service keeps at most {} plans", self.max_plans),
            ));
        }
        let evicted = self.make_room(bytes, None, "the plan")?;
        self.clock += 1;
        self.bytes += bytes;
        let first = plan.latest().number;
        self.plans.insert(
            id,
            StoredPlan {
                plan,
                edits: Arc::default(),
                cache: HashMap::new(),
                charged: HashMap::from([(first, bytes)]),
                bytes,
                last_used: self.clock,
            },
        );
        Ok(evicted)
    }

    /// Removes plan `id` (`DELETE /plans/{id}`): its bytes and its place among the `max_plans`
    /// are free at once. The plan is returned to be dropped outside the lock.
    ///
    /// # Errors
    /// 404 `unknown_plan`.
    pub(super) fn remove(&mut self, id: &str) -> Result<StoredPlan, ApiError> {
        let stored = self.plans.remove(id).ok_or_else(|| unknown_plan(id))?;
        self.bytes -= stored.bytes;
        Ok(stored)
    }

    /// Removes version `number` of plan `id` (`DELETE /plans/{id}/versions/{n}`) with its
    /// cached statistics, freeing the bytes they were charged. The version is returned to be
    /// dropped outside the lock.
    ///
    /// # Errors
    /// 404 `unknown_plan` / `unknown_version`; 409 `last_version` for the only version left.
    pub(super) fn remove_version(&mut self, id: &str, number: u32) -> Result<Version, ApiError> {
        let stored = self.get(id)?;
        let version = stored.plan.remove(number)?;
        stored.cache.remove(&number);
        let freed = stored.charged.remove(&number).unwrap_or(0);
        stored.bytes -= freed;
        self.bytes -= freed;
        Ok(version)
    }

    /// Adds a version made by `edit` from version `base` of plan `id`, which takes `bytes`.
    ///
    /// # Errors
    /// 404 `unknown_plan` when the plan was evicted meanwhile; 507 `over_memory_budget`.
    pub(super) fn add_version(
        &mut self,
        id: &str,
        base: u32,
        edit: Edit,
        plan: JobGraphJson,
        bytes: usize,
    ) -> Result<(&Version, Evicted), ApiError> {
        self.get(id)?;
        let evicted = self.make_room(bytes, Some(id), "the new version")?;
        self.bytes += bytes;
        let stored = self.get(id)?;
        stored.bytes += bytes;
        let version = stored.plan.push_applied(base, edit, plan);
        stored.charged.insert(version.number, bytes);
        Ok((version, evicted))
    }

    /// The statistics cell of a version of plan `id` (created empty when missing).
    ///
    /// # Errors
    /// 404 `unknown_plan`.
    pub(super) fn stats_cell(&mut self, id: &str, version: u32) -> Result<StatsCell, ApiError> {
        let stored = self.get(id)?;
        Ok(Arc::clone(stored.cache.entry(version).or_default()))
    }

    /// Charges the statistics just computed for a version of plan `id`. When they do not fit,
    /// they are dropped from the cache (the callers still get them); when the plan or the
    /// version was removed meanwhile, nothing is charged.
    pub(super) fn charge_stats(&mut self, id: &str, version: u32, cached: &Cached) -> Evicted {
        let bytes = cached.heap_bytes();
        match self.get(id) {
            Ok(stored) if stored.charged.contains_key(&version) => {}
            _ => return Evicted::new(),
        }
        match self.make_room(bytes, Some(id), "the statistics") {
            Ok(evicted) => {
                self.bytes += bytes;
                if let Some(stored) = self.plans.get_mut(id) {
                    stored.bytes += bytes;
                    *stored.charged.entry(version).or_default() += bytes;
                }
                evicted
            }
            Err(_) => {
                if let Some(stored) = self.plans.get_mut(id) {
                    stored.cache.remove(&version);
                }
                Evicted::new()
            }
        }
    }

    /// Evicts least recently used plans other than `keep` until `needed` more bytes fit.
    fn make_room(
        &mut self,
        needed: usize,
        keep: Option<&str>,
        what: &str,
    ) -> Result<Evicted, ApiError> {
        let kept = keep.and_then(|k| self.plans.get(k)).map_or(0, |s| s.bytes);
        if kept.saturating_add(needed) > self.budget {
            return Err(ApiError::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "over_memory_budget",
                format!(
                    "{what} needs {needed} bytes{}; the service's memory budget for plans is {} bytes (max_store_bytes)",
                    if kept > 0 {
                        format!(" on top of the {kept} bytes of its plan")
                    } else {
                        String::new()
                    },
                    self.budget
                ),
            ));
        }
        let mut evicted = Evicted::new();
        while self.bytes + needed > self.budget {
            let Some(oldest) = self
                .plans
                .iter()
                .filter(|(id, _)| Some(id.as_str()) != keep)
                .min_by_key(|(_, s)| s.last_used)
                .map(|(id, _)| id.clone())
            else {
                break;
            };
            if let Some(s) = self.plans.remove(&oldest) {
                tracing::warn!(
                    plan = %oldest,
                    bytes = s.bytes,
                    budget = self.budget,
                    "plan evicted: the memory budget is reached"
                );
                self.bytes -= s.bytes;
                evicted.push(s);
            }
        }
        Ok(evicted)
    }
}

/// Estimated heap bytes of a plan: its structs, strings and vectors by capacity. O(size).
pub(super) fn plan_heap_bytes(plan: &JobGraphJson) -> usize {
    size_of::<JobGraphJson>()
        + plan.name.capacity()
        + plan.job_type.capacity()
        + plan.vertices.capacity() * size_of::<JobVertexJson>()
        + plan.vertices.iter().map(vertex_heap_bytes).sum::<usize>()
        + plan.edges.capacity() * size_of::<JobEdgeJson>()
        + plan.edges.iter().map(edge_heap_bytes).sum::<usize>()
}

fn text(s: &Option<String>) -> usize {
    s.as_ref().map_or(0, String::capacity)
}

fn vertex_heap_bytes(v: &JobVertexJson) -> usize {
    v.id.capacity()
        + text(&v.name)
        + text(&v.description)
        + text(&v.slot_sharing_group)
        + text(&v.co_location_group)
        + text(&v.invokable)
        + v.config
            .iter()
            .map(|(k, v)| k.capacity() + v.capacity())
            .sum::<usize>()
        + v.operators.capacity() * size_of::<OperatorJson>()
        + v.operators
            .iter()
            .map(|o| {
                text(&o.uid)
                    + o.name.capacity()
                    + o.state.capacity() * size_of::<StateJson>()
                    + o.state
                        .iter()
                        .map(|s| {
                            s.name.capacity()
                                + s.kind.capacity()
                                + text(&s.key_type)
                                + text(&s.value_type)
                        })
                        .sum::<usize>()
            })
            .sum::<usize>()
}

fn edge_heap_bytes(e: &JobEdgeJson) -> usize {
    e.source.capacity()
        + e.target.capacity()
        + e.distribution_pattern.capacity()
        + e.result_partition_type.capacity()
        + text(&e.ship_strategy)
        + text(&e.data_set)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(name: &str) -> VersionedPlan {
        let json = JobGraphJson::parse(
            format!(r#"{{"name": "{name}", "job_type": "streaming", "vertices": [{{"id": "a", "parallelism": 2}}]}}"#)
                .as_bytes(),
        )
        .expect("plan");
        VersionedPlan::new(json).expect("valid")
    }

    #[test]
    fn least_recently_used_plans_make_room_and_what_cannot_fit_is_refused() {
        let mut store = Store::new(1000, 10);
        for id in ["p1", "p2", "p3"] {
            assert!(store
                .insert(id.into(), plan(id), 300)
                .expect("fits")
                .is_empty());
        }
        assert_eq!(store.bytes(), 900);
        // p1 was used last: p2 is the least recently used.
        store.get("p1").expect("p1");
        let evicted = store.insert("p4".into(), plan("p4"), 300).expect("fits");
        assert_eq!(evicted.len(), 1);
        assert_eq!(evicted[0].plan.latest().plan.name, "p2");
        assert!(store.get("p2").is_err());
        assert_eq!(store.bytes(), 900);
        // A version of p4 that needs more than the others hold evicts all of them but p4.
        let edit = Edit::SetParallelism {
            vertex: "a".into(),
            parallelism: 3,
        };
        let edited = edit
            .apply(&store.get("p4").expect("p4").plan.latest().plan)
            .expect("edit");
        let (v, evicted) = store
            .add_version("p4", 1, edit.clone(), edited.clone(), 700)
            .expect("fits alone");
        assert_eq!((v.number, v.parent), (2, Some(1)));
        assert_eq!(evicted.len(), 2);
        assert_eq!(store.bytes(), 1000);
        // What does not fit even alone is refused, naming the budget, and changes nothing.
        let e = store
            .add_version("p4", 2, edit, edited, 1)
            .expect_err("over");
        let text = format!("{e:?}");
        assert!(
            text.contains("over_memory_budget") && text.contains("1000 bytes"),
            "{text}"
        );
        assert_eq!(store.get("p4").expect("p4").plan.versions().len(), 2);
        let e = store
            .insert("p5".into(), plan("p5"), 1001)
            .expect_err("over");
        assert!(format!("{e:?}").contains("max_store_bytes"));
        assert_eq!(store.bytes(), 1000);
    }

    #[test]
    fn removing_versions_and_plans_frees_what_they_were_charged() {
        let mut store = Store::new(10_000, 2);
        store.insert("p1".into(), plan("p1"), 300).expect("fits");
        let edit = Edit::SetParallelism {
            vertex: "a".into(),
            parallelism: 3,
        };
        let edited = edit
            .apply(&store.get("p1").expect("p1").plan.latest().plan)
            .expect("edit");
        store.add_version("p1", 1, edit, edited, 500).expect("fits");
        let stats = Cached {
            stats: Bytes::from_static(b"0123456789"),
            regions: Bytes::new(),
        };
        assert!(store.charge_stats("p1", 2, &stats).is_empty());
        assert_eq!(store.bytes(), 800 + stats.heap_bytes());
        // Version 2 and its statistics go; version 1 stays, the plan keeps its 300 bytes.
        assert_eq!(store.remove_version("p1", 2).expect("removed").number, 2);
        assert_eq!(store.bytes(), 300);
        assert_eq!(store.get("p1").expect("p1").bytes, 300);
        // Statistics computed for a removed version are not charged.
        assert!(store.charge_stats("p1", 2, &stats).is_empty());
        assert_eq!(store.bytes(), 300);
        let e = store.remove_version("p1", 1).expect_err("the last version");
        assert!(format!("{e:?}").contains("last_version"), "{e:?}");
        store.insert("p2".into(), plan("p2"), 100).expect("fits");
        assert!(
            store.insert("p3".into(), plan("p3"), 100).is_err(),
            "max_plans"
        );
        store.remove("p1").expect("removed");
        assert_eq!(store.bytes(), 100);
        store
            .insert("p3".into(), plan("p3"), 100)
            .expect("a free slot");
        assert!(store.remove("p1").is_err());
    }

    #[test]
    fn heap_estimate_counts_strings_and_vectors() {
        let p = plan("job");
        let json = &p.latest().plan;
        let bytes = plan_heap_bytes(json);
        // Vectors count by capacity (what is allocated), not length.
        let structs =
            size_of::<JobGraphJson>() + json.vertices.capacity() * size_of::<JobVertexJson>();
        let texts =
            json.name.capacity() + json.job_type.capacity() + json.vertices[0].id.capacity();
        assert_eq!(texts, 3 + 9 + 1, "job, streaming, a");
        assert_eq!(bytes, structs + texts);
    }
}
