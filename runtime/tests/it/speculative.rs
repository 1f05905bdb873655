//! Speculative execution on the cluster: one TaskManager 20 times slower than the others, a
//! detector without a lower bound that looks every 50 ms, and slots to spare, so that the slow
//! TaskManager's tasks get speculative attempts elsewhere that win their races. A word count
//! shows that only one attempt's output is consumed: every word is counted once.

use std::path::Path;
use std::time::Duration;

use conflux_graph::ResultPartitionType;
use conflux_operators::verify_output;
use conflux_runtime::protocol::{JobOptions, JobSubmission};
use conflux_runtime::JobReport;
use conflux_scheduler::SpeculativeExecutionOptions;

use crate::support::{
    jm_config, run_job, start_jm, submission, tm_config, wait_for_task_managers, word_count, Tm,
    WordCount,
};

const TASK_MANAGERS: usize = 3;
const SLOWDOWN: f64 = 20.0;

/// Speculative execution that reacts within a test: no lower bound, a check every 50 ms, a
/// baseline once half of a vertex's tasks finished; `block_slow_node_duration_ms` as given.
fn speculative(block_slow_node_duration_ms: u64) -> SpeculativeExecutionOptions {
    SpeculativeExecutionOptions {
        enabled: true,
        max_concurrent_executions: 2,
        block_slow_node_duration_ms,
        check_interval_ms: 50,
        baseline_lower_bound_ms: 0,
        baseline_ratio: 0.5,
        baseline_multiplier: 1.5,
    }
}

