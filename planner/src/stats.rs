//! Plan statistics: what a plan costs before it runs.
//!
//! For a job graph (or a Flink plan imported as one): job and execution vertices; per edge and in
//! total the logical connections (channels: `U x D` for ALL_TO_ALL, `max(U, D)` for POINTWISE);
//! the network buffers those channels need under Flink 1.20's default buffer model
//! ([`BufferModel`]); pipelined regions; shuffle descriptor bytes and offload decisions (from
//! `conflux-deploy`); the heap bytes of the topology; and suggestions with their effect.
//!
//! Everything is computed per job edge from parallelisms and group shapes, never per subtask
//! pair: O(V + E) plus the region computation (O(N) in execution vertices) and one descriptor
//! serialisation per distinct group shape of an edge (at most two shapes per edge).

use std::net::{Ipv4Addr, SocketAddr};

use conflux_deploy::{
    shuffle_descriptor_for, wire, ConsumptionPolicy, ExecutionAttemptId, ExecutionState,
    OffloadRule, ProducerView, ShuffleDescriptorGroup, TaskManagerId, TaskManagerLocation,
};
use conflux_graph::json::JobGraphJson;
use conflux_graph::{
    DistributionPattern, EdgeConnection, ExecutionGraph, JobGraph, JobType, PipelinedRegions,
    ResultPartitionType,
};
use serde::{Deserialize, Serialize};

use crate::edit::{EdgeRef, Edit};
use crate::PlanError;

/// Flink's `taskmanager.memory.segment-size` default: 32 KiB per network buffer.
pub const DEFAULT_SEGMENT_SIZE: u64 = 32 * 1024;

/// Flink 1.20's network buffer model, with its defaults (see the README, "Network buffers").
///
/// From Flink's documentation ("Network memory tuning guide", `network_mem_tuning.md`): every
/// local buffer pool (one per result partition, one per input gate) has the target size
/// `#channels * taskmanager.network.memory.buffers-per-channel +
/// taskmanager.network.memory.floating-buffers-per-gate`; of an input gate's target, the part
/// below `taskmanager.network.memory.read-buffer.required-per-gate.max` (unbounded for
/// streaming, 1000 for batch) is required, the rest optional. Blocking results use sort-shuffle
/// by default since Flink 1.15 (`taskmanager.network.sort-shuffle.min-parallelism` = 1), whose
/// result partition needs `taskmanager.network.sort-shuffle.min-buffers` (512) and uses at most
/// `max(512, 4 x subpartitions)` (FLINK-25774).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferModel {
    /// `taskmanager.memory.segment-size`: bytes per buffer (32 KiB).
    pub segment_size: u64,
    /// `taskmanager.network.memory.buffers-per-channel`: exclusive buffers per channel (2).
    pub buffers_per_channel: u64,
    /// `taskmanager.network.memory.floating-buffers-per-gate`: floating buffers per gate (8).
    pub floating_buffers_per_gate: u64,
    /// `taskmanager.network.sort-shuffle.min-buffers`: buffers of a sort-shuffle result
    /// partition (512).
    pub sort_shuffle_min_buffers: u64,
    /// `taskmanager.network.memory.read-buffer.required-per-gate.max` for batch (blocking and
    /// hybrid) inputs: 1000. Streaming (pipelined) inputs require their whole target.
    pub batch_required_buffers_per_gate: u64,
}

impl Default for BufferModel {
    fn default() -> Self {
        BufferModel {
            segment_size: DEFAULT_SEGMENT_SIZE,
            buffers_per_channel: 2,
            floating_buffers_per_gate: 8,
            sort_shuffle_min_buffers: 512,
            batch_required_buffers_per_gate: 1000,
        }
    }
}

/// Buffers of a set of pools: the target (upper limit) and the required part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Buffers {
    /// Sum of the pools' targets (what they may use).
    pub target: u64,
    /// Sum of the pools' required sizes (what a task fails without).
    pub required: u64,
}

