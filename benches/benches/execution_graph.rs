//! Building the execution graph with its groups and scheduling regions for the synthetic word
//! count (two vertices of N subtasks joined all-to-all), N = 1k, 10k, 100k, blocking and
//! pipelined. Issue targets (release build, 2 cores): 10k x 10k <= 2 ms and <= 2 MiB of
//! topology; 100k x 100k <= 20 ms and <= 20 MiB (Flink 1.20: 181 ms and 59 MiB at 10k).
//!
//! Before timing, the heap bytes of each topology are measured with a counting allocator and
//! compared with the structures' own `heap_bytes` accounting (`topology_bytes` in the CLI).

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;

use conflux_benches::CountingAllocator;
use conflux_graph::{generate, ExecutionGraph, JobGraph, PipelinedRegions, ResultPartitionType};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator::new();

const SIZES: [u32; 3] = [1_000, 10_000, 100_000];
const TYPES: [ResultPartitionType; 2] = [
    ResultPartitionType::Blocking,
    ResultPartitionType::Pipelined,
];

fn job(parallelism: u32, partition_type: ResultPartitionType) -> JobGraph {
    JobGraph::from_json(&generate::word_count(parallelism, partition_type))
        .expect("the generated word count is valid")
}

fn build(job: JobGraph) -> (ExecutionGraph, PipelinedRegions) {
    let graph = ExecutionGraph::build(job).expect("expands");
    let regions = PipelinedRegions::compute(&graph).expect("regions");
    (graph, regions)
}

/// Measures the heap held by the built topology (the job graph moved in included) and the peak
/// while building, and checks the self-accounting against it.
fn report_memory() {
    println!("topology heap bytes, word count N x N (counting allocator vs self-accounted):");
    for partition_type in TYPES {
        for n in SIZES {
            let before = ALLOCATOR.live_bytes();
            let job = job(n, partition_type);
            let job_bytes = ALLOCATOR.live_bytes() - before;
            ALLOCATOR.reset_peak();
            let (graph, regions) = build(job);
            let measured = ALLOCATOR.live_bytes() - before;
            let peak = ALLOCATOR.peak_bytes() - before;
            let accounted = graph.heap_bytes() + regions.heap_bytes();
            let diff = accounted.abs_diff(measured) as f64 / measured as f64;
            println!(
                "  {partition_type:>10} N={n:>7}: measured {measured:>10} B ({:.2} MiB), self-accounted {accounted:>10} B, \
                 diff {:.1}%, peak while building {:.2} MiB, job graph alone {job_bytes} B, {} regions",
                measured as f64 / (1024.0 * 1024.0),
                diff * 100.0,
                peak as f64 / (1024.0 * 1024.0),
                regions.len(),
            );
            assert!(
                diff < 0.05,
                "self-accounted topology bytes are off by {:.1}%",
                diff * 100.0
            );
            drop((graph, regions));
        }
    }
}

fn bench_build(c: &mut Criterion) {
    report_memory();
    let mut group = c.benchmark_group("execution_graph_and_regions");
    for partition_type in TYPES {
        for n in SIZES {
            let job = job(n, partition_type);
            group.bench_with_input(
                BenchmarkId::new(partition_type.as_str(), n),
                &job,
                |b, job| {
                    b.iter_batched(
                        || job.clone(),
                        |job| black_box(build(job)),
                        BatchSize::SmallInput,
                    )
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench_build);
criterion_main!(benches);
