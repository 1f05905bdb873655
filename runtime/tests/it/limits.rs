//! The JobManager's bounds and failure paths, each pinning a regression: admission by the
//! estimated memory of a job, queued jobs cancelled at once, the job history's size and age,
//! paths that are not UTF-8 refused instead of panicking, failures that would recur failing the
//! job at once (with the output marked incomplete), and submissions timed from their hand-over
//! behind a bounded window.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use conflux_runtime::connection::{encode, RpcError};
use conflux_runtime::protocol::{
    JobOptions, JobSubmission, TaskSpec, ToTaskManager, WordCountRole, WordCountTask,
};
use conflux_runtime::{ClientError, JobHistory, JobManagerClient, JobManagerError};
use conflux_scheduler::RestartStrategy;

use crate::support::{
    jm_config, run_job, start_jm, submission, tm_config, wait_for_task_managers, wait_until,
    within, Tm, WordCount,
};

/// The 95-byte job of 2^26 subtasks that took a JobManager to 16 GB.
const HUGE_JOB: &[u8] = br#"{"job_type":"batch","vertices":[{"id":"a","parallelism":67108864,"max_parallelism":67108864}]}"#;

/// One vertex of `parallelism` subtasks.
fn one_vertex(parallelism: u32) -> Bytes {
    Bytes::from(format!(
        r#"{{"name":"one vertex","job_type":"batch","vertices":[{{"id":"a","parallelism":{parallelism}}}]}}"#
    ))
}

fn not_utf8() -> PathBuf {
    PathBuf::from(OsStr::from_bytes(b"/tmp/conflux-o\xff"))
}

/// Regression: a 95-byte job of 2^26 subtasks was expanded at submission (5.6 GB) and kept
/// growing; now its estimate is refused before anything is built, naming the estimate, the
/// limit and the option, and nothing is queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_above_the_memory_budget_is_refused_at_submission() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(jm_config(dir.path())).await;
    let e = jm
        .submit(submission(Bytes::from_static(HUGE_JOB), (0, 0)))
        .await
        .expect_err("refused");
    let message = e.to_string();
    assert!(
        matches!(e, JobManagerError::TooLarge { limit, estimate, execution_vertices, .. }
            if limit == 4 << 30 && estimate > limit && execution_vertices == 1 << 26),
        "{message}"
    );
    assert!(
        message.contains("4.0 GiB (4294967296 bytes)")
            && message.contains("--max-job-memory")
            && message.contains("67108864 subtasks"),
        "{message}"
    );
    // A small budget refuses a small job too; within it a job is queued.
    let mut config = jm_config(dir.path());
    config.max_job_memory_bytes = 1 << 20;
    let small = start_jm(config).await;
    let e = small
        .submit(submission(one_vertex(10_000), (0, 0)))
        .await
        .expect_err("10,000 subtasks take more than 1 MiB");
    assert!(matches!(e, JobManagerError::TooLarge { .. }), "{e}");
    small
        .submit(submission(one_vertex(100), (0, 0)))
        .await
        .expect("100 subtasks fit 1 MiB");
    assert!(jm.list().is_empty());
    assert_eq!(small.list().len(), 1);
    small.shutdown().await;
    jm.shutdown().await;
}

/// Regression: cancelling a queued job printed "cancelling" but `list` kept it QUEUED (with its
/// whole scheduler in memory) until the job before it ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_job_cancelled_ends_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(jm_config(dir.path())).await;
    // No TaskManager: the first job runs (waiting for slots), the second waits behind it.
    let first = jm
        .submit(submission(one_vertex(4), (0, 0)))
        .await
        .expect("queued");
    let second = jm
        .submit(submission(one_vertex(4), (0, 0)))
        .await
        .expect("queued");
    wait_until("the first job runs", Duration::from_secs(5), || {
        jm.list().first().is_some_and(|j| j.status == "RUNNING")
    })
    .await;
    assert_eq!(jm.list()[1].status, "QUEUED");
    jm.cancel(second).expect("known");
    assert_eq!(
        jm.list()
            .iter()
            .map(|j| (j.job, j.status.as_str()))
            .collect::<Vec<_>>(),
        [(first, "RUNNING"), (second, "CANCELED")]
    );
    let report = within(
        "the cancelled job's report",
        Duration::from_secs(1),
        jm.wait(second),
    )
    .await
    .expect("a report");
    assert_eq!((report.status.as_str(), report.tasks), ("CANCELED", 4));
    jm.shutdown().await;
}

