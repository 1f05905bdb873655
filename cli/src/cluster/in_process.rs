//! The JobManager this process hosts, as `jobmanager` and `cluster` run it: its REST URL as
//! printed, stopping it within a grace, and how long the TaskManagers of a local cluster have
//! to register with it.

use std::time::Duration;

use conflux_runtime::JobManager;

/// The REST API's base URL (`http://HOST:PORT`), or `none`.
pub(super) fn rest_url(jm: &JobManager) -> String {
    jm.rest_address()
        .map_or_else(|| "none".to_owned(), |a| format!("http://{a}"))
}

/// How long a JobManager stopping on a signal waits for its job runner, which may be inside a
/// long scheduler call, before the process exits anyway: within 5 s of the signal in all.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Stops `jm`, waiting at most [`SHUTDOWN_GRACE`].
pub(super) async fn shutdown_within_grace(jm: JobManager) {
    if tokio::time::timeout(SHUTDOWN_GRACE, jm.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            grace_ms = SHUTDOWN_GRACE.as_millis(),
            "the JobManager's job runner is busy: exiting without waiting for it"
        );
    }
}

/// How long a local cluster waits for its TaskManagers to register.
pub(crate) const REGISTRATION_TIMEOUT: Duration = Duration::from_secs(60);
