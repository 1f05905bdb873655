//! [`HaOptions`]: Flink's `high-availability.*` options for ZooKeeper, and the node paths.

use std::path::PathBuf;
use std::time::Duration;

use crate::HaError;

/// `high-availability.zookeeper.path.root`'s default, as Flink's.
pub const DEFAULT_PATH_ROOT: &str = "/flink";
/// `high-availability.cluster-id`'s default, as Flink's (`/default`; the slash is optional).
pub const DEFAULT_CLUSTER_ID: &str = "default";
/// `high-availability.zookeeper.client.session-timeout`'s default, ms (Flink's 60 s). The
/// server may grant another value within its own bounds (by default 2 to 20 of its ticks).
pub const DEFAULT_SESSION_TIMEOUT_MS: u64 = 60_000;

/// High availability on ZooKeeper (Flink's `high-availability.type: zookeeper`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HaOptions {
    /// `high-availability.zookeeper.quorum`: `host:port[,host:port...]`.
    pub quorum: String,
    /// `high-availability.zookeeper.path.root` (`/flink`).
    pub path_root: String,
    /// `high-availability.cluster-id` (`default`): JobManagers with one id compete for one
    /// leadership and share one job store; another id is another cluster.
    pub cluster_id: String,
    /// `high-availability.storageDir`: where job graphs are stored (ZooKeeper holds only
    /// pointers to them). `None`: submissions cannot be made durable and are refused.
    pub storage_dir: Option<PathBuf>,
    /// `high-availability.zookeeper.client.session-timeout`, ms.
    pub session_timeout_ms: u64,
}

impl HaOptions {
    /// Options for `quorum` with Flink's defaults for the rest.
    pub fn new(quorum: impl Into<String>) -> HaOptions {
        HaOptions {
            quorum: quorum.into(),
            path_root: DEFAULT_PATH_ROOT.to_owned(),
            cluster_id: DEFAULT_CLUSTER_ID.to_owned(),
            storage_dir: None,
            session_timeout_ms: DEFAULT_SESSION_TIMEOUT_MS,
        }
    }

    /// Checks the values (a quorum given, paths without empty or dot segments, a timeout of at
    /// least 1 s).
    ///
    /// # Errors
    /// [`HaError::BadOption`] naming Flink's option.
    pub fn validate(&self) -> Result<(), HaError> {
        if self.quorum.trim().is_empty() {
            return Err(HaError::BadOption {
                option: "high-availability.zookeeper.quorum",
                message: "no ZooKeeper server given (host:port[,host:port...])".into(),
            });
        }
        for (option, value) in [
            ("high-availability.zookeeper.path.root", &self.path_root),
            ("high-availability.cluster-id", &self.cluster_id),
        ] {
            let segments: Vec<&str> = value.trim_matches('/').split('/').collect();
            if segments
                .iter()
                .any(|s| s.is_empty() || *s == "." || *s == ".." || s.contains('\0'))
            {
                return Err(HaError::BadOption {
                    option,
                    message: format!("{value:?} is not a ZooKeeper path (segments a/b/c)"),
                });
            }
        }
        if self.session_timeout_ms < 1_000 {
            return Err(HaError::BadOption {
                option: "high-availability.zookeeper.client.session-timeout",
                message: format!("{} ms is below 1 s", self.session_timeout_ms),
            });
        }
        Ok(())
    }

    /// The requested session timeout.
    pub fn session_timeout(&self) -> Duration {
        Duration::from_millis(self.session_timeout_ms)
    }

    /// This cluster's node: `<path.root>/<cluster-id>` (Flink's layout).
    pub fn cluster_path(&self) -> String {
        format!(
            "/{}/{}",
            self.path_root.trim_matches('/'),
            self.cluster_id.trim_matches('/')
        )
    }

    /// The election's latch: contenders' ephemeral sequential nodes (`.../leader/latch`).
    pub fn latch_path(&self) -> String {
        format!("{}/leader/latch", self.cluster_path())
    }

    /// The leader's published addresses (`.../leader/connection_info`, ephemeral).
    pub fn connection_info_path(&self) -> String {
        format!("{}/leader/connection_info", self.cluster_path())
    }

    /// The job graph store's pointers (`.../jobgraphs`, one child per job).
    pub fn jobgraphs_path(&self) -> String {
        format!("{}/jobgraphs", self.cluster_path())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flinks_layout_under_the_cluster_id() {
        let mut o = HaOptions::new("127.0.0.1:2181");
        assert_eq!(o.cluster_path(), "/flink/default");
        o.cluster_id = "/prod-1".into();
        o.path_root = "/conflux/".into();
        assert_eq!(o.latch_path(), "/conflux/prod-1/leader/latch");
        assert_eq!(
            o.connection_info_path(),
            "/conflux/prod-1/leader/connection_info"
        );
        assert_eq!(o.jobgraphs_path(), "/conflux/prod-1/jobgraphs");
        assert!(o.validate().is_ok());
    }

    #[test]
    fn bad_values_name_the_option() {
        let mut o = HaOptions::new(" ");
        assert!(o.validate().unwrap_err().to_string().contains("quorum"));
        o.quorum = "h:1".into();
        o.cluster_id = "a//b".into();
        assert!(o.validate().unwrap_err().to_string().contains("cluster-id"));
        o.cluster_id = "a".into();
        o.session_timeout_ms = 10;
        assert!(o
            .validate()
            .unwrap_err()
            .to_string()
            .contains("session-timeout"));
    }
}
