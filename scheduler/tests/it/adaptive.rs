//! Adaptive batch: a scheduler that decides undecided vertices at run time and grows its graph
//! behaves, command for command, as a scheduler built whole with the decided parallelisms, also
//! through failovers of dynamically initialised regions.

use std::collections::VecDeque;

use conflux_adaptive::{BatchExecutionOptions, MIB};
use conflux_deploy::{ExecutionAttemptId, TaskManagerId, TaskManagerLocation};
use conflux_graph::json::{JobGraphJson, PARALLELISM_UNDECIDED};
use conflux_graph::{ExecutionVertexIndex, IntermediateResultPartitionId, JobGraph};
use conflux_scheduler::{
    Command, Event, FailureCause, JobStatus, RestartStrategy, Scheduler, SchedulerConfig,
    SchedulerError,
};
use conflux_test_support::job_graphs::{build, edge, job, vertex};
use conflux_test_support::reference::{members_of, Explicit};

/// What a task does when the driver takes it off the queue.
#[derive(Clone, Copy, Debug)]
enum Fate {
    Finish,
    Fail,
    /// Fails reading partition `(result, partition)`.
    PartitionNotFound(u32, u32),
}

/// Drives a scheduler: deployed attempts queue up and are finished (or failed, per `fates`, on
/// their first attempt) one at a time, first deployed first; each finish reports `bytes` per
/// subpartition of every result a decision reads.
struct Driver {
    s: Scheduler,
    queue: VecDeque<ExecutionAttemptId>,
    /// Every command but `JobVertexInitialized`, in order.
    log: Vec<Command>,
    initialized: Vec<(String, u32)>,
    now: u64,
    /// Report this many bytes per subpartition instead of the task's bytes spread evenly.
    per_subpartition: Option<u64>,
}

impl Driver {
    fn new(s: Scheduler) -> Driver {
        let mut d = Driver {
            s,
            queue: VecDeque::new(),
            log: Vec::new(),
            initialized: Vec::new(),
            now: 0,
            per_subpartition: None,
        };
        d.apply(Event::TaskManagerRegistered {
            location: TaskManagerLocation {
                id: TaskManagerId(0),
                data_address: "10.0.0.1:6121".parse().expect("address"),
            },
            slots: 1_000,
        });
        d.apply(Event::Start);
        d
    }

    fn apply(&mut self, event: Event) {
        self.now += 1;
        let mut commands = self.s.handle(self.now, event).expect("event applies");
        while self.s.has_pending_work() {
            commands.extend(self.s.continue_work().expect("continues"));
        }
        for c in commands {
            match &c {
                Command::Deploy { tasks, .. } => self.queue.extend(tasks.iter().map(|(a, _)| *a)),
                Command::JobVertexInitialized {
                    job_vertex,
                    parallelism,
                } => {
                    let id = self.s.graph().job_graph().vertex_id(*job_vertex).to_owned();
                    self.initialized.push((id, *parallelism));
                    continue;
                }
                _ => {}
            }
            self.log.push(c);
        }
    }

    /// Runs until nothing is queued; `fate` decides each first attempt's end by name.
    fn run(&mut self, bytes: u64, fate: &dyn Fn(&str) -> Fate) {
        loop {
            let Some(a) = self.queue.pop_front() else {
                // Restart delays: time passes to the next timer.
                match self.s.next_timer() {
                    Some(t) if !self.s.status().is_terminal() && t < 100_000_000 => {
                        self.now = self.now.max(t);
                        self.apply(Event::Tick);
                        continue;
                    }
                    _ => break,
                }
            };
            let v = ExecutionVertexIndex(a.vertex);
            if self.s.attempt(v) != a {
                continue;
            }
            self.apply(Event::TaskRunning(a));
            let name = self.s.graph().execution_vertex_name(v);
            let f = if a.attempt == 0 {
                fate(&name)
            } else {
                Fate::Finish
            };
            match f {
                Fate::Finish => {
                    let event = if self.s.is_adaptive() {
                        let job = self.s.graph().job_graph();
                        let id = self.s.graph().execution_vertex_id(v);
                        let reports = job
                            .produced_data_sets(id.job_vertex)
                            .iter()
                            .map(|&d| match self.s.subpartitions_of(d) {
                                Some(n) => {
                                    let each =
                                        self.per_subpartition.unwrap_or(bytes / u64::from(n));
                                    vec![each; n as usize]
                                }
                                None => Vec::new(),
                            })
                            .collect();
                        Event::TaskFinishedWithBytes(a, reports)
                    } else {
                        Event::TaskFinished(a)
                    };
                    self.apply(event);
                }
                Fate::Fail => self.apply(Event::TaskFailed(a, FailureCause::Task)),
                Fate::PartitionNotFound(result, partition) => self.apply(Event::TaskFailed(
                    a,
                    FailureCause::PartitionNotFound(IntermediateResultPartitionId {
                        result: conflux_graph::IntermediateDataSetIndex(result),
                        partition,
                    }),
                )),
            }
        }
    }
}

