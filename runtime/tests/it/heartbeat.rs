//! Lost peers: a TaskManager that stops while its tasks run, a JobManager that goes silent or
//! away, and registration again with a new JobManager.

use std::time::{Duration, Instant};

use conflux_deploy::TaskManagerId;
use conflux_graph::ResultPartitionType;
use conflux_runtime::protocol::{HandshakeReply, Secret, Welcome, PROTOCOL_VERSION};
use conflux_runtime::{HeartbeatConfig, JobManager, JobManagerConfig};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use crate::support::{
    frame, jm_config, msgpack, prefixed, read_frame, run_job, start_jm, submission, tm_config,
    until_closed, wait_for_task_managers, wait_until, within, word_count, Tm,
};

fn config(dir: &std::path::Path, interval_ms: u64, timeout_ms: u64) -> JobManagerConfig {
    let mut config = jm_config(dir);
    config.heartbeat = HeartbeatConfig {
        interval_ms,
        timeout_ms,
    };
    config
}

/// Waits until `n` tasks of the running job are deployed; returns the index (in `tms`, ordered
/// by TaskManager id) of the TaskManager holding the most.
async fn busiest_after_deployment(jm: &JobManager, n: u64) -> usize {
    wait_until(
        &format!("{n} tasks deployed"),
        Duration::from_secs(10),
        || jm.task_managers().iter().map(|t| t.job_tasks).sum::<u64>() >= n,
    )
    .await;
    let mut tms = jm.task_managers();
    tms.sort_by_key(|t| t.id);
    let busiest = tms
        .iter()
        .enumerate()
        .max_by_key(|(_, t)| (t.job_tasks, std::cmp::Reverse(t.id)))
        .map(|(i, _)| i)
        .expect("TaskManagers");
    assert!(tms[busiest].job_tasks > 0);
    busiest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_task_manager_is_lost_and_the_job_finishes_on_the_other() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(config(dir.path(), 50, 300)).await;
    let address = jm.address().to_string();
    // Registered in this order: tm0, then tm1.
    let mut tms = vec![Tm::spawn(tm_config(&address, 4, &dir.path().join("tm-a")))];
    wait_for_task_managers(&jm, 1).await;
    tms.push(Tm::spawn(tm_config(&address, 4, &dir.path().join("tm-b"))));
    wait_for_task_managers(&jm, 2).await;

    let job = jm
        .submit(submission(
            word_count(4, ResultPartitionType::Blocking),
            (1_500, 1_500),
        ))
        .await
        .expect("accepted");
    let victim = busiest_after_deployment(&jm, 4).await;
    let stopped = Instant::now();
    tms[victim]
        .stop()
        .await
        .expect("a stopped TaskManager returns Ok");
    wait_until(
        "the stopped TaskManager is lost",
        Duration::from_secs(3),
        || jm.task_managers().len() == 1,
    )
    .await;
    let lost_after = stopped.elapsed();
    // Lost by a closed connection or by the 300 ms heartbeat timeout, not later.
    assert!(lost_after < Duration::from_millis(1_500), "{lost_after:?}");

    let report = within("the job", Duration::from_secs(30), jm.wait(job))
        .await
        .expect("report");
    assert_eq!(report.status, "FINISHED", "{report:?}");
    assert_eq!(report.task_managers_lost, 1, "{report:?}");
    assert!(report.restarts >= 1, "{report:?}");
    assert!(report.tasks_deployed > report.tasks, "{report:?}");
    assert_eq!(report.tasks, 8);
    let victim_id = format!("tm{victim}");
    let survivor_id = format!("tm{}", 1 - victim);
    let entry = |id: &str| {
        report
            .task_managers
            .iter()
            .find(|t| t.id == id)
            .unwrap_or_else(|| panic!("{id} in {report:?}"))
    };
    assert!(entry(&victim_id).lost);
    assert!(!entry(&survivor_id).lost);
    // No task of the stopped TaskManager finished (they last 1.5 s, it was lost within
    // 1.5 s): every one of the 8 tasks ran to its end on the survivor.
    assert!(entry(&survivor_id).tasks >= 8, "{report:?}");
    assert_eq!(
        entry(&victim_id).tasks + entry(&survivor_id).tasks,
        report.tasks_deployed
    );
    jm.shutdown().await;
}

