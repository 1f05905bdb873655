//! The JobManager side: task deployment descriptors and the shuffle descriptor cache.
//!
//! As Flink 1.14+ (FLINK-23005, FLINK-23218, FLINK-29768), the descriptors of a
//! ConsumedPartitionGroup are computed and serialised once, when the first consumer is deployed,
//! and every later consumer shares the bytes: an all-to-all edge of D consumers costs one
//! serialisation, not D. Building descriptors is split in two so that many TDDs can be built in
//! parallel: [`TaskDeploymentDescriptorFactory::prepare_groups`] (`&mut self`: computes,
//! serialises, offloads what is missing) and [`TaskDeploymentDescriptorFactory::create`]
//! (`&self`: assembles one TDD from prepared groups in O(inputs + outputs)).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use conflux_blob_api::{BlobWriter, JobId};
use conflux_graph::{
    ConsumedPartitionGroupId, ExecutionGraph, ExecutionVertexIndex, IntermediateResultPartitionId,
};

use crate::input_info_store::{StaticGraph, VertexInputInfoStore};
use crate::offload::{MaybeOffloaded, OffloadRule, DEFAULT_OFFLOAD_MIN_SIZE};
use crate::shuffle::{shuffle_descriptor_for, ConsumptionPolicy, ProducerView};
use crate::tdd::{
    InputGateDeploymentDescriptor, JobInformation, ResultPartitionDeploymentDescriptor,
    ShuffleDescriptorGroup, TaskDeploymentDescriptor, TaskInformation,
};
use crate::wire::{self, PayloadKind};
use crate::{AllocationId, DeployError, ExecutionAttemptId, ResultPartitionId, ShuffleDescriptor};

/// The runtime state the factory reads: producers' current attempts and finished partitions.
/// Implemented by the scheduler.
pub trait ProducerStates {
    /// The current attempt of a producer.
    fn producer(&self, vertex: ExecutionVertexIndex) -> ProducerView;
    /// Whether a partition has all its data (its producer finished).
    fn all_data_produced(&self, partition: IntermediateResultPartitionId) -> bool;
}

/// Settings of the factory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeploymentConfig {
    /// When shuffle descriptor groups are offloaded (default: Flink 1.18+'s count rule).
    pub offload_rule: OffloadRule,
    /// `blob.offload.minsize` for job and task information, in bytes (default 1 MiB).
    pub information_offload_min_size: usize,
    /// How unready producers are handed out.
    pub policy: ConsumptionPolicy,
}

impl DeploymentConfig {
    /// Flink's defaults for a job type.
    pub fn for_job_type(job_type: conflux_graph::JobType) -> DeploymentConfig {
        DeploymentConfig {
            offload_rule: OffloadRule::default(),
            information_offload_min_size: DEFAULT_OFFLOAD_MIN_SIZE,
            policy: ConsumptionPolicy::for_job_type(job_type),
        }
    }
}

/// Counters of the factory, for reports and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeploymentStats {
    /// Group lookups that found the group cached.
    pub cache_hits: u64,
    /// Group lookups that computed the group.
    pub cache_misses: u64,
    /// Serialised descriptor groups produced (first groups and hybrid appends).
    pub groups_serialized: u64,
    /// Descriptors computed.
    pub descriptors_computed: u64,
    /// MessagePack bytes before compression, over all serialised groups.
    pub raw_bytes: u64,
    /// Framed bytes kept inline, over all serialised groups.
    pub inline_bytes: u64,
    /// Framed bytes offloaded to the blob server.
    pub offloaded_bytes: u64,
    /// Blobs uploaded (descriptor groups and information).
    pub blobs_uploaded: u64,
    /// Uploads that failed and fell back to inline.
    pub upload_failures: u64,
    /// Offloaded descriptor blobs deleted by invalidation.
    pub blobs_deleted: u64,
    /// Deletions of offloaded descriptor blobs that failed (the blobs go at job cleanup).
    pub delete_failures: u64,
    /// Cache entries dropped by invalidation.
    pub groups_invalidated: u64,
}