/// source -> map (ALL_TO_ALL, blocking) -> sink (ALL_TO_ALL, blocking); source and map
/// undecided, the sink fixed at 1.
fn three_stage(source: i32, map: i32) -> JobGraphJson {
    let mut v = vec![vertex("source", 1), vertex("map", 1), vertex("sink", 1)];
    v[0].parallelism = source;
    v[1].parallelism = map;
    job(
        "batch",
        v,
        vec![
            edge("source", "map", "all_to_all", "blocking"),
            edge("map", "sink", "all_to_all", "blocking"),
        ],
    )
}

/// Options small enough for a test: at most 8 subtasks, 16 MiB per subtask.
fn options() -> BatchExecutionOptions {
    BatchExecutionOptions {
        max_parallelism: 8,
        ..BatchExecutionOptions::default()
    }
}

/// Restarts after 1 s, up to 100 (the fates fail first attempts only).
fn config() -> SchedulerConfig {
    SchedulerConfig {
        restart: RestartStrategy::FixedDelay {
            attempts: 100,
            delay_ms: 1_000,
        },
        ..SchedulerConfig::default()
    }
}

/// Runs the undecided job adaptively and the job with the parallelisms it decided built whole,
/// under the same fates: the commands must be the same, and both jobs FINISHED.
fn check_same_as_built(bytes_per_source_task: u64, fate: &dyn Fn(&str) -> Fate) -> Driver {
    let undecided = three_stage(PARALLELISM_UNDECIDED, PARALLELISM_UNDECIDED);
    let job = JobGraph::from_json(&undecided).expect("valid");
    let s = Scheduler::new_adaptive(job, options(), config()).expect("adaptive");
    let mut adaptive = Driver::new(s);
    adaptive.run(bytes_per_source_task, fate);
    assert_eq!(adaptive.s.status(), JobStatus::Finished);

    let decided: Vec<u32> = adaptive
        .s
        .decisions()
        .iter()
        .map(|d| d.parallelism)
        .collect();
    let (graph, regions) = build(&three_stage(decided[0] as i32, decided[1] as i32));
    let mut built = Driver::new(Scheduler::new(graph, regions, config()));
    built.run(bytes_per_source_task, fate);
    assert_eq!(built.s.status(), JobStatus::Finished);
    assert_eq!(adaptive.log, built.log);
    assert_eq!(adaptive.s.restarts(), built.s.restarts());
    assert_eq!(
        adaptive.s.graph().num_execution_vertices(),
        built.s.graph().num_execution_vertices()
    );
    adaptive
}

/// 8 sources (the options' max parallelism) of 8 MiB each: 64 MiB decide 4 map subtasks, each
/// reading two of the 8 subpartitions (16 MiB); the sink keeps its 1.
#[test]
fn decides_and_grows_as_built_whole() {
    let d = check_same_as_built(8 * MIB, &|_| Fate::Finish);
    assert_eq!(
        d.initialized,
        vec![("map".to_owned(), 4), ("sink".to_owned(), 1)]
    );
    let decisions = d.s.decisions();
    assert_eq!(
        decisions
            .iter()
            .map(|d| (d.parallelism, d.undecided))
            .collect::<Vec<_>>(),
        vec![(8, true), (4, true), (1, false)]
    );
    assert_eq!(decisions[1].bytes_per_task, vec![16 * MIB; 4]);
    // The driver reports 8 MiB for every task, the map's included.
    assert_eq!(decisions[2].bytes_per_task, vec![32 * MIB]);
}

