//! High availability on ZooKeeper for the cluster commands: Flink's `high-availability.*`
//! options as flags ([`HaArgs`]) and finding the leader ([`leader_address`], [`next_leader`]).
//! The job store a leading `conflux jobmanager` writes is `conflux-job-store`'s, in its
//! cluster id's subdirectory of `--ha-storage-dir`, with pointers in ZooKeeper.

use std::time::Duration;

use anyhow::Context as _;
use conflux_ha::{HaOptions, LeaderInfo, LeaderRetrieval};

use crate::Failure;

/// `--high-availability`: Flink's `high-availability.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum HaType {
    /// No high availability: one JobManager, named by `--jobmanager`.
    None,
    /// Leader election, leader retrieval and job store pointers on ZooKeeper.
    Zookeeper,
}

/// Flink's `high-availability.*` options for ZooKeeper.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct HaArgs {
    /// High availability (Flink's `high-availability.type`): `none`, or `zookeeper` (the
    /// leader is elected, published and found in ZooKeeper).
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long = "high-availability", value_enum, ignore_case = true, default_value_t = HaType::None)]
    pub(crate) high_availability: HaType,
    /// ZooKeeper servers, HOST:PORT[,HOST:PORT...] (Flink's
    /// `high-availability.zookeeper.quorum`).
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long)]
    pub(crate) zookeeper_quorum: Option<String>,
    /// The root node of every cluster's nodes (Flink's `high-availability.zookeeper.path.root`).
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long, default_value = conflux_ha::DEFAULT_PATH_ROOT)]
    pub(crate) zookeeper_path_root: String,
    /// The cluster's id: JobManagers of one id compete for one leadership and share one job
    /// store (Flink's `high-availability.cluster-id`).
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long, default_value = conflux_ha::DEFAULT_CLUSTER_ID)]
    pub(crate) cluster_id: String,
    /// ZooKeeper session timeout, ms (Flink's
    /// `high-availability.zookeeper.client.session-timeout`; the server may grant another
    /// within its bounds).
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long, default_value_t = conflux_ha::DEFAULT_SESSION_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1_000..=3_600_000))]
    pub(crate) zookeeper_session_timeout_ms: u64,
}

impl HaArgs {
    /// The options, `None` without high availability.
    ///
    /// # Errors
    /// An input error (exit 2) for `--zookeeper-quorum` without `--high-availability
    /// zookeeper`, or the reverse.
    pub(crate) fn options(&self) -> Result<Option<HaOptions>, Failure> {
        match (self.high_availability, &self.zookeeper_quorum) {
            (HaType::None, None) => Ok(None),
            (HaType::None, Some(_)) => Err(Failure::input(anyhow::anyhow!(
                "--zookeeper-quorum needs --high-availability zookeeper"
            ))),
            (HaType::Zookeeper, None) => Err(Failure::input(anyhow::anyhow!(
                "--high-availability zookeeper needs --zookeeper-quorum HOST:PORT[,HOST:PORT...]"
            ))),
            (HaType::Zookeeper, Some(quorum)) => {
                let options = HaOptions {
                    quorum: quorum.clone(),
                    path_root: self.zookeeper_path_root.clone(),
                    cluster_id: self.cluster_id.clone(),
                    storage_dir: None,
                    session_timeout_ms: self.zookeeper_session_timeout_ms,
                };
                options
                    .validate()
                    .map_err(|e| Failure::input(anyhow::Error::new(e)))?;
                Ok(Some(options))
            }
        }
    }
}