/// A TaskManager whose shutdown future resolves should stop for good: close its connection
/// (the JobManager sees it at once instead of after the heartbeat timeout) and cancel its
/// tasks, whose states must never reach the JobManager again.
///
/// Today `TaskManager::run` returns Ok while its tasks go on: they keep the session's writer
/// (and so the socket) alive, report FINISHED 2 s later, the JobManager deploys the next region
/// to the stopped TaskManager, and the connection closes only when those tasks end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_task_manager_closes_its_connection_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A heartbeat timeout long enough to tell a closed connection from a missed heartbeat.
    let jm = start_jm(config(dir.path(), 100, 4_000)).await;
    let address = jm.address().to_string();
    let mut tms = vec![Tm::spawn(tm_config(&address, 2, &dir.path().join("tm-a")))];
    wait_for_task_managers(&jm, 1).await;
    tms.push(Tm::spawn(tm_config(&address, 2, &dir.path().join("tm-b"))));
    wait_for_task_managers(&jm, 2).await;
    let job = jm
        .submit(submission(
            word_count(2, ResultPartitionType::Blocking),
            (2_000, 2_000),
        ))
        .await
        .expect("accepted");
    let victim = busiest_after_deployment(&jm, 2).await;
    let mut before = jm.task_managers();
    before.sort_by_key(|t| t.id);
    let victim_tasks = before[victim].job_tasks;
    tms[victim].stop().await.expect("stopped");
    wait_until(
        "the stopped TaskManager's connection closes (well before the 4 s heartbeat timeout)",
        Duration::from_secs(1),
        || jm.task_managers().len() == 1,
    )
    .await;
    let report = within("the job", Duration::from_secs(30), jm.wait(job))
        .await
        .expect("report");
    assert_eq!(report.status, "FINISHED", "{report:?}");
    assert_eq!(
        (report.task_managers_lost, report.heartbeat_timeouts),
        (1, Some(0))
    );
    let entry = report
        .task_managers
        .iter()
        .find(|t| t.id == format!("tm{victim}"))
        .expect("the stopped TaskManager's entry");
    assert!(entry.lost);
    assert_eq!(
        entry.tasks, victim_tasks,
        "nothing is deployed to a stopped TaskManager"
    );
    jm.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_manager_registers_again_with_a_new_jobmanager_on_the_same_address() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(config(dir.path(), 50, 500)).await;
    let address = jm.address();
    let _tm = Tm::spawn(tm_config(&address.to_string(), 2, &dir.path().join("tm")));
    wait_for_task_managers(&jm, 1).await;
    let report = run_job(
        &jm,
        submission(word_count(2, ResultPartitionType::Blocking), (0, 0)),
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(report.status, "FINISHED");
    jm.shutdown().await;

    let mut second = config(&dir.path().join("second"), 50, 500);
    second.address = address;
    let jm = within(
        "a JobManager on the same address",
        Duration::from_secs(5),
        async {
            loop {
                match JobManager::start(second.clone()).await {
                    Ok(jm) => break jm,
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        },
    )
    .await;
    wait_for_task_managers(&jm, 1).await;
    assert_eq!(jm.task_managers()[0].id, TaskManagerId(0), "ids start over");
    let report = run_job(
        &jm,
        submission(word_count(2, ResultPartitionType::Blocking), (0, 0)),
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(report.status, "FINISHED", "{report:?}");
    assert_eq!(report.tasks_deployed, 4);
    jm.shutdown().await;
}

/// A JobManager that welcomes a TaskManager and then says nothing (as a SIGSTOPped one): the
/// TaskManager considers it lost after the heartbeat timeout it learnt, closes the connection
/// and registers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_jobmanager_is_lost_after_the_heartbeat_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    let _tm = Tm::spawn(tm_config(&address, 1, dir.path()));
    let welcome = frame(&prefixed(
        PROTOCOL_VERSION,
        &msgpack(&HandshakeReply::Welcome(Welcome {
            task_manager_id: Some(TaskManagerId(0)),
            blob_server_url: "http://127.0.0.1:9".into(),
            heartbeat_interval_ms: 50,
            heartbeat_timeout_ms: 300,
            registration_secret: Some(Secret([5; 16])),
            keep_jobs: Vec::new(),
            fencing_token: None,
        })),
    ));
    let (mut first, _) = within(
        "the registration",
        Duration::from_secs(5),
        listener.accept(),
    )
    .await
    .expect("accept");
    assert!(read_frame(&mut first).await.is_some(), "a hello");
    first.write_all(&welcome).await.expect("welcome");
    let welcomed = Instant::now();
    let waited = until_closed(&mut first, Duration::from_secs(3)).await;
    assert!(
        waited >= Duration::from_millis(250),
        "the TaskManager left after {waited:?}, before its 300 ms timeout"
    );
    let (mut second, _) = within(
        "the registration again",
        Duration::from_secs(3),
        listener.accept(),
    )
    .await
    .expect("accept");
    assert!(read_frame(&mut second).await.is_some(), "a second hello");
    assert!(welcomed.elapsed() < Duration::from_secs(3));
}

/// Shutting a JobManager down while a job runs cancels the job (its waiting client gets the
/// CANCELED report), tells the TaskManagers, which register again elsewhere, and returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobmanager_shut_down_while_a_job_runs_cancels_it_and_returns() {
    use conflux_runtime::JobManagerClient;
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(config(dir.path(), 50, 500)).await;
    let address = jm.address().to_string();
    let _tm = Tm::spawn(tm_config(&address, 2, &dir.path().join("tm")));
    wait_for_task_managers(&jm, 1).await;
    let job = jm
        .submit(submission(
            word_count(2, ResultPartitionType::Blocking),
            (60_000, 60_000),
        ))
        .await
        .expect("accepted");
    busiest_after_deployment(&jm, 2).await;
    let mut client = JobManagerClient::connect(&address, None)
        .await
        .expect("client");
    let waiting = tokio::spawn(async move { client.wait(job).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    within("the shutdown", Duration::from_secs(5), jm.shutdown()).await;
    let report = within("the waiting client", Duration::from_secs(5), waiting)
        .await
        .expect("no panic")
        .expect("a report");
    assert_eq!(report.status, "CANCELED", "{report:?}");
    assert_eq!(report.tasks, 4);
    // Nobody listens any more.
    assert!(JobManagerClient::connect(&address, None).await.is_err());
}

/// Regression: a heartbeat hello with a registered TaskManager's id and pid replaced that
/// TaskManager's heartbeat connection (12 tries knocked a cluster's 3 TaskManagers off at
/// once). Without the secret the JobManager gave it at registration the hello is refused,
/// and the TaskManager's own heartbeat connection stays: nobody is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_hello_without_the_registration_secret_is_refused_and_replaces_nothing() {
    use conflux_runtime::protocol::{Hello, Role, Secret};
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(config(dir.path(), 50, 500)).await;
    let address = jm.address();
    let _a = Tm::spawn(tm_config(&address.to_string(), 2, &dir.path().join("tm-a")));
    let _b = Tm::spawn(tm_config(&address.to_string(), 2, &dir.path().join("tm-b")));
    wait_for_task_managers(&jm, 2).await;
    let mut held = Vec::new();
    for attempt in 0..12u8 {
        for tm in jm.task_managers() {
            let hello = Hello {
                token: None,
                role: Role::Heartbeat {
                    task_manager: tm.id,
                    pid: tm.pid,
                    secret: Secret([attempt; 16]),
                },
            };
            let mut stream =
                crate::support::connect_and_send(address, &crate::support::hello_frame(&hello))
                    .await;
            let body = read_frame(&mut stream).await.expect("an answer");
            let reply: HandshakeReply =
                conflux_runtime::connection::decode(&body[8..], "jm", 0, "reply").expect("reply");
            match reply {
                HandshakeReply::Refused(reason) => assert_eq!(
                    reason,
                    format!(
                        "{} (process {}) is not registered with that secret",
                        tm.id, tm.pid
                    )
                ),
                other => panic!("a hijacked heartbeat connection: {other:?}"),
            }
            held.push(stream);
        }
    }
    // Past the 500 ms heartbeat timeout: both still answer on their own connections.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(jm.task_managers().len(), 2);
    let report = run_job(
        &jm,
        submission(word_count(2, ResultPartitionType::Blocking), (0, 0)),
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(report.status, "FINISHED", "{report:?}");
    assert_eq!(report.task_managers_lost, 0, "{report:?}");
    jm.shutdown().await;
}

/// A JobManager that shuts down says goodbye (`Disconnect`) on a TaskManager's heartbeat
/// connection too, before closing it: a TaskManager that reads the heartbeat connection's end
/// first knows it was disconnected, not that its JobManager was lost. Regression: the
/// heartbeat connection closed bare while the goodbye was still queued on the main one, and
/// TaskManagers warned "JobManager lost" after clean `conflux cluster` runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobmanager_shutting_down_says_goodbye_on_both_connections() {
    use conflux_runtime::connection::decode;
    use conflux_runtime::protocol::{Hello, Role, TaskManagerRegistration, ToTaskManager};
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(config(dir.path(), 60_000, 120_000)).await;
    let registration = Hello {
        token: None,
        role: Role::TaskManager(TaskManagerRegistration {
            slots: 1,
            data_address: "127.0.0.1:9".parse().expect("address"),
            pid: 4242,
            held_partitions: Vec::new(),
        }),
    };
    let mut main = crate::support::connect_and_send(
        jm.address(),
        &frame(&prefixed(PROTOCOL_VERSION, &msgpack(&registration))),
    )
    .await;
    let welcome = read_frame(&mut main).await.expect("a welcome");
    let (id, secret) = match decode::<HandshakeReply>(&welcome[8..], "jobmanager", 0, "welcome") {
        Ok(HandshakeReply::Welcome(Welcome {
            task_manager_id: Some(id),
            registration_secret: Some(secret),
            ..
        })) => (id, secret),
        other => panic!("not a welcome: {other:?}"),
    };
    let heartbeat_hello = Hello {
        token: None,
        role: Role::Heartbeat {
            task_manager: id,
            pid: 4242,
            secret,
        },
    };
    let mut heartbeats = crate::support::connect_and_send(
        jm.address(),
        &frame(&prefixed(PROTOCOL_VERSION, &msgpack(&heartbeat_hello))),
    )
    .await;
    // The JobManager attaches the connection before it welcomes it.
    assert!(read_frame(&mut heartbeats).await.is_some(), "a welcome");
    within("the shutdown", Duration::from_secs(5), jm.shutdown()).await;
    for (name, stream) in [("heartbeat", &mut heartbeats), ("main", &mut main)] {
        // Heartbeat requests may come first (never with a 60 s interval, but allowed).
        let goodbye = loop {
            let body = read_frame(stream)
                .await
                .unwrap_or_else(|| panic!("the {name} connection closed without a goodbye"));
            match decode::<ToTaskManager>(&body, "jobmanager", 0, "message").expect("a message") {
                ToTaskManager::HeartbeatRequest { .. } => {}
                other => break other,
            }
        };
        assert_eq!(
            goodbye,
            ToTaskManager::Disconnect("the JobManager is shutting down".into()),
            "{name}"
        );
        until_closed(stream, Duration::from_secs(5)).await;
    }
}
