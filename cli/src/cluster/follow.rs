//! Waiting for a job's end while following the leader: when the leader's connection is lost,
//! the next leader is asked.

use std::time::Duration;

use conflux_runtime::connection::RpcError;
use conflux_runtime::{ClientError, JobManagerClient};

use crate::Failure;

/// Waits for `job`'s end on the leader, following leadership changes: when the leader's
/// connection is lost, the next leader (a larger fencing token) is asked, and while it is still
/// recovering its jobs an unknown job is asked again for up to 30 s.
pub(super) async fn wait_following(
    client: &mut JobManagerClient,
    (retrieval, first): &(conflux_ha::LeaderRetrieval, conflux_ha::LeaderInfo),
    token: Option<String>,
    job: conflux_blob::JobId,
) -> Result<conflux_runtime::JobReport, Failure> {
    match client.wait(job).await {
        Ok(report) => return Ok(report),
        Err(e) if connection_lost(&e) => {
            tracing::info!("the leader's connection was lost ({e}): following the next leader");
        }
        Err(e) => return Err(Failure::Work(e.into())),
    }
    let mut lost = first.fencing_token;
    let wait = Duration::from_secs(300);
    let mut unknown_since: Option<std::time::Instant> = None;
    loop {
        let leader = crate::ha::next_leader(retrieval, lost, wait).await?;
        let mut client = match JobManagerClient::connect(&leader.rpc_address, token.clone()).await {
            Ok(client) => client,
            Err(e) => {
                tracing::debug!(
                    "the leader at {} does not answer yet: {e}",
                    leader.rpc_address
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        match client.wait(job).await {
            Ok(report) => return Ok(report),
            Err(e) if connection_lost(&e) => lost = leader.fencing_token,
            Err(ClientError::JobManager(m))
                if m.starts_with("no job")
                    && unknown_since
                        .get_or_insert_with(std::time::Instant::now)
                        .elapsed()
                        < Duration::from_secs(30) =>
            {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(Failure::Work(e.into())),
        }
    }
}

/// Whether a client call failed because the connection to the JobManager ended (closed, reset,
/// cut short): the JobManager stopped or died.
pub(super) fn connection_lost(e: &ClientError) -> bool {
    matches!(
        e,
        ClientError::Rpc(RpcError::Closed(_) | RpcError::Io { .. } | RpcError::BadFrame { .. })
    )
}
