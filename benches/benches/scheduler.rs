//! The scheduler core: computing tasks to restart, and running whole jobs in the simulator.
//!
//! - `tasks_to_restart`: source subtask 0 of the 10k x 10k word count fails. Blocking: its
//!   region plus all 10,000 consumer regions, 10,001 vertices (target <= 1 ms; Flink 1.14: 170 ms,
//!   Flink 1.20 on 2 cores: 19 ms). Pipelined: one region of 20,000.
//! - `run_word_count`: the whole job (scheduling, slots, TDDs for every task, TaskManager-side
//!   loading, virtual-time run) in the simulator with an in-memory blob store, N = 1k, 10k, 100k:
//!   the series should grow linearly. `conflux run` reports the same with a real blob server.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;
use std::sync::Arc;

use conflux_graph::{
    generate, ExecutionGraph, ExecutionVertexIndex, IntermediateResultPartitionId, JobGraph,
    PipelinedRegions, ResultPartitionType,
};
use conflux_scheduler::{tasks_to_restart, FailoverStrategy, JobStatus, PartitionAvailability};
use conflux_sim::{simulate, MemoryBlobEnvironment, SimulationConfig};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

fn build(n: u32, t: ResultPartitionType) -> (Arc<ExecutionGraph>, Arc<PipelinedRegions>) {
    let job = JobGraph::from_json(&generate::word_count(n, t)).expect("valid");
    let graph = ExecutionGraph::build(job).expect("expands");
    let regions = PipelinedRegions::compute(&graph).expect("regions");
    (Arc::new(graph), Arc::new(regions))
}

/// Every partition is held (sources finished, as in Flink's benchmark).
struct AllAvailable;

impl PartitionAvailability for AllAvailable {
    fn is_tracked(&self, _: IntermediateResultPartitionId) -> bool {
        true
    }
}

fn bench_restart(c: &mut Criterion) {
    let mut group = c.benchmark_group("tasks_to_restart_10k");
    for (t, expected) in [
        (ResultPartitionType::Blocking, 10_001),
        (ResultPartitionType::Pipelined, 20_000),
    ] {
        let (graph, regions) = build(10_000, t);
        let restart = tasks_to_restart(
            &graph,
            &regions,
            FailoverStrategy::Region,
            ExecutionVertexIndex(0),
            None,
            &AllAvailable,
        );
        assert_eq!(restart.len(), expected, "{t}");
        group.bench_function(t.as_str(), |b| {
            b.iter(|| {
                black_box(tasks_to_restart(
                    &graph,
                    &regions,
                    FailoverStrategy::Region,
                    ExecutionVertexIndex(0),
                    None,
                    &AllAvailable,
                ))
            });
        });
    }
    group.finish();
}

fn bench_run(c: &mut Criterion) {
    let mut group = c.benchmark_group("run_word_count_blocking");
    group.sample_size(10);
    for n in [1_000u32, 10_000, 100_000] {
        let (graph, regions) = build(n, ResultPartitionType::Blocking);
        let config = SimulationConfig::for_job_type(graph.job_graph().job_type());
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                let report = simulate(
                    Arc::clone(&graph),
                    Arc::clone(&regions),
                    &config,
                    &MemoryBlobEnvironment::new(),
                    &mut (),
                )
                .expect("runs");
                assert_eq!(report.status, JobStatus::Finished);
                black_box(report)
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_restart, bench_run);
criterion_main!(benches);
