//! Adaptive batch on the cluster: undecided vertices (`-1`) decided by the JobManager from the
//! bytes per subpartition the TaskManagers' tasks report, their deployment descriptors carrying
//! the decided subpartition ranges.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use conflux_adaptive::{
    decide_parallelism_and_input_infos, BatchExecutionOptions, ResultBytes, VertexToDecide,
};
use conflux_graph::DistributionPattern;
use conflux_operators::{verify_output, RoutedVocabulary, Vocabulary, WordSource, Zipf};
use conflux_runtime::protocol::{BatchOptions, JobOptions, JobSubmission};
use conflux_runtime::{word_count_job_as_run, JobReport};

use crate::support::{
    jm_config, run_job, start_jm, tm_config, wait_for_task_managers, Tm, WordCount,
};

const SOURCES: u32 = 4;
const WORDS_PER_SOURCE: u64 = 30_000;
const VOCABULARY: u32 = 3_000;
const SEED: u64 = 5;
/// Bytes a count subtask is meant to read: small, so that the word count's ~150 KB decide
/// several subtasks.
const AVG_BYTES_PER_TASK: u64 = 20_000;

/// A word count of 4 sources and an undecided count vertex, all-to-all, blocking.
fn undecided_word_count() -> Bytes {
    WordCount::blocking(SOURCES, None, WORDS_PER_SOURCE, VOCABULARY, SEED).job()
}

async fn run_on_two_task_managers(dir: &Path, job: Bytes, options: JobOptions) -> JobReport {
    let jm = start_jm(jm_config(dir)).await;
    let address = jm.address().to_string();
    let mut tms = Vec::new();
    for name in ["tm-a", "tm-b"] {
        tms.push(Tm::spawn(tm_config(&address, 8, &dir.join(name))));
    }
    wait_for_task_managers(&jm, 2).await;
    let submission = JobSubmission {
        job,
        source: "adaptive.json".into(),
        options,
    };
    run_job(&jm, submission, Duration::from_secs(60)).await
}

/// The decision computed here from the word count's seeds alone: each source's words, routed to
/// their key groups (128, one subpartition each), weigh their encoded records' bytes.
fn expected_decision(
    options: &BatchExecutionOptions,
) -> conflux_adaptive::ParallelismAndInputInfos {
    let vocabulary = Vocabulary::new(SEED, VOCABULARY).expect("vocabulary");
    let zipf = Zipf::new(VOCABULARY).expect("zipf");
    let routed = RoutedVocabulary::new(&vocabulary, 128, 128).expect("routes");
    let mut bytes = ResultBytes::new(SOURCES, 128);
    for subtask in 0..SOURCES {
        let mut written = vec![0u64; 128];
        for id in WordSource::new(&zipf, SEED, subtask, WORDS_PER_SOURCE) {
            let (key_group, record) = routed.record(id);
            written[key_group as usize] += record.len() as u64;
        }
        bytes.add(subtask, &written).expect("bytes");
    }
    let input = bytes.input(DistributionPattern::AllToAll, false);
    decide_parallelism_and_input_infos(options, &VertexToDecide::undecided(128), &[input])
        .expect("decision")
}

/// The JobManager decides the count vertex from the bytes the sources measured, exactly as the
/// decider does on bytes computed from the seeds, ships each counter its key-group range, and
/// the counts are right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecided_word_count_is_decided_from_the_bytes_its_sources_wrote() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = dir.path().join("out");
    let batch = BatchExecutionOptions {
        avg_data_volume_per_task: AVG_BYTES_PER_TASK,
        ..BatchExecutionOptions::default()
    };
    let options = JobOptions {
        output_dir: Some(output.clone()),
        batch: BatchOptions::from(batch.clone()),
        ..JobOptions::default()
    };
    let report = run_on_two_task_managers(dir.path(), undecided_word_count(), options).await;
    assert_eq!(report.status, "FINISHED", "{report:?}");

    let expected = expected_decision(&batch);
    assert!(expected.parallelism > 1, "{}", expected.parallelism);
    let adaptive = &report.adaptive;
    let decided = adaptive
        .decided_parallelism
        .as_ref()
        .expect("decided vertices");
    assert_eq!(
        decided.get("count"),
        Some(&expected.parallelism),
        "{adaptive:?}"
    );
    let ranges: Vec<[u32; 2]> = expected.input_infos[0]
        .iter()
        .map(|i| [i.subpartition_range.start, i.subpartition_range.end])
        .collect();
    assert_eq!(
        adaptive.consumed_subpartitions.as_ref().expect("ranges")["count"],
        ranges
    );
    assert_eq!(report.tasks, u64::from(SOURCES + expected.parallelism));

    // Every word is counted once, by the subtask whose range holds its key group.
    let graph =
        conflux_graph::load::load(&undecided_word_count(), &Default::default()).expect("job graph");
    let job = word_count_job_as_run(&graph, &report)
        .expect("word count")
        .expect("a word count");
    assert_eq!(job.counters, expected.parallelism);
    let verification = verify_output(&job, &output).expect("verify");
    assert!(verification.verified(), "{verification:?}");
    assert_eq!(
        verification.words_found,
        u64::from(SOURCES) * WORDS_PER_SOURCE
    );
}

