//! Batch job recovery: restoring finished executions before the start (FLIP-383). Worked
//! examples on the word count, and a property test on random graphs against a simple
//! reference (a region is kept when all its members are given; everything else runs once).

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use conflux_deploy::{ExecutionState, TaskManagerId, TaskManagerLocation};
use conflux_graph::{
    generate, ExecutionGraph, ExecutionVertexIndex, JobGraph, PipelinedRegions, ResultPartitionType,
};
use conflux_scheduler::{
    Command, Event, JobStatus, RestoredExecution, Scheduler, SchedulerConfig, SchedulerError,
};
use conflux_test_support::reference::{rng_for_seed, GraphSpec};

fn location(id: u32) -> TaskManagerLocation {
    TaskManagerLocation {
        id: TaskManagerId(id),
        data_address: SocketAddr::from((Ipv4Addr::LOCALHOST, 4000 + id as u16)),
    }
}

fn scheduler(graph: Arc<ExecutionGraph>, regions: Arc<PipelinedRegions>) -> Scheduler {
    let config = SchedulerConfig {
        work_budget: u32::MAX,
        ..SchedulerConfig::default()
    };
    let mut s = Scheduler::new(graph, regions, config);
    s.handle(
        0,
        Event::TaskManagerRegistered {
            location: location(0),
            slots: 1_000,
        },
    )
    .expect("register");
    s
}

fn word_count(p: u32) -> Scheduler {
    let json = generate::word_count(p, ResultPartitionType::Blocking);
    let graph = Arc::new(
        ExecutionGraph::build(JobGraph::from_json(&json).expect("valid")).expect("expands"),
    );
    let regions = Arc::new(PipelinedRegions::compute(&graph).expect("regions"));
    scheduler(graph, regions)
}

fn restored(vertices: &[u32], attempt: u32) -> Vec<RestoredExecution> {
    vertices
        .iter()
        .map(|&v| RestoredExecution {
            vertex: ExecutionVertexIndex(v),
            attempt,
            location: location(0),
        })
        .collect()
}

fn deployed(commands: &[Command]) -> Vec<(u32, u32)> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::Deploy { tasks, .. } => Some(tasks.iter().map(|(a, _)| (a.vertex, a.attempt))),
            _ => None,
        })
        .flatten()
        .collect()
}

/// Finishes every deployed attempt, one call each, until the job ends; returns every
/// deployed attempt (the start's included).
fn run_to_end(s: &mut Scheduler, start: Vec<Command>) -> Vec<(u32, u32)> {
    let mut all = Vec::new();
    let mut queue = deployed(&start);
    let mut now = 1;
    while let Some((vertex, attempt)) = queue.pop() {
        all.push((vertex, attempt));
        let a = conflux_deploy::ExecutionAttemptId { vertex, attempt };
        s.handle(now, Event::TaskRunning(a)).expect("running");
        let commands = s.handle(now, Event::TaskFinished(a)).expect("finished");
        queue.extend(deployed(&commands));
        now += 1;
    }
    all.sort_unstable();
    all
}

#[test]
fn restored_sources_are_not_deployed_and_the_rest_runs() {
    // 4 sources (vertices 0-3), 4 counts (4-7), blocking all-to-all.
    let mut s = word_count(4);
    let kept = s
        .restore_finished(&restored(&[0, 2, 3], 5))
        .expect("restore");
    assert_eq!(
        kept,
        vec![
            ExecutionVertexIndex(0),
            ExecutionVertexIndex(2),
            ExecutionVertexIndex(3)
        ]
    );
    assert_eq!(s.state(ExecutionVertexIndex(2)), ExecutionState::Finished);
    assert_eq!(s.attempt(ExecutionVertexIndex(2)).attempt, 5);
    let start = s.handle(1, Event::Start).expect("start");
    // Only source 1 runs: the counts wait for it.
    assert_eq!(deployed(&start), vec![(1, 0)]);
    let all = run_to_end(&mut s, start);
    assert_eq!(all, vec![(1, 0), (4, 0), (5, 0), (6, 0), (7, 0)]);
    assert_eq!(s.status(), JobStatus::Finished);
}

#[test]
fn with_every_source_restored_the_counts_start_at_once() {
    let mut s = word_count(3);
    s.restore_finished(&restored(&[0, 1, 2], 0))
        .expect("restore");
    let start = s.handle(1, Event::Start).expect("start");
    assert_eq!(deployed(&start), vec![(3, 0), (4, 0), (5, 0)]);
    // A restored producer's location is where its consumers read.
    assert_eq!(s.restored_regions(), 3);
}

#[test]
fn a_job_restored_whole_finishes_at_the_start() {
    let mut s = word_count(2);
    s.restore_finished(&restored(&[0, 1, 2, 3], 0))
        .expect("restore");
    let start = s.handle(1, Event::Start).expect("start");
    assert!(deployed(&start).is_empty());
    assert_eq!(s.status(), JobStatus::Finished);
}

#[test]
fn restoring_after_the_start_or_an_unknown_vertex_is_refused() {
    let mut s = word_count(2);
    assert_eq!(
        s.restore_finished(&restored(&[9], 0)),
        Err(SchedulerError::UnknownVertex(9))
    );
    s.handle(1, Event::Start).expect("start");
    let err = s.restore_finished(&restored(&[0], 0)).expect_err("started");
    assert_eq!(err, SchedulerError::RestoreAfterStart("RUNNING"));
    assert_eq!(
        err.to_string(),
        "cannot restore finished executions: the job is already RUNNING"
    );
}

/// Random graphs of blocking and pipelined edges, random restored subsets: a region is restored
/// exactly when all its members are named (the reference), no restored vertex is deployed,
/// every other vertex is deployed exactly once, and the job finishes.
#[test]
fn restores_whole_regions_and_runs_everything_else_once() {
    for seed in 0..300u64 {
        let mut rng = rng_for_seed(seed);
        let spec = GraphSpec::random(
            &mut rng,
            &[
                (ResultPartitionType::Blocking, 3),
                (ResultPartitionType::Pipelined, 1),
            ],
        );
        let Ok((graph, regions)) = spec.build() else {
            continue;
        };
        let n = graph.num_execution_vertices();
        let named: Vec<u32> = (0..n).filter(|_| rng.chance(0.6)).collect();
        let named_set: BTreeSet<u32> = named.iter().copied().collect();
        let expected: BTreeSet<u32> = regions
            .indices()
            .filter(|&r| regions.members(r).all(|v| named_set.contains(&v.0)))
            .flat_map(|r| regions.members(r).map(|v| v.0).collect::<Vec<_>>())
            .collect();
        let mut s = scheduler(Arc::clone(&graph), Arc::clone(&regions));
        let kept = s.restore_finished(&restored(&named, 1)).expect("restore");
        let kept: BTreeSet<u32> = kept.iter().map(|v| v.0).collect();
        assert_eq!(kept, expected, "seed {seed}: {}", spec.describe());
        let start = s.handle(1, Event::Start).expect("start");
        let ran = run_to_end(&mut s, start);
        let ran_vertices: Vec<u32> = ran.iter().map(|&(v, _)| v).collect();
        let rest: Vec<u32> = (0..n).filter(|v| !expected.contains(v)).collect();
        assert_eq!(ran_vertices, rest, "seed {seed}: {}", spec.describe());
        assert_eq!(s.status(), JobStatus::Finished, "seed {seed}");
    }
}
