//! The TaskManagers a JobManager knows (Flink's `ResourceManager` view of its `TaskExecutor`s and
//! the `HeartbeatManager`): who is registered, how to reach each one, when each last answered a
//! heartbeat, and the current job's event loop, to which registrations, losses and task states
//! are forwarded.
//!
//! The heartbeat loop and the connection tasks use this table directly, never the job's event
//! loop: a long scheduler call cannot delay a heartbeat answer or a loss detection. The mutex is
//! held only for table updates, never across an await.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use conflux_deploy::{TaskManagerId, TaskManagerLocation};
use prometheus_client::metrics::histogram::Histogram;
use tokio::sync::{mpsc, Notify};

use crate::connection::encode;
use crate::jobmanager::job_loop::LoopEvent;
use crate::protocol::{TaskManagerStats, ToTaskManager};
use crate::secret::Secret;

/// The sending side of one TaskManager connection: heartbeats jump the queue of task messages.
#[derive(Clone, Debug)]
pub(crate) struct Outbox {
    priority: mpsc::UnboundedSender<Bytes>,
    normal: mpsc::UnboundedSender<Bytes>,
}

/// The receiving side, owned by the connection's writer task.
pub(crate) struct OutboxReceiver {
    pub(crate) priority: mpsc::UnboundedReceiver<Bytes>,
    pub(crate) normal: mpsc::UnboundedReceiver<Bytes>,
}

impl Outbox {
    pub(crate) fn new() -> (Outbox, OutboxReceiver) {
        let (priority, priority_rx) = mpsc::unbounded_channel();
        let (normal, normal_rx) = mpsc::unbounded_channel();
        (
            Outbox { priority, normal },
            OutboxReceiver {
                priority: priority_rx,
                normal: normal_rx,
            },
        )
    }

    /// Queues a message; false when the connection is gone or the message does not encode
    /// (logged).
    pub(crate) fn send(&self, message: &ToTaskManager) -> bool {
        encoded(message).is_some_and(|frame| self.normal.send(frame).is_ok())
    }

    /// Queues already encoded bytes.
    pub(crate) fn send_encoded(&self, frame: Bytes) -> bool {
        self.normal.send(frame).is_ok()
    }

    fn send_priority(&self, message: &ToTaskManager) -> bool {
        encoded(message).is_some_and(|frame| self.priority.send(frame).is_ok())
    }
}

/// The frame of `message`, or `None` (logged) when it does not encode.
fn encoded(message: &ToTaskManager) -> Option<Bytes> {
    encode(message)
        .map_err(|e| tracing::error!("message to a TaskManager not sent: {e}"))
        .ok()
}

/// Why a TaskManager is lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LossReason {
    /// It did not answer heartbeats within the timeout.
    HeartbeatTimeout,
    /// Its connection closed or failed.
    ConnectionClosed,
}

pub(crate) struct Registered {
    pub(crate) location: TaskManagerLocation,
    /// The secret it got at registration, which its heartbeat connection must present.
    secret: Secret,
    pub(crate) slots: u32,
    pub(crate) outbox: Outbox,
    /// Wakes the connection's reader so that it closes the socket when the TaskManager is lost.
    pub(crate) closed: Arc<Notify>,
    pub(crate) last_answer: Instant,
    /// The sequence number of its last heartbeat answer received (`None` before the first),
    /// sent with every request (the TaskManager's commit lease runs from that answer).
    pub(crate) last_answered_seq: Option<u64>,
    heartbeats_sent: HashMap<u64, Instant>,
    /// The TaskManager's heartbeat connection, once it has opened one; until then heartbeats go
    /// on the main connection, ahead of queued task messages.
    heartbeat_channel: Option<(mpsc::UnboundedSender<Bytes>, Arc<Notify>)>,
    /// The finished partitions of recovered jobs it held when it registered (batch job
    /// recovery reads them when the job starts).
    pub(crate) held: Vec<crate::protocol::HeldPartition>,
}

impl Registered {
    /// Tells the TaskManager that the JobManager ends its registration (it is shutting down),
    /// on both connections: whichever the TaskManager reads first says why, so the end of the
    /// other is not taken for a lost JobManager. The heartbeat connection sends what is queued
    /// before it closes, once its request sender is dropped.
    pub(crate) fn say_goodbye(&self, reason: &str) {
        let goodbye = ToTaskManager::Disconnect(reason.to_owned());
        self.outbox.send(&goodbye);
        if let Some((requests, _)) = &self.heartbeat_channel {
            if let Ok(frame) = encode(&goodbye) {
                let _ = requests.send(frame);
            }
        }
    }
}

