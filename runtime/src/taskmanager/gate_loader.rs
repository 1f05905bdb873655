//! Loads what a task needs from its TDD on one thread per TaskManager: its task information and
//! its input gates. The caches live there, so an offloaded descriptor group is fetched and
//! decoded once per TaskManager and shared by its slots (FLINK-32386), task information likewise
//! once per job vertex (FLINK-33354), and tasks never each take a blocking-pool thread (which
//! would cost a thread, and its allocator heap, per concurrent task).

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::Arc;

use conflux_blob::BlobCache;
use conflux_blob_api::{BlobKey, BlobReader, JobId};
use conflux_common::Fnv1a64;
use conflux_deploy::wire::{self, PayloadKind};
use conflux_deploy::{
    load_input_gate, LoadedInputGate, MaybeOffloaded, SharedDecodedGroups, ShuffleDescriptorsCache,
    TaskDeploymentDescriptor, TaskInformation, DEFAULT_CACHE_BYTES,
};
use tokio::sync::oneshot;

enum Request {
    Load {
        tdd: Arc<TaskDeploymentDescriptor>,
        reader: Arc<BlobCache>,
        reply: oneshot::Sender<Result<LoadedTask, String>>,
    },
    ClearJob(JobId),
}

/// A task's information and input gates (their descriptors shared with the cache).
pub(crate) struct LoadedTask {
    pub(crate) info: Arc<TaskInformation>,
    pub(crate) gates: Vec<LoadedInputGate>,
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
            .spawn(move || serve(&received))?;
        Ok(GateLoader { requests })
    }

    /// Loads the task information and every input gate of `tdd` (offloaded data through
    /// `reader`).
    ///
    /// # Errors
    /// What could not be loaded (task information, input gate *i*) and why.
    pub(crate) async fn load(
        &self,
        tdd: Arc<TaskDeploymentDescriptor>,
        reader: Arc<BlobCache>,
    ) -> Result<LoadedTask, String> {
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

/// The loading thread: serves `received` in order until every handle is dropped.
///
/// A load nobody awaits any more is skipped: the task that asked was aborted while its load was
/// queued (its JobManager was lost and the session cancelled its tasks). Without the skip, a
/// new leader's deployments waited behind thousands of the dead session's loads, each retrying
/// its blob fetch from the dead JobManager's blob server.
fn serve(received: &mpsc::Receiver<Request>) {
    let mut cache = ShuffleDescriptorsCache::with_shared_decoded(
        DEFAULT_CACHE_BYTES,
        Arc::new(SharedDecodedGroups::new()),
    );
    let mut information = TaskInformationCache::default();
    for request in received {
        match request {
            Request::Load { reply, .. } if reply.is_closed() => {}
            Request::Load { tdd, reader, reply } => {
                let reader: &dyn BlobReader = reader.as_ref();
                let result = information.get(&tdd, reader).and_then(|info| {
                    let mut gates = Vec::with_capacity(tdd.input_gates.len());
                    for (i, gate) in tdd.input_gates.iter().enumerate() {
                        gates.push(
                            load_input_gate(gate, tdd.job_id, reader, &mut cache)
                                .map_err(|e| format!("input gate {i}: {e}"))?,
                        );
                    }
                    Ok(LoadedTask { info, gates })
                });
                let _ = reply.send(result);
            }
            Request::ClearJob(job) => {
                cache.clear_job(job);
                information.clear_job(job);
            }
        }
    }
}

/// Where serialised task information is: a blob, or inline bytes known by their digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum InformationKey {
    Blob(BlobKey),
    Inline { digest: u64, len: usize },
}

/// Decoded task information per job, once per job vertex (Flink's
/// `TaskExecutor` task information cache, FLINK-33354).
#[derive(Default)]
struct TaskInformationCache {
    entries: HashMap<JobId, HashMap<InformationKey, Arc<TaskInformation>>>,
    decodes: u64,
}

impl TaskInformationCache {
    fn get(
        &mut self,
        tdd: &TaskDeploymentDescriptor,
        reader: &dyn BlobReader,
    ) -> Result<Arc<TaskInformation>, String> {
        let key = match &tdd.task_information {
            MaybeOffloaded::Offloaded { key, .. } => InformationKey::Blob(*key),
            MaybeOffloaded::Inline(bytes) => InformationKey::Inline {
                digest: Fnv1a64::hash_bytes(bytes),
                len: bytes.len(),
            },
        };
        let job = self.entries.entry(tdd.job_id).or_default();
        if let Some(info) = job.get(&key) {
            return Ok(Arc::clone(info));
        }
        let decoded: TaskInformation = match &tdd.task_information {
            MaybeOffloaded::Inline(bytes) => wire::decode(PayloadKind::TaskInformation, bytes),
            MaybeOffloaded::Offloaded { key, .. } => {
                let bytes = reader
                    .read(key)
                    .map_err(|e| format!("task information blob {key}: {e}"))?;
                wire::decode(PayloadKind::TaskInformation, &bytes)
            }
        }
        .map_err(|e| format!("task information: {e}"))?;
        self.decodes += 1;
        let info = Arc::new(decoded);
        job.insert(key, Arc::clone(&info));
        Ok(info)
    }

