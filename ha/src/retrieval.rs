//! [`LeaderRetrieval`]: the current leader's [`LeaderInfo`], followed as it changes (Flink's
//! `ZooKeeperLeaderRetrievalDriver`): what TaskManagers and clients use instead of an address.

use std::time::Duration;

use tokio::sync::watch;
use zookeeper_client as zk;

use crate::{HaError, HaOptions, LeaderInfo};

/// Follows the `connection_info` node of one cluster id. Dropping it stops following.
#[derive(Debug)]
pub struct LeaderRetrieval {
    leader: watch::Receiver<Option<LeaderInfo>>,
    task: tokio::task::JoinHandle<()>,
}

impl LeaderRetrieval {
    /// Connects and starts following; a session that expires is replaced.
    ///
    /// # Errors
    /// [`HaError::Connect`] when the first session cannot be had, [`HaError::BadOption`].
    pub async fn start(options: &HaOptions) -> Result<LeaderRetrieval, HaError> {
        let client = crate::session::connect(options).await?;
        let (tx, leader) = watch::channel(None);
        let task = tokio::spawn(follow(client, options.clone(), tx));
        Ok(LeaderRetrieval { leader, task })
    }

    /// The leader as last seen (`None`: no leader published).
    pub fn current(&self) -> Option<LeaderInfo> {
        self.leader.borrow().clone()
    }

    /// A receiver of every change (for `select!`).
    pub fn subscribe(&self) -> watch::Receiver<Option<LeaderInfo>> {
        self.leader.clone()
    }

    /// Waits up to `timeout` for a published leader.
    ///
    /// # Errors
    /// [`HaError::SessionEnded`] when none appeared within `timeout`.
    pub async fn await_leader(&self, timeout: Duration) -> Result<LeaderInfo, HaError> {
        let mut leader = self.leader.clone();
        let found = tokio::time::timeout(timeout, leader.wait_for(Option::is_some)).await;
        match found {
            Ok(Ok(info)) => info
                .clone()
                .ok_or_else(|| HaError::SessionEnded("no leader".into())),
            _ => Err(HaError::SessionEnded(format!(
                "no JobManager leads this cluster id (none published its address within {} ms)",
                timeout.as_millis()
            ))),
        }
    }
}

impl Drop for LeaderRetrieval {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Parses the `connection_info` node's data.
fn parse(path: &str, data: &[u8]) -> Result<LeaderInfo, HaError> {
    serde_json::from_slice(data).map_err(|e| HaError::BadData {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

async fn follow(mut client: zk::Client, options: HaOptions, tx: watch::Sender<Option<LeaderInfo>>) {
    let path = options.connection_info_path();
    loop {
        let watcher = match client.get_and_watch_data(&path).await {
            Ok((data, _, watcher)) => {
                match parse(&path, &data) {
                    Ok(info) => {
                        tx.send_if_modified(|l| {
                            let changed = l.as_ref() != Some(&info);
                            *l = Some(info);
                            changed
                        });
                    }
                    Err(e) => tracing::warn!("{e}"),
                }
                Some(watcher)
            }
            Err(zk::Error::NoNode) => match client.check_and_watch_stat(&path).await {
                // Created between the two calls (a new leader publishing right after the old
                // one's node went): read now. Its exists-watch fires only at its next change,
                // so waiting on it kept the old leader here for as long as the new one led.
                Ok((Some(_), _)) => continue,
                Ok((None, watcher)) => {
                    tx.send_if_modified(|l| l.take().is_some());
                    Some(watcher)
                }
                Err(e) => {
                    tracing::debug!("leader retrieval: {e}");
                    None
                }
            },
            Err(e) => {
                tracing::debug!("leader retrieval: {e}");
                None
            }
        };
        match watcher {
            Some(w) => {
                let event = w.changed().await;
                if event.session_state.is_terminated() {
                    client = reconnect(&options).await;
                }
            }
            None => {
                if client.state().is_terminated() {
                    client = reconnect(&options).await;
                } else {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }
}

/// A new session, retried every second until one is had.
async fn reconnect(options: &HaOptions) -> zk::Client {
    loop {
        match crate::session::connect(options).await {
            Ok(c) => return c,
            Err(e) => {
                tracing::warn!("leader retrieval: {e}; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}
