//! The synthetic stateful job behind `conflux checkpoint-sim`: N subtasks, each with
//! a RocksDB-like local database (SST flushes and compaction churn, an append-only MANIFEST that
//! rolls, CURRENT, OPTIONS, an info LOG), checkpointed K times with concurrent checkpoints,
//! aborts and job-manager failovers, once with file merging and once without, on the same
//! seeded sequence of events.
//!
//! Every retained checkpoint is restored and each file's bytes compared with what the database
//! held at that checkpoint, at every failover and at the end. At the end an orphan sweep runs
//! and the report gives objects created, requests, bytes written, live bytes, space
//! amplification (physical bytes in the store / live logical bytes reachable from retained
//! checkpoints) and misc bytes per checkpoint.
//!
//! Map: `config` and `report` are the options and figures, `db` the synthetic database,
//! `engine` the run; this module opens the storage and runs the modes.

mod config;
mod db;
mod engine;
mod report;

pub use config::SimConfig;
pub use db::{content, SimRng};
pub use report::{Distribution, MiscBytes, ModeReport, SimReport};

use std::sync::Arc;

use crate::error::{CheckpointError, Result};
use crate::storage::{CheckpointStorage, StorageConfig};
use engine::Sim;

/// Watches a simulation advance; the command line draws progress bars from it. Called from
/// the runtime's worker threads, both modes at once.
pub trait SimProgress: Send + Sync {
    /// The mode with file merging (`merged`) or without has run `done` of its `total` steps
    /// (one step per checkpoint triggered or failover, `total` = [`SimConfig::checkpoints`]).
    fn step(&self, merged: bool, done: u64, total: u64);
}

/// A [`SimProgress`] that ignores every step.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl SimProgress for NoProgress {
    fn step(&self, _merged: bool, _done: u64, _total: u64) {}
}

/// Runs the simulation with and without merging.
///
/// # Errors
/// [`CheckpointError`] when the store fails or the simulation hits a bug; restore mismatches
/// are not errors but counted in [`ModeReport::restore_failures`].
pub async fn run(config: &SimConfig) -> Result<SimReport> {
    run_observed(config, Arc::new(NoProgress)).await
}

/// Runs the simulation with and without merging, as [`run`], telling `progress` each step. The
/// two modes share nothing (each its own place in the store, its own seeded generator), so they
/// run as two tasks, in parallel on a multi-threaded runtime; the report is the same as one
/// after the other.
///
/// # Errors
/// As [`run`]; when both modes fail, the merged mode's error.
pub async fn run_observed(config: &SimConfig, progress: Arc<dyn SimProgress>) -> Result<SimReport> {
    let mode = |merged: bool| {
        let (config, progress) = (config.clone(), Arc::clone(&progress));
        tokio::spawn(async move { run_mode_observed(&config, merged, progress.as_ref()).await })
    };
    let (merged, unmerged) = (mode(true), mode(false));
    let joined = |r: std::result::Result<Result<ModeReport>, tokio::task::JoinError>| {
        r.unwrap_or_else(|e| {
            Err(CheckpointError::Internal(format!(
                "bug: a simulation task ended abnormally: {e}"
            )))
        })
    };
    let (merged, unmerged) = (joined(merged.await), joined(unmerged.await));
    let (merged, unmerged) = (merged?, unmerged?);
    let objects_ratio = if merged.objects_created == 0 {
        0.0
    } else {
        unmerged.objects_created as f64 / merged.objects_created as f64
    };
    Ok(SimReport {
        merged,
        unmerged,
        objects_ratio,
    })
}

fn open_storage(config: &StorageConfig, mode: &str) -> Result<CheckpointStorage> {
    match config {
        StorageConfig::Memory => Ok(CheckpointStorage::memory()),
        StorageConfig::Local { dir } => CheckpointStorage::local(dir.join(mode)),
        StorageConfig::S3(s3) => {
            let mut s3 = s3.clone();
            s3.prefix = Some(match &s3.prefix {
                Some(p) => format!("{p}/{mode}"),
                None => mode.to_owned(),
            });
            CheckpointStorage::s3(&s3)
        }
    }
}

/// Runs one mode, in `<storage>/merged` or `<storage>/unmerged`.
///
/// # Errors
/// As [`run`]; [`CheckpointError::Config`] when that place already holds objects (the run
/// sweeps what it cannot reach).
pub async fn run_mode(config: &SimConfig, merged: bool) -> Result<ModeReport> {
    run_mode_observed(config, merged, &NoProgress).await
}

/// Runs one mode as [`run_mode`], telling `progress` each step.
///
/// # Errors
/// As [`run_mode`].
pub async fn run_mode_observed(
    config: &SimConfig,
    merged: bool,
    progress: &dyn SimProgress,
) -> Result<ModeReport> {
    let mode = if merged { "merged" } else { "unmerged" };
    let storage = open_storage(&config.storage, mode)?;
    // The run sweeps everything it cannot reach: never let it loose on someone's objects.
    if let Some(existing) = storage.uncounted().list(None).await?.first() {
        return Err(CheckpointError::Config(format!(
            "{} already holds objects (e.g. {}): the simulation needs an empty place",
            storage.description(),
            existing.location
        )));
    }
    let mut merging = config.merging.clone();
    merging.enabled = merged;
    let mut sim = Sim::new(config, storage, merging);
    sim.run(&|done, total| progress.step(merged, done, total))
        .await?;
    sim.finish().await
}
