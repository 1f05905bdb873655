//! The heap a job's scheduling will take, estimated from its job graph alone, before anything
//! is built: the execution graph and its regions, the scheduler's state, and the shuffle
//! descriptor cache. A JobManager refuses a job whose estimate exceeds its budget at
//! submission (admission), so that one job file of a few bytes cannot take it to gigabytes.
//!
//! Every figure is derived from the code's own accounting: the graph's from
//! [`ExpansionEstimate`] (which mirrors `ExecutionGraph::heap_bytes` and
//! `PipelinedRegions::heap_bytes`), the scheduler's from the element types of the arrays that
//! [`Scheduler::heap_bytes`](crate::Scheduler::heap_bytes) counts, plus the slot requests of
//! every subtask waiting at once (a job started without free slots), and the descriptors'
//! from [`TaskDeploymentDescriptorFactory::cache_bytes_bound`]. O(V + E) time and memory.
//! `scheduler/tests/memory.rs` checks it against a counting allocator.

use std::mem::size_of;

use conflux_deploy::{AllocationId, ExecutionState, TaskDeploymentDescriptorFactory};
use conflux_graph::{ExpansionEstimate, JobGraph, JobType, PipelinedRegionIndex};

use crate::api::SchedulerConfig;
use crate::slot_pool::SlotPool;

/// The estimated heap bytes of a job's scheduling, by part. Upper bounds in the usual cases
/// (regions and slot requests at their most); see [`JobMemoryEstimate::of`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobMemoryEstimate {
    /// What the job graph expands to (counts, graph and region bytes).
    pub expansion: ExpansionEstimate,
    /// The scheduler's state: its per-entity arrays, and the slot requests and their timeout
    /// checks with every subtask waiting for a slot.
    pub scheduler_bytes: u64,
    /// The shuffle descriptor cache with every consumed partition group cached at once.
    pub descriptor_bytes: u64,
}

/// Heap bytes per execution vertex of the scheduler's arrays: state, attempt number,
/// allocation, location, slot sharing group, and with speculation on the deploy and execution
/// times.
fn per_vertex(speculative: bool) -> u64 {
    let base = size_of::<ExecutionState>()
        + size_of::<u32>()
        + size_of::<Option<AllocationId>>()
        // The location, as an index of the slot pool's interned locations.
        + size_of::<u32>()
        + size_of::<u32>();
    let speculation = if speculative { 2 * size_of::<u64>() } else { 0 };
    (base + speculation) as u64
}

/// Per partition: produced, lost, released.
const PER_PARTITION: u64 = 3 * size_of::<bool>() as u64;

/// Per consumed partition group: unfinished partitions and consumer regions, released, the
/// strategy's round stamps and consumable flag, and the topology's cross-region flag and first
/// producer region.
const PER_GROUP: u64 = (4 * size_of::<u32>() + 2 * size_of::<bool>()) as u64
    + (size_of::<bool>() + size_of::<PipelinedRegionIndex>()) as u64;

/// Per region: scheduled, unfinished members, chosen, missing slots, request epoch, a source
/// region entry and the topology's group offset.
const PER_REGION: u64 = (2 * size_of::<bool>() + 5 * size_of::<u32>()) as u64;

impl JobMemoryEstimate {
    /// Estimates the heap of scheduling `job` under `config`. The regions are counted at
    /// their upper bound ([`ExpansionEstimate::max_regions`]), the consumed groups listed per
    /// region at one per consumer subtask and edge, every subtask as waiting for a slot and
    /// every region as having an open request (the state of a job started on too few slots),
    /// every group's descriptors as cached inline. An adaptive batch job is counted at its
    /// vertices' estimates, with the byte counters of its results. O(V + E).
    pub fn of(job: &JobGraph, config: &SchedulerConfig) -> JobMemoryEstimate {
        let x = ExpansionEstimate::of(job);
        let speculative = config.speculative.enabled && job.job_type() == JobType::Batch;
        let u32_bytes = size_of::<u32>() as u64;
        let mut scheduler_bytes = x.execution_vertices * per_vertex(speculative)
            + x.partitions * PER_PARTITION
            + x.groups * PER_GROUP
            + x.max_regions * PER_REGION
            + x.edge_consumers * u32_bytes
            + x.execution_vertices * SlotPool::waiting_slot_bytes_bound() as u64
            + x.max_regions * SlotPool::bulk_check_bytes_bound() as u64
            + SlotPool::queue_chunk_bytes_bound() as u64;
        if job.has_undecided() {
            // Per producer its total, per subpartition of a result read by a decision its sum
            // (at most the consumer's max parallelism subpartitions).
            let bytes_per_count = size_of::<u64>() as u64;
            scheduler_bytes += x.partitions * bytes_per_count;
            for e in job.edges() {
                let consumer = job.vertex(e.target);
                if consumer.undecided {
                    scheduler_bytes += consumer.max_parallelism * bytes_per_count;
                }
            }
        }
        JobMemoryEstimate {
            expansion: x,
            scheduler_bytes,
            descriptor_bytes: TaskDeploymentDescriptorFactory::cache_bytes_bound(
                x.groups,
                x.group_partitions,
            ),
        }
    }

    /// Heap bytes of the execution graph and its regions.
    pub fn graph_bytes(&self) -> u64 {
        self.expansion.execution_graph_bytes + self.expansion.regions_bytes
    }

    /// All of it: graph, regions, scheduler state and descriptors.
    pub fn total_bytes(&self) -> u64 {
        self.graph_bytes()
            .saturating_add(self.scheduler_bytes)
            .saturating_add(self.descriptor_bytes)
    }
}