/// A blob operation of the factory that failed. The factory does not log (it does no I/O of its
/// own); its caller drains these with
/// [`take_blob_failures`](TaskDeploymentDescriptorFactory::take_blob_failures) and reports them.
#[derive(Debug)]
pub enum BlobFailure {
    /// Offloading `bytes` bytes failed; the data stayed inline (as Flink does).
    Upload {
        /// Framed bytes that stayed inline.
        bytes: usize,
        /// Why.
        error: conflux_blob_api::BlobError,
    },
    /// Deleting the offloaded blob of an invalidated group failed; it is removed at job cleanup.
    Delete {
        /// The group.
        group: ConsumedPartitionGroupId,
        /// The blob.
        key: conflux_blob_api::BlobKey,
        /// Why.
        error: conflux_blob_api::BlobError,
    },
}

impl std::fmt::Display for BlobFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BlobFailure::Upload { bytes, error } => write!(
                f,
                "offloading {bytes} bytes to the blob server failed, kept inline: {error}"
            ),
            BlobFailure::Delete { group, key, error } => write!(
                f,
                "deleting blob {key} of descriptor group {} failed, removed at job cleanup: {error}",
                group.0
            ),
        }
    }
}

/// Failures kept for the caller at most; older ones are only counted in the stats, so a blob
/// server that is down cannot grow the factory's memory.
const MAX_KEPT_FAILURES: usize = 64;

/// One cached ConsumedPartitionGroup (Flink's `CachedShuffleDescriptors`).
#[derive(Debug)]
struct CacheEntry {
    /// Serialised groups so far; a TDD takes a snapshot of this `Arc`.
    serialized: Arc<[MaybeOffloaded]>,
    /// Positions whose descriptor was handed out unknown (hybrid partitions may become known).
    unknown: Vec<u32>,
    /// Known descriptors not serialised yet (hybrid appends).
    pending: Vec<(u32, ShuffleDescriptor)>,
}

/// Builds task deployment descriptors, caching shuffle descriptors per ConsumedPartitionGroup.
pub struct TaskDeploymentDescriptorFactory {
    job_id: JobId,
    config: DeploymentConfig,
    blob_writer: Arc<dyn BlobWriter>,
    job_information: MaybeOffloaded,
    task_information: Vec<MaybeOffloaded>,
    cache: HashMap<ConsumedPartitionGroupId, CacheEntry>,
    stats: DeploymentStats,
    blob_failures: Vec<BlobFailure>,
}

