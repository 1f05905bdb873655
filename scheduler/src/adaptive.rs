//! Adaptive batch scheduling on a growing graph, as Flink 1.20's `AdaptiveBatchScheduler`: a
//! job vertex of undecided parallelism (`-1`) gets its parallelism when all its producers have
//! finished, from the bytes they wrote, and only then has subtasks.
//!
//! The scheduler owns the graph and its regions. A job's dynamic suffix (from the first
//! undecided vertex with inputs, [`first_dynamic_vertex`]) starts uninitialised; each time a
//! task finishes, the next uninitialised vertex is initialised if every producer partition it
//! reads has reported its bytes: the decider ([`decide_parallelism_and_input_infos`]) picks its
//! parallelism from the per-subpartition sums ([`ResultBytes`], kept as producers finish, never
//! a producer x subpartition matrix of an ALL_TO_ALL result; a POINTWISE result keeps each
//! producer's few subpartitions, O(producers + width)), the graph, the regions, the scheduling
//! topology, the slot pool and every per-vertex, per-partition, per-group and per-region array
//! grow at their end (append-only: no index changes, nothing is rebuilt), and the new regions
//! are scheduling candidates at once. Several vertices may be initialised in one call (a fixed
//! vertex or a source right behind). Vertices joined by FORWARD edges form forward groups: the
//! first undecided member decided sets the parallelism of every later one (Flink 1.20's
//! `ForwardGroup`; a group with a fixed member was given its parallelism when the job graph was
//! validated). A graph built whole never gets here: its scheduler has no
//! adaptive state, and the only cost on its path is one `Option` check per finished task.

use conflux_adaptive::{
    decide_parallelism_and_input_infos, split_skewed_subpartitions, BatchExecutionOptions,
    DecideError, ExecutionVertexInputInfo, ResultBytes, SkewedSubpartition, SplitSubpartition,
    VertexToDecide,
};
use conflux_deploy::ExecutionAttemptId;
use conflux_graph::forward_group::ForwardGroups;
use conflux_graph::{
    DistributionPattern, ExecutionGraph, GraphError, JobGraph, JobVertexIndex, ShipStrategy,
};

/// Why an adaptive scheduler could not be built.
#[derive(Debug, thiserror::Error)]
pub enum AdaptiveError {
    /// The job cannot grow at run time (a pipelined edge or a co-location group in its dynamic
    /// suffix, names the vertex), or its graph does not fit the indices.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// The batch options are out of range.
    #[error("{0}")]
    Options(#[from] DecideError),
}

/// What was decided for one job vertex at run time: an undecided source when the scheduler is
/// built, every vertex of the dynamic suffix when its inputs are complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VertexDecision {
    /// The job vertex.
    pub job_vertex: JobVertexIndex,
    /// Its parallelism: decided from bytes when [`undecided`](Self::undecided), else the job
    /// graph's.
    pub parallelism: u32,
    /// Whether the job graph left the parallelism to the run (`-1`).
    pub undecided: bool,
    /// Per subtask, the bytes it reads over all inputs, as Flink's adaptive batch scheduler
    /// gives each execution vertex its input bytes ([`ResultBytes::bytes_read`]). Exact for
    /// ALL_TO_ALL, broadcast and POINTWISE inputs (a POINTWISE result keeps each producer's
    /// bytes); a piece of a split subpartition, read from some producers only, is apportioned
    /// by those producers' share of all bytes (exact when producers write alike, an estimate
    /// within bounds otherwise). Empty for a source.
    pub bytes_per_task: Vec<u64>,
    /// Per input (in input order), per subtask, what it reads (Flink's
    /// `ExecutionVertexInputInfo`). Empty for a source.
    pub input_infos: Vec<Vec<ExecutionVertexInputInfo>>,
    /// Subpartitions far above their input's average bytes per subtask (beyond Flink; see
    /// [`conflux_adaptive::SKEW_FACTOR`]).
    pub skewed_subpartitions: Vec<SkewedSubpartition>,
    /// Subpartitions split across several subtasks (a `skew_splittable` vertex; see
    /// [`split_skewed_subpartitions`]); the parallelism counts the pieces.
    pub split_subpartitions: Vec<SplitSubpartition>,
}

