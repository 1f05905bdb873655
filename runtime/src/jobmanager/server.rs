//! The JobManager's network side: the accept loop (a bounded number of connections, a
//! handshake deadline) and one task per connection. A malformed, oversized or unknown frame
//! closes that connection with a logged error; nothing here can stop the process.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use conflux_deploy::TaskManagerId;

use crate::config::MAX_SUBMISSION_BYTES;
use crate::connection::{
    accept_hello, decode, encode, framed, next_frame, send_reply, write_prioritized, FaultInjector,
    FramedStream, RpcError, MAX_HANDSHAKE_FRAME_BYTES,
};
use crate::jobmanager::admission::submit;
use crate::jobmanager::error::JobManagerError;
use crate::jobmanager::loop_event::LoopEvent;
use crate::jobmanager::registry::{LossReason, Outbox, OutboxReceiver};
use crate::jobmanager::shared::Shared;
use crate::protocol::{
    ClientRequest, ClientResponse, HandshakeReply, Hello, Role, TaskManagerRegistration,
    ToJobManager, Welcome,
};
use crate::secret::Secret;

pub(crate) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let permits = Arc::new(Semaphore::new(shared.config.max_connections.max(1)));
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors and the like: wait instead of spinning.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shared.shutdown.notified() => return,
        };
        let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
            tracing::warn!(%peer, limit = shared.config.max_connections, "connection refused: too many connections");
            // One non-blocking write of the refusal, then close: a flood of connections costs
            // the accept loop nothing more.
            let refusal = refusal_frame(&format!(
                "the JobManager accepts at most {} connections",
                shared.config.max_connections
            ));
            let _ = stream.try_write(&refusal);
            continue;
        };
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let peer = peer.to_string();
            if let Err(e) = serve(stream, &peer, &shared).await {
                match e {
                    RpcError::Closed(_) => tracing::debug!("{e}"),
                    _ => tracing::warn!("connection closed: {e}"),
                }
            }
            drop(permit);
        });
    }
}

