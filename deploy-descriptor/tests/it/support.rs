//! A hand-driven view of producer states, and small graph builders.

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use conflux_blob_api::{JobId, MemoryBlobStore};
use conflux_deploy::{
    AllocationId, DeploymentConfig, ExecutionAttemptId, ExecutionState, OffloadRule,
    ProducerStates, ProducerView, TaskDeploymentDescriptorFactory, TaskManagerId,
    TaskManagerLocation,
};
use conflux_graph::{
    ExecutionGraph, ExecutionVertexIndex, IntermediateResultPartitionId, JobGraph,
};
use conflux_test_support::job_graphs::{edge, job, vertex};

pub(crate) const JOB: JobId = JobId([7; 16]);

/// A two-vertex job `A -> B`.
pub(crate) fn two_vertex_graph(
    u: u32,
    d: u32,
    pattern: &str,
    partition_type: &str,
) -> ExecutionGraph {
    let job_type = if partition_type.starts_with("pipelined") {
        "streaming"
    } else {
        "batch"
    };
    let json = job(
        job_type,
        vec![vertex("A", u), vertex("B", d)],
        vec![edge("A", "B", pattern, partition_type)],
    );
    ExecutionGraph::build(JobGraph::from_json(&json).expect("valid")).expect("expands")
}

/// Producer states set by hand: every vertex starts CREATED at attempt 0 without a location.
pub(crate) struct States {
    pub(crate) views: Vec<ProducerView>,
    pub(crate) finished: HashSet<IntermediateResultPartitionId>,
}

impl States {
    pub(crate) fn new(graph: &ExecutionGraph) -> States {
        States {
            views: (0..graph.num_execution_vertices())
                .map(|v| ProducerView {
                    attempt: ExecutionAttemptId {
                        vertex: v,
                        attempt: 0,
                    },
                    state: ExecutionState::Created,
                    location: None,
                })
                .collect(),
            finished: HashSet::new(),
        }
    }

    /// Deploys vertex `v` on TaskManager `v / 10` in `state`.
    pub(crate) fn set(&mut self, v: u32, state: ExecutionState) {
        self.views[v as usize].state = state;
        self.views[v as usize].location = Some(location(v / 10));
    }

    /// Finishes producer `v` and its partitions of `graph`.
    pub(crate) fn finish(&mut self, graph: &ExecutionGraph, v: u32) {
        self.set(v, ExecutionState::Finished);
        for p in graph.produced_partitions(ExecutionVertexIndex(v)) {
            self.finished.insert(p);
        }
    }
}

impl ProducerStates for States {
    fn producer(&self, vertex: ExecutionVertexIndex) -> ProducerView {
        self.views[vertex.idx()]
    }
    fn all_data_produced(&self, partition: IntermediateResultPartitionId) -> bool {
        self.finished.contains(&partition)
    }
}

pub(crate) fn location(tm: u32) -> TaskManagerLocation {
    TaskManagerLocation {
        id: TaskManagerId(tm),
        data_address: SocketAddr::from((
            Ipv4Addr::new(10, 0, (tm / 256) as u8, (tm % 256) as u8),
            6121,
        )),
    }
}

pub(crate) fn slot(v: u32) -> AllocationId {
    AllocationId {
        task_manager: TaskManagerId(v / 10),
        slot: v % 10,
    }
}

pub(crate) fn attempt(v: u32) -> ExecutionAttemptId {
    ExecutionAttemptId {
        vertex: v,
        attempt: 0,
    }
}

/// A factory with the given rule, information offloaded from `info_min` bytes on, over a
/// memory blob store.
pub(crate) fn factory(
    graph: &ExecutionGraph,
    rule: OffloadRule,
    info_min: usize,
) -> (TaskDeploymentDescriptorFactory, Arc<MemoryBlobStore>) {
    let store = Arc::new(MemoryBlobStore::new());
    let mut config = DeploymentConfig::for_job_type(graph.job_graph().job_type());
    config.offload_rule = rule;
    config.information_offload_min_size = info_min;
    let f =
        TaskDeploymentDescriptorFactory::new(graph, JOB, config, store.clone()).expect("factory");
    (f, store)
}