impl Buffers {
    fn add(&mut self, other: Buffers) {
        self.target += other.target;
        self.required += other.required;
    }
}

/// `count` pools that each serve `channels` channels (gates) or subpartitions (partitions).
#[derive(Clone, Copy, Debug)]
struct Shape {
    count: u64,
    channels: u64,
}

/// Consumer-side shapes of an edge: per consumer subtask, how many channels its gate has.
fn gate_shapes(pattern: DistributionPattern, u: u64, d: u64) -> [Shape; 2] {
    match pattern {
        DistributionPattern::AllToAll => [
            Shape {
                count: d,
                channels: u,
            },
            Shape {
                count: 0,
                channels: 0,
            },
        ],
        // Flink's pointwise mapping gives consumer j the partitions [floor(jU/D), floor((j+1)U/D)):
        // U mod D consumers read one partition more than the others.
        DistributionPattern::Pointwise if u >= d => split(u, d),
        DistributionPattern::Pointwise => [
            Shape {
                count: d,
                channels: 1,
            },
            Shape {
                count: 0,
                channels: 0,
            },
        ],
    }
}

/// Producer-side shapes of an edge: per producer subtask, how many subpartitions it writes.
fn partition_shapes(pattern: DistributionPattern, u: u64, d: u64) -> [Shape; 2] {
    match pattern {
        DistributionPattern::AllToAll => [
            Shape {
                count: u,
                channels: d,
            },
            Shape {
                count: 0,
                channels: 0,
            },
        ],
        DistributionPattern::Pointwise if u >= d => [
            Shape {
                count: u,
                channels: 1,
            },
            Shape {
                count: 0,
                channels: 0,
            },
        ],
        DistributionPattern::Pointwise => split(d, u),
    }
}

/// `total` items over `slots` slots as evenly as Flink's range mapping does: `total mod slots`
/// slots get one more.
fn split(total: u64, slots: u64) -> [Shape; 2] {
    let (q, r) = (total / slots.max(1), total % slots.max(1));
    [
        Shape {
            count: slots - r,
            channels: q,
        },
        Shape {
            count: r,
            channels: q + 1,
        },
    ]
}

/// Whether a result type is consumed as a stream (pipelined): its gates require their whole
/// target, and its partitions are pipelined partitions.
fn is_pipelined(t: ResultPartitionType) -> bool {
    matches!(
        t,
        ResultPartitionType::Pipelined
            | ResultPartitionType::PipelinedBounded
            | ResultPartitionType::PipelinedApproximate
    )
}

impl BufferModel {
    /// Buffers of the input gates of one edge. O(1).
    pub fn input_buffers(
        &self,
        pattern: DistributionPattern,
        result_type: ResultPartitionType,
        producers: u32,
        consumers: u32,
    ) -> Buffers {
        let mut total = Buffers::default();
        for s in gate_shapes(pattern, u64::from(producers), u64::from(consumers)) {
            let target = s.channels * self.buffers_per_channel + self.floating_buffers_per_gate;
            let required = if is_pipelined(result_type) {
                target
            } else {
                target.min(self.batch_required_buffers_per_gate)
            };
            total.add(Buffers {
                target: s.count * target,
                required: s.count * required,
            });
        }
        total
    }

    /// Buffers of the result partitions of one data set, as consumed by one edge. O(1).
    /// Pipelined partitions: target as for gates, `subpartitions + 1` required. Blocking
    /// partitions (sort-shuffle) and hybrid partitions (assumed alike): `max(min-buffers,
    /// 4 x subpartitions)` target, min-buffers required.
    pub fn output_buffers(
        &self,
        pattern: DistributionPattern,
        result_type: ResultPartitionType,
        producers: u32,
        consumers: u32,
    ) -> Buffers {
        let mut total = Buffers::default();
        for s in partition_shapes(pattern, u64::from(producers), u64::from(consumers)) {
            let (target, required) = if is_pipelined(result_type) {
                (
                    s.channels * self.buffers_per_channel + self.floating_buffers_per_gate,
                    s.channels + 1,
                )
            } else {
                (
                    self.sort_shuffle_min_buffers.max(4 * s.channels),
                    self.sort_shuffle_min_buffers,
                )
            };
            total.add(Buffers {
                target: s.count * target,
                required: s.count * required,
            });
        }
        total
    }
}

