//! Garbage on the JobManager's port: random bytes, truncated and oversized frames, garbage after
//! a valid handshake, and a seeded stream of random connections. None of it stops the
//! JobManager: a fresh client still lists jobs and a job still finishes afterwards.

use std::net::SocketAddr;
use std::time::Duration;

use conflux_common::SplitMix64;
use conflux_deploy::ExecutionAttemptId;
use conflux_graph::ResultPartitionType;
use conflux_runtime::protocol::{
    ClientRequest, HandshakeReply, Hello, Role, TaskManagerRegistration, TaskManagerStats,
    TaskMetrics, TaskState, ToJobManager, ToTaskManager, PROTOCOL_VERSION,
};
use conflux_runtime::{JobManager, JobManagerClient, JobManagerConfig};
use tokio::io::AsyncWriteExt;

use crate::support::{
    connect_and_send, frame, hello_frame, jm_config, msgpack, prefixed, read_frame, run_job,
    start_jm, submission, tm_config, until_closed, wait_for_task_managers, wait_until, within,
    word_count, Tm,
};

const CLOSE_LIMIT: Duration = Duration::from_secs(3);

/// A JobManager that gives peers 200 ms for their hello and idle clients 1 s.
fn fuzz_config(dir: &std::path::Path) -> JobManagerConfig {
    let mut config = jm_config(dir);
    config.rpc.handshake_timeout_ms = 200;
    config.client_idle_timeout_ms = 1_000;
    config
}

fn client_hello() -> Hello {
    Hello {
        token: None,
        role: Role::Client,
    }
}

fn tm_hello(slots: u32) -> Hello {
    Hello {
        token: None,
        role: Role::TaskManager(TaskManagerRegistration {
            slots,
            data_address: "127.0.0.1:9".parse().expect("address"),
            pid: 4_000_000,
            held_partitions: Vec::new(),
        }),
    }
}

/// Connects with a valid hello and reads the welcome.
async fn welcomed(address: SocketAddr, hello: &Hello) -> tokio::net::TcpStream {
    let mut stream = connect_and_send(address, &hello_frame(hello)).await;
    let body = read_frame(&mut stream).await.expect("a welcome");
    let reply: HandshakeReply = conflux_runtime::connection::decode(&body[8..], "jm", 0, "reply")
        .expect("a handshake reply");
    assert!(matches!(reply, HandshakeReply::Welcome(_)), "{reply:?}");
    stream
}

