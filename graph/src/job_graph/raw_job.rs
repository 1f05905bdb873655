//! [`RawJob`], a job graph as read, in listing order, before validation: filled by the job
//! graph JSON reader ([`RawJob::from_json`]), the streaming reader of `load` and the Flink plan
//! importer, and validated into a [`JobGraph`](super::JobGraph) by `validation.rs`. Strings live
//! in a few shared buffers; nothing is checked here.

use std::collections::BTreeMap;

use crate::index_vec::index_u32;
use crate::json::{JobGraphJson, OperatorJson};
use crate::strings::{Interner, StrArena};
use crate::{DistributionPattern, ResultPartitionType};

use super::{Labels, Task, DEFAULT_SLOT_SHARING_GROUP, NO_GROUP};

/// A value of an edge field with a fixed vocabulary: parsed, or the position of the unknown
/// text in the edge strings (reported by validation, in its turn).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Coded<T> {
    Known(T),
    Unknown(u32),
}

/// One vertex as read, before validation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawVertex {
    /// As written: at least 1, or `-1` (undecided).
    pub(super) parallelism: i32,
    pub(super) skew_splittable: bool,
    pub(super) max_parallelism: Option<u32>,
    pub(super) slot_sharing_group: u32,
    pub(super) co_location_group: u32,
}

/// One edge as read: positions of its strings in [`RawJob::edge_text`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawEdge {
    pub(super) source: u32,
    pub(super) target: u32,
    pub(super) pattern: Coded<DistributionPattern>,
    pub(super) partition_type: Coded<ResultPartitionType>,
    pub(super) ship_strategy: Option<u32>,
    pub(super) data_set: Option<u32>,
}

/// A job graph as read, in listing order, before validation: what [`JobGraphJson`] holds, but
/// with every string in a few shared buffers (24 bytes per vertex plus its id, 40 per edge plus
/// its strings), so that a file of millions of vertices can be read without a `String` per
/// field. Built from a [`JobGraphJson`] ([`JobGraph::from_json`]) or straight from the bytes
/// (the streaming reader of `load`), and validated by [`JobGraph::from_raw`].
#[derive(Clone, Debug)]
pub(crate) struct RawJob {
    pub(crate) name: String,
    pub(crate) job_type: String,
    pub(super) ids: StrArena,
    pub(super) vertices: Vec<RawVertex>,
    /// Slot sharing group names; number 0 is `default`.
    pub(super) slot_sharing_groups: Interner,
    pub(super) co_location_groups: Interner,
    /// Operators of the vertices that have any: (listing position, operators), ascending.
    pub(super) operators: Vec<(u32, Vec<OperatorJson>)>,
    /// Names and descriptions of the vertices that have any: (listing position, them), ascending.
    pub(super) labels: Vec<(u32, Labels)>,
    /// Tasks of the vertices that name one or have a config: (listing position, it), ascending.
    pub(super) tasks: Vec<(u32, Task)>,
    /// `source_bytes` of the vertices that give it: (listing position, bytes), ascending.
    pub(super) source_bytes: Vec<(u32, u64)>,
    /// The parallelism an undecided vertex is given until it is decided (`--default-parallelism`).
    pub(crate) estimate: u32,
    pub(super) edge_text: StrArena,
    pub(super) edges: Vec<RawEdge>,
}

impl Default for RawJob {
    fn default() -> Self {
        let mut slot_sharing_groups = Interner::default();
        slot_sharing_groups.intern(DEFAULT_SLOT_SHARING_GROUP);
        RawJob {
            name: String::new(),
            job_type: String::new(),
            ids: StrArena::default(),
            vertices: Vec::new(),
            slot_sharing_groups,
            co_location_groups: Interner::default(),
            operators: Vec::new(),
            labels: Vec::new(),
            tasks: Vec::new(),
            source_bytes: Vec::new(),
            estimate: crate::json::DEFAULT_ADAPTIVE_PARALLELISM,
            edge_text: StrArena::default(),
            edges: Vec::new(),
        }
    }
}

