//! [`LeaderElection`] and [`Leadership`]: one leader among JobManagers of one cluster id, as
//! Flink's ZooKeeper leader election (a latch of ephemeral sequential nodes), with a fencing
//! token and a lease.
//!
//! Each contender creates an ephemeral sequential node under the latch; the contender whose
//! node has the lowest sequence number leads, the others watch their predecessor. The leader's
//! sequence number is its **fencing token**: ZooKeeper's sequence numbers under one parent only
//! grow and a leader's node is the lowest alive, so every later leader has a larger token
//! (TaskManagers refuse a leader whose token is below one they have seen).
//!
//! **Lease**: ZooKeeper expires a session (deleting its latch node, which elects the next
//! contender) only after it has heard nothing from the client for the session timeout. The
//! leader confirms its latch node every fifth of the timeout and holds a lease of two thirds of
//! the timeout from the *send* time of the last confirmed request: its lease therefore ends a
//! third of the timeout before ZooKeeper could elect anyone else, whatever stopped it (a
//! network partition, a SIGSTOP, a long pause). [`Leadership::is_valid`] reads the monotonic
//! clock (which keeps counting while a process is stopped), so a process resumed after its
//! lease knows it at its first check, before any other task of it has run.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use zookeeper_client as zk;

use crate::{HaError, HaOptions};

/// What the leader publishes (JSON in the `connection_info` node): where its RPC and REST
/// servers listen, and its fencing token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderInfo {
    /// The RPC address TaskManagers and clients connect to (`host:port`).
    pub rpc_address: String,
    /// The REST API's base URL (`http://host:port`), if it serves one.
    pub rest_url: Option<String>,
    /// The leader's fencing token (its latch node's sequence number).
    pub fencing_token: u64,
    /// The leader's process id on its host (`conflux cluster --kill-job-manager-after-ms`
    /// kills the leader it started by it); absent in what older leaders published.
    #[serde(default)]
    pub pid: Option<u32>,
}

/// A contender that has joined the election: its latch node exists.
pub struct LeaderElection {
    client: zk::Client,
    options: HaOptions,
    node: String,
    token: u64,
}

impl std::fmt::Debug for LeaderElection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElection")
            .field("node", &self.node)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl LeaderElection {
    /// Connects and creates this contender's latch node.
    ///
    /// # Errors
    /// [`HaError::Connect`], [`HaError::Request`], [`HaError::BadOption`].
    pub async fn join(options: &HaOptions) -> Result<LeaderElection, HaError> {
        let client = crate::session::connect(options).await?;
        let latch = options.latch_path();
        let prefix = format!("{latch}/n-");
        let (_, sequence) = client
            .create(
                &prefix,
                b"",
                &zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all()),
            )
            .await
            .map_err(|e| HaError::request(&latch, e))?;
        let token = u64::try_from(sequence.into_i64()).unwrap_or(0);
        let node = format!("{prefix}{sequence}");
        tracing::debug!(%node, token, "joined the leader election");
        Ok(LeaderElection {
            client,
            options: options.clone(),
            node,
            token,
        })
    }

    /// This contender's fencing token, should it lead.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// Waits until this contender leads (its node is the lowest of the latch).
    ///
    /// # Errors
    /// [`HaError::SessionEnded`] when the session expires while waiting (the node is gone:
    /// join again), [`HaError::Request`].
    pub async fn await_leadership(self) -> Result<Leadership, HaError> {
        let latch = self.options.latch_path();
        let mut state = self.client.state_watcher();
        loop {
            let mut children = self
                .client
                .list_children(&latch)
                .await
                .map_err(|e| HaError::request(&latch, e))?;
            children.sort_by_key(|c| sequence_of(c));
            let ours = self.node.rsplit('/').next().unwrap_or_default();
            let Some(position) = children.iter().position(|c| c == ours) else {
                return Err(HaError::SessionEnded(format!(
                    "latch node {} is gone",
                    self.node
                )));
            };
            if position == 0 {
                break;
            }
            let predecessor = format!("{latch}/{}", children[position - 1]);
            let (stat, watcher) = self
                .client
                .check_and_watch_stat(&predecessor)
                .await
                .map_err(|e| HaError::request(&predecessor, e))?;
            if stat.is_none() {
                continue;
            }
            tracing::debug!(%predecessor, "standing by");
            tokio::select! {
                _ = watcher.changed() => {}
                s = state.changed() => {
                    if s.is_terminated() {
                        return Err(HaError::SessionEnded(format!("{s:?}")));
                    }
                }
            }
        }
        Ok(Leadership::new(self.client, self.node, self.token))
    }
}

/// The sequence number of a latch child (`n-0000000012` -> 12); unparsable names sort last.
fn sequence_of(child: &str) -> u64 {
    child
        .rsplit('-')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(u64::MAX)
}

/// The leadership of one contender: its token, its lease, and the session that holds it.
/// Dropping it stops renewing the lease; the session closes with the last client clone.
pub struct Leadership {
    client: zk::Client,
    node: String,
    token: u64,
    lease: Arc<Lease>,
    lost: watch::Receiver<bool>,
    renewer: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Leadership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leadership")
            .field("node", &self.node)
            .field("token", &self.token)
            .field("valid", &self.is_valid())
            .finish_non_exhaustive()
    }
}

/// The lease: the send time of the last request that confirmed the latch node, and its length.
#[derive(Debug)]
struct Lease {
    confirmed: Mutex<Instant>,
    length: Duration,
    lost: Mutex<bool>,
}

impl Lease {
    fn valid(&self) -> bool {
        let lost = *self
            .lost
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let confirmed = *self
            .confirmed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        !lost && confirmed.elapsed() < self.length
    }
}

