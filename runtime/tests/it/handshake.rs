//! The versioned handshake: a peer of another protocol version, a wrong or missing token, and a
//! JobManager of another version as TaskManagers and clients see it.

use std::time::{Duration, Instant};

use conflux_graph::ResultPartitionType;
use conflux_runtime::connection::{decode, RpcError};
use conflux_runtime::protocol::{
    HandshakeReply, Hello, Role, TaskManagerRegistration, PROTOCOL_VERSION,
};
use conflux_runtime::{ClientError, JobManagerClient, TaskManager, TaskManagerError};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use crate::support::{
    connect_and_send, frame, hello_frame, jm_config, msgpack, prefixed, read_frame, run_job,
    start_jm, submission, tm_config, until_closed, wait_for_task_managers, within, word_count, Tm,
};

/// Decodes a handshake reply frame body (prefix, then MessagePack).
fn reply_of(body: &[u8]) -> HandshakeReply {
    assert!(body.len() >= 8, "{body:?}");
    assert_eq!(&body[..4], b"CFXR");
    assert_eq!(
        u32::from_le_bytes([body[4], body[5], body[6], body[7]]),
        PROTOCOL_VERSION,
        "the JobManager answers in its own version"
    );
    decode(&body[8..], "jobmanager", 0, "handshake reply").expect("a handshake reply")
}

