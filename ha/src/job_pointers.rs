//! [`JobPointers`]: the job graph store's ZooKeeper side, as Flink's
//! `ZooKeeperStateHandleStore` under `jobgraphs`: one persistent node per job, named by the
//! job id and holding the path of its stored job graph. The graph itself lives in
//! `high-availability.storageDir`; ZooKeeper holds only the pointer.

use zookeeper_client as zk;

use crate::{HaError, HaOptions, Leadership};

/// The `jobgraphs` node of one cluster id. Writes are fenced: each is one transaction that
/// also checks the leader's latch node, so a deposed leader writes nothing.
#[derive(Debug, Clone)]
pub struct JobPointers {
    path: String,
}

impl JobPointers {
    /// The pointers of `options`' cluster id.
    pub fn new(options: &HaOptions) -> JobPointers {
        JobPointers {
            path: options.jobgraphs_path(),
        }
    }

    fn node(&self, job: &str) -> String {
        format!("{}/{job}", self.path)
    }

    /// Records that `job`'s graph is stored at `pointer` (replacing an earlier pointer).
    ///
    /// # Errors
    /// [`HaError::Request`] (the latch node gone: no longer the leader; ZooKeeper unreachable).
    pub async fn put(&self, leader: &Leadership, job: &str, pointer: &str) -> Result<(), HaError> {
        let node = self.node(job);
        let client = leader.client();
        let existing = client
            .check_stat(&node)
            .await
            .map_err(|e| HaError::request(&node, e))?;
        let mut writer = client
            .new_check_writer(leader.latch_node(), None)
            .map_err(|e| HaError::request(&node, e))?;
        let op = match existing {
            Some(stat) => writer.add_set_data(&node, pointer.as_bytes(), Some(stat.version)),
            None => writer.add_create(
                &node,
                pointer.as_bytes(),
                &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
            ),
        };
        op.map_err(|e| HaError::request(&node, e))?;
        writer
            .commit()
            .await
            .map_err(|e| HaError::request(&node, e.into()))?;
        Ok(())
    }

    /// Every job with a pointer and the pointer, ordered by job id.
    ///
    /// # Errors
    /// [`HaError::Request`], [`HaError::BadData`] for a pointer that is not UTF-8.
    pub async fn list(&self, client: &zk::Client) -> Result<Vec<(String, String)>, HaError> {
        let mut jobs = client
            .list_children(&self.path)
            .await
            .map_err(|e| HaError::request(&self.path, e))?;
        jobs.sort();
        let mut out = Vec::with_capacity(jobs.len());
        for job in jobs {
            let node = self.node(&job);
            match client.get_data(&node).await {
                Ok((data, _)) => {
                    let pointer = String::from_utf8(data).map_err(|_| HaError::BadData {
                        path: node.clone(),
                        message: "the pointer is not UTF-8".into(),
                    })?;
                    out.push((job, pointer));
                }
                // Removed in between: the job ended.
                Err(zk::Error::NoNode) => {}
                Err(e) => return Err(HaError::request(&node, e)),
            }
        }
        Ok(out)
    }

    /// Removes `job`'s pointer (its job ended with a recorded result); absent is fine.
    ///
    /// # Errors
    /// [`HaError::Request`] (no longer the leader; ZooKeeper unreachable).
    pub async fn remove(&self, leader: &Leadership, job: &str) -> Result<(), HaError> {
        let node = self.node(job);
        let mut writer = leader
            .client()
            .new_check_writer(leader.latch_node(), None)
            .map_err(|e| HaError::request(&node, e))?;
        writer
            .add_delete(&node, None)
            .map_err(|e| HaError::request(&node, e))?;
        match writer.commit().await {
            Ok(_) | Err(zk::CheckWriteError::OperationFailed { .. }) => Ok(()),
            Err(e) => Err(HaError::request(&node, e.into())),
        }
    }
}
