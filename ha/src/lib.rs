//! JobManager high availability on ZooKeeper, as Flink's `ZooKeeperLeaderElectionDriver`,
//! `ZooKeeperLeaderRetrievalDriver` and `ZooKeeperStateHandleStore` (the job graph store's
//! pointers), on a real ZooKeeper server through the async `zookeeper-client` crate.
//!
//! - [`HaOptions`]: Flink's `high-availability.*` options and the node paths they give.
//! - [`LeaderElection`]: one contender's campaign (an ephemeral sequential latch node); the
//!   winner's [`Leadership`] carries its fencing token and a lease that ends before ZooKeeper
//!   can expire its session and elect another leader.
//! - [`LeaderRetrieval`]: the current leader's addresses, followed as they change.
//! - [`JobPointers`]: one node per submitted job naming its stored job graph.
//! - [`LocalZooKeeper`]: a single ZooKeeper server of Debian's `zookeeper` package in a
//!   directory of its own (tests and `conflux cluster`).
//!
//! This crate is an edge (tokio, network); the scheduler core knows nothing of it.

mod election;
mod error;
mod job_pointers;
mod local_server;
mod options;
mod retrieval;
mod session;

pub use election::{LeaderElection, LeaderInfo, Leadership, LeaseHandle};
pub use error::HaError;
pub use job_pointers::JobPointers;
pub use local_server::{LocalZooKeeper, ZOOKEEPER_PACKAGE};
pub use options::{HaOptions, DEFAULT_CLUSTER_ID, DEFAULT_PATH_ROOT, DEFAULT_SESSION_TIMEOUT_MS};
pub use retrieval::LeaderRetrieval;
pub use session::connect;