/// Logical connections of an edge: `U x D` for ALL_TO_ALL, `max(U, D)` for POINTWISE.
pub fn channels(pattern: DistributionPattern, producers: u32, consumers: u32) -> u64 {
    let (u, d) = (u64::from(producers), u64::from(consumers));
    match pattern {
        DistributionPattern::AllToAll => u * d,
        DistributionPattern::Pointwise => u.max(d),
    }
}

/// Settings of the statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsConfig {
    /// The network buffer model.
    pub buffers: BufferModel,
    /// The offload rule for shuffle descriptor groups (default: Flink 1.18+'s count rule).
    pub offload_rule: OffloadRule,
}

/// Statistics of one plan. `channels` is the total of logical connections (DESIGN §6).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanStats {
    /// The job's name.
    pub name: String,
    /// `streaming` or `batch`.
    pub job_type: String,
    /// Job vertices.
    pub job_vertices: usize,
    /// Job edges.
    pub job_edges: usize,
    /// Execution vertices (subtasks).
    pub execution_vertices: u64,
    /// Total logical connections over all edges.
    pub channels: u64,
    /// Network buffers.
    pub network: NetworkStats,
    /// Pipelined regions.
    pub regions: RegionStats,
    /// Shuffle descriptors and their offload.
    pub descriptors: DescriptorStats,
    /// Heap bytes of the execution graph and its regions (self-accounted).
    pub topology_bytes: usize,
    /// Operators with state, and their states.
    pub stateful_operators: usize,
    /// Per job edge, in the plan's edge order.
    pub edges: Vec<EdgeStats>,
    /// What could be cheaper, with the edit that does it where there is one.
    pub suggestions: Vec<Suggestion>,
}

/// Network buffers of the whole plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NetworkStats {
    /// The model used.
    pub model: BufferModel,
    /// Input gate buffers.
    pub input: Buffers,
    /// Result partition buffers.
    pub output: Buffers,
    /// Input and output buffers.
    pub total: Buffers,
    /// `total.target` in bytes.
    pub bytes: u64,
    /// `total.required` in bytes.
    pub required_bytes: u64,
}

/// Pipelined regions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RegionStats {
    /// Scheduling (execution) regions.
    pub count: usize,
    /// Execution vertices of the largest region.
    pub largest: u32,
    /// Logical regions (over job vertices).
    pub logical: usize,
}

/// Shuffle descriptors over the plan, as `conflux inspect` measures them: every producer
/// deployed and finished, 10 slots per TaskManager.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DescriptorStats {
    /// The offload rule, e.g. `descriptors x consumers >= 4194304`.
    pub offload_rule: String,
    /// ConsumedPartitionGroups.
    pub groups: u64,
    /// Shuffle descriptors over all groups.
    pub descriptors: u64,
    /// MessagePack bytes before compression.
    pub raw_bytes: u64,
    /// Framed, compressed bytes.
    pub compressed_bytes: u64,
    /// Groups sent to the blob server.
    pub offloaded_groups: u64,
    /// Their bytes.
    pub offloaded_bytes: u64,
    /// Bytes kept inside the descriptors.
    pub inline_bytes: u64,
}

