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

use crate::error::{CheckpointError, Result};
use crate::storage::{CheckpointStorage, StorageConfig};
use engine::Sim;

/// Runs the simulation with and without merging.
///
/// # Errors
/// [`CheckpointError`] when the store fails or the simulation hits a bug; restore mismatches
/// are not errors but counted in [`ModeReport::restore_failures`].
pub async fn run(config: &SimConfig) -> Result<SimReport> {
    let merged = run_mode(config, true).await?;
    let unmerged = run_mode(config, false).await?;
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
    sim.run().await?;
    sim.finish().await
}