/// What is remembered of every TaskManager that ever registered, for reports.
#[derive(Clone, Debug, Default)]
pub(crate) struct TaskManagerRecord {
    pub(crate) slots: u32,
    pub(crate) pid: u32,
    /// Its counters as it last reported them; `None` until its first report (a heartbeat
    /// answer or a task state).
    pub(crate) stats: Option<TaskManagerStats>,
    pub(crate) lost: bool,
    /// Tasks of the running job submitted to it.
    pub(crate) job_tasks: u64,
}

/// Counters of heartbeats and losses since the JobManager started.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HeartbeatCounters {
    pub(crate) lost: u64,
    pub(crate) heartbeat_timeouts: u64,
    /// Registrations of a TaskManager process that had registered before (the same process id
    /// and data IP), after the JobManager lost it or it lost the JobManager.
    pub(crate) re_registrations: u64,
    /// Longest round trip since the current job started, ms; `None` while none was measured.
    pub(crate) max_rtt_ms: Option<f64>,
}

#[derive(Default)]
pub(crate) struct RegistryState {
    next_id: u32,
    pub(crate) alive: BTreeMap<TaskManagerId, Registered>,
    pub(crate) records: BTreeMap<TaskManagerId, TaskManagerRecord>,
    pub(crate) counters: HeartbeatCounters,
    /// The data IP of every TaskManager that ever registered, to tell a re-registration.
    data_ips: BTreeMap<TaskManagerId, std::net::IpAddr>,
    /// The running job's event loop.
    pub(crate) current_job: Option<Sender<LoopEvent>>,
    heartbeat_seq: u64,
}

/// The TaskManager table, shared by the connection tasks, the heartbeat loop and the job loop.
pub(crate) struct Registry {
    state: Mutex<RegistryState>,
    /// Heartbeat round trips, s (a Prometheus histogram).
    rtt: Histogram,
}