/// Statistics of one job edge.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EdgeStats {
    /// Position in the plan's edge list.
    pub index: usize,
    /// Producing vertex.
    pub source: String,
    /// Consuming vertex.
    pub target: String,
    /// The partitioner, when the plan names it.
    pub ship_strategy: Option<String>,
    /// `pointwise` or `all_to_all`.
    pub distribution_pattern: String,
    /// The result partition type.
    pub result_partition_type: String,
    /// `U`.
    pub producer_parallelism: u32,
    /// `D`.
    pub consumer_parallelism: u32,
    /// Logical connections.
    pub channels: u64,
    /// Input gate buffers (one gate per consumer subtask).
    pub input_buffers: Buffers,
    /// Result partition buffers (zero when an earlier edge of the same data set counted them).
    pub output_buffers: Buffers,
    /// Target input and output buffers in bytes.
    pub buffer_bytes: u64,
    /// Descriptors of this edge's groups.
    pub descriptors: DescriptorStats,
}

/// A suggestion: what could be cheaper or safer, its effect, and the edit that applies it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Suggestion {
    /// `rebalance_to_rescale`, `gate_above_required`, `state_without_ttl` or
    /// `stateful_operator_without_uid`.
    pub kind: String,
    /// For people.
    pub message: String,
    /// The effect in numbers, where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<Effect>,
    /// The edit that applies the suggestion, where one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edit: Option<Edit>,
}

/// The effect of a suggested edit on one edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Effect {
    /// Channels now.
    pub channels_before: u64,
    /// Channels after the edit.
    pub channels_after: u64,
    /// Target buffer bytes now.
    pub buffer_bytes_before: u64,
    /// Target buffer bytes after the edit.
    pub buffer_bytes_after: u64,
    /// The difference.
    pub buffer_bytes_saved: u64,
}

/// Every producer deployed and finished on TaskManager `vertex / 10`: the largest descriptors.
fn producer_view(vertex: u32) -> ProducerView {
    let tm = vertex / 10;
    ProducerView {
        attempt: ExecutionAttemptId { vertex, attempt: 0 },
        state: ExecutionState::Finished,
        location: Some(TaskManagerLocation {
            id: TaskManagerId(tm),
            data_address: SocketAddr::from((Ipv4Addr::from(0x0a00_0000 | tm), 6121)),
        }),
    }
}

/// `descriptors x consumers >= 4194304`, `compressed bytes >= 1048576` or `never`.
pub fn describe_offload_rule(rule: OffloadRule) -> String {
    match rule {
        OffloadRule::DescriptorCount { threshold } => {
            format!("descriptors x consumers >= {threshold}")
        }
        OffloadRule::CompressedBytes { min_size } => format!("compressed bytes >= {min_size}"),
        OffloadRule::Never => "never".to_owned(),
    }
}

/// Descriptors of one edge: the groups of an edge come in at most two shapes (partitions,
/// consumers); one group of each shape is serialised and the result multiplied. O(groups) to
/// count the shapes, plus the serialisation of at most two groups.
fn edge_descriptors(
    graph: &ExecutionGraph,
    c: &EdgeConnection,
    rule: OffloadRule,
    policy: &ConsumptionPolicy,
) -> Result<DescriptorStats, PlanError> {
    let producer_start = graph.execution_vertices_of(c.producer).start;
    // (partitions, consumers, count, first local group)
    let mut shapes: Vec<(u32, u32, u64, u32)> = Vec::with_capacity(2);
    for k in 0..c.num_groups {
        // Ranges of u32 indices: their lengths fit in u32.
        let range_len = |r: std::ops::Range<u32>| r.end - r.start;
        let p = range_len(c.partitions_of_local_group(k));
        let n = range_len(c.consumers_of_local_group(k));
        match shapes.iter_mut().find(|s| s.0 == p && s.1 == n) {
            Some(s) => s.2 += 1,
            None => shapes.push((p, n, 1, k)),
        }
    }
    let mut out = DescriptorStats {
        offload_rule: describe_offload_rule(rule),
        ..DescriptorStats::default()
    };
    for (partitions, consumers, count, k) in shapes {
        let mut descriptors = Vec::with_capacity(partitions as usize);
        for p in c.partitions_of_local_group(k) {
            let producer = producer_view(producer_start + p);
            let d = shuffle_descriptor_for(
                (c.result.0, p),
                c.result_partition_type,
                &producer,
                true,
                c.result.0,
                policy,
            )
            .map_err(|state| PlanError::Descriptors {
                edge: edge_name(graph, c),
                message: format!("producer in state {}", state.as_str()),
            })?;
            descriptors.push(d);
        }
        let group = ShuffleDescriptorGroup {
            descriptors,
            indices: None,
        };
        let (bytes, size) =
            wire::encode_descriptor_group(&group).map_err(|e| PlanError::Descriptors {
                edge: edge_name(graph, c),
                message: e.to_string(),
            })?;
        let offloaded = rule.should_offload(partitions as usize, consumers, bytes.len());
        let len = bytes.len() as u64;
        out.groups += count;
        out.descriptors += count * u64::from(partitions);
        out.raw_bytes += count * size.raw as u64;
        out.compressed_bytes += count * len;
        if offloaded {
            out.offloaded_groups += count;
            out.offloaded_bytes += count * len;
        } else {
            out.inline_bytes += count * len;
        }
    }
    Ok(out)
}

