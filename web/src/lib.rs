//! `conflux-web`: the JobManager's web pages, beside its REST API.
//!
//! - [`live_view`]: Conflux's own page, embedded in the binary (plain HTML, CSS and JavaScript,
//!   no build step): the jobs, a job's graph with per-vertex status colours and finished/total
//!   task counts refreshed while it runs, and the TaskManagers with their slots. It reads
//!   nothing but Flink's REST API (`/jobs/overview`, `/jobs/:jobid`, `/taskmanagers`), so it
//!   also works against any Flink 1.20 JobManager that allows it.
//! - [`flink_dashboard`]: Flink's own web dashboard, whose files (`web/` inside Flink's
//!   `flink-dist` jar) are served from a directory, as Flink's `StaticFileServerHandler` does.
//!
//! This crate knows no JobManager: the runtime adds one of these routers to the REST API's
//! (`conflux-rest`), and the planning service serves the live view's files too
//! ([`live_assets`]) without depending on the runtime.

mod live;
mod static_dir;

pub use live::{live_assets, live_view, LIVE_ASSETS};
pub use static_dir::{check_web_ui_dir, flink_dashboard, WebUiDirError};
