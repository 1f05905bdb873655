//! Jobs end to end on an in-process JobManager and two in-process TaskManagers: the report's
//! values, the client's submit / list / wait / cancel, refusals of bad requests.

use std::time::Duration;

use conflux_graph::ResultPartitionType;
use conflux_runtime::{ClientError, JobManagerClient};

use crate::support::{
    jm_config, start_jm, submission, tm_config, wait_for_task_managers, within, word_count,
    word_count_name, Tm,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn word_count_finishes_on_two_task_managers_with_a_full_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(jm_config(dir.path())).await;
    let address = jm.address().to_string();
    let _a = Tm::spawn(tm_config(&address, 4, &dir.path().join("tm-a")));
    let _b = Tm::spawn(tm_config(&address, 4, &dir.path().join("tm-b")));
    wait_for_task_managers(&jm, 2).await;
    let mut registered = jm.task_managers();
    registered.sort_by_key(|t| t.id);
    assert_eq!(
        registered
            .iter()
            .map(|t| (t.id.0, t.slots, t.pid))
            .collect::<Vec<_>>(),
        vec![(0, 4, std::process::id()), (1, 4, std::process::id())]
    );

    let mut client = JobManagerClient::connect(&address, None)
        .await
        .expect("a client connects");
    let job = client
        .submit(submission(
            word_count(4, ResultPartitionType::Blocking),
            (10, 30),
        ))
        .await
        .expect("the job is accepted");
    let listed = client.list().await.expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].job, job);
    assert_eq!(
        listed[0].name,
        word_count_name(4, ResultPartitionType::Blocking)
    );
    // CREATED: started, its job loop not yet RUNNING.
    assert!(
        ["QUEUED", "CREATED", "RUNNING", "FINISHED"].contains(&listed[0].status.as_str()),
        "{}",
        listed[0].status
    );
    assert_eq!(listed[0].total_tasks(), 8, "{:?}", listed[0]);
    assert!(listed[0].start_ms > 0, "{:?}", listed[0]);
    // One job's summary is the job's row of the table.
    let one = client.status(job).await.expect("status");
    assert_eq!((one.job, one.total_tasks()), (job, 8), "{one:?}");

    let report = within("the word count", Duration::from_secs(30), client.wait(job))
        .await
        .expect("a report");
    assert_eq!(report.status, "FINISHED", "{report:?}");
    assert_eq!(report.failure_reason, None);
    assert_eq!(report.job_id, job.to_string());
    assert_eq!(report.job_id.len(), 32);
    assert_eq!(
        report.job,
        word_count_name(4, ResultPartitionType::Blocking)
    );
    assert_eq!(report.tasks, 8);
    assert_eq!(report.tasks_deployed, 8);
    assert_eq!(report.restarts, 0);
    assert_eq!(report.task_managers_lost, 0);
    assert_eq!(report.heartbeat_timeouts, Some(0));
    assert_eq!(report.rpc_timeouts, Some(0));
    assert!(report.wall_ms.total > 0.0, "{:?}", report.wall_ms);
    let deploy = report.wall_ms.deploy.expect("a deploy time");
    assert!(deploy >= 0.0 && deploy <= report.wall_ms.total);
    // Round trips are measured only when heartbeats were answered while the job ran.
    assert!(report.max_heartbeat_rtt_ms.is_none_or(|rtt| rtt >= 0.0));
    assert!(report.max_handler_stall_ms > 0.0);
    let cpu = report.max_handler_cpu_ms.expect("a CPU time");
    assert!(cpu > 0.0);
    // Times are rounded to 0.001 ms.
    for t in [
        report.wall_ms.total,
        deploy,
        report.max_handler_stall_ms,
        cpu,
    ] {
        assert_eq!(conflux_report::round::thousandths(t), t, "{t}");
    }
    // Two clocks (the thread's CPU clock and the monotonic one), which drift apart a little on
    // a loaded virtual machine: the CPU time may exceed the wall time by a few per cent (it
    // did by more than one 10 µs tick at load 5.5), never by much.
    assert!(
        cpu <= report.max_handler_stall_ms * 1.1 + 0.1,
        "cpu {cpu} ms, wall {} ms",
        report.max_handler_stall_ms
    );
    assert!(report.jobmanager_peak_rss_bytes.is_some_and(|b| b > 0));
    assert_eq!(report.peak_rss_bytes, report.jobmanager_peak_rss_bytes);
    assert_eq!(report.trace_digest.len(), 16, "{report:?}");
    assert_eq!(report.killed_task_manager, None);
    assert_eq!(report.kill_skipped, None);
    // Both took part; listed are those that received tasks, with what they reported.
    assert_eq!(report.task_manager_count, 2);
    let tms = &report.task_managers;
    assert!(!tms.is_empty(), "{tms:?}");
    for tm in tms {
        assert!(["tm0", "tm1"].contains(&tm.id.as_str()), "{tm:?}");
        assert_eq!((tm.slots, tm.lost), (4, false), "{tm:?}");
        assert!(tm.tasks > 0, "{tm:?}");
        // Counters arrive with task states: a TaskManager that ran tasks has reported them.
        assert!(tm.tdd_bytes_received.is_some_and(|b| b > 0), "{tm:?}");
        assert!(tm.peak_rss_bytes.is_some_and(|b| b > 0), "{tm:?}");
    }
    assert_eq!(tms.iter().map(|t| t.tasks).sum::<u64>(), 8);
    assert_eq!(
        report.blob_fetches,
        tms.iter().map(|t| t.blob_fetches).sum::<u64>()
    );

    let listed = client.list().await.expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].status, "FINISHED");
    assert_eq!(listed[0].finished_tasks(), 8, "{:?}", listed[0]);
    assert!(listed[0].end_ms >= listed[0].start_ms, "{:?}", listed[0]);
    assert_eq!(
        listed[0].duration_ms,
        listed[0].end_ms - listed[0].start_ms,
        "{:?}",
        listed[0]
    );
    let unknown = client.status(conflux_blob_api::JobId([0; 16])).await;
    assert!(
        matches!(&unknown, Err(ClientError::JobManager(m)) if m.starts_with("no job 0000")),
        "{unknown:?}"
    );
    // The ended job's report stays available.
    assert_eq!(client.wait(job).await.expect("report again"), report);
    jm.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_run_in_submission_order_and_a_cancelled_job_ends_canceled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(jm_config(dir.path())).await;
    let address = jm.address().to_string();
    let _a = Tm::spawn(tm_config(&address, 2, &dir.path().join("tm-a")));
    let _b = Tm::spawn(tm_config(&address, 2, &dir.path().join("tm-b")));
    wait_for_task_managers(&jm, 2).await;
    let mut client = JobManagerClient::connect(&address, None)
        .await
        .expect("a client connects");

    // A long job, then a short one that waits for it, and a streaming one.
    let long = client
        .submit(submission(
            word_count(2, ResultPartitionType::Blocking),
            (60_000, 60_000),
        ))
        .await
        .expect("accepted");
    let short = client
        .submit(submission(
            word_count(2, ResultPartitionType::Blocking),
            (0, 0),
        ))
        .await
        .expect("accepted");
    let streaming = client
        .submit(submission(
            word_count(2, ResultPartitionType::Pipelined),
            (0, 5),
        ))
        .await
        .expect("accepted");
    assert_ne!(long, short);
    within("the long job runs", Duration::from_secs(10), async {
        loop {
            let statuses: Vec<_> = client
                .list()
                .await
                .expect("list")
                .into_iter()
                .map(|j| (j.job, j.status))
                .collect();
            assert_eq!(statuses.len(), 3);
            assert_eq!(statuses[1], (short, "QUEUED".to_owned()));
            if statuses[0] == (long, "RUNNING".to_owned()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;

    client.cancel(long).await.expect("cancel");
    let report = within(
        "the cancelled job",
        Duration::from_secs(10),
        client.wait(long),
    )
    .await
    .expect("report");
    assert_eq!(report.status, "CANCELED", "{report:?}");
    assert_eq!(report.tasks, 4);
    let report = within("the short job", Duration::from_secs(20), client.wait(short))
        .await
        .expect("report");
    assert_eq!(report.status, "FINISHED", "{report:?}");
    assert_eq!(report.tasks_deployed, 4);
    let report = within(
        "the streaming job",
        Duration::from_secs(20),
        client.wait(streaming),
    )
    .await
    .expect("report");
    assert_eq!(report.status, "FINISHED", "{report:?}");
    assert_eq!((report.tasks, report.tasks_deployed), (4, 4));

    // A queued job cancelled before it runs.
    let queued_long = client
        .submit(submission(
            word_count(2, ResultPartitionType::Blocking),
            (60_000, 60_000),
        ))
        .await
        .expect("accepted");
    let queued = client
        .submit(submission(
            word_count(2, ResultPartitionType::Blocking),
            (0, 0),
        ))
        .await
        .expect("accepted");
    client.cancel(queued).await.expect("cancel the queued job");
    client
        .cancel(queued_long)
        .await
        .expect("cancel the running job");
    for job in [queued_long, queued] {
        let report = within("a cancelled job", Duration::from_secs(10), client.wait(job))
            .await
            .expect("report");
        assert_eq!(report.status, "CANCELED", "{report:?}");
    }
    let statuses: Vec<_> = client
        .list()
        .await
        .expect("list")
        .into_iter()
        .map(|j| j.status)
        .collect();
    assert_eq!(
        statuses,
        ["CANCELED", "FINISHED", "FINISHED", "CANCELED", "CANCELED"]
    );
    jm.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_jobs_and_unknown_ids_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(jm_config(dir.path())).await;
    let address = jm.address().to_string();
    let mut client = JobManagerClient::connect(&address, None)
        .await
        .expect("a client connects");

    let bad =
        br#"{"name": "bad", "job_type": "batch", "vertices": [{"id": "a", "parallelism": 0}]}"#;
    match client
        .submit(submission(bytes::Bytes::from_static(bad), (0, 0)))
        .await
    {
        Err(ClientError::JobManager(message)) => {
            assert!(message.contains("invalid job test.json"), "{message}");
            assert!(message.contains("parallelism"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    match client
        .submit(submission(bytes::Bytes::from_static(b"not json"), (0, 0)))
        .await
    {
        Err(ClientError::JobManager(message)) => {
            assert!(message.contains("invalid job test.json"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // Regression: a raw submission's credit 0 (which the CLI refuses) was accepted, and the
    // report showed a buffered bytes bound of 0 below its peak.
    for credit in [0, conflux_runtime::protocol::MAX_CREDIT + 1, u32::MAX] {
        let mut raw = submission(word_count(2, ResultPartitionType::Blocking), (0, 0));
        raw.options.credit = credit;
        match client.submit(raw).await {
            Err(ClientError::JobManager(message)) => assert!(
                message.contains(&format!(
                    "credit {credit} (buffers per channel) is not within 1..=1024"
                )),
                "{message}"
            ),
            other => panic!("expected a refusal of credit {credit}, got {other:?}"),
        }
    }
    let unknown = conflux_blob_api::JobId([7; 16]);
    for result in [
        client.cancel(unknown).await.map(|()| String::new()),
        client.wait(unknown).await.map(|r| r.status),
    ] {
        match result {
            Err(ClientError::JobManager(message)) => {
                assert_eq!(message, format!("no job {unknown}"));
            }
            other => panic!("expected an unknown job, got {other:?}"),
        }
    }
    // The connection is still usable and nothing was queued.
    assert_eq!(client.list().await.expect("list"), Vec::new());
    jm.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_submitted_before_any_task_manager_runs_when_they_register() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(jm_config(dir.path())).await;
    let address = jm.address().to_string();
    let job = jm
        .submit(submission(
            word_count(4, ResultPartitionType::Pipelined),
            (0, 10),
        ))
        .await
        .expect("accepted");
    crate::support::wait_until("the job runs", Duration::from_secs(5), || {
        jm.list().first().is_some_and(|j| j.status == "RUNNING")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Two TaskManagers of 2 slots: the streaming job needs all 4 (one slot-sharing group).
    let _a = Tm::spawn(tm_config(&address, 2, &dir.path().join("tm-a")));
    let _b = Tm::spawn(tm_config(&address, 2, &dir.path().join("tm-b")));
    let report = within("the job", Duration::from_secs(20), jm.wait(job))
        .await
        .expect("report");
    assert_eq!(report.status, "FINISHED", "{report:?}");
    assert_eq!((report.tasks, report.tasks_deployed), (8, 8));
    assert_eq!(report.task_managers.len(), 2, "{report:?}");
    assert_eq!(report.task_managers.iter().map(|t| t.tasks).sum::<u64>(), 8);
    jm.shutdown().await;
}

/// The JobManager follows the scheduler's rule for a slot request that times out (Flink's bulk
/// checker): the tasks fail with `NoResourceAvailableException` through the restart strategy,
/// here two restarts after 50 ms, and the job fails at the third timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_cannot_get_its_slots_fails_after_the_slot_request_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = jm_config(dir.path());
    config.scheduler.slot_request_timeout_ms = 300;
    config.scheduler.restart = conflux_scheduler::RestartStrategy::FixedDelay {
        attempts: 2,
        delay_ms: 50,
    };
    let jm = start_jm(config).await;
    let _a = Tm::spawn(tm_config(
        &jm.address().to_string(),
        1,
        &dir.path().join("tm-a"),
    ));
    crate::support::wait_for_task_managers(&jm, 1).await;
    // A streaming job of 4 slots on 1 slot.
    let report = crate::support::run_job(
        &jm,
        submission(word_count(4, ResultPartitionType::Pipelined), (0, 0)),
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(report.status, "FAILED", "{report:?}");
    assert_eq!(report.restarts, 2, "{report:?}");
    let reason = report.failure_reason.expect("a failure reason");
    assert!(
        reason.contains("NoResourceAvailableException: could not acquire a slot within 300 ms"),
        "{reason}"
    );
    assert!(
        report.wall_ms.total >= 3.0 * 300.0 + 2.0 * 50.0,
        "{:?}",
        report.wall_ms
    );
    jm.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_above_the_limit_are_refused_and_task_managers_retry() {
    use crate::support::{connect_and_send, until_closed};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = jm_config(dir.path());
    config.max_connections = 1;
    config.rpc.handshake_timeout_ms = 1_000;
    let jm = start_jm(config).await;
    let address = jm.address().to_string();
    // A silent peer holds the only connection until its handshake times out.
    let mut silent = connect_and_send(jm.address(), &[]).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    match JobManagerClient::connect(&address, None).await {
        Err(ClientError::Rpc(conflux_runtime::connection::RpcError::Refused {
            reason, ..
        })) => {
            assert_eq!(reason, "the JobManager accepts at most 1 connections");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // A TaskManager refused for that reason retries (it is not fatal) and registers once the
    // silent peer is gone.
    let _a = Tm::spawn(tm_config(&address, 1, &dir.path().join("tm-a")));
    until_closed(&mut silent, Duration::from_secs(3)).await;
    crate::support::wait_for_task_managers(&jm, 1).await;
    // The TaskManager now holds the only connection: clients are refused.
    assert!(JobManagerClient::connect(&address, None).await.is_err());
    jm.shutdown().await;
}

/// A client that sends its next request while a `Wait` is pending gets both answers, in order:
/// a request is never dropped silently.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_pipelined_behind_a_wait_is_answered() {
    use conflux_runtime::protocol::{ClientRequest, ClientResponse, Hello, Role};
    use tokio::io::AsyncWriteExt;

    use crate::support::{connect_and_send, frame, hello_frame, msgpack, read_frame};
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(jm_config(dir.path())).await;
    let _a = Tm::spawn(tm_config(
        &jm.address().to_string(),
        2,
        &dir.path().join("tm-a"),
    ));
    crate::support::wait_for_task_managers(&jm, 1).await;
    let job = jm
        .submit(submission(
            word_count(2, ResultPartitionType::Blocking),
            (300, 300),
        ))
        .await
        .expect("accepted");
    let hello = Hello {
        token: None,
        role: Role::Client,
    };
    let mut stream = connect_and_send(jm.address(), &hello_frame(&hello)).await;
    read_frame(&mut stream).await.expect("a welcome");
    let mut requests = frame(&msgpack(&ClientRequest::Wait(job)));
    requests.extend(frame(&msgpack(&ClientRequest::List)));
    stream.write_all(&requests).await.expect("requests sent");
    let decode = |body: Vec<u8>| -> ClientResponse {
        conflux_runtime::connection::decode(&body, "jm", 1, "answer").expect("an answer")
    };
    let first = decode(read_frame(&mut stream).await.expect("the report"));
    assert!(matches!(first, ClientResponse::Report(_)), "{first:?}");
    let second = read_frame(&mut stream).await.map(decode);
    match second {
        Some(ClientResponse::Jobs(jobs)) => assert_eq!(jobs.len(), 1),
        other => panic!("the List request was not answered: {other:?}"),
    }
    jm.shutdown().await;
}

/// 10,000 tasks: the count's input (5,000 partitions) is offloaded to the blob server, each
/// TaskManager fetches it once through its BlobCache, and the TDDs stay small.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_word_count_offloads_its_input_and_each_task_manager_fetches_it_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(jm_config(dir.path())).await;
    let address = jm.address().to_string();
    let _a = Tm::spawn(tm_config(&address, 2_500, &dir.path().join("tm-a")));
    let _b = Tm::spawn(tm_config(&address, 2_500, &dir.path().join("tm-b")));
    wait_for_task_managers(&jm, 2).await;
    let report = crate::support::run_job(
        &jm,
        submission(word_count(5_000, ResultPartitionType::Blocking), (0, 0)),
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(report.status, "FINISHED", "{report:?}");
    assert_eq!((report.tasks, report.tasks_deployed), (10_000, 10_000));
    assert_eq!(report.restarts, 0);
    // 5,000 counts on 2 x 2,500 slots: both TaskManagers run counts.
    for tm in &report.task_managers {
        assert_eq!(tm.blob_fetches, 1, "{tm:?}");
        assert!(tm.tasks >= 2_500, "{tm:?}");
        let per_task = tm.tdd_bytes_received.expect("reported") / tm.tasks;
        assert!(
            (64..1_024).contains(&per_task),
            "{per_task} bytes per TDD: {tm:?}"
        );
    }
    assert_eq!(report.blob_fetches, 2);
    jm.shutdown().await;
}