fn edge_name(graph: &ExecutionGraph, c: &EdgeConnection) -> String {
    let job = graph.job_graph();
    format!(
        "{} ({} -> {})",
        c.edge.0,
        job.vertex(c.producer).id,
        job.vertex(c.consumer).id
    )
}

/// Writes `n` with thousands separators: `2,000,000`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Bytes as MiB for messages: `1,024 MiB`, or one decimal below 10 MiB.
pub fn mib(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    if bytes < 10 * MIB {
        let tenths = (bytes * 10 + MIB / 2) / MIB;
        format!("{}.{} MiB", tenths / 10, tenths % 10)
    } else {
        format!("{} MiB", thousands((bytes + MIB / 2) / MIB))
    }
}

/// Whether a ship strategy names a keyed partitioner (`HASH`, `HASH[keys]`, `KEY...`), whose
/// edge must stay hash-partitioned.
pub fn is_keyed_strategy(ship_strategy: &str) -> bool {
    let s = ship_strategy.trim().to_ascii_uppercase();
    s.starts_with("HASH") || s.starts_with("KEY")
}

/// The partitioner's name without keys, upper case: `HASH[a, b]` -> `HASH`.
pub fn strategy_name(ship_strategy: &str) -> String {
    ship_strategy
        .split_once('[')
        .map_or(ship_strategy, |(n, _)| n)
        .trim()
        .to_ascii_uppercase()
}

impl PlanStats {
    /// Statistics of a plan. Validates it (`JobGraph::from_json`), expands it and computes its
    /// regions: O(V + E + N) time, O(V + E + N) memory for the regions, where N is the number of
    /// execution vertices; descriptors O(E) serialisations of at most one group shape each.
    ///
    /// # Errors
    /// [`PlanError::Graph`] for an invalid plan; [`PlanError::Descriptors`] on a descriptor bug.
    pub fn compute(json: &JobGraphJson, config: &StatsConfig) -> Result<PlanStats, PlanError> {
        let job = JobGraph::from_json(json)?;
        let graph = ExecutionGraph::build(job)?;
        let regions = PipelinedRegions::compute(&graph)?;
        Self::of_graph(&graph, &regions, config)
    }