/// The JobManager still serves: a fresh client lists the jobs, and a word count finishes on the
/// registered TaskManagers.
async fn still_works(jm: &JobManager, jobs_before: usize) {
    let mut client = JobManagerClient::connect(&jm.address().to_string(), None)
        .await
        .expect("a fresh client connects");
    assert_eq!(client.list().await.expect("list").len(), jobs_before);
    let report = run_job(
        jm,
        submission(word_count(4, ResultPartitionType::Blocking), (0, 10)),
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(report.status, "FINISHED", "{report:?}");
    assert_eq!(report.tasks_deployed, 8);
    assert_eq!(report.task_managers_lost, 0, "{report:?}");
    assert_eq!(client.list().await.expect("list").len(), jobs_before + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_truncated_and_oversized_frames_never_stop_the_jobmanager() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(fuzz_config(dir.path())).await;
    let address = jm.address();
    let _a = Tm::spawn(tm_config(&address.to_string(), 2, &dir.path().join("tm-a")));
    let _b = Tm::spawn(tm_config(&address.to_string(), 2, &dir.path().join("tm-b")));
    wait_for_task_managers(&jm, 2).await;
    let mut rng = SplitMix64::new(0x5eed_f022);

    // Random bytes before any handshake: refused, cut off, or timed out; closed in every case.
    for len in [1, 3, 4, 5, 8, 64, 1_000, 70_000] {
        let mut stream = connect_and_send(address, &rng.bytes(len)).await;
        until_closed(&mut stream, CLOSE_LIMIT).await;
    }
    // Truncated frames: the length announces more than arrives, then the peer stops writing.
    for (announced, sent) in [(100u32, 10usize), (8, 7), (65_536, 1_000)] {
        let mut bytes = announced.to_be_bytes().to_vec();
        bytes.extend(rng.bytes(sent));
        let mut stream = connect_and_send(address, &bytes).await;
        let _ = stream.shutdown().await;
        until_closed(&mut stream, CLOSE_LIMIT).await;
    }
    // A length prefix cut short.
    let mut stream = connect_and_send(address, &[0, 0]).await;
    let _ = stream.shutdown().await;
    until_closed(&mut stream, CLOSE_LIMIT).await;
    // Oversized length prefixes, before the handshake (limit 64 KiB) ...
    for announced in [u32::MAX, 0x8000_0000, 64 * 1024 + 1] {
        let mut stream = connect_and_send(address, &announced.to_be_bytes()).await;
        until_closed(&mut stream, CLOSE_LIMIT).await;
    }
    // ... and after it, for a client (limit: a job file plus 1 MiB) and a TaskManager.
    let mut stream = welcomed(address, &client_hello()).await;
    let _ = stream.write_all(&u32::MAX.to_be_bytes()).await;
    until_closed(&mut stream, CLOSE_LIMIT).await;
    let mut stream = welcomed(address, &tm_hello(2)).await;
    wait_for_task_managers(&jm, 3).await;
    let _ = stream.write_all(&u32::MAX.to_be_bytes()).await;
    until_closed(&mut stream, CLOSE_LIMIT).await;
    wait_for_task_managers(&jm, 2).await;

    // A valid handshake followed by garbage frames: the connection is closed, nothing else.
    for len in [0, 1, 2, 17, 300] {
        let mut stream = welcomed(address, &client_hello()).await;
        let _ = stream.write_all(&frame(&rng.bytes(len))).await;
        until_closed(&mut stream, CLOSE_LIMIT).await;
    }
    // A client sending a TaskManager's message, a TaskManager sending a client's request.
    let mut stream = welcomed(address, &client_hello()).await;
    let heartbeat = ToJobManager::HeartbeatResponse {
        seq: 1,
        stats: TaskManagerStats::default(),
    };
    let _ = stream.write_all(&frame(&msgpack(&heartbeat))).await;
    until_closed(&mut stream, CLOSE_LIMIT).await;
    let mut stream = welcomed(address, &tm_hello(1)).await;
    wait_for_task_managers(&jm, 3).await;
    let _ = stream
        .write_all(&frame(&msgpack(&ClientRequest::List)))
        .await;
    until_closed(&mut stream, CLOSE_LIMIT).await;
    wait_for_task_managers(&jm, 2).await;

    // Well-formed but meaningless TaskManager messages (unknown sequence numbers and attempts,
    // no job running) are ignored: the connection stays, until garbage ends it.
    let mut stream = welcomed(address, &tm_hello(1)).await;
    wait_for_task_managers(&jm, 3).await;
    for message in [
        ToJobManager::HeartbeatResponse {
            seq: u64::MAX,
            stats: TaskManagerStats::default(),
        },
        ToJobManager::SubmitAcknowledged {
            job: conflux_blob_api::JobId([7; 16]),
            attempt: ExecutionAttemptId {
                vertex: u32::MAX,
                attempt: u32::MAX,
            },
            refused: Some("no".into()),
        },
        ToJobManager::TaskStateChanged {
            job: conflux_blob_api::JobId([7; 16]),
            attempt: ExecutionAttemptId {
                vertex: 3,
                attempt: 9,
            },
            metrics: TaskMetrics::default(),
            state: TaskState::Failed {
                reason: "x".repeat(10_000),
                partition_not_found: None,
                non_recoverable: false,
            },
            stats: TaskManagerStats::default(),
        },
    ] {
        let _ = stream.write_all(&frame(&msgpack(&message))).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        jm.task_managers().len(),
        3,
        "meaningless messages do not end a session"
    );
    let _ = stream.write_all(&frame(b"\xc1")).await;
    until_closed(&mut stream, CLOSE_LIMIT).await;
    wait_for_task_managers(&jm, 2).await;

    still_works(&jm, 0).await;
    jm.shutdown().await;
}

/// Up to `max` random bytes.
fn noise(rng: &mut SplitMix64, max: usize) -> Vec<u8> {
    let len = rng.index(max);
    rng.bytes(len)
}

/// One random connection of the seeded loop.
async fn random_connection(address: SocketAddr, rng: &mut SplitMix64) {
    let bytes = match rng.below(8) {
        // Raw random bytes.
        0 => noise(rng, 200),
        // One frame of random bytes.
        1 => frame(&noise(rng, 200)),
        // The right prefix, a random body.
        2 => frame(&prefixed(PROTOCOL_VERSION, &noise(rng, 200))),
        // A random version, a valid hello.
        3 => {
            let version = u32::try_from(rng.below(1 << 32)).unwrap_or(0);
            frame(&prefixed(version, &msgpack(&client_hello())))
        }
        // A random length prefix and a random tail.
        4 => {
            let mut bytes = rng.next_u64().to_be_bytes()[..4].to_vec();
            bytes.extend(noise(rng, 64));
            bytes
        }
        // A valid client hello, then random frames or a corrupted request.
        5 | 6 => {
            let mut bytes = hello_frame(&client_hello());
            for _ in 0..rng.between(1, 4) {
                let mut body = if rng.chance(0.5) {
                    msgpack(&ClientRequest::List)
                } else {
                    noise(rng, 100)
                };
                if !body.is_empty() {
                    let at = rng.index(body.len());
                    body[at] ^= u8::try_from(rng.between(1, 255)).unwrap_or(1);
                }
                bytes.extend(frame(&body));
            }
            bytes
        }
        // A valid TaskManager hello (a few slots), then random frames.
        _ => {
            let slots = u32::try_from(rng.below(65)).unwrap_or(0);
            let mut bytes = hello_frame(&tm_hello(slots));
            for _ in 0..rng.between(0, 3) {
                bytes.extend(frame(&noise(rng, 100)));
            }
            bytes
        }
    };
    let mut stream = connect_and_send(address, &bytes).await;
    // Most connections are dropped at once; some wait for the JobManager to close them.
    if rng.chance(0.1) {
        until_closed(&mut stream, CLOSE_LIMIT).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seeded_stream_of_random_connections_never_stops_the_jobmanager() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(fuzz_config(dir.path())).await;
    let address = jm.address();
    let _a = Tm::spawn(tm_config(&address.to_string(), 2, &dir.path().join("tm-a")));
    let _b = Tm::spawn(tm_config(&address.to_string(), 2, &dir.path().join("tm-b")));
    wait_for_task_managers(&jm, 2).await;
    let mut rng = SplitMix64::new(20_261_201);
    for _ in 0..400 {
        random_connection(address, &mut rng).await;
    }
    // Every fake TaskManager's connection ends; the two real ones stay.
    wait_until(
        "the fake TaskManagers are gone",
        Duration::from_secs(10),
        || jm.task_managers().len() == 2,
    )
    .await;
    still_works(&jm, 0).await;
    jm.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_peer_is_closed_after_the_handshake_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(fuzz_config(dir.path())).await;
    let mut silent = connect_and_send(jm.address(), &[]).await;
    // Half a hello is as good as none.
    let mut half = connect_and_send(jm.address(), &hello_frame(&client_hello())[..6]).await;
    let waited = until_closed(&mut silent, CLOSE_LIMIT).await;
    assert!(
        waited >= Duration::from_millis(150),
        "closed after {waited:?}, before the 200 ms timeout"
    );
    assert!(waited < Duration::from_secs(2), "closed after {waited:?}");
    until_closed(&mut half, CLOSE_LIMIT).await;
    // An idle client is closed after the idle timeout (1 s here).
    let mut idle = welcomed(jm.address(), &client_hello()).await;
    let waited = until_closed(&mut idle, CLOSE_LIMIT).await;
    assert!(
        waited >= Duration::from_millis(800),
        "closed after {waited:?}"
    );
    let mut client = JobManagerClient::connect(&jm.address().to_string(), None)
        .await
        .expect("a fresh client connects");
    assert_eq!(client.list().await.expect("list"), Vec::new());
    jm.shutdown().await;
}

/// The protocol lets a TaskManager announce any number of slots, and the scheduler's slot pool
/// inserts one entry per slot: a registration of u32::MAX slots would make the running job's
/// scheduler insert four billion entries. The JobManager should refuse absurd slot counts at
/// the handshake (the CLI allows 1 to 65,536). No job runs here, so the bug is seen without
/// being triggered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_manager_offering_absurd_slot_counts_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(fuzz_config(dir.path())).await;
    for slots in [u32::MAX, 65_537] {
        let mut stream = connect_and_send(jm.address(), &hello_frame(&tm_hello(slots))).await;
        let body = read_frame(&mut stream).await.expect("an answer");
        let reply: HandshakeReply =
            conflux_runtime::connection::decode(&body[8..], "jm", 0, "reply").expect("a reply");
        drop(stream);
        wait_until(
            "the fake TaskManager is gone",
            Duration::from_secs(5),
            || jm.task_managers().is_empty(),
        )
        .await;
        match reply {
            HandshakeReply::Refused(reason) => assert!(reason.contains("slots"), "{reason}"),
            HandshakeReply::Welcome(w) => panic!("{slots} slots were welcomed: {w:?}"),
        }
    }
    jm.shutdown().await;
}

/// Every message to the TaskManagers is dropped (an injected fault): task submissions are not
/// acknowledged, each fails after the RPC timeout, and the job fails when its restarts are used
/// up, with the timeouts counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unacknowledged_submissions_fail_after_the_rpc_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = jm_config(dir.path());
    config.rpc.timeout_ms = 200;
    config.rpc.faults = conflux_runtime::RpcFaults {
        delay_ms: 0,
        drop_rate: 1.0,
        seed: 1,
    };
    // Heartbeats are dropped too: keep the TaskManagers registered through the test.
    config.heartbeat.timeout_ms = 30_000;
    config.scheduler.restart = conflux_scheduler::RestartStrategy::FixedDelay {
        attempts: 2,
        delay_ms: 50,
    };
    let jm = start_jm(config).await;
    let _a = Tm::spawn(tm_config(
        &jm.address().to_string(),
        4,
        &dir.path().join("tm-a"),
    ));
    wait_for_task_managers(&jm, 1).await;
    let report = run_job(
        &jm,
        submission(word_count(2, ResultPartitionType::Blocking), (0, 0)),
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(report.status, "FAILED", "{report:?}");
    // Each source is a region of its own (blocking edge): both fail, each failover is a
    // restart (2 allowed), both are deployed again, fail again, and the job fails.
    assert_eq!(report.restarts, 2, "{report:?}");
    assert_eq!(report.tasks_deployed, 4, "{report:?}");
    assert_eq!(report.rpc_timeouts, Some(4), "{report:?}");
    let reason = report.failure_reason.as_deref().unwrap_or_default();
    assert!(
        reason.starts_with("Recovery is suppressed by the restart strategy"),
        "{reason}"
    );
    assert_eq!(report.task_managers_lost, 0, "{report:?}");
    // Nothing arrived: 0 as reported, or unknown when no report came at all.
    assert!(
        matches!(report.task_managers[0].tdd_bytes_received, None | Some(0)),
        "{report:?}"
    );
    assert!(report.wall_ms.total >= 400.0, "{:?}", report.wall_ms);
    jm.shutdown().await;
}

/// Every message to the TaskManagers waits 50 ms (an injected fault): the heartbeat round trip
/// shows it, and the job still finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_messages_show_in_the_heartbeat_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = jm_config(dir.path());
    config.rpc.faults.delay_ms = 50;
    let jm = start_jm(config).await;
    let _a = Tm::spawn(tm_config(
        &jm.address().to_string(),
        2,
        &dir.path().join("tm-a"),
    ));
    wait_for_task_managers(&jm, 1).await;
    let report = run_job(
        &jm,
        submission(word_count(2, ResultPartitionType::Blocking), (300, 300)),
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(report.status, "FINISHED", "{report:?}");
    let rtt = report.max_heartbeat_rtt_ms.expect("a measured round trip");
    assert!((50.0..1_000.0).contains(&rtt), "{report:?}");
    assert_eq!(report.task_managers_lost, 0, "{report:?}");
    jm.shutdown().await;
}

/// A TaskManager reports the state of an attempt the JobManager deployed elsewhere (a confused
/// or stale peer: attempt ids are only `(vertex, attempt)`, the same in every job, so only the
/// job id and the sender tell a late state of the previous job's attempt apart). The
/// JobManager must ignore it, or the 60 s source would "finish" at once and its consumer be
/// deployed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_state_from_a_task_manager_not_running_the_attempt_is_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(jm_config(dir.path())).await;
    let _real = Tm::spawn(tm_config(
        &jm.address().to_string(),
        2,
        &dir.path().join("tm"),
    ));
    wait_for_task_managers(&jm, 1).await;
    // A peer registered after the real TaskManager: slots are taken in registration order, so
    // nothing is deployed to it.
    let mut rogue = welcomed(jm.address(), &tm_hello(1)).await;
    wait_for_task_managers(&jm, 2).await;
    let job = jm
        .submit(submission(
            word_count(1, ResultPartitionType::Blocking),
            (60_000, 60_000),
        ))
        .await
        .expect("accepted");
    let deployed = || jm.task_managers().iter().map(|t| t.job_tasks).sum::<u64>();
    wait_until("the source is deployed", Duration::from_secs(5), || {
        deployed() == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Vertex 0 is the source's only subtask, attempt 0.
    // Even with the right job id, the state is not the rogue's to report.
    let finished = ToJobManager::TaskStateChanged {
        job,
        attempt: ExecutionAttemptId {
            vertex: 0,
            attempt: 0,
        },
        state: TaskState::Finished,
        metrics: TaskMetrics::default(),
        stats: TaskManagerStats::default(),
    };
    rogue
        .write_all(&frame(&msgpack(&finished)))
        .await
        .expect("sent");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        deployed(),
        1,
        "the count was deployed: the source was taken as finished on the word of a TaskManager \
         that does not run it"
    );
    jm.cancel(job).expect("cancel");
    drop(rogue);
    jm.shutdown().await;
}

/// A TaskManager finishes a task of an adaptive job with a byte report that does not fit the
/// result (3 subpartitions where the undecided consumer's producers write 128): the JobManager
/// fails that attempt, and with no restarts left the job fails naming the report, instead of
/// waiting forever for a finish it refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_byte_report_that_does_not_fit_fails_the_task() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = jm_config(dir.path());
    config.scheduler.restart = conflux_scheduler::RestartStrategy::FixedDelay {
        attempts: 0,
        delay_ms: 0,
    };
    let jm = start_jm(config).await;
    let mut rogue = welcomed(jm.address(), &tm_hello(1)).await;
    wait_for_task_managers(&jm, 1).await;
    let job = bytes::Bytes::from_static(
        br#"{"name":"adaptive","job_type":"batch","vertices":[
            {"id":"A","parallelism":1},{"id":"B","parallelism":-1}],
          "edges":[{"source":"A","target":"B","distribution_pattern":"all_to_all",
              "result_partition_type":"blocking"}]}"#,
    );
    let id = jm.submit(submission(job, (0, 0))).await.expect("accepted");
    // Plays the TaskManager: answers heartbeats, acknowledges the source and finishes it with
    // a bad report.
    let play = async {
        loop {
            let Some(body) = read_frame(&mut rogue).await else {
                return;
            };
            let message: ToTaskManager =
                conflux_runtime::connection::decode(&body, "jm", 0, "message").expect("message");
            let reply = |m: &ToJobManager| frame(&msgpack(m));
            match message {
                ToTaskManager::HeartbeatRequest { seq, .. } => {
                    let pong = ToJobManager::HeartbeatResponse {
                        seq,
                        stats: TaskManagerStats::default(),
                    };
                    rogue.write_all(&reply(&pong)).await.expect("sent");
                }
                ToTaskManager::SubmitTask { tdd, .. } => {
                    let tdd = conflux_deploy::decode_tdd(&tdd).expect("tdd");
                    let (job, attempt) = (tdd.job_id, tdd.execution_attempt);
                    let mut out = reply(&ToJobManager::SubmitAcknowledged {
                        job,
                        attempt,
                        refused: None,
                    });
                    for (state, produced_bytes) in [
                        (TaskState::Running, Vec::new()),
                        (TaskState::Finished, vec![vec![1, 2, 3]]),
                    ] {
                        out.extend(reply(&ToJobManager::TaskStateChanged {
                            job,
                            attempt,
                            state,
                            metrics: TaskMetrics {
                                produced_bytes,
                                ..TaskMetrics::default()
                            },
                            stats: TaskManagerStats::default(),
                        }));
                    }
                    rogue.write_all(&out).await.expect("sent");
                }
                _ => {}
            }
        }
    };
    let report = tokio::select! {
        report = within("the job's end", Duration::from_secs(20), jm.wait(id)) => report,
        () = play => panic!("the JobManager closed the connection"),
    }
    .expect("a report");
    assert_eq!(report.status, "FAILED", "{report:?}");
    let reason = report.failure_reason.unwrap_or_default();
    assert!(
        reason.contains(
            "A#0: bad produced bytes: 3 subpartitions reported for data set 0, it has 128"
        ),
        "{reason}"
    );
    jm.shutdown().await;
}
