//! The admission estimate ([`JobMemoryEstimate`]) against the heap a job's scheduling really
//! takes, counted by a global counting allocator (a test binary of its own, since the
//! allocator is global): the execution graph, its regions and the scheduler after `Start` on a
//! cluster without slots (every source subtask waiting for one, the most the requests take),
//! and the descriptor cache with every group cached inline. The estimate must bound what is
//! measured, by less than a factor of 3.

#![allow(missing_docs)]

use std::sync::Arc;

use conflux_blob_api::{JobId, MemoryBlobStore};
use conflux_deploy::{
    AllProducersFinished, DeploymentConfig, OffloadRule, TaskDeploymentDescriptorFactory,
};
use conflux_graph::load::{self, LoadOptions};
use conflux_graph::{
    generate, ConsumedPartitionGroupId, ExecutionGraph, JobGraph, PipelinedRegions,
};
use conflux_scheduler::{Event, JobMemoryEstimate, Scheduler, SchedulerConfig};
use conflux_test_support::CountingAllocator;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator::new();

/// Live heap bytes of `job`'s scheduling state (graph, regions, scheduler after `Start`
/// without slots) and of its descriptor cache with every group prepared.
fn measure(job: &JobGraph) -> (u64, u64) {
    let base = ALLOCATOR.live_bytes();
    let graph = Arc::new(ExecutionGraph::build(job.clone()).expect("expands"));
    let regions = Arc::new(PipelinedRegions::compute(&graph).expect("regions"));
    let mut scheduler = Scheduler::new(Arc::clone(&graph), regions, SchedulerConfig::default());
    let commands = scheduler.handle(0, Event::Start).expect("starts");
    drop(commands);
    while scheduler.has_pending_work() {
        drop(scheduler.continue_work().expect("owed work"));
    }
    let scheduling = (ALLOCATOR.live_bytes() - base) as u64;
    let before = ALLOCATOR.live_bytes();
    let mut config = DeploymentConfig::for_job_type(graph.job_graph().job_type());
    config.offload_rule = OffloadRule::Never;
    let mut factory = TaskDeploymentDescriptorFactory::for_groups(
        JobId([0; 16]),
        config,
        Arc::new(MemoryBlobStore::new()),
    );
    let producers = AllProducersFinished {
        slots_per_task_manager: 1,
    };
    for g in 0..graph.num_groups() {
        factory
            .prepare_group(&graph, ConsumedPartitionGroupId(g), &producers)
            .expect("prepared");
    }
    let descriptors = (ALLOCATOR.live_bytes() - before) as u64;
    drop((factory, scheduler, graph));
    (scheduling, descriptors)
}

fn check(what: &str, job: &JobGraph) {
    let estimate = JobMemoryEstimate::of(job, &SchedulerConfig::default());
    let (scheduling, descriptors) = measure(job);
    let estimated_scheduling = estimate.graph_bytes() + estimate.scheduler_bytes;
    println!(
        "{what}: scheduling {scheduling} bytes measured, {estimated_scheduling} estimated; \
         descriptors {descriptors} measured, {} estimated",
        estimate.descriptor_bytes
    );
    for (part, measured, estimated) in [
        ("scheduling", scheduling, estimated_scheduling),
        ("descriptors", descriptors, estimate.descriptor_bytes),
    ] {
        assert!(
            measured <= estimated,
            "{what}: {part} {measured} bytes measured, only {estimated} estimated"
        );
    }
    let total = scheduling + descriptors;
    assert!(
        estimate.total_bytes() <= 3 * total,
        "{what}: {} bytes estimated for {total} measured",
        estimate.total_bytes()
    );
}

fn job(json: &str) -> JobGraph {
    load::load(json.as_bytes(), &LoadOptions::default()).expect("valid")
}

#[test]
fn the_estimate_bounds_what_scheduling_takes() {
    // One vertex of many subtasks (the shape of a 95-byte job of 2^26 subtasks, smaller).
    check(
        "one vertex of 200,000 subtasks",
        &job(r#"{"job_type": "batch", "vertices": [{"id": "a", "parallelism": 200000}]}"#),
    );
    for (name, t) in [
        ("blocking", conflux_graph::ResultPartitionType::Blocking),
        ("pipelined", conflux_graph::ResultPartitionType::Pipelined),
    ] {
        let json = generate::word_count(2_000, t);
        check(
            &format!("2,000 x 2,000 {name} word count"),
            &JobGraph::from_json(&json).expect("valid"),
        );
    }
    check(
        "100,000 vertices in pointwise chains of 4",
        &job(&generate::components_json(100_000, 4)),
    );
    check(
        "4 x 100,000 pointwise blocking",
        &job(r#"{"job_type": "batch", "vertices": [
                {"id": "a", "parallelism": 100000}, {"id": "b", "parallelism": 100000}],
              "edges": [{"source": "a", "target": "b", "distribution_pattern": "pointwise",
                         "result_partition_type": "blocking"}]}"#),
    );
}