    /// Statistics of an expanded plan: O(V + E) plus descriptors (see [`PlanStats::compute`]).
    ///
    /// # Errors
    /// [`PlanError::Descriptors`] on a descriptor bug.
    pub fn of_graph(
        graph: &ExecutionGraph,
        regions: &PipelinedRegions,
        config: &StatsConfig,
    ) -> Result<PlanStats, PlanError> {
        let job = graph.job_graph();
        let model = &config.buffers;
        let policy = ConsumptionPolicy::for_job_type(job.job_type());
        let mut edges = Vec::with_capacity(job.edges().len());
        let mut counted_data_sets = vec![false; job.data_sets().len()];
        let mut input = Buffers::default();
        let mut output = Buffers::default();
        let mut descriptors = DescriptorStats {
            offload_rule: describe_offload_rule(config.offload_rule),
            ..DescriptorStats::default()
        };
        for (i, c) in graph.connections().iter().enumerate() {
            let edge = job.edge(c.edge);
            let (u, d) = (c.producer_parallelism, c.consumer_parallelism);
            let inb = model.input_buffers(c.distribution_pattern, c.result_partition_type, u, d);
            let outb = if counted_data_sets[edge.data_set.idx()] {
                Buffers::default()
            } else {
                counted_data_sets[edge.data_set.idx()] = true;
                model.output_buffers(c.distribution_pattern, c.result_partition_type, u, d)
            };
            input.add(inb);
            output.add(outb);
            let desc = edge_descriptors(graph, c, config.offload_rule, &policy)?;
            descriptors.groups += desc.groups;
            descriptors.descriptors += desc.descriptors;
            descriptors.raw_bytes += desc.raw_bytes;
            descriptors.compressed_bytes += desc.compressed_bytes;
            descriptors.offloaded_groups += desc.offloaded_groups;
            descriptors.offloaded_bytes += desc.offloaded_bytes;
            descriptors.inline_bytes += desc.inline_bytes;
            edges.push(EdgeStats {
                index: i,
                source: job.vertex(edge.source).id.clone(),
                target: job.vertex(edge.target).id.clone(),
                ship_strategy: edge.ship_strategy.clone(),
                distribution_pattern: c.distribution_pattern.as_str().to_owned(),
                result_partition_type: c.result_partition_type.as_str().to_owned(),
                producer_parallelism: u,
                consumer_parallelism: d,
                channels: c.logical_connections(),
                input_buffers: inb,
                output_buffers: outb,
                buffer_bytes: (inb.target + outb.target) * model.segment_size,
                descriptors: desc,
            });
        }
        let mut total = input;
        total.add(output);
        let stateful_operators = job
            .vertices()
            .iter()
            .flat_map(|v| &v.operators)
            .filter(|o| !o.state.is_empty())
            .count();
        let mut stats = PlanStats {
            name: job.name().to_owned(),
            job_type: job.job_type().as_str().to_owned(),
            job_vertices: job.vertices().len(),
            job_edges: job.edges().len(),
            execution_vertices: job.num_execution_vertices(),
            channels: graph.logical_connections(),
            network: NetworkStats {
                model: *model,
                input,
                output,
                total,
                bytes: total.target * model.segment_size,
                required_bytes: total.required * model.segment_size,
            },
            regions: RegionStats {
                count: regions.len(),
                largest: regions.sizes().max().unwrap_or(0),
                logical: regions.logical().len(),
            },
            descriptors,
            topology_bytes: graph.heap_bytes() + regions.heap_bytes(),
            stateful_operators,
            edges,
            suggestions: Vec::new(),
        };
        stats.suggestions = suggestions(job, &stats, model);
        Ok(stats)
    }
}