/// Flink 1.20's word count exported with the adaptive batch scheduler's defaults (`-1`),
/// synthetic tasks reporting 1 GiB from the source spread evenly: the counting vertex gets 64
/// subtasks of 16 MiB each (1 GiB / 16 MiB), as `conflux run` decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flink_plan_with_undecided_parallelism_decides_64_on_the_cluster() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/flink-plans/wordcount-batch-p4-adaptive.plan.json"),
    )
    .expect("fixture");
    let options = JobOptions {
        task_duration_ms: (0, 0),
        source_bytes: 1 << 30,
        ..JobOptions::default()
    };
    let report = run_on_two_task_managers(dir.path(), Bytes::from(plan), options).await;
    assert_eq!(report.status, "FINISHED", "{report:?}");
    let adaptive = &report.adaptive;
    let decided: Vec<u32> = adaptive
        .decided_parallelism
        .as_ref()
        .expect("decided vertices")
        .values()
        .copied()
        .collect();
    // The source (undecided, no inputs) gets the max parallelism, 128; the counter 64.
    assert_eq!(
        decided.iter().filter(|&&p| p == 64).count(),
        1,
        "{adaptive:?}"
    );
    assert_eq!(
        decided.iter().filter(|&&p| p == 128).count(),
        1,
        "{adaptive:?}"
    );
    let per_task: Vec<_> = adaptive
        .bytes_per_task
        .as_ref()
        .expect("bytes per task")
        .values()
        .collect();
    assert_eq!(per_task.len(), 1, "{adaptive:?}");
    assert_eq!(per_task[0].min, 16 << 20);
    assert_eq!(per_task[0].max, 16 << 20);
    assert_eq!(report.tasks, 128 + 64);
}

/// `--default-parallelism` given: nothing is decided, undecided vertices run at it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_default_parallelism_runs_undecided_vertices_at_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = JobOptions {
        default_parallelism: Some(3),
        output_dir: Some(dir.path().join("out")),
        ..JobOptions::default()
    };
    let report = run_on_two_task_managers(dir.path(), undecided_word_count(), options).await;
    assert_eq!(report.status, "FINISHED", "{report:?}");
    // Nothing decided at run time: every adaptive key is null.
    assert_eq!(
        report.adaptive,
        conflux_runtime::report::AdaptiveReport::default()
    );
    assert_eq!(report.tasks, u64::from(SOURCES + 3));
}

/// A keyed count reads each key group whole: marked `skew_splittable`, its key groups could be
/// split across subtasks and a word counted in pieces, so the submission is refused naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skew_splittable_count_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(jm_config(dir.path())).await;
    let job = String::from_utf8(undecided_word_count().to_vec())
        .expect("UTF-8")
        .replace(
            r#""invokable":"wordcount-count""#,
            r#""invokable":"wordcount-count","skew_splittable":true"#,
        );
    let err = jm
        .submit(JobSubmission {
            job: Bytes::from(job),
            source: "split.json".into(),
            options: JobOptions::default(),
        })
        .await
        .expect_err("refused")
        .to_string();
    assert!(
        err.contains("vertex count: a wordcount-count vertex cannot be skew_splittable"),
        "{err}"
    );
    jm.shutdown().await;
}
