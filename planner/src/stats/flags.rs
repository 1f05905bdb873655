//! Figures of a plan that no TaskManager of a given network memory can hold: flagged in the
//! statistics with the Flink options that change them, instead of shown as plain numbers.

use conflux_common::format::mib;
use conflux_graph::JobGraph;

use super::buffers::BufferModel;
use super::report::{EdgeStats, ResourceFlag};

/// The network memory of a TaskManager started with Flink 1.20's shipped `config.yaml`
/// (`taskmanager.memory.process.size: 1728m`): total Flink memory 1,280 MiB (after 256 MiB of
/// metaspace and 192 MiB of JVM overhead) times `taskmanager.memory.network.fraction` (0.1),
/// 128 MiB, in bytes.
pub const DEFAULT_TASKMANAGER_NETWORK_BYTES: u64 = 128 * 1024 * 1024;

/// One flag per job vertex whose single subtask requires more network memory than a
/// TaskManager has (`taskmanager_network_bytes`): the required buffers of its input gates and
/// its result partitions (Flink fails such a task with "Insufficient number of network
/// buffers", whichever TaskManager it is deployed to). A subtask's share of an edge is the
/// edge's required buffers over the subtasks on that side, rounded up (exact for all-to-all
/// edges; the larger share for pointwise ones). In the job graph's vertex order. O(V + E).
pub(super) fn resource_flags(
    job: &JobGraph,
    edges: &[EdgeStats],
    model: &BufferModel,
    taskmanager_network_bytes: u64,
) -> Vec<ResourceFlag> {
    let mut per_subtask = vec![0u64; job.vertices().len()];
    for e in edges {
        let edge = &job.edges()[e.index];
        per_subtask[edge.target.idx()] += e
            .input_buffers
            .required
            .div_ceil(u64::from(e.consumer_parallelism.max(1)));
        per_subtask[edge.source.idx()] += e
            .output_buffers
            .required
            .div_ceil(u64::from(e.producer_parallelism.max(1)));
    }
    job.vertex_indices()
        .filter_map(|v| {
            let bytes = per_subtask[v.idx()] * model.segment_size;
            (bytes > taskmanager_network_bytes).then(|| {
                let id = job.vertex_id(v);
                ResourceFlag {
                    kind: "subtask_network_memory".to_owned(),
                    vertex: Some(id.to_owned()),
                    bytes,
                    limit_bytes: taskmanager_network_bytes,
                    message: format!(
                        "one subtask of vertex '{id}' requires {} of network buffers, more than a TaskManager's {} of network memory: it cannot be deployed; raise taskmanager.memory.network.fraction (or .min/.max, or the TaskManager's memory), or lower taskmanager.network.memory.buffers-per-channel or the parallelism",
                        mib(bytes),
                        mib(taskmanager_network_bytes)
                    ),
                }
            })
        })
        .collect()
}