/// Suggestions for a plan. O(V + E + operators).
fn suggestions(job: &JobGraph, stats: &PlanStats, model: &BufferModel) -> Vec<Suggestion> {
    let mut out = Vec::new();
    for e in &stats.edges {
        let edge = &job.edges()[e.index];
        let strategy = edge.ship_strategy.as_deref().map(strategy_name);
        let (u, d) = (e.producer_parallelism, e.consumer_parallelism);
        // A REBALANCE edge whose data set is its own can become RESCALE (pointwise) without
        // touching key grouping; it pays off when both sides have more than one subtask.
        let shared = job.data_set(edge.data_set).consumers.len() > 1;
        if strategy.as_deref() == Some("REBALANCE") && u > 1 && d > 1 && !shared {
            let after_type = edge.result_partition_type;
            let p = DistributionPattern::Pointwise;
            let after_in = model.input_buffers(p, after_type, u, d);
            let after_out = model.output_buffers(p, after_type, u, d);
            let before = e.buffer_bytes;
            let after = (after_in.target + after_out.target) * model.segment_size;
            let (cb, ca) = (e.channels, channels(p, u, d));
            let saved = before.saturating_sub(after);
            out.push(Suggestion {
                kind: "rebalance_to_rescale".to_owned(),
                message: format!(
                    "edge {} ({} -> {}): this REBALANCE edge {} -> {} could be RESCALE: {} -> {} channels, saves {} of network buffers",
                    e.index,
                    e.source,
                    e.target,
                    thousands(u64::from(u)),
                    thousands(u64::from(d)),
                    thousands(cb),
                    thousands(ca),
                    mib(saved)
                ),
                effect: Some(Effect {
                    channels_before: cb,
                    channels_after: ca,
                    buffer_bytes_before: before,
                    buffer_bytes_after: after,
                    buffer_bytes_saved: saved,
                }),
                edit: Some(Edit::SetPartitioner {
                    edge: EdgeRef::Index(e.index),
                    partitioner: "RESCALE".to_owned(),
                }),
            });
        }
        if !is_pipelined(edge.result_partition_type) {
            let gate_target =
                u64::from(u) * model.buffers_per_channel + model.floating_buffers_per_gate;
            if edge.distribution_pattern == DistributionPattern::AllToAll
                && gate_target > model.batch_required_buffers_per_gate
            {
                out.push(Suggestion {
                    kind: "gate_above_required".to_owned(),
                    message: format!(
                        "edge {} ({} -> {}): each input gate targets {} buffers, above the {} a batch gate requires; the rest is optional and may slow the consumers down when network memory is short",
                        e.index,
                        e.source,
                        e.target,
                        thousands(gate_target),
                        model.batch_required_buffers_per_gate
                    ),
                    effect: None,
                    edit: None,
                });
            }
        }
    }
    for v in job.vertices() {
        for o in &v.operators {
            let label = o.uid.as_deref().unwrap_or(&o.name);
            if job.job_type() == JobType::Streaming {
                for s in o.state.iter().filter(|s| s.ttl_ms.is_none()) {
                    out.push(Suggestion {
                        kind: "state_without_ttl".to_owned(),
                        message: format!(
                            "vertex '{}', operator '{label}': state '{}' has no TTL and grows with its keys in a streaming job; a TTL (set_state_ttl) bounds it",
                            v.id, s.name
                        ),
                        effect: None,
                        edit: None,
                    });
                }
            }
            if o.uid.is_none() && !o.state.is_empty() {
                out.push(Suggestion {
                    kind: "stateful_operator_without_uid".to_owned(),
                    message: format!(
                        "vertex '{}', operator '{}': has state but no uid; its state maps to the next version only while the topology keeps its shape",
                        v.id, o.name
                    ),
                    effect: None,
                    edit: None,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointwise_shapes_cover_every_channel() {
        for (u, d) in [
            (10u64, 6u64),
            (6, 10),
            (2000, 1000),
            (1000, 2000),
            (7, 7),
            (1, 5),
        ] {
            let gates = gate_shapes(DistributionPattern::Pointwise, u, d);
            let parts = partition_shapes(DistributionPattern::Pointwise, u, d);
            let g: u64 = gates.iter().map(|s| s.count * s.channels).sum();
            let p: u64 = parts.iter().map(|s| s.count * s.channels).sum();
            assert_eq!(g, u.max(d), "gates {u} {d}");
            assert_eq!(p, u.max(d), "partitions {u} {d}");
            assert_eq!(gates.iter().map(|s| s.count).sum::<u64>(), d);
            assert_eq!(parts.iter().map(|s| s.count).sum::<u64>(), u);
        }
    }

    #[test]
    fn thousands_and_mib() {
        assert_eq!(thousands(2_000_000), "2,000,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(mib(1 << 20), "1.0 MiB");
        assert_eq!(mib(2000 << 20), "2,000 MiB");
    }
}