/// Regression: 100,000 jobs kept 100,000 entries (and `list` answered them all); the history
/// keeps the newest `size` ended jobs, none older than its age.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_jobs_beyond_the_history_are_dropped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = jm_config(dir.path());
    config.job_history = JobHistory {
        size: 2,
        ttl_ms: 3_600_000,
    };
    let jm = start_jm(config).await;
    let _tm = Tm::spawn(tm_config(
        &jm.address().to_string(),
        1,
        &dir.path().join("tm"),
    ));
    wait_for_task_managers(&jm, 1).await;
    let mut ids = Vec::new();
    for _ in 0..4 {
        let id = jm
            .submit(submission(one_vertex(1), (0, 0)))
            .await
            .expect("queued");
        within("the job's end", Duration::from_secs(20), jm.wait(id))
            .await
            .expect("a report");
        ids.push(id);
    }
    let listed: Vec<_> = jm.list().into_iter().map(|j| j.job).collect();
    assert_eq!(listed, ids[2..]);
    assert!(matches!(
        jm.wait(ids[0]).await,
        Err(JobManagerError::UnknownJob(_))
    ));
    jm.shutdown().await;

    let mut config = jm_config(dir.path());
    config.job_history = JobHistory {
        size: 10,
        ttl_ms: 50,
    };
    let jm = start_jm(config).await;
    let _tm = Tm::spawn(tm_config(
        &jm.address().to_string(),
        1,
        &dir.path().join("tm2"),
    ));
    wait_for_task_managers(&jm, 1).await;
    run_job(
        &jm,
        submission(one_vertex(1), (0, 0)),
        Duration::from_secs(20),
    )
    .await;
    wait_until("the ended job ages out", Duration::from_secs(5), || {
        jm.list().is_empty()
    })
    .await;
    jm.shutdown().await;
}