impl std::fmt::Debug for TaskDeploymentDescriptorFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskDeploymentDescriptorFactory")
            .field("job_id", &self.job_id)
            .field("config", &self.config)
            .field("cached_groups", &self.cache.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// At most the uncompressed bytes one shuffle descriptor takes in a group's columnar payload
/// ([`wire::encode_descriptor_group`]): kind, result, partition, producer vertex and attempt,
/// position, TaskManager, connection and address index (33 bytes), and an address of its own
/// (19 bytes) in the worst case of one producer per TaskManager.
const DESCRIPTOR_BYTES_BOUND: u64 = 33 + 19;

/// The factory's own heap without any group: its empty tables, generously.
const FACTORY_BYTES: u64 = 4096;

impl TaskDeploymentDescriptorFactory {
    /// At most the heap bytes the descriptor cache takes when `groups` consumed partition
    /// groups holding `descriptors` shuffle descriptors in all are cached at once and inline:
    /// per group its map entry (doubled for the table's growth), its shared list of serialised
    /// parts and a frame header; per descriptor its uncompressed columnar bytes (zstd only
    /// shrinks them; an offloaded group keeps only its blob key). O(1); for a JobManager's
    /// admission estimate.
    pub fn cache_bytes_bound(groups: u64, descriptors: u64) -> u64 {
        use std::mem::size_of;
        let per_group = 2 * (size_of::<(ConsumedPartitionGroupId, CacheEntry)>() + 1) * 8 / 7
            + 2 * size_of::<usize>()
            + size_of::<MaybeOffloaded>()
            + wire::HEADER_LEN
            + 9;
        FACTORY_BYTES
            .saturating_add(groups.saturating_mul(per_group as u64))
            .saturating_add(descriptors.saturating_mul(DESCRIPTOR_BYTES_BOUND))
    }

    /// A factory for one job: serialises job information and every job vertex's task information
    /// now, offloading those at or above `information_offload_min_size` (Flink's FLINK-6046
    /// rule). O(V).
    ///
    /// # Errors
    /// [`DeployError::Wire`] only on a bug.
    pub fn new(
        graph: &ExecutionGraph,
        job_id: JobId,
        config: DeploymentConfig,
        blob_writer: Arc<dyn BlobWriter>,
    ) -> Result<TaskDeploymentDescriptorFactory, DeployError> {
        let job = graph.job_graph();
        let mut factory = TaskDeploymentDescriptorFactory {
            job_id,
            config,
            blob_writer,
            job_information: MaybeOffloaded::Inline(Bytes::new()),
            task_information: Vec::with_capacity(job.vertices().len()),
            cache: HashMap::new(),
            stats: DeploymentStats::default(),
            blob_failures: Vec::new(),
        };
        let info = JobInformation {
            job_id,
            job_name: job.name().to_owned(),
            job_type: job.job_type().as_str().to_owned(),
        };
        let (bytes, _) = wire::encode(PayloadKind::JobInformation, &info)?;
        factory.job_information = factory.maybe_offload_information(bytes);
        for j in job.vertex_indices() {
            let v = job.vertex(j);
            let info = TaskInformation {
                job_vertex_id: job.vertex_id(j).to_owned(),
                parallelism: v.parallelism,
                max_parallelism: v.max_parallelism,
                slot_sharing_group: job.slot_sharing_group(j).to_owned(),
                operators: job.operators(j).iter().map(|o| o.name.clone()).collect(),
            };
            let (bytes, _) = wire::encode(PayloadKind::TaskInformation, &info)?;
            let info = factory.maybe_offload_information(bytes);
            factory.task_information.push(info);
        }
        Ok(factory)
    }

    /// A job vertex was initialised at run time (adaptive batch): its task information is
    /// serialised again with the parallelism `graph` (the grown graph) gives it. O(1) plus the
    /// encoding.
    ///
    /// # Errors
    /// [`DeployError::Wire`] only on a bug.
    pub fn on_vertex_initialized(
        &mut self,
        graph: &ExecutionGraph,
        job_vertex: conflux_graph::JobVertexIndex,
    ) -> Result<(), DeployError> {
        let job = graph.job_graph();
        if self.task_information.len() <= job_vertex.idx() {
            // A factory for groups only keeps no task information.
            return Ok(());
        }
        let v = job.vertex(job_vertex);
        let info = TaskInformation {
            job_vertex_id: job.vertex_id(job_vertex).to_owned(),
            parallelism: graph.parallelism_of(job_vertex),
            max_parallelism: v.max_parallelism,
            slot_sharing_group: job.slot_sharing_group(job_vertex).to_owned(),
            operators: job
                .operators(job_vertex)
                .iter()
                .map(|o| o.name.clone())
                .collect(),
        };
        let (bytes, _) = wire::encode(PayloadKind::TaskInformation, &info)?;
        self.task_information[job_vertex.idx()] = self.maybe_offload_information(bytes);
        Ok(())
    }

    /// A factory that only prepares shuffle descriptor groups ([`prepare_group`](Self::prepare_group),
    /// [`cached`](Self::cached), [`on_group_released`](Self::on_group_released)), for reports
    /// that size descriptors without deploying: it serialises no job or task information, so it
    /// is O(1) instead of [`new`](Self::new)'s O(V) (about 100 bytes per job vertex, 600 MB for
    /// a job of 6 million vertices). Groups are prepared exactly as by a factory from `new`.
    /// [`create`](Self::create) refuses with [`DeployError::GroupsOnly`].
    pub fn for_groups(
        job_id: JobId,
        config: DeploymentConfig,
        blob_writer: Arc<dyn BlobWriter>,
    ) -> TaskDeploymentDescriptorFactory {
        TaskDeploymentDescriptorFactory {
            job_id,
            config,
            blob_writer,
            job_information: MaybeOffloaded::Inline(Bytes::new()),
            task_information: Vec::new(),
            cache: HashMap::new(),
            stats: DeploymentStats::default(),
            blob_failures: Vec::new(),
        }
    }

    /// The job.
    pub fn job_id(&self) -> JobId {
        self.job_id
    }

    /// Counters so far.
    pub fn stats(&self) -> DeploymentStats {
        self.stats
    }

    /// Number of cached groups.
    pub fn cached_groups(&self) -> usize {
        self.cache.len()
    }

    /// Whether a group is cached.
    pub fn is_cached(&self, group: ConsumedPartitionGroupId) -> bool {
        self.cache.contains_key(&group)
    }

    /// The serialised groups of a cached group (for reports and tests).
    pub fn cached(&self, group: ConsumedPartitionGroupId) -> Option<&[MaybeOffloaded]> {
        self.cache.get(&group).map(|e| &*e.serialized)
    }

    fn maybe_offload_information(&mut self, bytes: Vec<u8>) -> MaybeOffloaded {
        if bytes.len() >= self.config.information_offload_min_size {
            if let Some(offloaded) = self.upload(&bytes) {
                return offloaded;
            }
        }
        MaybeOffloaded::Inline(Bytes::from(bytes))
    }

    /// Uploads framed bytes; on failure records it and returns `None` (the caller keeps the
    /// bytes inline, as Flink does).
    fn upload(&mut self, bytes: &[u8]) -> Option<MaybeOffloaded> {
        match self.blob_writer.put_permanent(self.job_id, bytes) {
            Ok(key) => {
                self.stats.blobs_uploaded += 1;
                Some(MaybeOffloaded::Offloaded {
                    key,
                    len: bytes.len(),
                })
            }
            Err(error) => {
                self.stats.upload_failures += 1;
                self.record_failure(BlobFailure::Upload {
                    bytes: bytes.len(),
                    error,
                });
                None
            }
        }
    }

    /// Makes sure every group that `vertex` consumes is cached and has nothing pending:
    /// computes missing groups (descriptors for each partition, serialised, maybe offloaded) and
    /// serialises pending hybrid descriptors as an extra group. O(partitions of the groups that
    /// were missing); O(inputs) when all are cached.
    ///
    /// # Errors
    /// [`DeployError::ProducerNotReady`] naming the partition in a streaming job whose producer is
    /// not deployed; nothing is cached for that group.
    pub fn prepare_groups(
        &mut self,
        graph: &ExecutionGraph,
        vertex: ExecutionVertexIndex,
        producers: &dyn ProducerStates,
    ) -> Result<(), DeployError> {
        for group in graph.consumed_partition_groups(vertex) {
            self.prepare_group(graph, group, producers)?;
        }
        Ok(())
    }

    /// [`prepare_groups`](Self::prepare_groups) for one group.
    ///
    /// # Errors
    /// As [`prepare_groups`](Self::prepare_groups).
    pub fn prepare_group(
        &mut self,
        graph: &ExecutionGraph,
        group: ConsumedPartitionGroupId,
        producers: &dyn ProducerStates,
    ) -> Result<(), DeployError> {
        let cpg = graph.consumed_partition_group(group);
        if let Some(entry) = self.cache.get_mut(&group) {
            self.stats.cache_hits += 1;
            if entry.pending.is_empty() {
                return Ok(());
            }
            let pending = std::mem::take(&mut entry.pending);
            let (indices, descriptors): (Vec<u32>, Vec<ShuffleDescriptor>) =
                pending.into_iter().unzip();
            let batch = ShuffleDescriptorGroup {
                descriptors,
                indices: Some(indices),
            };
            let serialized = self.serialize_group(&batch, cpg.num_consumers)?;
            if let Some(entry) = self.cache.get_mut(&group) {
                let mut all: Vec<MaybeOffloaded> = entry.serialized.to_vec();
                all.push(serialized);
                entry.serialized = all.into();
            }
            return Ok(());
        }
        self.stats.cache_misses += 1;
        let job = graph.job_graph();
        let data_set = job.data_set(cpg.result);
        let producer_vertices = graph.execution_vertices_of(data_set.producer);
        // Encoded as they are computed: a million descriptors are never held at once.
        let mut encoder = wire::DescriptorGroupEncoder::new(cpg.partitions.len());
        let mut unknown = Vec::new();
        for p in cpg.partitions.clone() {
            let vertex = ExecutionVertexIndex(producer_vertices.start + p);
            let producer = producers.producer(vertex);
            let partition = IntermediateResultPartitionId {
                result: cpg.result,
                partition: p,
            };
            let descriptor = shuffle_descriptor_for(
                (cpg.result.0, p),
                cpg.result_partition_type,
                &producer,
                producers.all_data_produced(partition),
                cpg.result.0,
                &self.config.policy,
            )
            .map_err(|state| DeployError::ProducerNotReady {
                partition: partition_name(graph, partition),
                state,
            })?;
            if descriptor.is_unknown() {
                unknown.push(p - cpg.partitions.start);
            }
            encoder.push(&descriptor);
        }
        let count = encoder.len();
        self.stats.descriptors_computed += count as u64;
        let encoded = encoder.finish()?;
        let serialized = self.keep_serialized(encoded, count, cpg.num_consumers);
        self.cache.insert(
            group,
            CacheEntry {
                serialized: Arc::from(vec![serialized]),
                unknown,
                pending: Vec::new(),
            },
        );
        Ok(())
    }

    fn serialize_group(
        &mut self,
        batch: &ShuffleDescriptorGroup,
        consumers: u32,
    ) -> Result<MaybeOffloaded, DeployError> {
        let encoded = wire::encode_descriptor_group(batch)?;
        Ok(self.keep_serialized(encoded, batch.descriptors.len(), consumers))
    }

    /// Counts an encoded group of `descriptors` for `consumers` and offloads it when the rule
    /// says so (inline when the upload fails, as Flink falls back).
    fn keep_serialized(
        &mut self,
        (bytes, size): (Vec<u8>, wire::EncodedSize),
        descriptors: usize,
        consumers: u32,
    ) -> MaybeOffloaded {
        self.stats.groups_serialized += 1;
        self.stats.raw_bytes += size.raw as u64;
        if self
            .config
            .offload_rule
            .should_offload(descriptors, consumers, bytes.len())
        {
            if let Some(offloaded) = self.upload(&bytes) {
                self.stats.offloaded_bytes += bytes.len() as u64;
                return offloaded;
            }
        }
        self.stats.inline_bytes += bytes.len() as u64;
        MaybeOffloaded::Inline(Bytes::from(bytes))
    }

    /// Assembles the TDD of one attempt from prepared groups, for a graph built whole
    /// ([`create_with`](Self::create_with) and [`StaticGraph`]). Read-only, so many TDDs can be
    /// built in parallel. O(inputs + outputs).
    ///
    /// # Errors
    /// As [`create_with`](Self::create_with).
    pub fn create(
        &self,
        graph: &ExecutionGraph,
        attempt: ExecutionAttemptId,
        allocation: AllocationId,
    ) -> Result<TaskDeploymentDescriptor, DeployError> {
        self.create_with(graph, attempt, allocation, &StaticGraph)
    }

    /// Assembles the TDD of one attempt from prepared groups, following what `decided` says
    /// was decided at run time (adaptive batch): a produced partition whose consumer is decided
    /// at run time has its [`number_of_subpartitions`](VertexInputInfoStore::number_of_subpartitions),
    /// and a subtask of a vertex decided at run time reads the subpartition range and channels
    /// of its [`ExecutionVertexInputInfo`](conflux_adaptive::ExecutionVertexInputInfo) (as
    /// Flink's `TaskDeploymentDescriptorFactory` with the `VertexInputInfoStore`); otherwise the
    /// static rules: one subpartition per consumer of the group, `subtask mod consumers`.
    /// Read-only; O(inputs + outputs).
    ///
    /// # Errors
    /// [`DeployError::GroupNotPrepared`] if a consumed group was not prepared,
    /// [`DeployError::GroupsOnly`] from a factory made by [`for_groups`](Self::for_groups), and
    /// [`DeployError::InputInfoOutsideGroup`] when a decision names partitions outside the
    /// group (bugs of the caller).
    pub fn create_with(
        &self,
        graph: &ExecutionGraph,
        attempt: ExecutionAttemptId,
        allocation: AllocationId,
        decided: &dyn VertexInputInfoStore,
    ) -> Result<TaskDeploymentDescriptor, DeployError> {
        let vertex = ExecutionVertexIndex(attempt.vertex);
        let id = graph.execution_vertex_id(vertex);
        let job = graph.job_graph();
        let job_vertex = job.vertex(id.job_vertex);
        let Some(task_information) = self.task_information.get(id.job_vertex.idx()) else {
            return Err(DeployError::GroupsOnly {
                vertex: graph.execution_vertex_name(vertex),
            });
        };

        let produced_partitions = graph
            .produced_partitions(vertex)
            .map(|partition| {
                let data_set = job.data_set(partition.result);
                // Static graphs: the size of the partition's first consumer vertex group.
                let subpartitions = decided
                    .number_of_subpartitions(partition.result)
                    .unwrap_or_else(|| {
                        graph
                            .consumer_vertex_groups(partition)
                            .next()
                            .map_or(1, |g| {
                                let group = graph.consumer_vertex_group(g);
                                group.subtasks.end - group.subtasks.start
                            })
                    });
                ResultPartitionDeploymentDescriptor {
                    partition: ResultPartitionId {
                        result: partition.result.0,
                        partition: partition.partition,
                        producer: attempt,
                    },
                    partition_type: data_set.result_partition_type,
                    number_of_subpartitions: subpartitions,
                    max_parallelism: job_vertex.max_parallelism,
                }
            })
            .collect();

        let mut input_gates = Vec::with_capacity(job.inputs(id.job_vertex).len());
        for (input, group) in graph.consumed_partition_groups(vertex).enumerate() {
            // Named only on the error path: formatting the name for every TDD took a third of
            // the time to build one.
            let entry = self
                .cache
                .get(&group)
                .ok_or_else(|| DeployError::GroupNotPrepared {
                    group: group.0,
                    vertex: graph.execution_vertex_name(vertex),
                })?;
            let cpg = graph.consumed_partition_group(group);
            let channels = cpg.partitions.end - cpg.partitions.start;
            let (consumed_subpartitions, consumed_channels) =
                match decided.execution_vertex_input_info(id.job_vertex, input, id.subtask) {
                    Some(info) => {
                        let (first, last) = (info.partition_range.start, info.partition_range.end);
                        if first < cpg.partitions.start || last >= cpg.partitions.end {
                            return Err(DeployError::InputInfoOutsideGroup {
                                vertex: graph.execution_vertex_name(vertex),
                                input,
                                group: group.0,
                                first,
                                last,
                                group_start: cpg.partitions.start,
                                group_end: cpg.partitions.end,
                            });
                        }
                        (
                            info.subpartition_range.start..=info.subpartition_range.end,
                            first - cpg.partitions.start..last + 1 - cpg.partitions.start,
                        )
                    }
                    None => {
                        let subpartition = id.subtask % cpg.num_consumers;
                        (subpartition..=subpartition, 0..channels)
                    }
                };
            input_gates.push(InputGateDeploymentDescriptor {
                result: cpg.result.0,
                group,
                partition_type: cpg.result_partition_type,
                consumed_subpartitions,
                number_of_channels: channels,
                consumed_channels,
                descriptor_groups: Arc::clone(&entry.serialized),
            });
        }
        Ok(TaskDeploymentDescriptor {
            job_id: self.job_id,
            execution_attempt: attempt,
            allocation,
            job_information: self.job_information.clone(),
            task_information: task_information.clone(),
            produced_partitions,
            input_gates,
        })
    }

    /// Prepares the consumed groups and creates the TDD in one call.
    ///
    /// # Errors
    /// As [`prepare_groups`](Self::prepare_groups) and [`create`](Self::create).
    pub fn create_deployment(
        &mut self,
        graph: &ExecutionGraph,
        attempt: ExecutionAttemptId,
        allocation: AllocationId,
        producers: &dyn ProducerStates,
    ) -> Result<TaskDeploymentDescriptor, DeployError> {
        self.prepare_groups(graph, ExecutionVertexIndex(attempt.vertex), producers)?;
        self.create(graph, attempt, allocation)
    }

    /// A producer restarts (Flink's `IntermediateResultPartition.resetForNewExecution`): every
    /// group containing its partition is dropped, and their offloaded blobs deleted. O(consumer
    /// edges of the result).
    pub fn on_producer_reset(
        &mut self,
        graph: &ExecutionGraph,
        partition: IntermediateResultPartitionId,
    ) {
        let groups: Vec<ConsumedPartitionGroupId> = graph
            .consumer_vertex_groups(partition)
            .map(|g| g.consumed_partition_group())
            .collect();
        for group in groups {
            self.invalidate(group);
        }
    }

    /// A group was released (all its consumer regions finished, FLINK-23833): only this group is
    /// dropped, and its offloaded blobs deleted.
    pub fn on_group_released(&mut self, group: ConsumedPartitionGroupId) {
        self.invalidate(group);
    }

    /// A hybrid partition's producer finished (FLINK-29768): in every cached group where it was
    /// handed out unknown, its now-known descriptor is queued; the next deployment of a consumer
    /// of that group serialises the queued descriptors as an extra group. Other partition types
    /// are not touched (their consumers learn the location through a partition update).
    pub fn on_partition_finished(
        &mut self,
        graph: &ExecutionGraph,
        partition: IntermediateResultPartitionId,
        producers: &dyn ProducerStates,
    ) {
        let data_set = graph.job_graph().data_set(partition.result);
        if !data_set.result_partition_type.is_hybrid() {
            return;
        }
        let producer = producers.producer(graph.producer_of(partition));
        for g in graph.consumer_vertex_groups(partition) {
            let group = g.consumed_partition_group();
            let Some(entry) = self.cache.get_mut(&group) else {
                continue;
            };
            let cpg_start = graph.consumed_partition_group(group).partitions.start;
            let position = partition.partition - cpg_start;
            let Ok(at) = entry.unknown.binary_search(&position) else {
                continue;
            };
            if let Ok(descriptor) = shuffle_descriptor_for(
                (partition.result.0, partition.partition),
                data_set.result_partition_type,
                &producer,
                true,
                partition.result.0,
                &self.config.policy,
            ) {
                if !descriptor.is_unknown() {
                    entry.unknown.remove(at);
                    entry.pending.push((position, descriptor));
                }
            }
        }
    }

    /// The blob failures since the last call, oldest first (at most 64 are kept; the stats
    /// count all). The caller logs them.
    pub fn take_blob_failures(&mut self) -> Vec<BlobFailure> {
        std::mem::take(&mut self.blob_failures)
    }

    fn record_failure(&mut self, failure: BlobFailure) {
        if self.blob_failures.len() < MAX_KEPT_FAILURES {
            self.blob_failures.push(failure);
        }
    }

    /// The job ends: every cached group is dropped and its offloaded blobs deleted.
    pub fn clear(&mut self) {
        let groups: Vec<ConsumedPartitionGroupId> = self.cache.keys().copied().collect();
        for group in groups {
            self.invalidate(group);
        }
    }

    fn invalidate(&mut self, group: ConsumedPartitionGroupId) {
        let Some(entry) = self.cache.remove(&group) else {
            return;
        };
        self.stats.groups_invalidated += 1;
        for serialized in entry.serialized.iter() {
            if let MaybeOffloaded::Offloaded { key, .. } = serialized {
                // A TDD built earlier may still hold the key; the blob server keeps it while
                // another reference exists. Failure to delete leaks a blob until job cleanup.
                match self.blob_writer.delete_permanent(key) {
                    Ok(()) => self.stats.blobs_deleted += 1,
                    Err(error) => {
                        self.stats.delete_failures += 1;
                        self.record_failure(BlobFailure::Delete {
                            group,
                            key: *key,
                            error,
                        });
                    }
                }
            }
        }
    }
}

/// `"A#0"`, or `"A#0@<data set>"` when the producer has several data sets (as `inspect --detail`
/// names partitions).
pub fn partition_name(graph: &ExecutionGraph, partition: IntermediateResultPartitionId) -> String {
    let job = graph.job_graph();
    let data_set = job.data_set(partition.result);
    let producer = job.vertex_id(data_set.producer);
    if job.produced_data_sets(data_set.producer).len() > 1 {
        format!("{producer}#{}@{}", partition.partition, data_set.id)
    } else {
        format!("{producer}#{}", partition.partition)
    }
}

/// A planning view of producers: every producer deployed and finished, subtask `v` on
/// TaskManager `v / slots_per_task_manager` at address `10.x.y.z:6121` (the TaskManager id as an
/// IPv4 address in 10.0.0.0/8). With every descriptor known, sizes are the largest a deployment
/// produces; used by `conflux inspect`, the planner and the benches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllProducersFinished {
    /// Slots per TaskManager (at least 1).
    pub slots_per_task_manager: u32,
}

impl ProducerStates for AllProducersFinished {
    fn producer(&self, vertex: ExecutionVertexIndex) -> crate::ProducerView {
        let tm = vertex.0 / self.slots_per_task_manager.max(1);
        crate::ProducerView {
            attempt: ExecutionAttemptId {
                vertex: vertex.0,
                attempt: 0,
            },
            state: crate::ExecutionState::Finished,
            location: Some(crate::TaskManagerLocation {
                id: crate::TaskManagerId(tm),
                data_address: std::net::SocketAddr::from((
                    std::net::Ipv4Addr::from(0x0a00_0000 | (tm & 0x00ff_ffff)),
                    6121,
                )),
            }),
        }
    }

    fn all_data_produced(&self, _: IntermediateResultPartitionId) -> bool {
        true
    }
}