async fn serve(stream: TcpStream, peer: &str, shared: &Arc<Shared>) -> Result<(), RpcError> {
    let _ = stream.set_nodelay(true);
    let mut conn = framed(stream, MAX_HANDSHAKE_FRAME_BYTES);
    let timeout = Duration::from_millis(shared.config.rpc.handshake_timeout_ms);
    let Hello { token, role } = accept_hello(&mut conn, peer, timeout).await?;
    if shared.config.rpc.token.is_some() && token != shared.config.rpc.token {
        let reason = if token.is_none() {
            "this JobManager requires a token"
        } else {
            "wrong token"
        };
        send_reply(&mut conn, &HandshakeReply::Refused(reason.into())).await?;
        return Err(RpcError::Refused {
            peer: peer.to_owned(),
            reason: format!("refused its hello: {reason}"),
        });
    }
    let welcome = |task_manager_id, registration_secret| {
        HandshakeReply::Welcome(Welcome {
            task_manager_id,
            blob_server_url: shared.blob_server_url.clone(),
            heartbeat_interval_ms: shared.config.heartbeat.interval_ms,
            heartbeat_timeout_ms: shared.config.heartbeat.timeout_ms,
            registration_secret,
            // The jobs this JobManager recovered and still runs (none without a storage
            // directory): a registering TaskManager releases every other job's partitions.
            keep_jobs: shared.recovering(),
            fencing_token: shared.config.leader.as_ref().map(|l| l.fencing_token),
        })
    };
    match role {
        Role::Heartbeat {
            task_manager,
            pid,
            secret,
        } => {
            let Some((requests, closed)) =
                shared
                    .registry
                    .attach_heartbeat_channel(task_manager, pid, &secret)
            else {
                // The same answer whatever did not match: a prober learns nothing.
                let reason =
                    format!("{task_manager} (process {pid}) is not registered with that secret");
                send_reply(&mut conn, &HandshakeReply::Refused(reason.clone())).await?;
                return Err(RpcError::Refused {
                    peer: peer.to_owned(),
                    reason,
                });
            };
            send_reply(&mut conn, &welcome(Some(task_manager), None)).await?;
            on_heartbeat_thread(conn, peer, task_manager, requests, closed, shared).await
        }
        Role::Client => {
            send_reply(&mut conn, &welcome(None, None)).await?;
            conn.codec_mut()
                .set_max_frame_length(MAX_SUBMISSION_BYTES + (1 << 20));
            serve_client(conn, peer, shared).await
        }
        Role::TaskManager(registration) => {
            let limit = conflux_graph::limits::MAX_SLOTS_PER_TASK_MANAGER;
            if registration.slots == 0 || registration.slots > limit {
                let reason = format!(
                    "a TaskManager offers 1 to {limit} slots, not {}",
                    registration.slots
                );
                send_reply(&mut conn, &HandshakeReply::Refused(reason.clone())).await?;
                return Err(RpcError::Refused {
                    peer: peer.to_owned(),
                    reason: format!("refused its registration: {reason}"),
                });
            }
            let secret = match Secret::random() {
                Ok(secret) => secret,
                Err(e) => {
                    let reason = format!(
                        "no registration secret: the system's random generator failed: {e}"
                    );
                    send_reply(&mut conn, &HandshakeReply::Refused(reason.clone())).await?;
                    return Err(RpcError::Refused {
                        peer: peer.to_owned(),
                        reason,
                    });
                }
            };
            let (outbox, receiver) = Outbox::new();
            let closed = Arc::new(tokio::sync::Notify::new());
            let TaskManagerRegistration {
                slots,
                data_address,
                pid,
                mut held_partitions,
            } = registration;
            // Only the recovered jobs' partitions matter (the others are released), bounded
            // by what a TaskManager can hold of them.
            let keep = shared.recovering();
            held_partitions.retain(|h| keep.contains(&h.job));
            // Registered before the welcome is sent: a deployment queued meanwhile waits in the
            // outbox, whose writer starts only after the welcome.
            let id = shared.registry.register(
                slots,
                data_address,
                pid,
                secret,
                outbox,
                Arc::clone(&closed),
                held_partitions,
            );
            if let Err(e) = send_reply(&mut conn, &welcome(Some(id), Some(secret))).await {
                shared.registry.lose(id, LossReason::ConnectionClosed);
                return Err(e);
            }
            tracing::info!(task_manager = %id, %peer, slots, %data_address, pid, "TaskManager registered");
            conn.codec_mut()
                .set_max_frame_length(shared.config.rpc.max_frame_bytes);
            let result = serve_task_manager(conn, peer, id, receiver, closed, shared).await;
            if shared.registry.lose(id, LossReason::ConnectionClosed) {
                tracing::warn!(task_manager = %id, "TaskManager lost: {}", match &result {
                    Ok(()) => "connection closed".to_owned(),
                    Err(e) => e.to_string(),
                });
            }
            result
        }
    }
}

async fn serve_task_manager(
    conn: FramedStream,
    peer: &str,
    id: TaskManagerId,
    outbox: OutboxReceiver,
    closed: Arc<tokio::sync::Notify>,
    shared: &Arc<Shared>,
) -> Result<(), RpcError> {
    let (sink, mut stream) = conn.split();
    // Heartbeats jump the queue of task messages (when they come on this connection).
    let mut writer = tokio::spawn(write_prioritized(
        sink,
        outbox.priority,
        outbox.normal,
        FaultInjector::new(shared.config.rpc.faults, u64::from(id.0)),
        shared.config.leader.as_ref().map(|l| l.lease.clone()),
    ));
    // The heartbeat loop decides liveness; this bound only ends a reader whose TaskManager was
    // lost without its socket closing.
    let idle = Duration::from_millis(shared.config.heartbeat.timeout_ms.saturating_mul(2));
    let mut frame = 1u64;
    let mut dropped_by_us = false;
    let result = loop {
        let body = tokio::select! {
            body = next_frame(&mut stream, peer, frame, "message", idle) => body,
            () = closed.notified() => {
                dropped_by_us = true;
                break Ok(());
            }
        };
        let body = match body {
            Ok(body) => body,
            // Heartbeats on their own connection: a quiet main connection is fine.
            Err(RpcError::Timeout { .. }) if shared.registry.has_heartbeat_channel(id) => continue,
            Err(e) => break Err(e),
        };
        let message: ToJobManager = match decode(&body, peer, frame, "TaskManager message") {
            Ok(message) => message,
            Err(e) => break Err(e),
        };
        frame += 1;
        match message {
            ToJobManager::HeartbeatResponse { seq, stats } => {
                shared.registry.heartbeat_answered(id, seq, stats);
            }
            ToJobManager::SubmitAcknowledged {
                job,
                attempt,
                refused,
            } => forward(
                shared,
                LoopEvent::Acknowledged {
                    from: id,
                    job,
                    attempt,
                    refused,
                },
            ),
            ToJobManager::TaskStateChanged {
                job,
                attempt,
                state,
                metrics,
                stats,
            } => {
                shared.registry.update_stats(id, stats);
                forward(
                    shared,
                    LoopEvent::TaskState {
                        from: id,
                        job,
                        attempt,
                        state,
                        metrics,
                    },
                );
            }
        }
    };
    if dropped_by_us {
        // The registry dropped the outbox: the writer sends what is queued (a disconnect) and
        // ends.
        if tokio::time::timeout(Duration::from_secs(1), &mut writer)
            .await
            .is_err()
        {
            writer.abort();
        }
    } else {
        writer.abort();
    }
    result
}

