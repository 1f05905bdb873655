//! End-to-end tests of the `conflux` binary, one test binary with a module per command family.

mod adaptive;
mod checkpoint;
// A panic is the wanted failure in these tests.
#[allow(clippy::unwrap_used)]
mod checkpoint_script;
mod cluster;
mod cluster_limits;
mod config;
mod dashboards;
mod ha;
mod hosts;
mod jobs;
mod limits;
mod logging;
mod openapi;
mod output;
mod plan;
mod readme;
mod recovery;
mod speculative;
mod support;
mod usage;
mod viewer;
mod work_dir;
