//! Plan statistics: what a plan costs before it runs.
//!
//! For a job graph (or a Flink plan imported as one): job and execution vertices; per edge and in
//! total the logical connections (channels: `U x D` for ALL_TO_ALL, `max(U, D)` for POINTWISE);
//! the network buffers those channels need under Flink 1.20's default buffer model
//! ([`BufferModel`]); pipelined regions; shuffle descriptor bytes and offload decisions (from
//! `conflux-deploy`); the heap bytes of the topology; suggestions with their effect; and flags
//! on figures no TaskManager can hold.
//!
//! Everything is computed per job edge from parallelisms and group shapes, never per subtask
//! pair: O(V + E) plus the region computation (O(N) in execution vertices) and one descriptor
//! serialisation per distinct group shape of an edge (at most two shapes per edge).

mod buffers;
mod channels;
mod descriptors;
mod flags;
mod report;
mod suggestions;

use conflux_deploy::{ConsumptionPolicy, OffloadRule};
use conflux_graph::json::JobGraphJson;
use conflux_graph::{ExecutionGraph, JobGraph, PipelinedRegions};

pub use buffers::{BufferModel, Buffers, DEFAULT_SEGMENT_SIZE};
pub use channels::channels;
pub use conflux_common::format::{group_digits as thousands, mib};
pub use descriptors::{describe_offload_rule, DescriptorStats};
pub use flags::DEFAULT_TASKMANAGER_NETWORK_BYTES;
pub use report::{
    EdgeStats, Effect, NetworkStats, PlanStats, RegionStats, ResourceFlag, Suggestion,
};

use crate::error::PlanError;
use descriptors::edge_descriptors;
use flags::resource_flags;
use suggestions::suggestions;

/// Settings of the statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsConfig {
    /// The network buffer model.
    pub buffers: BufferModel,
    /// The offload rule for shuffle descriptor groups (default: Flink 1.18+'s count rule).
    pub offload_rule: OffloadRule,
    /// The estimate of vertices of undecided parallelism (`-1`, `--default-parallelism`);
    /// `None`: [`DEFAULT_ADAPTIVE_PARALLELISM`](conflux_graph::flink_plan::DEFAULT_ADAPTIVE_PARALLELISM).
    pub default_parallelism: Option<u32>,
}

impl PlanStats {
    /// Statistics of a plan. Validates it (`JobGraph::from_json`), expands it and computes its
    /// regions: O(V + E + N) time, O(V + E + N) memory for the regions, where N is the number of
    /// execution vertices; descriptors O(E) serialisations of at most one group shape each.
    ///
    /// # Errors
    /// [`PlanError::Graph`] for an invalid plan; [`PlanError::Descriptors`] on a descriptor bug.
    pub fn compute(json: &JobGraphJson, config: &StatsConfig) -> Result<PlanStats, PlanError> {
        let estimate = config
            .default_parallelism
            .unwrap_or(conflux_graph::flink_plan::DEFAULT_ADAPTIVE_PARALLELISM);
        let job = JobGraph::from_json_estimating(json, estimate)?;
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
        let edges = edge_stats(graph, config)?;
        let (mut input, mut output) = (Buffers::default(), Buffers::default());
        let mut descriptors = DescriptorStats {
            offload_rule: describe_offload_rule(config.offload_rule),
            ..DescriptorStats::default()
        };
        for e in &edges {
            input.add(e.input_buffers);
            output.add(e.output_buffers);
            descriptors.add(&e.descriptors);
        }
        let mut total = input;
        total.add(output);
        let stateful_operators = job
            .vertex_indices()
            .flat_map(|j| job.operators(j))
            .filter(|o| !o.state.is_empty())
            .count();
        Ok(PlanStats {
            name: job.name().to_owned(),
            job_type: job.job_type().as_str().to_owned(),
            undecided_vertices: job
                .vertex_indices()
                .filter(|&j| job.vertex(j).undecided)
                .map(|j| job.vertex_id(j).to_owned())
                .collect(),
            job_vertices: job.vertices().len(),
            job_edges: job.edges().len(),
            execution_vertices: job.num_execution_vertices(),
            channels: edges.iter().map(|e| e.channels).sum(),
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
            suggestions: suggestions(job, &edges, model),
            flags: resource_flags(job, &edges, model, DEFAULT_TASKMANAGER_NETWORK_BYTES),
            edges,
        })
    }
}