impl RawJob {
    /// Appends a vertex, as listed.
    #[allow(clippy::too_many_arguments)] // the fields of a vertex, as the two readers pass them
    pub(crate) fn push_vertex(
        &mut self,
        id: &str,
        name: Option<&str>,
        description: Option<&str>,
        parallelism: i32,
        max_parallelism: Option<u32>,
        slot_sharing_group: Option<&str>,
        co_location_group: Option<&str>,
        operators: Vec<OperatorJson>,
        source_bytes: Option<u64>,
        skew_splittable: bool,
    ) {
        let position = self.ids.push(id);
        if let Some(labels) = Labels::of(name, description) {
            self.labels.push((position, labels));
        }
        if !operators.is_empty() {
            self.operators.push((position, operators));
        }
        if let Some(bytes) = source_bytes {
            self.source_bytes.push((position, bytes));
        }
        self.vertices.push(RawVertex {
            parallelism,
            skew_splittable,
            max_parallelism,
            slot_sharing_group: slot_sharing_group
                .map_or(0, |g| self.slot_sharing_groups.intern(g)),
            co_location_group: co_location_group
                .map_or(NO_GROUP, |g| self.co_location_groups.intern(g)),
        });
    }

    /// Sets the task of the vertex appended last (nothing is kept for no invokable and an
    /// empty config).
    pub(crate) fn set_task(&mut self, invokable: Option<&str>, config: BTreeMap<String, String>) {
        if invokable.is_none() && config.is_empty() {
            return;
        }
        let position = index_u32(self.vertices.len().saturating_sub(1));
        let task = Task {
            invokable: invokable.map(Box::from),
            config,
        };
        self.tasks.push((position, task));
    }

    /// Appends an edge, as listed.
    pub(crate) fn push_edge(
        &mut self,
        source: &str,
        target: &str,
        distribution_pattern: &str,
        result_partition_type: &str,
        ship_strategy: Option<&str>,
        data_set: Option<&str>,
    ) {
        let text = &mut self.edge_text;
        let source = text.push(source);
        let target = text.push(target);
        let pattern = DistributionPattern::parse(distribution_pattern).map_or_else(
            || Coded::Unknown(text.push(distribution_pattern)),
            Coded::Known,
        );
        let partition_type = ResultPartitionType::parse(result_partition_type).map_or_else(
            || Coded::Unknown(text.push(result_partition_type)),
            Coded::Known,
        );
        let ship_strategy = ship_strategy.map(|s| text.push(s));
        let data_set = data_set.map(|s| text.push(s));
        self.edges.push(RawEdge {
            source,
            target,
            pattern,
            partition_type,
            ship_strategy,
            data_set,
        });
    }

    /// `--parallelism N` (`Some(N)`): every vertex of parallelism above 1 or undecided gets
    /// `N`; `--parallelism auto` (`None`): every vertex of parallelism above 1 becomes undecided.
    /// Either way vertices of parallelism 1 stay at 1. `N` above `i32::MAX` is kept as
    /// `i32::MAX`, which validation then refuses as too many subtasks.
    pub(crate) fn override_parallelism(&mut self, parallelism: Option<u32>) {
        let to = parallelism.map_or(crate::json::PARALLELISM_UNDECIDED, |p| {
            i32::try_from(p).unwrap_or(i32::MAX)
        });
        for v in &mut self.vertices {
            if v.parallelism > 1 || v.parallelism == crate::json::PARALLELISM_UNDECIDED {
                v.parallelism = to;
            }
        }
        if let Some(name) =
            parallelism.and_then(|p| crate::generate::retitle_word_count(&self.name, p))
        {
            self.name = name;
        }
    }

    /// The same job, read from job graph JSON.
    pub(super) fn from_json(json: &JobGraphJson) -> RawJob {
        let mut raw = RawJob {
            name: json.name.clone(),
            job_type: json.job_type.clone(),
            ..RawJob::default()
        };
        for v in &json.vertices {
            raw.push_vertex(
                &v.id,
                v.name.as_deref(),
                v.description.as_deref(),
                v.parallelism,
                v.max_parallelism,
                v.slot_sharing_group.as_deref(),
                v.co_location_group.as_deref(),
                v.operators.clone(),
                v.source_bytes,
                v.skew_splittable,
            );
            raw.set_task(v.invokable.as_deref(), v.config.clone());
        }
        for e in &json.edges {
            raw.push_edge(
                &e.source,
                &e.target,
                &e.distribution_pattern,
                &e.result_partition_type,
                e.ship_strategy.as_deref(),
                e.data_set.as_deref(),
            );
        }
        raw
    }
}