impl Leadership {
    fn new(client: zk::Client, node: String, token: u64) -> Leadership {
        let timeout = client.session_timeout();
        let lease = Arc::new(Lease {
            // The latch was listed just now: the session was alive when the request was sent.
            confirmed: Mutex::new(Instant::now()),
            length: timeout * 2 / 3,
            lost: Mutex::new(false),
        });
        let (lost_tx, lost) = watch::channel(false);
        let renewer = tokio::spawn(renew(
            client.clone(),
            node.clone(),
            Arc::clone(&lease),
            lost_tx,
        ));
        tracing::info!(
            token,
            session_timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            "leadership granted"
        );
        Leadership {
            client,
            node,
            token,
            lease,
            lost,
            renewer,
        }
    }

    /// The fencing token (the latch node's sequence number).
    pub fn token(&self) -> u64 {
        self.token
    }

    /// Whether this leader may still act: its lease runs and its latch node was never found
    /// missing. Call it before every action another leader must not take twice.
    pub fn is_valid(&self) -> bool {
        self.lease.valid()
    }

    /// A cheap handle on [`is_valid`](Self::is_valid) for other threads.
    pub fn validity(&self) -> LeaseHandle {
        LeaseHandle(Arc::clone(&self.lease))
    }

    /// Resolves once the leadership is lost (lease ended, latch node gone, session ended).
    pub async fn lost(&self) {
        let mut lost = self.lost.clone();
        let _ = lost.wait_for(|l| *l).await;
    }

    /// The session's client (for fenced writes: [`JobPointers`](crate::JobPointers)).
    pub fn client(&self) -> &zk::Client {
        &self.client
    }

    /// The latch node, whose existence fences this leader's writes.
    pub fn latch_node(&self) -> &str {
        &self.node
    }

    /// Publishes `info` (its token replaced by this leader's) in the `connection_info` node,
    /// ephemeral, replacing a stale one, as one transaction checked against the latch node.
    ///
    /// # Errors
    /// [`HaError::Request`] (the latch node gone: no longer the leader).
    pub async fn publish(&self, options: &HaOptions, info: &LeaderInfo) -> Result<(), HaError> {
        let path = options.connection_info_path();
        let info = LeaderInfo {
            fencing_token: self.token,
            ..info.clone()
        };
        let data = serde_json::to_vec(&info).map_err(|e| HaError::BadData {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let ephemeral = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
        for _ in 0..3 {
            let existing = self
                .client
                .check_stat(&path)
                .await
                .map_err(|e| HaError::request(&path, e))?;
            let mut writer = self
                .client
                .new_check_writer(&self.node, None)
                .map_err(|e| HaError::request(&self.node, e))?;
            if let Some(stat) = existing {
                writer
                    .add_delete(&path, Some(stat.version))
                    .map_err(|e| HaError::request(&path, e))?;
            }
            writer
                .add_create(&path, &data, &ephemeral)
                .map_err(|e| HaError::request(&path, e))?;
            match writer.commit().await {
                Ok(_) => {
                    tracing::info!(rpc = %info.rpc_address, token = self.token, "leader address published");
                    return Ok(());
                }
                Err(zk::CheckWriteError::OperationFailed { .. }) => continue,
                Err(e) => return Err(HaError::request(&path, e.into())),
            }
        }
        Err(HaError::request(&path, zk::Error::NodeExists))
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        self.renewer.abort();
    }
}

/// A handle on a [`Leadership`]'s lease, for threads that act on its behalf (a job loop).
#[derive(Clone, Debug)]
pub struct LeaseHandle(Arc<Lease>);

impl LeaseHandle {
    /// As [`Leadership::is_valid`].
    pub fn is_valid(&self) -> bool {
        self.0.valid()
    }
}

/// Confirms the latch node every fifth of the session timeout; marks the leadership lost when
/// the node is gone, the session ends, or the lease runs out without a confirmation.
async fn renew(client: zk::Client, node: String, lease: Arc<Lease>, lost: watch::Sender<bool>) {
    let interval = client.session_timeout() / 5;
    let mut state = client.state_watcher();
    let lose = |why: String| {
        *lease
            .lost
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        tracing::warn!(%node, "leadership lost: {why}");
        let _ = lost.send(true);
    };
    loop {
        let sent = Instant::now();
        let check = tokio::time::timeout(
            interval.max(Duration::from_millis(100)),
            client.check_stat(&node),
        );
        tokio::select! {
            result = check => match result {
                Ok(Ok(Some(_))) => {
                    let mut confirmed = lease.confirmed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    if sent > *confirmed {
                        *confirmed = sent;
                    }
                }
                Ok(Ok(None)) => return lose(format!("latch node {node} is gone")),
                Ok(Err(zk::Error::SessionExpired | zk::Error::ClientClosed)) => {
                    return lose("the ZooKeeper session ended".into())
                }
                Ok(Err(e)) => tracing::debug!("lease check failed: {e}"),
                Err(_) => tracing::debug!("lease check timed out"),
            },
            s = state.changed() => {
                if s.is_terminated() {
                    return lose(format!("the ZooKeeper session is {s:?}"));
                }
                continue;
            }
        }
        if !lease.valid() {
            return lose("the lease ran out without contact with ZooKeeper".into());
        }
        tokio::time::sleep(interval).await;
        if !lease.valid() {
            return lose("the lease ran out without contact with ZooKeeper".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sequence_of;

    #[test]
    fn latch_children_sort_by_sequence() {
        let mut c = vec![
            "n-0000000010".to_owned(),
            "n-0000000002".to_owned(),
            "junk".to_owned(),
        ];
        c.sort_by_key(|c| sequence_of(c));
        assert_eq!(c, ["n-0000000002", "n-0000000010", "junk"]);
    }
}
