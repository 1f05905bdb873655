//! Embedding the scheduler core in a runtime: feed it events, act on its commands.
//!
//! A two-stage batch job (`source` -> `count`, all-to-all, blocking) runs on one TaskManager of
//! four slots. The "runtime" here is a loop that deploys what it is told (building deployment
//! descriptors outside the event handler), reports tasks running and then finished, and stops
//! when the job is done. Each event's call is bounded by the scheduler's work budget: the loop
//! calls `continue_work` until no work is owed before it hands over the next event.
//!
//! Run it with `cargo run -p conflux-scheduler --example embed`.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use conflux_blob_api::{JobId, MemoryBlobStore};
use conflux_deploy::{
    DeploymentConfig, TaskDeploymentDescriptorFactory, TaskManagerId, TaskManagerLocation,
};
use conflux_graph::{generate, ExecutionGraph, JobGraph, PipelinedRegions, ResultPartitionType};
use conflux_scheduler::{Command, Event, JobStatus, Scheduler, SchedulerConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. The job: a validated job graph, expanded, divided into pipelined regions.
    let job = JobGraph::from_json(&generate::word_count(4, ResultPartitionType::Blocking))?;
    let graph = Arc::new(ExecutionGraph::build(job)?);
    let regions = Arc::new(PipelinedRegions::compute(&graph)?);

    // 2. The core, and a descriptor factory writing offloaded data to a blob store.
    let mut scheduler = Scheduler::new(
        Arc::clone(&graph),
        Arc::clone(&regions),
        SchedulerConfig::default(),
    );
    let config = DeploymentConfig::for_job_type(graph.job_graph().job_type());
    let mut factory = TaskDeploymentDescriptorFactory::new(
        &graph,
        JobId([1; 16]),
        config,
        Arc::new(MemoryBlobStore::new()),
    )?;

    // 3. The runtime loop. Time is an input: this toy runtime advances it by 10 ms per event.
    let tm = TaskManagerLocation {
        id: TaskManagerId(0),
        data_address: SocketAddr::from((Ipv4Addr::LOCALHOST, 6121)),
    };
    let mut events = VecDeque::from([
        Event::TaskManagerRegistered {
            location: tm,
            slots: 4,
        },
        Event::Start,
    ]);
    let mut now = 0;
    while let Some(event) = events.pop_front() {
        now += 10;
        // One call does at most the configured work budget; the rest is done by continuation
        // calls at the same virtual time, before the next event. Their commands continue the
        // call's.
        let mut commands = scheduler.handle(now, event)?;
        while scheduler.has_pending_work() {
            commands.extend(scheduler.continue_work()?);
        }
        for command in commands {
            match command {
                Command::Deploy { region, tasks } => {
                    for (attempt, slot) in tasks {
                        // Outside the handler: build the TDD from the scheduler's view of producers.
                        let tdd = factory.create_deployment(&graph, attempt, slot, &scheduler)?;
                        let name = graph.execution_vertex_name(
                            conflux_graph::ExecutionVertexIndex(attempt.vertex),
                        );
                        println!(
                            "t={now:>4} ms  deploy {name} (region {}) into {}/{} with {} input gate(s)",
                            region.0, slot.task_manager, slot.slot, tdd.input_gates.len()
                        );
                        events.push_back(Event::TaskRunning(attempt));
                        events.push_back(Event::TaskFinished(attempt));
                    }
                }
                Command::ReleaseGroup { group, partitions } => {
                    factory.on_group_released(group);
                    println!(
                        "t={now:>4} ms  release group {} ({} partitions)",
                        group.0,
                        partitions.len()
                    );
                }
                Command::JobStatus { status, reason } => {
                    println!(
                        "t={now:>4} ms  job {}{}",
                        status.as_str(),
                        reason.map(|r| format!(": {r}")).unwrap_or_default()
                    );
                }
                other => println!("t={now:>4} ms  {other:?}"),
            }
        }
    }
    assert_eq!(scheduler.status(), JobStatus::Finished);
    Ok(())
}
