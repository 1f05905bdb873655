//! `conflux-planner`: the planning API. What a plan costs before it runs, how to change it, and
//! whether the changed plan can restore the old plan's state.
//!
//! - [`stats`]: plan statistics: vertices, channels (logical connections), network buffers under
//!   Flink 1.20's buffer model, pipelined regions, descriptor bytes and offload, topology memory,
//!   suggestions with their effect.
//! - [`edit`]: validated plan edits ([`Edit`]), refused with a reason, and parallelism edits of
//!   a Flink plan as Flink's `pipeline.jobvertex-parallelism-overrides`
//!   ([`flink_parallelism_overrides`]); [`versions`]: versioned plans and diffs.
//! - [`compiled`]: Flink compiled plans (FLIP-190): stateful operators, states and TTL, TTL edits
//!   written back with nothing else changed (FLIP-292).
//! - [`rescale`](mod@rescale): key groups per subtask before and after a parallelism change, as Flink's
//!   `KeyGroupRangeAssignment` computes them, and the share of state that moves.
//! - [`compat`]: state-compatibility pre-analysis of an old and a new plan in three layers.
//! - [`picture`]: the job graph drawn as Graphviz DOT, Mermaid or SVG, regions coloured, edge
//!   statistics optional.
//! - [`service`]: the HTTP planning service (axum), the only part that does I/O.
//!
//! ```
//! use conflux_graph::load::{parse, LoadOptions};
//! use conflux_planner::{Edit, EdgeRef, PlanStats, StatsConfig};
//!
//! let plan = r#"{"name": "r", "job_type": "streaming",
//!   "vertices": [{"id": "src", "parallelism": 2000}, {"id": "map", "parallelism": 1000}],
//!   "edges": [{"source": "src", "target": "map", "distribution_pattern": "all_to_all",
//!              "result_partition_type": "pipelined_bounded", "ship_strategy": "REBALANCE"}]}"#;
//! let (json, _) = parse(plan.as_bytes(), &LoadOptions::default())?;
//! let before = PlanStats::compute(&json, &StatsConfig::default())?;
//! assert_eq!(before.channels, 2_000_000);
//! let edit = Edit::SetPartitioner { edge: EdgeRef::Index(0), partitioner: "RESCALE".into() };
//! let after = PlanStats::compute(&edit.apply(&json)?, &StatsConfig::default())?;
//! assert_eq!(after.channels, 2_000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Everything but [`service`] is synchronous, pure and deterministic.

pub mod compat;
pub mod compiled;
pub mod edit;
mod error;
pub mod picture;
pub mod rescale;
pub mod service;
pub mod stats;
pub mod versions;

pub use compat::{analyze, CompatOptions, CompatReport, Verdict};
pub use compiled::CompiledPlan;
pub use edit::{
    flink_parallelism_overrides, EdgeRef, Edit, ParallelismOverrides, TapSide,
    FLINK_PARALLELISM_OVERRIDES,
};
pub use error::PlanError;
pub use rescale::{rescale, Rescale};
pub use stats::{BufferModel, PlanStats, StatsConfig};
pub use versions::{diff, PlanDiff, VersionedPlan};