/// A dynamically initialised task fails: its region restarts alone (its inputs are
/// available), as in the graph built whole, and the job finishes.
#[test]
fn failover_of_a_dynamically_initialised_region() {
    let d = check_same_as_built(8 * MIB, &|name| {
        if name == "map#2" {
            Fate::Fail
        } else {
            Fate::Finish
        }
    });
    let restarts: Vec<&Command> = d
        .log
        .iter()
        .filter(|c| matches!(c, Command::Restart(_)))
        .collect();
    // map#2 is vertex 8 + 2. The naive model of every (producer, consumer) pair of the final
    // graph restarts its region and its consumer sink#0 (vertex 12); the sink was not
    // initialised when map#2 failed (it grew once every map subtask had finished), and
    // uninitialised vertices, like Flink's CREATED ones, are not restarted.
    assert_eq!(
        restarts,
        vec![&Command::Restart(vec![ExecutionVertexIndex(10)])]
    );
    let explicit = Explicit::new(d.s.graph());
    let flags = explicit.restart_regions(d.s.regions(), 10, &|_, _| true);
    assert_eq!(members_of(d.s.regions(), &flags), vec![10, 12]);
}

/// A decided vertex cannot read a partition of a source: the source's region restarts, and so
/// does every map region (each consumes it), as in the graph built whole.
#[test]
fn partition_not_found_in_a_dynamic_consumer_restarts_its_producer() {
    let d = check_same_as_built(8 * MIB, &|name| {
        if name == "map#1" {
            Fate::PartitionNotFound(0, 3)
        } else {
            Fate::Finish
        }
    });
    assert_eq!(d.s.restarts(), 1);
    assert!(d.log.iter().any(|c| matches!(
        c,
        Command::Restart(vs) if vs.contains(&ExecutionVertexIndex(3))
    )));
}

/// The known answer at the scheduler: 128 undecided sources (Flink 1.20's default source
/// parallelism falls back to the max parallelism, 128) write 1 GiB in all, evenly: the counting
/// vertex decides 64.
#[test]
fn word_count_of_one_gib_decides_64() {
    let mut json = job(
        "batch",
        vec![vertex("source", 1), vertex("count", 1)],
        vec![edge("source", "count", "all_to_all", "blocking")],
    );
    for v in &mut json.vertices {
        v.parallelism = PARALLELISM_UNDECIDED;
    }
    let job = JobGraph::from_json(&json).expect("valid");
    let s = Scheduler::new_adaptive(
        job,
        BatchExecutionOptions::default(),
        SchedulerConfig::default(),
    )
    .expect("adaptive");
    let mut d = Driver::new(s);
    d.run((1 << 30) / 128, &|_| Fate::Finish);
    assert_eq!(d.s.status(), JobStatus::Finished);
    assert_eq!(d.initialized, vec![("count".to_owned(), 64)]);
    assert_eq!(d.s.graph().num_execution_vertices(), 128 + 64);
}

/// A byte report of the wrong shape is refused before anything changes.
#[test]
fn a_bad_byte_report_is_refused() {
    let job = JobGraph::from_json(&three_stage(PARALLELISM_UNDECIDED, PARALLELISM_UNDECIDED))
        .expect("valid");
    let s = Scheduler::new_adaptive(job, options(), SchedulerConfig::default()).expect("adaptive");
    let mut d = Driver::new(s);
    let a = d.queue.pop_front().expect("a source deployed");
    d.apply(Event::TaskRunning(a));
    let err =
        d.s.handle(10, Event::TaskFinishedWithBytes(a, vec![vec![1, 2, 3]]))
            .expect_err("8 subpartitions");
    assert_eq!(
        err,
        SchedulerError::ProducedBytes {
            vertex: "source#0".to_owned(),
            reason: "3 subpartitions reported for data set 0, it has 8".to_owned()
        }
    );
    assert_eq!(
        d.s.state(ExecutionVertexIndex(0)),
        conflux_deploy::ExecutionState::Running
    );
}