/// Serves a heartbeat connection on the process's heartbeat thread (`heartbeat_thread.rs`),
/// its socket registered with that thread's reactor, so that no busy I/O thread delays a
/// request or the reading of its answer; returns when it ends.
async fn on_heartbeat_thread(
    conn: FramedStream,
    peer: &str,
    id: TaskManagerId,
    requests: tokio::sync::mpsc::UnboundedReceiver<bytes::Bytes>,
    closed: Arc<tokio::sync::Notify>,
    shared: &Arc<Shared>,
) -> Result<(), RpcError> {
    let io_error = |source: std::io::Error| RpcError::Io {
        peer: peer.to_owned(),
        source,
    };
    let runtime = crate::heartbeat_thread::heartbeat_runtime().map_err(io_error)?;
    let parts = conn.into_parts();
    let (read_buf, write_buf, codec) = (parts.read_buf, parts.write_buf, parts.codec);
    let socket = parts.io.into_std().map_err(io_error)?;
    let (peer_name, shared) = (peer.to_owned(), Arc::clone(shared));
    let served = runtime.spawn(async move {
        let io = TcpStream::from_std(socket).map_err(|source| RpcError::Io {
            peer: peer_name.clone(),
            source,
        })?;
        let mut parts = tokio_util::codec::FramedParts::new::<bytes::Bytes>(io, codec);
        parts.read_buf = read_buf;
        parts.write_buf = write_buf;
        let conn = tokio_util::codec::Framed::from_parts(parts);
        serve_heartbeats(conn, &peer_name, id, requests, closed, &shared).await
    });
    served
        .await
        .map_err(|e| io_error(std::io::Error::other(e.to_string())))?
}

/// A TaskManager's heartbeat connection: requests out, answers in, nothing else. Its end does
/// not make the TaskManager lost: the heartbeat timeout and the main connection decide that.
async fn serve_heartbeats(
    conn: FramedStream,
    peer: &str,
    id: TaskManagerId,
    mut requests: tokio::sync::mpsc::UnboundedReceiver<bytes::Bytes>,
    closed: Arc<tokio::sync::Notify>,
    shared: &Arc<Shared>,
) -> Result<(), RpcError> {
    let (mut sink, mut stream) = conn.split();
    let idle = Duration::from_millis(shared.config.heartbeat.timeout_ms.saturating_mul(2));
    // The injected faults apply to heartbeats as to every other message.
    let mut faults = FaultInjector::new(shared.config.rpc.faults, !u64::from(id.0));
    let mut frame = 1u64;
    loop {
        tokio::select! {
            request = requests.recv() => {
                let Some(request) = request else { return Ok(()) };
                if !faults.pass().await {
                    continue;
                }
                sink.send(request).await.map_err(|source| RpcError::Io {
                    peer: peer.to_owned(),
                    source,
                })?;
            }
            body = next_frame(&mut stream, peer, frame, "heartbeat answer", idle) => {
                match decode(&body?, peer, frame, "heartbeat answer")? {
                    ToJobManager::HeartbeatResponse { seq, stats } => {
                        shared.registry.heartbeat_answered(id, seq, stats);
                    }
                    other => {
                        return Err(RpcError::Malformed {
                            peer: peer.to_owned(),
                            frame,
                            expected: "heartbeat answer",
                            reason: format!("{other:?} on the heartbeat connection"),
                        })
                    }
                }
                frame += 1;
            }
            () = closed.notified() => return Ok(()),
        }
    }
}

