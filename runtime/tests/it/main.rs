//! Integration tests of `conflux-runtime`: an in-process JobManager and TaskManagers on loopback,
//! the wire protocol seen from raw sockets, and failures (refusals, garbage, lost peers).

mod adaptive;
mod dataplane;
mod fuzz;
mod handshake;
mod heartbeat;
mod limits;
mod protocol;
mod speculative;
mod support;