/// The adaptive part of a scheduler's state.
#[derive(Debug)]
pub(crate) struct AdaptiveState {
    pub(crate) options: BatchExecutionOptions,
    /// The first vertex initialised at run time.
    pub(crate) first_dynamic: Option<JobVertexIndex>,
    /// Per data set: its subpartitions per partition when a run-time decision reads it (0: no
    /// decision does, or its producer is not initialised).
    pub(crate) subpartitions: Vec<u32>,
    /// Per data set read by a run-time decision: bytes per subpartition so far.
    pub(crate) results: Vec<Option<ResultBytes>>,
    pub(crate) decisions: Vec<VertexDecision>,
    /// Per job vertex, its index in `decisions` once decided.
    pub(crate) decision_of: Vec<Option<usize>>,
    /// The bytes of the finish being handled: (attempt, per produced data set).
    pub(crate) pending_bytes: Option<(ExecutionAttemptId, Vec<Vec<u64>>)>,
    /// The job's forward groups (vertices joined by FORWARD edges).
    pub(crate) forward: ForwardGroups,
    /// Per forward group, its parallelism once its first undecided member was decided (groups
    /// with a fixed member were given it when the job graph was validated).
    pub(crate) group_parallelism: Vec<Option<u32>>,
}

/// A vertex's own max parallelism as the decider sees it: an undecided vertex without an
/// explicit one gets the options' `max-parallelism` (as Flink's adaptive batch scheduler
/// defaults it), others their job graph's.
pub(crate) fn vertex_max(
    job: &JobGraph,
    j: JobVertexIndex,
    options: &BatchExecutionOptions,
) -> u32 {
    let v = job.vertex(j);
    if v.undecided && !v.max_parallelism_configured {
        options.max_parallelism
    } else {
        u32::try_from(v.max_parallelism).unwrap_or(u32::MAX)
    }
}

/// Whether a job edge is a broadcast (every consumer reads every record).
fn is_broadcast(job: &JobGraph, edge: conflux_graph::JobEdgeIndex) -> bool {
    job.edge(edge)
        .ship_strategy
        .as_deref()
        .is_some_and(|s| ShipStrategy::parse(s) == ShipStrategy::Broadcast)
}

impl AdaptiveState {
    /// The parallelism `j`'s forward group was decided at, if `j` is in a group whose first
    /// member was decided (Flink 1.20's `AdaptiveBatchScheduler` gives it to every later
    /// member, whatever their inputs' bytes).
    pub(crate) fn group_parallelism_of(&self, j: JobVertexIndex) -> Option<u32> {
        let g = self.forward.group_of(j)?;
        self.group_parallelism[g.0 as usize]
    }

    /// `j` was initialised with `parallelism`: the first member of a forward group decides the
    /// group's.
    pub(crate) fn group_decided(&mut self, j: JobVertexIndex, parallelism: u32) {
        if let Some(g) = self.forward.group_of(j) {
            self.group_parallelism[g.0 as usize].get_or_insert(parallelism);
        }
    }

    /// Starts summing the bytes of the data sets `j` (just initialised) produces that a
    /// run-time decision reads: those consumed by a vertex of the dynamic suffix.
    pub(crate) fn track_results_of(&mut self, graph: &ExecutionGraph, j: JobVertexIndex) {
        let Some(first) = self.first_dynamic else {
            return;
        };
        let job = graph.job_graph();
        let producers = graph.parallelism_of(j);
        for &d in job.produced_data_sets(j) {
            let Some(&e) = job
                .data_set(d)
                .consumers
                .iter()
                .find(|&&e| job.edge(e).target >= first)
            else {
                continue;
            };
            let edge = job.edge(e);
            let consumer = job.vertex(edge.target);
            // As Flink's dynamic graphs: an undecided consumer's producers write as many
            // subpartitions as it may ever have subtasks (ALL_TO_ALL), or their share of them
            // (POINTWISE); a broadcast result writes one.
            let width = if consumer.undecided {
                vertex_max(job, edge.target, &self.options)
            } else {
                consumer.parallelism
            };
            let subpartitions = if is_broadcast(job, e) {
                1
            } else {
                match edge.distribution_pattern {
                    DistributionPattern::AllToAll => width,
                    DistributionPattern::Pointwise => width.div_ceil(producers.max(1)),
                }
            }
            .max(1);
            self.subpartitions[d.idx()] = subpartitions;
            // A POINTWISE result keeps each producer's row (O(producers + width), see
            // `ResultBytes::pointwise`), so that what each consumer subtask reads is exact.
            self.results[d.idx()] = Some(ResultBytes::for_pattern(
                edge.distribution_pattern,
                producers,
                subpartitions,
            ));
        }
    }