    fn clear_job(&mut self, job: JobId) {
        self.entries.remove(&job);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use conflux_blob_api::MemoryBlobStore;
    use conflux_deploy::{AllocationId, ExecutionAttemptId, TaskManagerId};

    fn tdd(vertex: u32, info: &TaskInformation) -> TaskDeploymentDescriptor {
        let (bytes, _) = wire::encode(PayloadKind::TaskInformation, info).unwrap();
        TaskDeploymentDescriptor {
            job_id: JobId([1; 16]),
            execution_attempt: ExecutionAttemptId { vertex, attempt: 0 },
            allocation: AllocationId {
                task_manager: TaskManagerId(0),
                slot: vertex,
            },
            job_information: MaybeOffloaded::Inline(Bytes::new()),
            // Each TDD arrives with its own copy of the bytes, as off the network.
            task_information: MaybeOffloaded::Inline(Bytes::from(bytes)),
            produced_partitions: Vec::new(),
            input_gates: Vec::new(),
        }
    }

    #[test]
    fn task_information_is_decoded_once_per_job_vertex() {
        let info = |id: &str| TaskInformation {
            job_vertex_id: id.into(),
            parallelism: 4,
            max_parallelism: 128,
            slot_sharing_group: "default".into(),
            operators: vec![format!("{id} operator")],
        };
        let (source, count) = (info("source"), info("count"));
        let store = MemoryBlobStore::new();
        let mut cache = TaskInformationCache::default();
        for v in 0..4 {
            assert_eq!(*cache.get(&tdd(v, &source), &store).unwrap(), source);
            assert_eq!(*cache.get(&tdd(4 + v, &count), &store).unwrap(), count);
        }
        assert_eq!(cache.decodes, 2);
        cache.clear_job(JobId([1; 16]));
        cache.get(&tdd(0, &source), &store).unwrap();
        assert_eq!(cache.decodes, 3);
    }

    /// Loads whose tasks were aborted (their receivers dropped) are not served: no blob is
    /// read for them; a load still awaited is.
    #[test]
    fn loads_nobody_awaits_are_skipped() {
        // Worker threads drive the cache's fetches while this thread serves the loads.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut config = conflux_blob::BlobCacheConfig::new(dir.path());
        // A blob server that is gone: every fetch fails.
        config.server_url = Some("http://127.0.0.1:9".into());
        config.fetch_retries = 0;
        let reader = Arc::new(BlobCache::new(config, runtime.handle().clone()).unwrap());
        let info = TaskInformation {
            job_vertex_id: "source".into(),
            parallelism: 1,
            max_parallelism: 1,
            slot_sharing_group: "default".into(),
            operators: Vec::new(),
        };
        let (requests, received) = mpsc::channel();
        let mut answers = Vec::new();
        for v in 0..3u8 {
            let mut dead = tdd(u32::from(v), &info);
            dead.task_information = MaybeOffloaded::Offloaded {
                key: BlobKey::for_content(
                    conflux_blob_api::BlobKind::Permanent,
                    Some(dead.job_id),
                    &[v],
                ),
                len: 1,
            };
            let (reply, answer) = oneshot::channel();
            drop(answer);
            let (tdd, reader) = (Arc::new(dead), Arc::clone(&reader));
            requests.send(Request::Load { tdd, reader, reply }).unwrap();
        }
        let (reply, answer) = oneshot::channel();
        let (live, reader_for_live) = (Arc::new(tdd(3, &info)), Arc::clone(&reader));
        requests
            .send(Request::Load {
                tdd: live,
                reader: reader_for_live,
                reply,
            })
            .unwrap();
        answers.push(answer);
        drop(requests);
        serve(&received);
        let loaded = answers.pop().unwrap().blocking_recv().unwrap().unwrap();
        assert_eq!(*loaded.info, info);
        assert_eq!(
            reader.stats().misses,
            0,
            "no blob read for the skipped loads"
        );
    }

    #[test]
    fn damaged_task_information_is_an_error() {
        let mut bad = tdd(
            0,
            &TaskInformation {
                job_vertex_id: "a".into(),
                parallelism: 1,
                max_parallelism: 1,
                slot_sharing_group: "default".into(),
                operators: Vec::new(),
            },
        );
        bad.task_information = MaybeOffloaded::Inline(Bytes::from_static(b"not a frame"));
        let err = TaskInformationCache::default()
            .get(&bad, &MemoryBlobStore::new())
            .unwrap_err();
        assert!(err.starts_with("task information:"), "{err}");
    }
}