/// `conflux cluster`'s ZooKeeper options (with `--job-managers` above 1): as [`HaArgs`] less
/// `--high-availability`, with a session timeout of 4 s by default (a test cluster on one
/// machine: a dead leader is replaced within seconds).
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct ClusterHaArgs {
    /// ZooKeeper servers, HOST:PORT[,HOST:PORT...] (Flink's
    /// `high-availability.zookeeper.quorum`); default: a ZooKeeper server started for the run.
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long)]
    pub(crate) zookeeper_quorum: Option<String>,
    /// The root node of every cluster's nodes (Flink's `high-availability.zookeeper.path.root`).
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long, default_value = conflux_ha::DEFAULT_PATH_ROOT)]
    pub(crate) zookeeper_path_root: String,
    /// The cluster's id (Flink's `high-availability.cluster-id`); default: one of its own per
    /// run (`cluster-<pid>`), so that runs sharing a quorum never meet.
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long)]
    pub(crate) cluster_id: Option<String>,
    /// ZooKeeper session timeout, ms (Flink's
    /// `high-availability.zookeeper.client.session-timeout`).
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long, default_value_t = 4_000, value_parser = clap::value_parser!(u64).range(1_000..=3_600_000))]
    pub(crate) zookeeper_session_timeout_ms: u64,
}

impl ClusterHaArgs {
    /// The options for `quorum`.
    ///
    /// # Errors
    /// An input error (exit 2) for a bad path root or cluster id.
    pub(crate) fn options(&self, quorum: String) -> Result<HaOptions, Failure> {
        let options = HaOptions {
            quorum,
            path_root: self.zookeeper_path_root.clone(),
            cluster_id: self
                .cluster_id
                .clone()
                .unwrap_or_else(|| format!("cluster-{}", std::process::id())),
            storage_dir: None,
            session_timeout_ms: self.zookeeper_session_timeout_ms,
        };
        options
            .validate()
            .map_err(|e| Failure::input(anyhow::Error::new(e)))?;
        Ok(options)
    }
}

/// How long a client or TaskManager waits for a leader to be published.
pub(crate) fn leader_wait(options: &HaOptions) -> Duration {
    Duration::from_millis(options.session_timeout_ms.saturating_mul(2)) + Duration::from_secs(30)
}

/// The JobManager to talk to: `--jobmanager`, or under high availability the leader ZooKeeper
/// publishes (with the retrieval, to follow it, and its fencing token).
///
/// # Errors
/// An input error when neither is given; a work error when ZooKeeper cannot be reached or no
/// leader is published in time.
pub(crate) async fn leader_address(
    jobmanager: Option<&str>,
    ha: &HaArgs,
) -> Result<(String, Option<(LeaderRetrieval, LeaderInfo)>), Failure> {
    match (ha.options()?, jobmanager) {
        (Some(options), _) => {
            let retrieval = LeaderRetrieval::start(&options)
                .await
                .map_err(|e| Failure::Work(e.into()))?;
            let leader = retrieval
                .await_leader(leader_wait(&options))
                .await
                .with_context(|| format!("cluster id {:?}", options.cluster_id))
                .map_err(Failure::Work)?;
            Ok((leader.rpc_address.clone(), Some((retrieval, leader))))
        }
        (None, Some(address)) => Ok((address.to_owned(), None)),
        (None, None) => Err(Failure::input(anyhow::anyhow!(
            "--jobmanager (or CONFLUX_JOBMANAGER, or jobmanager.rpc.address in the \
             configuration) is required, or --high-availability zookeeper --zookeeper-quorum \
             HOST:PORT to find the leader"
        ))),
    }
}

/// Waits for a leader other than `previous` (a larger fencing token).
///
/// # Errors
/// A work error when none is published within `wait`.
pub(crate) async fn next_leader(
    retrieval: &LeaderRetrieval,
    previous: u64,
    wait: Duration,
) -> Result<LeaderInfo, Failure> {
    let mut rx = retrieval.subscribe();
    let found = tokio::time::timeout(
        wait,
        rx.wait_for(|l| l.as_ref().is_some_and(|l| l.fencing_token > previous)),
    )
    .await;
    match found {
        Ok(Ok(info)) => info
            .clone()
            .ok_or_else(|| Failure::Work(anyhow::anyhow!("no leader"))),
        _ => Err(Failure::Work(anyhow::anyhow!(
            "no new JobManager leader was elected within {} s",
            wait.as_secs()
        ))),
    }
}
