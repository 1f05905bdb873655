//! [`HaError`]: what can go wrong talking to ZooKeeper.

/// Why a high-availability service failed. Each variant names the ZooKeeper node or the
/// quorum it was working on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HaError {
    /// No session could be established with the quorum.
    #[error("cannot connect to ZooKeeper at {quorum}: {source}")]
    Connect {
        /// The quorum (`host:port[,host:port...]`).
        quorum: String,
        /// The client's error.
        #[source]
        source: zookeeper_client::Error,
    },
    /// A request on a node failed.
    #[error("ZooKeeper request on {path} failed: {source}")]
    Request {
        /// The node.
        path: String,
        /// The client's error.
        #[source]
        source: zookeeper_client::Error,
    },
    /// A node holds data this crate did not write (or a torn write).
    #[error("ZooKeeper node {path} holds unreadable data: {message}")]
    BadData {
        /// The node.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The session ended (expired or closed) before the operation could finish.
    #[error("the ZooKeeper session ended ({0})")]
    SessionEnded(String),
    /// A bad option value, naming the option.
    #[error("{option}: {message}")]
    BadOption {
        /// Flink's option name.
        option: &'static str,
        /// What is wrong.
        message: String,
    },
}

impl HaError {
    pub(crate) fn request(path: &str, source: zookeeper_client::Error) -> HaError {
        HaError::Request {
            path: path.to_owned(),
            source,
        }
    }
}
