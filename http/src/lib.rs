//! `conflux-http`: the one HTTP/1 accept loop of every Conflux server (the planning service,
//! the blob server, the JobManager's REST API and the Prometheus endpoints).
//!
//! [`serve`] runs an axum [`Router`](axum::Router) on a listener within [`Limits`]: at most
//! `max_connections` connections (a new one beyond closes the longest idle connection that
//! handles no request), a header-read timeout and an idle timeout, so silent or slow clients
//! cannot hold descriptors; [`OpenConnections`] counts what is open. Shutdown closes the
//! listener, lets requests in progress finish and waits for every connection.
//!
//! `activity` tracks each connection's traffic (a socket wrapper records its last byte) and the
//! requests it has in flight; `serve` holds the loop.

mod activity;
mod serve;

pub use serve::{serve, Limits, OpenConnections};
