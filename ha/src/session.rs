//! [`connect`]: a ZooKeeper session with the options' timeout.

use zookeeper_client as zk;

use crate::{HaError, HaOptions};

/// Opens a session with `options.quorum` asking for `options.session_timeout_ms` (the server
/// may grant another within its bounds: [`zk::Client::session_timeout`] says which), and makes
/// the cluster's persistent nodes (`<root>/<cluster-id>/leader/latch`, `.../jobgraphs`) if missing.
///
/// # Errors
/// [`HaError::Connect`] naming the quorum (no server answered within the session timeout),
/// [`HaError::Request`] when the nodes cannot be made.
pub async fn connect(options: &HaOptions) -> Result<zk::Client, HaError> {
    options.validate()?;
    let client = zk::Client::connector()
        .with_session_timeout(options.session_timeout())
        .with_connection_timeout(options.session_timeout())
        .connect(&options.quorum)
        .await
        .map_err(|source| HaError::Connect {
            quorum: options.quorum.clone(),
            source,
        })?;
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    for path in [options.latch_path(), options.jobgraphs_path()] {
        client
            .mkdir(&path, &persistent)
            .await
            .map_err(|e| HaError::request(&path, e))?;
    }
    Ok(client)
}