/// Flink's `AdaptiveBatchSchedulerTest#testDecideParallelismForForwardTarget`: source (6) ->
/// map (-1) -> sink (-1), both edges POINTWISE and blocking, map -> sink FORWARD. Map is decided
/// at 5 when the source finishes, the sink stays undecided until map finishes and then takes
/// its forward group's 5, reading all of map's 5 x ceil(128 / 5) = 130 subpartitions of 100
/// bytes, 13,000 bytes (Flink's expected values; Flink's test fixes the decisions with a
/// custom decider, here the bytes do: 6 x ceil(128 / 6) = 132 subpartitions of 100 bytes at
/// 3,250 bytes per task decide 5, while the sink's 13,000 bytes alone would decide 4).
#[test]
fn a_forward_target_takes_its_groups_parallelism() {
    let run = |forward: bool| {
        let mut sink_edge = edge("map", "sink", "pointwise", "blocking");
        if forward {
            sink_edge.ship_strategy = Some("FORWARD".to_owned());
        }
        let mut json = job(
            "batch",
            vec![vertex("source", 6), vertex("map", 1), vertex("sink", 1)],
            vec![edge("source", "map", "pointwise", "blocking"), sink_edge],
        );
        json.vertices[1].parallelism = PARALLELISM_UNDECIDED;
        json.vertices[2].parallelism = PARALLELISM_UNDECIDED;
        let options = BatchExecutionOptions {
            avg_data_volume_per_task: 3_250,
            ..BatchExecutionOptions::default()
        };
        let job = JobGraph::from_json(&json).expect("valid");
        let s = Scheduler::new_adaptive(job, options, config()).expect("adaptive");
        let mut d = Driver::new(s);
        d.per_subpartition = Some(100);
        d.run(0, &|_| Fate::Finish);
        assert_eq!(d.s.status(), JobStatus::Finished);
        d
    };
    let d = run(true);
    assert_eq!(
        d.initialized,
        vec![("map".to_owned(), 5), ("sink".to_owned(), 5)]
    );
    let sink = &d.s.decisions()[1];
    assert!(sink.undecided, "decided at run time, by its group");
    assert_eq!(sink.bytes_per_task.iter().sum::<u64>(), 13_000);
    assert_eq!(sink.bytes_per_task, vec![2_600; 5]);
    // Without the FORWARD edge the sink is decided from its own bytes.
    let d = run(false);
    assert_eq!(
        d.initialized,
        vec![("map".to_owned(), 5), ("sink".to_owned(), 4)]
    );
}

/// The reproduction of a forward group on `conflux run`: source (6) -> map (-1, ALL_TO_ALL) ->
/// sink (-1, FORWARD): the sink takes map's parallelism whatever its own bytes would decide.
#[test]
fn a_forward_group_of_undecided_vertices_is_decided_once() {
    let mut sink_edge = edge("map", "sink", "pointwise", "blocking");
    sink_edge.ship_strategy = Some("FORWARD".to_owned());
    let mut json = job(
        "batch",
        vec![vertex("source", 6), vertex("map", 1), vertex("sink", 1)],
        vec![edge("source", "map", "all_to_all", "blocking"), sink_edge],
    );
    json.vertices[1].parallelism = PARALLELISM_UNDECIDED;
    json.vertices[2].parallelism = PARALLELISM_UNDECIDED;
    let job = JobGraph::from_json(&json).expect("valid");
    let s = Scheduler::new_adaptive(job, options(), config()).expect("adaptive");
    let mut d = Driver::new(s);
    // 6 x 8 MiB over 8 subpartitions of 6 MiB: map decides 4 ranges of two (12 MiB each); its
    // tasks write 8 MiB each, 32 MiB, which alone would decide 2 sink subtasks.
    d.run(8 * MIB, &|_| Fate::Finish);
    assert_eq!(d.s.status(), JobStatus::Finished);
    assert_eq!(
        d.initialized,
        vec![("map".to_owned(), 4), ("sink".to_owned(), 4)]
    );
}