impl Registry {
    /// An empty table that observes heartbeat round trips into `rtt`.
    pub(crate) fn new(rtt: Histogram) -> Registry {
        Registry {
            state: Mutex::new(RegistryState::default()),
            rtt,
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, RegistryState> {
        // A panic while holding the lock leaves the table consistent (every update is a single
        // insert or remove), so a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds a TaskManager and tells the running job. Returns its id.
    #[allow(clippy::too_many_arguments)] // one registration's parts, as the handshake gives them
    pub(crate) fn register(
        &self,
        slots: u32,
        data_address: SocketAddr,
        pid: u32,
        secret: Secret,
        outbox: Outbox,
        closed: Arc<Notify>,
        held: Vec<crate::protocol::HeldPartition>,
    ) -> TaskManagerId {
        let mut state = self.lock();
        let again = state.records.iter().any(|(earlier, record)| {
            record.pid == pid
                && state
                    .data_ips
                    .get(earlier)
                    .is_some_and(|ip| *ip == data_address.ip())
        });
        if again {
            state.counters.re_registrations += 1;
        }
        let id = TaskManagerId(state.next_id);
        state.data_ips.insert(id, data_address.ip());
        state.next_id += 1;
        let location = TaskManagerLocation { id, data_address };
        state.alive.insert(
            id,
            Registered {
                location,
                secret,
                slots,
                outbox,
                closed,
                last_answer: Instant::now(),
                last_answered_seq: None,
                heartbeats_sent: HashMap::new(),
                heartbeat_channel: None,
                held,
            },
        );
        state.records.insert(
            id,
            TaskManagerRecord {
                slots,
                pid,
                ..TaskManagerRecord::default()
            },
        );
        if let Some(job) = &state.current_job {
            let _ = job.send(LoopEvent::TaskManagerRegistered { location, slots });
        }
        id
    }

    /// Removes a TaskManager (if still registered), closes its connection and tells the running
    /// job. Returns whether it was registered.
    pub(crate) fn lose(&self, id: TaskManagerId, reason: LossReason) -> bool {
        let mut state = self.lock();
        let Some(entry) = state.alive.remove(&id) else {
            return false;
        };
        entry.closed.notify_one();
        if let Some((_, closed)) = &entry.heartbeat_channel {
            closed.notify_one();
        }
        state.counters.lost += 1;
        if reason == LossReason::HeartbeatTimeout {
            state.counters.heartbeat_timeouts += 1;
        }
        if let Some(record) = state.records.get_mut(&id) {
            record.lost = true;
        }
        if let Some(job) = &state.current_job {
            let _ = job.send(LoopEvent::TaskManagerLost(id));
        }
        true
    }

    /// Records a heartbeat answer: its round trip and the TaskManager's counters.
    pub(crate) fn heartbeat_answered(&self, id: TaskManagerId, seq: u64, stats: TaskManagerStats) {
        let mut state = self.lock();
        let now = Instant::now();
        let mut rtt_ms = None;
        if let Some(entry) = state.alive.get_mut(&id) {
            entry.last_answer = now;
            entry.last_answered_seq = Some(entry.last_answered_seq.map_or(seq, |s| s.max(seq)));
            if let Some(sent) = entry.heartbeats_sent.remove(&seq) {
                rtt_ms = Some(now.duration_since(sent).as_secs_f64() * 1e3);
            }
            // Unanswered requests older than this one will never be answered.
            entry.heartbeats_sent.retain(|&s, _| s > seq);
        }
        if let Some(rtt) = rtt_ms {
            state.counters.max_rtt_ms = Some(state.counters.max_rtt_ms.map_or(rtt, |m| m.max(rtt)));
            self.rtt.observe(rtt / 1e3);
        }
        if let Some(record) = state.records.get_mut(&id) {
            record.stats = Some(stats);
        }
    }

    /// Attaches a heartbeat connection to a registered TaskManager of that process presenting
    /// its registration secret (replacing the one it had). Returns the receiver of the requests
    /// to write to it and the TaskManager's close signal, or `None` when no such TaskManager is
    /// registered or the secret is not its own: then nothing changes.
    pub(crate) fn attach_heartbeat_channel(
        &self,
        id: TaskManagerId,
        pid: u32,
        secret: &Secret,
    ) -> Option<(mpsc::UnboundedReceiver<Bytes>, Arc<Notify>)> {
        let mut state = self.lock();
        if state.records.get(&id).map(|r| r.pid) != Some(pid) {
            return None;
        }
        let entry = state.alive.get_mut(&id)?;
        if !entry.secret.matches(secret) {
            return None;
        }
        let (sender, receiver) = mpsc::unbounded_channel();
        let closed = Arc::new(Notify::new());
        entry.heartbeat_channel = Some((sender, Arc::clone(&closed)));
        Some((receiver, closed))
    }

    /// Whether a registered TaskManager has its heartbeat connection.
    pub(crate) fn has_heartbeat_channel(&self, id: TaskManagerId) -> bool {
        self.lock()
            .alive
            .get(&id)
            .is_some_and(|e| e.heartbeat_channel.is_some())
    }

    /// Records counters sent with a task state.
    pub(crate) fn update_stats(&self, id: TaskManagerId, stats: TaskManagerStats) {
        if let Some(record) = self.lock().records.get_mut(&id) {
            record.stats = Some(stats);
        }
    }

    pub(crate) fn outbox(&self, id: TaskManagerId) -> Option<Outbox> {
        self.lock().alive.get(&id).map(|e| e.outbox.clone())
    }

    /// One heartbeat round: asks every TaskManager, and returns those that have not answered
    /// within `timeout` (the caller declares them lost).
    fn heartbeat_round(&self, timeout: Duration) -> Vec<TaskManagerId> {
        let mut state = self.lock();
        state.heartbeat_seq += 1;
        let seq = state.heartbeat_seq;
        let now = Instant::now();
        let mut expired = Vec::new();
        for (id, entry) in state.alive.iter_mut() {
            if now.duration_since(entry.last_answer) > timeout {
                expired.push(*id);
                continue;
            }
            let request = ToTaskManager::HeartbeatRequest {
                seq,
                answered: entry.last_answered_seq,
            };
            let on_channel = entry
                .heartbeat_channel
                .as_ref()
                .is_some_and(|(channel, _)| {
                    encoded(&request).is_some_and(|frame| channel.send(frame).is_ok())
                });
            if on_channel || entry.outbox.send_priority(&request) {
                entry.heartbeats_sent.insert(seq, now);
            }
        }
        expired
    }
}

/// Asks every TaskManager for a heartbeat each `interval`, and declares lost those silent for
/// longer than `timeout` (Flink's `HeartbeatManagerSenderImpl`). Runs until the registry is
/// dropped by everyone else.
pub(crate) async fn heartbeat_loop(
    registry: std::sync::Weak<Registry>,
    interval: Duration,
    timeout: Duration,
) {
    let mut ticker = tokio::time::interval(interval.max(Duration::from_millis(1)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let Some(registry) = registry.upgrade() else {
            return;
        };
        for id in registry.heartbeat_round(timeout) {
            if registry.lose(id, LossReason::HeartbeatTimeout) {
                tracing::warn!(
                    task_manager = %id,
                    timeout_ms = crate::connection::millis(timeout),
                    "TaskManager lost: no heartbeat answer within the timeout"
                );
            }
        }
    }
}
