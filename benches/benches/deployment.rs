//! Deployment descriptors for the word count N x N (all-to-all, one ConsumedPartitionGroup of N
//! partitions read by N consumers): build the TDDs of all N consumers with a fresh factory, i.e.
//! compute the N shuffle descriptors once, serialise (MessagePack), compress (zstd), offload (to
//! an in-memory blob store), then assemble N TDDs sharing the bytes. Issue targets (release, 2
//! cores): 10k <= 20 ms with the compressed group <= 100 KiB (Flink 1.20: 90 ms + 214 ms, 347 KB);
//! 100k <= 200 ms, and all TDDs together within 2x one group's bytes plus O(1) per task.
//!
//! Before timing it prints raw and compressed sizes, the ratio zstd reaches, the ratio DEFLATE
//! (what Flink uses) reaches on the same bytes, and the heap of all TDDs from a counting allocator.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;
use std::io::Write;
use std::sync::Arc;

use conflux_benches::CountingAllocator;
use conflux_blob::{JobId, MemoryBlobStore};
use conflux_deploy::{
    AllProducersFinished, AllocationId, DeploymentConfig, ExecutionAttemptId, ProducerStates,
    ShuffleDescriptorGroup, TaskDeploymentDescriptor, TaskDeploymentDescriptorFactory,
    TaskManagerId,
};
use conflux_graph::{
    generate, ExecutionGraph, ExecutionVertexIndex, IntermediateResultPartitionId, JobGraph,
    ResultPartitionType,
};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator::new();

const JOB: JobId = JobId([1; 16]);
const SLOTS_PER_TASK_MANAGER: u32 = 10;

/// Every producer finished on TaskManager `vertex / 10` (a batch job between its two stages).
const ALL_FINISHED: AllProducersFinished = AllProducersFinished {
    slots_per_task_manager: SLOTS_PER_TASK_MANAGER,
};

fn graph(n: u32) -> ExecutionGraph {
    let job = JobGraph::from_json(&generate::word_count(n, ResultPartitionType::Blocking))
        .expect("valid");
    ExecutionGraph::build(job).expect("expands")
}

/// Builds the TDDs of all consumers (`n..2n`) with a fresh factory.
fn deploy_consumers(
    graph: &ExecutionGraph,
    n: u32,
) -> (
    Vec<TaskDeploymentDescriptor>,
    TaskDeploymentDescriptorFactory,
    Arc<MemoryBlobStore>,
) {
    let store = Arc::new(MemoryBlobStore::new());
    let config = DeploymentConfig::for_job_type(graph.job_graph().job_type());
    let mut factory =
        TaskDeploymentDescriptorFactory::new(graph, JOB, config, store.clone()).expect("factory");
    let tdds = (n..2 * n)
        .map(|v| {
            let attempt = ExecutionAttemptId {
                vertex: v,
                attempt: 0,
            };
            let slot = AllocationId {
                task_manager: TaskManagerId(v / SLOTS_PER_TASK_MANAGER),
                slot: v % SLOTS_PER_TASK_MANAGER,
            };
            factory
                .create_deployment(graph, attempt, slot, &ALL_FINISHED)
                .expect("tdd")
        })
        .collect();
    (tdds, factory, store)
}

fn report_sizes() {
    println!("descriptor sizes, word count N x N, one group of N descriptors:");
    for n in [10_000u32, 100_000] {
        let graph = graph(n);
        let before = ALLOCATOR.live_bytes();
        let (tdds, factory, store) = deploy_consumers(&graph, n);
        let held = ALLOCATOR.live_bytes() - before;
        let stats = factory.stats();
        let compressed = stats.offloaded_bytes + stats.inline_bytes;
        // DEFLATE (Flink's CompressedSerializedValue) over the same MessagePack bytes.
        let group = ShuffleDescriptorGroup {
            descriptors: (0..n)
                .map(|p| {
                    let partition = IntermediateResultPartitionId {
                        result: conflux_graph::IntermediateDataSetIndex(0),
                        partition: p,
                    };
                    let producer = ALL_FINISHED.producer(ExecutionVertexIndex(p));
                    conflux_deploy::shuffle_descriptor_for(
                        (0, partition.partition),
                        ResultPartitionType::Blocking,
                        &producer,
                        true,
                        0,
                        &conflux_deploy::ConsumptionPolicy::for_job_type(
                            conflux_graph::JobType::Batch,
                        ),
                    )
                    .expect("known")
                })
                .collect(),
            indices: None,
        };
        let msgpack = conflux_deploy::wire::payload(&group).expect("encode").len();
        let raw = conflux_deploy::wire::descriptor_group_payload(&group);
        let mut deflate =
            flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        deflate.write_all(&raw).expect("deflate");
        let deflated = deflate.finish().expect("deflate").len();
        let own: usize = tdds
            .iter()
            .map(TaskDeploymentDescriptor::own_heap_bytes)
            .sum::<usize>()
            + tdds.capacity() * std::mem::size_of::<TaskDeploymentDescriptor>();
        println!(
            "  N={n:>6}: columnar raw {} B (MessagePack would be {msgpack} B), zstd {} B framed ({:.1}% of raw, {:.1}x), \
             DEFLATE of the same raw bytes {} B ({:.1}x); zstd/DEFLATE = {:.2}; \
             offloaded groups {}, blob bytes {} B; heap of all TDDs + factory + blob store {} B ({:.0} B per task beyond the group), TDD-owned {} B",
            stats.raw_bytes,
            compressed,
            100.0 * compressed as f64 / stats.raw_bytes as f64,
            stats.raw_bytes as f64 / compressed as f64,
            deflated,
            raw.len() as f64 / deflated as f64,
            compressed as f64 / deflated as f64,
            stats.blobs_uploaded,
            stats.offloaded_bytes,
            held,
            (held as f64 - compressed as f64) / f64::from(n),
            own,
        );
        drop((tdds, factory, store));
    }
}

fn bench(c: &mut Criterion) {
    report_sizes();
    let mut group = c.benchmark_group("deploy_all_consumers");
    group.sample_size(20);
    for n in [1_000u32, 10_000, 100_000] {
        let graph = graph(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &graph, |b, graph| {
            b.iter(|| black_box(deploy_consumers(graph, n)));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