/// Channels and network buffers of one job edge: the numbers of [`EdgeStats`] that need only
/// the job graph (pictures draw them on the edges).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EdgeTraffic {
    /// Logical connections ([`channels()`]).
    pub channels: u64,
    /// Input gate buffers (one gate per consumer subtask).
    pub input_buffers: Buffers,
    /// Result partition buffers (zero when an earlier edge of the same data set counted them).
    pub output_buffers: Buffers,
    /// Target input and output buffers in bytes (`segment_size` of the model per buffer).
    pub buffer_bytes: u64,
}

/// Channels and buffers of every job edge, in the plan's edge order (indexed by
/// `JobEdgeIndex`). A data set's result partitions are counted once, on its first edge. O(E)
/// time and memory; the one place these numbers are computed for [`PlanStats`] and pictures.
pub fn edge_traffic(job: &JobGraph, model: &BufferModel) -> Vec<EdgeTraffic> {
    let mut counted_data_sets = vec![false; job.data_sets().len()];
    job.edges()
        .iter()
        .map(|edge| {
            let u = job.vertex(edge.source).parallelism;
            let d = job.vertex(edge.target).parallelism;
            let (pattern, result_type) = (edge.distribution_pattern, edge.result_partition_type);
            let input = model.input_buffers(pattern, result_type, u, d);
            let first_of_data_set =
                !std::mem::replace(&mut counted_data_sets[edge.data_set.idx()], true);
            let output = if first_of_data_set {
                model.output_buffers(pattern, result_type, u, d)
            } else {
                Buffers::default()
            };
            EdgeTraffic {
                channels: channels(pattern, u, d),
                input_buffers: input,
                output_buffers: output,
                buffer_bytes: (input.target + output.target) * model.segment_size,
            }
        })
        .collect()
}

/// Statistics of every job edge, in the plan's edge order. A data set's result partitions are
/// counted once, on its first edge. O(E) plus the descriptors.
fn edge_stats(graph: &ExecutionGraph, config: &StatsConfig) -> Result<Vec<EdgeStats>, PlanError> {
    let job = graph.job_graph();
    let policy = ConsumptionPolicy::for_job_type(job.job_type());
    let traffic = edge_traffic(job, &config.buffers);
    let mut edges = Vec::with_capacity(job.edges().len());
    for (i, c) in graph.connections().iter().enumerate() {
        let edge = job.edge(c.edge);
        let (u, d) = (c.producer_parallelism, c.consumer_parallelism);
        let pattern = c.distribution_pattern;
        let t = traffic[c.edge.idx()];
        edges.push(EdgeStats {
            index: i,
            source: job.vertex_id(edge.source).to_owned(),
            target: job.vertex_id(edge.target).to_owned(),
            source_name: job.vertex_name(edge.source).map(str::to_owned),
            target_name: job.vertex_name(edge.target).map(str::to_owned),
            ship_strategy: edge.ship_strategy.clone(),
            distribution_pattern: pattern.as_str().to_owned(),
            result_partition_type: c.result_partition_type.as_str().to_owned(),
            producer_parallelism: u,
            consumer_parallelism: d,
            channels: t.channels,
            input_buffers: t.input_buffers,
            output_buffers: t.output_buffers,
            buffer_bytes: t.buffer_bytes,
            descriptors: edge_descriptors(graph, c, config.offload_rule, &policy)?,
        });
    }
    Ok(edges)
}
