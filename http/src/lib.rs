//! `conflux-http`: the HTTP/1 accept loop of the JobManager's REST API and the TaskManagers'
//! Prometheus endpoints.
//!
//! [`serve`] runs an axum [`Router`](axum::Router) on a listener within [`Limits`]: at most
//! `max_connections` connections (`conflux-connections`' cap: a new one beyond closes the
//! longest idle connection that handles no request), a header-read timeout and an idle
//! timeout, so silent or slow clients cannot hold descriptors; [`OpenConnections`] counts what
//! is open. Shutdown closes the listener, lets requests in progress finish and waits for every
//! connection.

mod serve;

pub use serve::{serve, Limits, OpenConnections};
