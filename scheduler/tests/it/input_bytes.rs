//! The bytes each subtask of a vertex decided at run time reads (`VertexDecision::bytes_per_task`),
//! from producers that report uneven bytes: hand-computed answers, and the reference of the full
//! producer x subpartition matrix the driver reported.

use std::collections::{HashMap, VecDeque};

use conflux_adaptive::{BatchExecutionOptions, ExecutionVertexInputInfo, MIB};
use conflux_deploy::{ExecutionAttemptId, TaskManagerId, TaskManagerLocation};
use conflux_graph::json::{JobGraphJson, PARALLELISM_UNDECIDED};
use conflux_graph::{ExecutionVertexIndex, JobGraph};
use conflux_scheduler::{Command, Event, JobStatus, Scheduler, SchedulerConfig, VertexDecision};
use conflux_test_support::job_graphs::{edge, job, vertex};

/// What producer subtask `subtask` of `vertex` writes to `n` subpartitions.
type Rows = dyn Fn(&str, u32, u32) -> Vec<u64>;

/// Runs `json` adaptively (at most 8 subtasks, 16 MiB each) to FINISHED, every task reporting
/// `rows`; returns the decisions and, per data set, the rows reported, by producer subtask.
fn run(json: &JobGraphJson, rows: &Rows) -> (Vec<VertexDecision>, HashMap<u32, Vec<Vec<u64>>>) {
    let options = BatchExecutionOptions {
        max_parallelism: 8,
        ..BatchExecutionOptions::default()
    };
    let job = JobGraph::from_json(json).expect("valid");
    let mut s =
        Scheduler::new_adaptive(job, options, SchedulerConfig::default()).expect("adaptive");
    let mut queue = VecDeque::new();
    let mut reported: HashMap<u32, Vec<Vec<u64>>> = HashMap::new();
    let mut now = 0;
    let mut apply = |s: &mut Scheduler, queue: &mut VecDeque<ExecutionAttemptId>, e: Event| {
        now += 1;
        let mut commands = s.handle(now, e).expect("applies");
        while s.has_pending_work() {
            commands.extend(s.continue_work().expect("continues"));
        }
        for c in commands {
            if let Command::Deploy { tasks, .. } = c {
                queue.extend(tasks.iter().map(|(a, _)| *a));
            }
        }
    };
    let location = TaskManagerLocation {
        id: TaskManagerId(0),
        data_address: "10.0.0.1:6121".parse().expect("address"),
    };
    apply(
        &mut s,
        &mut queue,
        Event::TaskManagerRegistered {
            location,
            slots: 100,
        },
    );
    apply(&mut s, &mut queue, Event::Start);
    while let Some(a) = queue.pop_front() {
        apply(&mut s, &mut queue, Event::TaskRunning(a));
        let id = s
            .graph()
            .execution_vertex_id(ExecutionVertexIndex(a.vertex));
        let job = s.graph().job_graph();
        let name = job.vertex_id(id.job_vertex).to_owned();
        let mut reports = Vec::new();
        for &d in job.produced_data_sets(id.job_vertex) {
            let report = match s.subpartitions_of(d) {
                Some(n) => rows(&name, id.subtask, n),
                None => Vec::new(),
            };
            let table = reported.entry(d.0).or_default();
            table.resize(table.len().max(id.subtask as usize + 1), Vec::new());
            table[id.subtask as usize] = report.clone();
            reports.push(report);
        }
        apply(&mut s, &mut queue, Event::TaskFinishedWithBytes(a, reports));
    }
    assert_eq!(s.status(), JobStatus::Finished);
    (s.decisions().to_vec(), reported)
}

/// The reference: per subtask, the cells of the full matrix its input info covers.
fn brute_force(rows: &[Vec<u64>], infos: &[ExecutionVertexInputInfo]) -> Vec<u64> {
    let mut out = vec![0; infos.len()];
    for info in infos {
        for p in info.partition_range.indices() {
            for s in info.subpartition_range.indices() {
                out[info.subtask_index as usize] += rows[p as usize][s as usize];
            }
        }
    }
    out
}