fn forward(shared: &Shared, event: LoopEvent) {
    if let Some(job) = &shared.registry.lock().current_job {
        let _ = job.send(event);
    }
}

async fn serve_client(
    mut conn: FramedStream,
    peer: &str,
    shared: &Arc<Shared>,
) -> Result<(), RpcError> {
    let idle = Duration::from_millis(shared.config.client_idle_timeout_ms);
    let mut frame = 1u64;
    // A request that arrived while a wait was pending; reading stops there until it is served.
    let mut pipelined: Option<bytes::BytesMut> = None;
    loop {
        let body = match pipelined.take() {
            Some(body) => body,
            None => match next_frame(&mut conn, peer, frame, "request", idle).await {
                Err(RpcError::Closed(_)) => return Ok(()),
                other => other?,
            },
        };
        let request: ClientRequest = decode(&body, peer, frame, "client request")?;
        frame += 1;
        let response = match request {
            ClientRequest::Submit(submission) => match submit(shared, submission).await {
                Ok(job) => ClientResponse::Submitted(job),
                Err(e) => ClientResponse::Error(e.to_string()),
            },
            ClientRequest::List => ClientResponse::Jobs(shared.jobs.list()),
            ClientRequest::TaskManagerCount => {
                ClientResponse::TaskManagerCount(shared.registry.lock().alive.len() as u64)
            }
            ClientRequest::Status(job) => match shared.jobs.summary(job) {
                Some(summary) => ClientResponse::Job(summary),
                None => ClientResponse::Error(JobManagerError::UnknownJob(job).to_string()),
            },
            ClientRequest::Cancel(job) => match shared.jobs.cancel(job) {
                Ok(()) => ClientResponse::Canceled(job),
                Err(e) => ClientResponse::Error(e.to_string()),
            },
            ClientRequest::Wait(job) => {
                let wait = shared.jobs.wait(job);
                tokio::pin!(wait);
                // A client that goes away while waiting frees its connection; its next request
                // is kept for after the answer.
                let result = loop {
                    tokio::select! {
                        result = &mut wait => break result,
                        next = conn.next(), if pipelined.is_none() => match next {
                            None => return Ok(()),
                            Some(Ok(body)) => pipelined = Some(body),
                            Some(Err(e)) => return Err(RpcError::BadFrame {
                                peer: peer.to_owned(),
                                frame,
                                reason: e.to_string(),
                            }),
                        },
                    }
                };
                match result {
                    Ok(report) => match serde_json_report(&report) {
                        Ok(json) => ClientResponse::Report(json),
                        Err(e) => ClientResponse::Error(e),
                    },
                    Err(e) => ClientResponse::Error(e.to_string()),
                }
            }
        };
        conn.send(encode(&response)?)
            .await
            .map_err(|source| RpcError::Io {
                peer: peer.to_owned(),
                source,
            })?;
    }
}

fn serde_json_report(report: &crate::report::JobReport) -> Result<String, String> {
    crate::report::to_json(report)
}

/// A whole refusal frame (length prefix included), for a connection that gets nothing else.
fn refusal_frame(reason: &str) -> bytes::Bytes {
    use bytes::BufMut;
    let Ok(body) = crate::connection::handshake_frame(&HandshakeReply::Refused(reason.to_owned()))
    else {
        return bytes::Bytes::new();
    };
    let mut frame = bytes::BytesMut::with_capacity(4 + body.len());
    frame.put_u32(u32::try_from(body.len()).unwrap_or(u32::MAX));
    frame.put_slice(&body);
    frame.freeze()
}