fn client_hello(token: Option<&str>) -> Hello {
    Hello {
        token: token.map(str::to_owned),
        role: Role::Client,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hello_of_another_version_is_refused_naming_both_versions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(jm_config(dir.path())).await;
    // Version 99, then a body this version could not decode anyway.
    let mut stream = connect_and_send(
        jm.address(),
        &frame(&prefixed(99, b"\xc1 anything of version 99")),
    )
    .await;
    let body = read_frame(&mut stream)
        .await
        .expect("a refusal before the close");
    match reply_of(&body) {
        HandshakeReply::Refused(reason) => {
            assert!(reason.contains("protocol version mismatch"), "{reason}");
            assert!(reason.contains("speaks version 99"), "{reason}");
            assert!(
                reason.contains(&format!("this process speaks version {PROTOCOL_VERSION}")),
                "{reason}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    until_closed(&mut stream, Duration::from_secs(5)).await;

    // Version 99 with a hello that would be valid in this version: still refused.
    let mut stream = connect_and_send(
        jm.address(),
        &frame(&prefixed(99, &msgpack(&client_hello(None)))),
    )
    .await;
    let body = read_frame(&mut stream).await.expect("a refusal");
    assert!(
        matches!(reply_of(&body), HandshakeReply::Refused(r) if r.contains("version 99")),
        "{body:?}"
    );

    // Not a Conflux peer at all: no magic.
    let mut stream = connect_and_send(jm.address(), &frame(b"GET / HTTP/1.1\r\n\r\n")).await;
    let body = read_frame(&mut stream).await.expect("a refusal");
    match reply_of(&body) {
        HandshakeReply::Refused(reason) => {
            assert!(reason.contains("not a Conflux peer"), "{reason}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }

    // The right version and a valid hello is welcome on a raw socket too.
    let mut stream = connect_and_send(jm.address(), &hello_frame(&client_hello(None))).await;
    let body = read_frame(&mut stream).await.expect("a welcome");
    match reply_of(&body) {
        HandshakeReply::Welcome(welcome) => {
            assert_eq!(welcome.task_manager_id, None);
            assert_eq!(welcome.blob_server_url, jm.blob_server_url());
            assert_eq!(welcome.heartbeat_interval_ms, 100);
            assert_eq!(welcome.heartbeat_timeout_ms, 1_000);
        }
        other => panic!("expected a welcome, got {other:?}"),
    }
    drop(stream);
    assert!(jm.task_managers().is_empty());
    jm.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_and_missing_tokens_are_refused_and_the_right_one_runs_jobs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = jm_config(dir.path());
    config.rpc.token = Some("s3cret".into());
    let jm = start_jm(config).await;
    let address = jm.address().to_string();

    for (token, expected) in [
        (Some("wrong".to_owned()), "wrong token"),
        (None, "this JobManager requires a token"),
    ] {
        match JobManagerClient::connect(&address, token.clone()).await {
            Err(ClientError::Rpc(RpcError::Refused { peer, reason })) => {
                assert_eq!(reason, expected);
                assert_eq!(peer, address);
            }
            other => panic!("token {token:?}: expected a refusal, got {other:?}"),
        }
        // A TaskManager with that token stops at once: retrying cannot help.
        let mut tm = tm_config(&address, 2, &dir.path().join("tm-refused"));
        tm.token = token.clone();
        let started = Instant::now();
        let result = within(
            "a refused TaskManager's run",
            Duration::from_secs(5),
            TaskManager::run(tm, std::future::pending()),
        )
        .await;
        match result {
            Err(TaskManagerError::Refused(RpcError::Refused { reason, .. })) => {
                assert_eq!(reason, expected);
            }
            other => panic!("token {token:?}: expected Refused, got {other:?}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        // The refusal as a raw peer sees it.
        let mut stream =
            connect_and_send(jm.address(), &hello_frame(&client_hello(token.as_deref()))).await;
        let body = read_frame(&mut stream).await.expect("a refusal");
        assert_eq!(reply_of(&body), HandshakeReply::Refused(expected.into()));
        until_closed(&mut stream, Duration::from_secs(5)).await;
    }
    // A refused TaskManager was never registered.
    assert!(jm.task_managers().is_empty());
    // A raw TaskManager hello with the wrong token is refused before it is registered.
    let registration = Hello {
        token: Some("nope".into()),
        role: Role::TaskManager(TaskManagerRegistration {
            slots: 4,
            data_address: "127.0.0.1:9".parse().expect("address"),
            pid: 1,
            held_partitions: Vec::new(),
        }),
    };
    let mut stream = connect_and_send(jm.address(), &hello_frame(&registration)).await;
    let body = read_frame(&mut stream).await.expect("a refusal");
    assert_eq!(
        reply_of(&body),
        HandshakeReply::Refused("wrong token".into())
    );
    assert!(jm.task_managers().is_empty());

    // The right token: TaskManagers register, fetch blobs with it, and run a job.
    let mut a = tm_config(&address, 2, &dir.path().join("tm-a"));
    a.token = Some("s3cret".into());
    let mut b = tm_config(&address, 2, &dir.path().join("tm-b"));
    b.token = Some("s3cret".into());
    let _a = Tm::spawn(a);
    let _b = Tm::spawn(b);
    wait_for_task_managers(&jm, 2).await;
    let mut client = JobManagerClient::connect(&address, Some("s3cret".into()))
        .await
        .expect("the right token is welcome");
    assert_eq!(client.list().await.expect("list"), Vec::new());
    let report = run_job(
        &jm,
        submission(word_count(4, ResultPartitionType::Blocking), (0, 10)),
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(report.status, "FINISHED", "{report:?}");
    assert_eq!(report.tasks_deployed, 8);
    jm.shutdown().await;
}

/// A fake JobManager of protocol version 99: answers every hello with a version-99 prefix.
async fn fake_jobmanager_of_version_99() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                if read_frame(&mut stream).await.is_some() {
                    let reply = frame(&prefixed(99, b"\x91\xa7Welcome of another age"));
                    let _ = stream.write_all(&reply).await;
                }
                let _ = until_closed(&mut stream, Duration::from_secs(5)).await;
            });
        }
    });
    (address, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_and_task_managers_refuse_a_jobmanager_of_another_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (address, server) = fake_jobmanager_of_version_99().await;
    let address = address.to_string();
    match JobManagerClient::connect(&address, None).await {
        Err(ClientError::Rpc(e @ RpcError::VersionMismatch { .. })) => {
            let text = e.to_string();
            assert!(text.contains("speaks version 99"), "{text}");
            assert!(
                text.contains(&format!("this process speaks version {PROTOCOL_VERSION}")),
                "{text}"
            );
        }
        other => panic!("expected a version mismatch, got {other:?}"),
    }
    let started = Instant::now();
    let result = within(
        "a TaskManager facing another version",
        Duration::from_secs(5),
        TaskManager::run(tm_config(&address, 1, dir.path()), std::future::pending()),
    )
    .await;
    match result {
        Err(TaskManagerError::Refused(RpcError::VersionMismatch { theirs, ours, .. })) => {
            assert_eq!((theirs, ours), (99, PROTOCOL_VERSION));
        }
        other => panic!("expected a version mismatch, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(2));
    server.abort();
}