    /// The decision for `j`, when every input is complete (`None` otherwise). O(inputs x
    /// subpartitions x log bytes).
    pub(crate) fn decide(
        &self,
        graph: &ExecutionGraph,
        j: JobVertexIndex,
    ) -> Option<Result<VertexDecision, DecideError>> {
        let job = graph.job_graph();
        let mut inputs = Vec::with_capacity(job.inputs(j).len());
        let mut results = Vec::with_capacity(job.inputs(j).len());
        for &e in job.inputs(j) {
            let edge = job.edge(e);
            let result = self.results[edge.data_set.idx()].as_ref()?;
            if !graph.is_initialized(edge.source) || !result.is_complete() {
                return None;
            }
            inputs.push(result.input(edge.distribution_pattern, is_broadcast(job, e)));
            results.push(result);
        }
        let v = job.vertex(j);
        let max = vertex_max(job, j, &self.options);
        // An undecided member of a decided forward group gets the group's parallelism.
        let from_group = if v.undecided {
            self.group_parallelism_of(j)
        } else {
            None
        };
        let vertex = match (v.undecided, from_group) {
            (true, None) => VertexToDecide::undecided(max),
            (true, Some(p)) => VertexToDecide::fixed(p, max),
            (false, _) => VertexToDecide::fixed(v.parallelism, max),
        };
        Some(
            decide_parallelism_and_input_infos(&self.options, &vertex, &inputs).map(|mut d| {
                // Beyond Flink: a skew-splittable vertex of one ALL_TO_ALL input reads a hot
                // subpartition through several subtasks (its decided parallelism grows by the
                // extra pieces, within its max parallelism).
                let mut split_subpartitions = Vec::new();
                if v.undecided && from_group.is_none() && v.skew_splittable && inputs.len() == 1 {
                    if let Some(split) = split_skewed_subpartitions(&inputs[0], d.parallelism, max)
                    {
                        d.parallelism = split.parallelism;
                        d.input_infos = vec![split.input_infos];
                        split_subpartitions = split.split;
                    }
                }
                VertexDecision {
                    job_vertex: j,
                    parallelism: d.parallelism,
                    undecided: v.undecided,
                    bytes_per_task: bytes_per_task(&results, &d.input_infos, d.parallelism),
                    input_infos: d.input_infos,
                    skewed_subpartitions: d.skewed_subpartitions,
                    split_subpartitions,
                }
            }),
        )
    }
}

/// Per subtask, the bytes it reads over all inputs ([`ResultBytes::bytes_read`]: exact but for
/// the pieces of split subpartitions, apportioned by the producers' totals). O(inputs x
/// (subpartitions + partitions + parallelism)), plus the rows a POINTWISE subtask reads.
fn bytes_per_task(
    results: &[&ResultBytes],
    infos: &[Vec<ExecutionVertexInputInfo>],
    parallelism: u32,
) -> Vec<u64> {
    let mut out = vec![0u64; parallelism as usize];
    for (result, infos) in results.iter().zip(infos) {
        for (info, read) in infos.iter().zip(result.bytes_read(infos)) {
            if let Some(slot) = out.get_mut(info.subtask_index as usize) {
                *slot = slot.saturating_add(read.bytes);
            }
        }
    }
    out
}
