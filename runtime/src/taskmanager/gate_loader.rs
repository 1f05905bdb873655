//! Loads tasks' input gates on one thread per TaskManager: the descriptor cache lives there, so
//! an offloaded group is fetched and decoded once per TaskManager and shared by its slots
//! (FLINK-32386), and tasks never each take a blocking-pool thread (which would cost a thread,
//! and its allocator heap, per concurrent task).

use std::sync::mpsc;
use std::sync::Arc;

use conflux_blob::BlobCache;
use conflux_blob_api::JobId;
use conflux_deploy::{
    load_input_gate, SharedDecodedGroups, ShuffleDescriptorsCache, TaskDeploymentDescriptor,
    DEFAULT_CACHE_BYTES,
};
use tokio::sync::oneshot;

enum Request {
    Load {
        tdd: Arc<TaskDeploymentDescriptor>,
        reader: Arc<BlobCache>,
        reply: oneshot::Sender<Result<(), String>>,
    },
    ClearJob(JobId),
}

/// The handle of the loading thread; the thread ends when the last handle is dropped.
#[derive(Clone)]
pub(crate) struct GateLoader {
    requests: mpsc::Sender<Request>,
}

impl GateLoader {
    /// Starts the thread.
    pub(crate) fn start() -> std::io::Result<GateLoader> {
        let (requests, received) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("conflux-gate-loader".into())
            .spawn(move || {
                let mut cache = ShuffleDescriptorsCache::with_shared_decoded(
                    DEFAULT_CACHE_BYTES,
                    Arc::new(SharedDecodedGroups::new()),
                );
                for request in received {
                    match request {
                        Request::Load { tdd, reader, reply } => {
                            let result =
                                tdd.input_gates
                                    .iter()
                                    .enumerate()
                                    .try_for_each(|(i, gate)| {
                                        load_input_gate(
                                            gate,
                                            tdd.job_id,
                                            reader.as_ref(),
                                            &mut cache,
                                        )
                                        .map(drop)
                                        .map_err(|e| format!("input gate {i}: {e}"))
                                    });
                            let _ = reply.send(result);
                        }
                        Request::ClearJob(job) => cache.clear_job(job),
                    }
                }
            })?;
        Ok(GateLoader { requests })
    }

    /// Loads every input gate of `tdd` (offloaded groups through `reader`).
    ///
    /// # Errors
    /// The gate that could not be loaded and why.
    pub(crate) async fn load(
        &self,
        tdd: Arc<TaskDeploymentDescriptor>,
        reader: Arc<BlobCache>,
    ) -> Result<(), String> {
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(Request::Load { tdd, reader, reply })
            .map_err(|_| "the gate loader stopped".to_owned())?;
        answer
            .await
            .unwrap_or_else(|_| Err("the gate loader stopped".into()))
    }

    /// Drops the job's cached descriptor groups.
    pub(crate) fn clear_job(&self, job: JobId) {
        let _ = self.requests.send(Request::ClearJob(job));
    }
}