/// `source` (fixed) -> `map` (undecided), one blocking edge of `pattern`.
fn two_stage(sources: u32, pattern: &str) -> JobGraphJson {
    let mut json = job(
        "batch",
        vec![vertex("source", sources), vertex("map", 1)],
        vec![edge("source", "map", pattern, "blocking")],
    );
    json.vertices[1].parallelism = PARALLELISM_UNDECIDED;
    json
}

/// POINTWISE fan-out: 2 sources write 4 subpartitions each (the map may have 8 subtasks), 10
/// and 52 MiB: 62 MiB decide 4 map subtasks, two per source, each reading half a source's
/// subpartitions: 1 + 2, 3 + 4, 10 + 12 and 14 + 16 MiB. The sums over sources shared by
/// count gave 12.5, 18.5, 12.5 and 18.5 MiB.
#[test]
fn pointwise_fan_out_reads_each_sources_own_bytes() {
    let rows = |_: &str, subtask: u32, n: u32| -> Vec<u64> {
        assert_eq!(n, 4);
        match subtask {
            0 => vec![MIB, 2 * MIB, 3 * MIB, 4 * MIB],
            _ => vec![10 * MIB, 12 * MIB, 14 * MIB, 16 * MIB],
        }
    };
    let (decisions, reported) = run(&two_stage(2, "pointwise"), &rows);
    let map = &decisions[0];
    assert_eq!(map.parallelism, 4);
    assert_eq!(
        map.bytes_per_task,
        vec![3 * MIB, 7 * MIB, 22 * MIB, 30 * MIB]
    );
    assert_eq!(
        map.bytes_per_task,
        brute_force(&reported[&0], &map.input_infos[0])
    );
}

/// POINTWISE fan-in: 8 sources of 1 subpartition, source k writes k + 1 MiB: 36 MiB decide 3
/// map subtasks reading sources [0, 1], [2, 4] and [5, 7]: 3, 12 and 21 MiB (by count 9, 13.5
/// and 13.5).
#[test]
fn pointwise_fan_in_reads_whole_uneven_sources() {
    let rows = |_: &str, subtask: u32, n: u32| vec![(u64::from(subtask) + 1) * MIB; n as usize];
    let (decisions, reported) = run(&two_stage(8, "pointwise"), &rows);
    let map = &decisions[0];
    assert_eq!(map.bytes_per_task, vec![3 * MIB, 12 * MIB, 21 * MIB]);
    assert_eq!(
        map.bytes_per_task,
        brute_force(&reported[&0], &map.input_infos[0])
    );
}

/// ALL_TO_ALL from uneven sources alike in shape, the map skew-splittable: 4 sources write 1,
/// 1, 1 and 3 parts of the same spread over 8 subpartitions, subpartition 5 holding 22 of every
/// 32 bytes. The hot subpartition is split by source ranges, and every subtask's bytes, the
/// pieces' included, are the full matrix's.
#[test]
fn split_pieces_of_uneven_sources_alike_are_exact() {
    let shape = [1, 1, 2, 1, 1, 22, 2, 2];
    let rows = move |_: &str, subtask: u32, n: u32| -> Vec<u64> {
        assert_eq!(n, 8);
        let weight = if subtask == 3 { 3 } else { 1 };
        shape.iter().map(|&b| b * weight * MIB).collect()
    };
    let mut json = two_stage(4, "all_to_all");
    json.vertices[1].skew_splittable = true;
    let (decisions, reported) = run(&json, &rows);
    let map = &decisions[0];
    assert!(!map.split_subpartitions.is_empty(), "{map:?}");
    assert_eq!(
        map.bytes_per_task,
        brute_force(&reported[&0], &map.input_infos[0])
    );
    // 192 MiB over 8 subtasks at most: the split pieces of subpartition 5 (132 MiB) read
    // sources [0], [1], [2], [3]: 22, 22, 22 and 66 MiB (by count: 33 each).
    let pieces: Vec<u64> = map.input_infos[0]
        .iter()
        .filter(|i| i.subpartition_range.start == 5 && i.subpartition_range.end == 5)
        .map(|i| map.bytes_per_task[i.subtask_index as usize])
        .collect();
    assert_eq!(pieces, vec![22 * MIB, 22 * MIB, 22 * MIB, 66 * MIB]);
}