/// Regression: an output directory that is not UTF-8 made the encoder panic in four threads
/// ("bug: protocol message does not encode") and the cluster hang; now the encoder returns an
/// error naming the message, the JobManager refuses such a submission, and a client's
/// submission fails with the error instead of a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_that_is_not_utf8_is_an_error_never_a_panic() {
    let task = ToTaskManager::SubmitTask {
        tdd: Bytes::new(),
        task: TaskSpec::WordCount(WordCountTask {
            role: WordCountRole::Count,
            subtask: 0,
            config: Vec::new(),
            output_dir: Some(not_utf8()),
            sink_delay_us: 0,
            credit: 1,
            report_produced_bytes: false,
        }),
        job_secret: conflux_runtime::protocol::Secret([7; 16]),
    };
    let e = encode(&task).expect_err("does not encode");
    assert!(
        matches!(
            &e,
            RpcError::Encode {
                message: "ToTaskManager",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("does not encode"), "{e}");

    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(jm_config(dir.path())).await;
    let with_bad_dir = JobSubmission {
        options: JobOptions {
            output_dir: Some(not_utf8()),
            ..JobOptions::default()
        },
        ..submission(one_vertex(1), (0, 0))
    };
    let e = jm.submit(with_bad_dir.clone()).await.expect_err("refused");
    assert!(
        matches!(&e, JobManagerError::InvalidJob { message, .. } if message.contains("not valid UTF-8")),
        "{e}"
    );
    let mut client = JobManagerClient::connect(&jm.address().to_string(), None)
        .await
        .expect("connects");
    let e = client.submit(with_bad_dir).await.expect_err("not sent");
    assert!(
        matches!(
            e,
            ClientError::Rpc(RpcError::Encode {
                message: "ClientRequest",
                ..
            })
        ),
        "{e}"
    );
    // The connection is still usable.
    assert!(client.list().await.expect("lists").is_empty());
    jm.shutdown().await;
}

/// A JobManager whose restart strategy allows 20 restarts, and two TaskManagers of 4 slots
/// with `quota` bytes of data directory each.
async fn run_word_count(
    dir: &std::path::Path,
    output: PathBuf,
    quota: Option<u64>,
) -> conflux_runtime::JobReport {
    let mut config = jm_config(dir);
    config.scheduler.restart = RestartStrategy::FixedDelay {
        attempts: 20,
        delay_ms: 10,
    };
    let jm = start_jm(config).await;
    let address = jm.address().to_string();
    let mut tms = Vec::new();
    for name in ["tm-a", "tm-b"] {
        let mut config = tm_config(&address, 4, &dir.join(name));
        config.data_dir_max_bytes = quota;
        tms.push(Tm::spawn(config));
    }
    wait_for_task_managers(&jm, 2).await;
    let submission = JobSubmission {
        job: WordCount::blocking(2, Some(2), 20_000, 1_000, 5).job(),
        source: "wordcount.json".into(),
        options: JobOptions {
            output_dir: Some(output),
            ..JobOptions::default()
        },
    };
    let report = run_job(&jm, submission, Duration::from_secs(60)).await;
    jm.shutdown().await;
    report
}

/// Regression: an output directory that could not be written, or a data directory quota that
/// one task's output exceeds, made the job restart forever with nothing said. Such a failure
/// recurs on every attempt: the job fails at once, whatever the restart strategy allows, with
/// the reason; its output has no `_SUCCESS` (a stale one is removed), while a finished job's
/// output has one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_that_recurs_fails_the_job_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    // An output directory below a file: no attempt can create it (whoever runs the test).
    std::fs::write(dir.path().join("a-file"), b"").expect("file");
    let report = run_word_count(dir.path(), dir.path().join("a-file").join("out"), None).await;
    assert_eq!(report.status, "FAILED", "{report:?}");
    assert_eq!(report.restarts, 0, "{report:?}");
    let reason = report.failure_reason.clone().unwrap_or_default();
    assert!(
        reason.contains("non-recoverable") && reason.contains("output directory"),
        "{reason}"
    );

    let out = dir.path().join("out-quota");
    std::fs::create_dir_all(&out).expect("dir");
    std::fs::write(out.join("_SUCCESS"), b"").expect("a stale marker");
    let report = run_word_count(dir.path(), out.clone(), Some(0)).await;
    assert_eq!(report.status, "FAILED", "{report:?}");
    assert_eq!(report.restarts, 0, "{report:?}");
    let reason = report.failure_reason.clone().unwrap_or_default();
    assert!(
        reason.contains("non-recoverable") && reason.contains("this file alone exceeds the quota"),
        "{reason}"
    );
    assert!(
        !out.join("_SUCCESS").exists(),
        "a failed job's output is incomplete"
    );

    let out = dir.path().join("out-ok");
    let report = run_word_count(dir.path(), out.clone(), None).await;
    assert_eq!(report.status, "FINISHED", "{report:?}");
    assert!(out.join("_SUCCESS").exists());
}

/// Regression: every submission of a burst was timed from when the job loop queued it, so the
/// last ones of a long queue timed out before they were even sent (342,820 "not acknowledged in
/// time" in one run). With every message to the TaskManager delayed 10 ms, 100 submissions take
/// a second to go out, far beyond a 300 ms timeout; behind a window of 2 each is timed from its
/// hand-over and none times out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submissions_are_timed_from_their_hand_over() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = jm_config(dir.path());
    config.rpc.timeout_ms = 300;
    config.rpc.max_submissions_in_flight = 2;
    config.rpc.faults.delay_ms = 10;
    config.heartbeat.timeout_ms = 10_000;
    let jm = start_jm(config).await;
    let _tm = Tm::spawn(tm_config(
        &jm.address().to_string(),
        100,
        &dir.path().join("tm"),
    ));
    wait_for_task_managers(&jm, 1).await;
    let report = run_job(
        &jm,
        submission(one_vertex(100), (0, 0)),
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(report.status, "FINISHED", "{report:?}");
    assert_eq!(
        (report.rpc_timeouts, report.restarts),
        (Some(0), 0),
        "{report:?}"
    );
    assert_eq!(report.tasks_deployed, 100);
    jm.shutdown().await;
}
