//! What a job run on the cluster did: the report `conflux submit` and `conflux cluster` print,
//! which is [`conflux_report::JobReport`], the one report of every command that runs a job.
//! This module fills the parts the JobManager measures.

use std::collections::BTreeMap;

pub use conflux_report::{
    from_json, to_json, AdaptiveReport, BytesPerTask, DataReport, DescriptorsReport, JobReport,
    KilledTaskManager, SkewedSubpartition, SkewedSubpartitions, SpeculativeAttemptsReport,
    TaskManagerReport, WallMs,
};

/// The speculative attempts of a job whose scheduler counted `stats`.
pub(crate) fn speculative_report(
    enabled: bool,
    stats: conflux_scheduler::SpeculativeStats,
) -> SpeculativeAttemptsReport {
    SpeculativeAttemptsReport {
        enabled,
        started: stats.started,
        won: stats.won,
        cancelled: stats.cancelled,
        failed: stats.failed,
    }
}

/// What the deployment descriptor factory of a job did, under `rule`.
pub(crate) fn descriptors_report(
    rule: conflux_deploy::OffloadRule,
    stats: &conflux_deploy::DeploymentStats,
) -> DescriptorsReport {
    DescriptorsReport {
        offload_rule: rule.to_string(),
        groups_serialized: stats.groups_serialized,
        cache_hits: stats.cache_hits,
        cache_misses: stats.cache_misses,
        raw_bytes: stats.raw_bytes,
        inline_bytes: stats.inline_bytes,
        offloaded_bytes: stats.offloaded_bytes,
        blobs_uploaded: stats.blobs_uploaded,
        upload_failures: stats.upload_failures,
        blobs_deleted: stats.blobs_deleted,
    }
}

/// The adaptive keys of a job: what `scheduler` decided (bytes per task from the decisions'
/// bytes, for every vertex decided from its inputs), or the reason its undecided vertices ran
/// at the estimate; all `null` for a job that left nothing undecided. O(decided subtasks log)
/// for the medians.
pub(crate) fn adaptive_report(
    scheduler: &conflux_scheduler::Scheduler,
    undecided_at_estimate: Option<String>,
) -> AdaptiveReport {
    if !scheduler.is_adaptive() {
        return undecided_at_estimate
            .map_or_else(AdaptiveReport::default, AdaptiveReport::at_estimate);
    }
    let job = scheduler.graph().job_graph();
    let mut bytes_per_task = BTreeMap::new();
    for d in scheduler.decisions() {
        // A source decided in the dynamic suffix reads nothing: no bytes to tell.
        if job.inputs(d.job_vertex).is_empty() {
            continue;
        }
        if let Some(stats) = BytesPerTask::of(d.bytes_per_task.clone()) {
            bytes_per_task.insert(job.vertex_id(d.job_vertex).to_owned(), stats);
        }
    }
    conflux_sim::decided_keys(scheduler, bytes_per_task)
}
