//! Adaptive batch runs in the simulator: undecided vertices decided from seeded bytes, through
//! faults, the same whatever the scheduler's work budget.

use conflux_adaptive::BatchExecutionOptions;
use conflux_graph::json::PARALLELISM_UNDECIDED;
use conflux_graph::{JobGraph, JobType};
use conflux_scheduler::JobStatus;
use conflux_sim::{
    simulate_adaptive, BytesModel, Faults, MemoryBlobEnvironment, SimulationConfig,
    SimulationReport,
};
use conflux_test_support::job_graphs::{edge, job, vertex};

/// source -> map -> sink, ALL_TO_ALL blocking edges; source and map undecided, sink fixed at 2.
fn three_stage() -> JobGraph {
    let mut json = job(
        "batch",
        vec![vertex("source", 1), vertex("map", 1), vertex("sink", 2)],
        vec![
            edge("source", "map", "all_to_all", "blocking"),
            edge("map", "sink", "all_to_all", "blocking"),
        ],
    );
    json.vertices[0].parallelism = PARALLELISM_UNDECIDED;
    json.vertices[1].parallelism = PARALLELISM_UNDECIDED;
    JobGraph::from_json(&json).expect("valid")
}

fn run(config: &SimulationConfig, bytes: BytesModel) -> SimulationReport {
    let options = BatchExecutionOptions {
        max_parallelism: 16,
        ..BatchExecutionOptions::default()
    };
    simulate_adaptive(
        three_stage(),
        options,
        bytes,
        config,
        &MemoryBlobEnvironment::new(),
        &mut (),
    )
    .expect("simulates")
}

/// 16 sources of 8 MiB (128 MiB) decide 8 map subtasks of 16 MiB each; the sink keeps 2.
#[test]
fn decides_from_the_source_bytes() {
    let config = SimulationConfig::for_job_type(JobType::Batch);
    let bytes = BytesModel {
        source_bytes: 128 << 20,
        skew: 0.0,
    };
    let r = run(&config, bytes);
    assert_eq!(r.status, JobStatus::Finished);
    let a = r.adaptive.expect("adaptive report");
    assert_eq!(
        a.keys.decided_parallelism,
        Some([("source".to_owned(), 16), ("map".to_owned(), 8)].into())
    );
    assert_eq!(a.execution_vertices, 16 + 8 + 2);
    assert_eq!(r.tasks_deployed, 26);
    let map = a.keys.bytes_per_task.as_ref().expect("bytes per task")["map"];
    assert_eq!((map.min, map.max), (16 << 20, 16 << 20));
}

/// Seeded task failures and lost partitions strike dynamically initialised tasks too: every
/// run restarts and still finishes, deciding what the run of the same seed without faults
/// decides (a restarted producer's bytes count once); a work budget of 1 changes nothing (same
/// trace digest).
#[test]
fn faults_and_budgets_change_nothing_decided() {
    for seed in 0..20 {
        let mut config = SimulationConfig::for_job_type(JobType::Batch);
        config.seed = seed;
        config.scheduler.restart = conflux_scheduler::RestartStrategy::exponential_default(
            conflux_scheduler::FLINK_MAX_ATTEMPTS,
        );
        config.faults = Faults {
            task_failure: 0.2,
            partition_not_found: 0.2,
            task_manager_losses: 1,
            blob_server_restarts: 0,
        };
        let bytes = BytesModel {
            source_bytes: 128 << 20,
            skew: 0.5,
        };
        let r = run(&config, bytes);
        assert_eq!(r.status, JobStatus::Finished, "seed {seed}: {r:?}");
        let mut clean = SimulationConfig::for_job_type(JobType::Batch);
        clean.seed = seed;
        let clean = run(&clean, bytes);
        let decided = |r: &SimulationReport| {
            r.adaptive
                .as_ref()
                .expect("report")
                .keys
                .decided_parallelism
                .clone()
        };
        assert_eq!(decided(&r), decided(&clean), "seed {seed}");
        config.scheduler.work_budget = 1;
        let budgeted = run(&config, bytes);
        assert_eq!(budgeted.trace_digest, r.trace_digest, "seed {seed}");
        assert_eq!(budgeted.tasks_deployed, r.tasks_deployed, "seed {seed}");
    }
}