/// Runs `submission` on three TaskManagers of 4 slots, the first `SLOWDOWN` times slower, with
/// tasks spread evenly over them (so the slow one runs some of every vertex, and the others
/// have free slots for speculative attempts).
async fn run_with_a_slow_task_manager(
    dir: &Path,
    options: SpeculativeExecutionOptions,
    submission: JobSubmission,
) -> JobReport {
    let mut config = jm_config(dir);
    config.scheduler.speculative = options;
    config.scheduler.evenly_spread_out_slots = true;
    let jm = start_jm(config).await;
    let address = jm.address().to_string();
    let mut tms = Vec::new();
    for i in 0..TASK_MANAGERS {
        let mut config = tm_config(&address, 4, &dir.join(format!("tm-{i}")));
        if i == 0 {
            config.slowdown = SLOWDOWN;
        }
        tms.push(Tm::spawn(config));
    }
    wait_for_task_managers(&jm, TASK_MANAGERS).await;
    run_job(&jm, submission, Duration::from_secs(120)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn speculative_attempts_of_a_slow_task_manager_win() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 6 sources and 6 counts, 100-200 ms each (2-4 s on the slow TaskManager).
    let job = word_count(6, ResultPartitionType::Blocking);
    let report =
        run_with_a_slow_task_manager(dir.path(), speculative(60_000), submission(job, (100, 200)))
            .await;
    assert_eq!(report.status, "FINISHED", "{report:?}");
    let s = report.speculative_attempts;
    assert!(s.enabled, "{s:?}");
    assert!(s.started > 0, "{s:?}");
    assert!(s.won > 0, "{s:?}");
    // Every speculative attempt ended one way (no failures here): it won its race, or it was
    // cancelled because its original finished first.
    assert_eq!(s.failed, 0, "{s:?}");
    assert_eq!(s.started, s.won + s.cancelled, "{s:?}");
    // Every speculative attempt was shipped, besides one attempt per task.
    assert_eq!(report.tasks, 12);
    assert_eq!(
        report.tasks_deployed,
        report.tasks + s.started,
        "{report:?}"
    );
    assert_eq!(report.restarts, 0, "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_speculation_nothing_is_speculative() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = word_count(3, ResultPartitionType::Blocking);
    let options = SpeculativeExecutionOptions::default();
    let report = run_with_a_slow_task_manager(dir.path(), options, submission(job, (0, 10))).await;
    assert_eq!(report.status, "FINISHED", "{report:?}");
    let s = report.speculative_attempts;
    assert_eq!(
        (s.enabled, s.started, s.won, s.cancelled, s.failed),
        (false, 0, 0, 0, 0)
    );
    assert_eq!(report.tasks_deployed, report.tasks);
}

/// 6 sources and 6 counters, each source 200,000 words.
const WORD_COUNT: WordCount = WordCount {
    sources: 6,
    counters: Some(6),
    words_per_source: 200_000,
    vocabulary: 2_000,
    seed: 3,
    job_type: "batch",
    partition_type: "blocking",
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_word_count_with_a_slow_task_manager_counts_every_word_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = dir.path().join("out");
    let submission = JobSubmission {
        job: WORD_COUNT.job(),
        source: "wordcount.json".into(),
        options: JobOptions {
            output_dir: Some(output.clone()),
            ..JobOptions::default()
        },
    };
    // Nothing blocked: counts run on the slow TaskManager too, and race their speculative
    // attempts (both read the same partitions and write the same sink file).
    let report = run_with_a_slow_task_manager(dir.path(), speculative(0), submission).await;
    assert_eq!(report.status, "FINISHED", "{report:?}");
    let s = report.speculative_attempts;
    assert!(s.started > 0 && s.won > 0, "{s:?}");
    let data = report.data.clone().expect("a data report");
    // The words of the count attempts that finished, one per subtask: each word once.
    assert_eq!(data.words, WORD_COUNT.words(), "{data:?}");
    // Counts read each winner's partition where it ran (a descriptor naming the loser's
    // TaskManager would fail the read and restart); a speculative attempt is no re-run.
    assert_eq!(report.restarts, 0, "{report:?}");
    assert_eq!(data.reruns.values().sum::<u64>(), 0, "{data:?}");
    let expected = WORD_COUNT.expected();
    let verification = verify_output(&expected, &output).expect("verifies");
    assert!(verification.verified(), "{verification:?}");
    assert_eq!(verification.words_found, data.words);
}

/// Adaptive batch with speculation: the winners' byte reports are the ones the decision reads,
/// so the count vertex is decided exactly as in a run without speculation, and the counts are
/// right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecided_word_count_is_decided_from_the_winners_bytes() {
    let undecided = || {
        WordCount {
            counters: None,
            ..WORD_COUNT
        }
        .job()
    };
    let run = |options: SpeculativeExecutionOptions, name: &'static str| {
        let job = undecided();
        async move {
            let dir = tempfile::tempdir().expect("tempdir");
            let output = dir.path().join("out");
            let submission = JobSubmission {
                job: job.clone(),
                source: format!("{name}.json"),
                options: JobOptions {
                    output_dir: Some(output.clone()),
                    batch: conflux_runtime::protocol::BatchOptions::from(
                        conflux_adaptive::BatchExecutionOptions {
                            avg_data_volume_per_task: 1_000_000,
                            ..conflux_adaptive::BatchExecutionOptions::default()
                        },
                    ),
                    ..JobOptions::default()
                },
            };
            let report = run_with_a_slow_task_manager(dir.path(), options, submission).await;
            assert_eq!(report.status, "FINISHED", "{name}: {report:?}");
            let graph = conflux_graph::load::load(&job, &Default::default()).expect("job graph");
            let job = conflux_runtime::word_count_job_as_run(&graph, &report)
                .expect("word count")
                .expect("a word count");
            let verification = verify_output(&job, &output).expect("verifies");
            assert!(verification.verified(), "{name}: {verification:?}");
            assert_eq!(verification.words_found, WORD_COUNT.words());
            report
        }
    };
    let speculating = run(speculative(60_000), "speculative").await;
    let s = speculating.speculative_attempts;
    assert!(s.started > 0 && s.won > 0, "{s:?}");
    let plain = run(SpeculativeExecutionOptions::default(), "plain").await;
    assert_eq!(plain.speculative_attempts.started, 0);
    let (a, b) = (speculating.adaptive, plain.adaptive);
    assert!(
        b.decided_parallelism.as_ref().expect("decided")["count"] > 1,
        "{b:?}"
    );
    assert_eq!(a.decided_parallelism, b.decided_parallelism);
    assert_eq!(a.consumed_subpartitions, b.consumed_subpartitions);
    assert_eq!(a.bytes_per_task, b.bytes_per_task);
}
