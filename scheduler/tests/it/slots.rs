//! Slot sharing and slot request timeouts, driven through the scheduler's event API.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use conflux_deploy::{AllocationId, TaskManagerId, TaskManagerLocation};
use conflux_graph::json::{JobEdgeJson, JobGraphJson, JobVertexJson};
use conflux_graph::{ExecutionGraph, JobGraph, PipelinedRegions};
use conflux_scheduler::{Command, Event, JobStatus, Scheduler, SchedulerConfig};

fn scheduler(groups: [&str; 2], partition_type: &str, pattern: &str) -> Scheduler {
    let vertex = |id: &str, group: &str| JobVertexJson {
        id: id.to_owned(),
        parallelism: 2,
        max_parallelism: None,
        slot_sharing_group: Some(group.to_owned()),
        co_location_group: None,
        operators: Vec::new(),
    };
    let json = JobGraphJson {
        name: "slots".to_owned(),
        job_type: "batch".to_owned(),
        vertices: vec![vertex("A", groups[0]), vertex("B", groups[1])],
        edges: vec![JobEdgeJson {
            source: "A".to_owned(),
            target: "B".to_owned(),
            distribution_pattern: pattern.to_owned(),
            result_partition_type: partition_type.to_owned(),
            ship_strategy: None,
            data_set: None,
        }],
    };
    let graph = Arc::new(
        ExecutionGraph::build(JobGraph::from_json(&json).expect("valid")).expect("expands"),
    );
    let regions = Arc::new(PipelinedRegions::compute(&graph).expect("regions"));
    Scheduler::new(graph, regions, SchedulerConfig::default())
}

fn register(s: &mut Scheduler, slots: u32) -> Vec<Command> {
    let location = TaskManagerLocation {
        id: TaskManagerId(0),
        data_address: SocketAddr::from((Ipv4Addr::LOCALHOST, 1)),
    };
    s.handle(0, Event::TaskManagerRegistered { location, slots })
        .expect("register")
}

fn deploys(commands: &[Command]) -> Vec<Vec<(u32, AllocationId)>> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::Deploy { tasks, .. } => {
                Some(tasks.iter().map(|(a, s)| (a.vertex, *s)).collect())
            }
            _ => None,
        })
        .collect()
}

fn slot(n: u32) -> AllocationId {
    AllocationId {
        task_manager: TaskManagerId(0),
        slot: n,
    }
}

#[test]
fn subtasks_of_one_slot_sharing_group_share_a_slot() {
    // A#i and B#i (vertices i and 2 + i) form region i and share slot i.
    let mut s = scheduler(["default", "default"], "pipelined", "pointwise");
    register(&mut s, 2);
    let out = s.handle(0, Event::Start).expect("start");
    assert_eq!(
        deploys(&out),
        vec![
            vec![(0, slot(0)), (2, slot(0))],
            vec![(1, slot(1)), (3, slot(1))]
        ]
    );
}

#[test]
fn a_request_waits_for_a_freed_slot() {
    // Batch, one slot: A#0 runs; A#1 waits until A#0 finishes and frees the slot.
    let mut s = scheduler(["default", "default"], "blocking", "all_to_all");
    register(&mut s, 1);
    let out = s.handle(0, Event::Start).expect("start");
    assert_eq!(deploys(&out), vec![vec![(0, slot(0))]]);
    let a0 = s.attempt(conflux_graph::ExecutionVertexIndex(0));
    s.handle(1, Event::TaskRunning(a0)).expect("running");
    let out = s.handle(2, Event::TaskFinished(a0)).expect("finish");
    assert_eq!(deploys(&out), vec![vec![(1, slot(0))]]);
}

#[test]
fn requests_that_cannot_be_served_fail_the_job_at_the_timeout() {
    // Separate slot sharing groups need four slots; two are offered.
    let mut s = scheduler(["a", "b"], "pipelined", "pointwise");
    register(&mut s, 2);
    let out = s.handle(0, Event::Start).expect("start");
    assert_eq!(
        deploys(&out).len(),
        1,
        "one region gets both slots, the other waits"
    );
    assert_eq!(s.next_timer(), Some(300_000));
    let out = s.handle(299_999, Event::Tick).expect("tick");
    assert!(out.is_empty());
    let out = s.handle(300_000, Event::Tick).expect("tick");
    assert_eq!(s.status(), JobStatus::Failed);
    let statuses: Vec<JobStatus> = out
        .iter()
        .filter_map(|c| match c {
            Command::JobStatus { status, .. } => Some(*status),
            _ => None,
        })
        .collect();
    assert_eq!(statuses, [JobStatus::Failing, JobStatus::Failed]);
    let reason = s.failure_reason().expect("reason");
    assert!(
        reason.contains("could not acquire a slot within 300000 ms"),
        "{reason}"
    );
    // The running region's tasks were cancelled.
    assert_eq!(
        out.iter()
            .filter(|c| matches!(c, Command::Cancel(_)))
            .count(),
        2
    );
}