/// Applies `e` at `now`; adds the attempts it deploys to `deployed`.
fn step(
    s: &mut Scheduler,
    deployed: &mut Vec<ExecutionAttemptId>,
    now: u64,
    e: Event,
) -> Vec<Command> {
    let out = s.handle(now, e).expect("applies");
    for c in &out {
        if let Command::Deploy { tasks, .. } = c {
            deployed.extend(tasks.iter().map(|(a, _)| *a));
        }
    }
    out
}

/// The slow task detector weighs execution times by these bytes, as Flink's: 4 sources write 4,
/// 4, 4 and 48 MiB to a POINTWISE map decided at 4 subtasks (60 MiB), each reading one source.
/// Maps 0-2 finish after 1,000 ms; with a ratio of 0.5 and a multiplier of 1.5 the baseline is
/// 1,500 ms on 4 MiB. Map 3 reads 12 times as much, so it is slow only from 18,000 ms; the same
/// map of a job built whole (bytes unknown) is slow from 1,500 ms.
#[test]
fn the_slow_task_detector_weighs_times_by_input_bytes() {
    let speculative = conflux_scheduler::SpeculativeExecutionOptions {
        enabled: true,
        baseline_ratio: 0.5,
        baseline_lower_bound_ms: 0,
        ..conflux_scheduler::SpeculativeExecutionOptions::default()
    };
    let config = SchedulerConfig {
        speculative,
        ..SchedulerConfig::default()
    };
    let options = BatchExecutionOptions {
        max_parallelism: 8,
        ..BatchExecutionOptions::default()
    };
    let undecided = two_stage(4, "pointwise");
    let mut fixed = undecided.clone();
    fixed.vertices[1].parallelism = 4;
    for (json, slow_from) in [(undecided, 18_000), (fixed, 1_500)] {
        let job = JobGraph::from_json(&json).expect("valid");
        let mut s = Scheduler::new_adaptive(job, options.clone(), config).expect("adaptive");
        let mut deployed = Vec::new();
        for tm in 0..2 {
            let location = TaskManagerLocation {
                id: TaskManagerId(tm),
                data_address: format!("10.0.0.{}:6121", tm + 1).parse().expect("address"),
            };
            let e = Event::TaskManagerRegistered { location, slots: 8 };
            step(&mut s, &mut deployed, 0, e);
        }
        step(&mut s, &mut deployed, 0, Event::Start);
        let sources = std::mem::take(&mut deployed);
        assert_eq!(sources.len(), 4);
        for (a, mib) in sources.into_iter().zip([4, 4, 4, 48]) {
            step(&mut s, &mut deployed, 1, Event::TaskRunning(a));
            let data_set = conflux_graph::IntermediateDataSetIndex(0);
            let report = match s.subpartitions_of(data_set) {
                Some(n) => vec![mib * MIB / u64::from(n); n as usize],
                None => Vec::new(),
            };
            let e = Event::TaskFinishedWithBytes(a, vec![report]);
            step(&mut s, &mut deployed, 10, e);
        }
        let maps = std::mem::take(&mut deployed);
        assert_eq!(maps.len(), 4);
        let map = s.graph().job_graph().vertex_indices().nth(1).expect("map");
        if slow_from == 18_000 {
            let bytes = s.input_bytes_per_task(map).expect("decided at run time");
            assert_eq!(bytes, [4 * MIB, 4 * MIB, 4 * MIB, 48 * MIB]);
        } else {
            assert_eq!(s.input_bytes_per_task(map), None, "built whole");
        }
        for &a in &maps {
            step(&mut s, &mut deployed, 10, Event::TaskRunning(a));
        }
        for &a in &maps[..3] {
            step(&mut s, &mut deployed, 1_010, Event::TaskFinished(a));
        }
        let speculated = |out: &[Command]| {
            out.iter().any(|c| {
                matches!(c, Command::DeploySpeculative { tasks }
                    if tasks[0].0.vertex == maps[3].vertex)
            })
        };
        let out = step(
            &mut s,
            &mut deployed,
            10 + slow_from - 1,
            Event::CheckSlowTasks,
        );
        assert!(!speculated(&out), "{slow_from}: {out:?}");
        let out = step(&mut s, &mut deployed, 10 + slow_from, Event::CheckSlowTasks);
        assert!(speculated(&out), "{slow_from}: {out:?}");
    }
}
