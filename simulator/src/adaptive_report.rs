//! What an adaptive batch run decided, for `conflux run`'s report.

use conflux_scheduler::Scheduler;

use crate::produced_bytes::ProducedBytes;

/// Bytes read per subtask of one job vertex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BytesPerTask {
    /// The fewest bytes a subtask read.
    pub min: u64,
    /// The median (the lower middle for an even count).
    pub median: u64,
    /// The most.
    pub max: u64,
}

/// A subpartition far above its input's average bytes per subtask (see
/// [`conflux_adaptive::SKEW_FACTOR`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkewedSubpartitionReport {
    /// The consuming job vertex.
    pub vertex: String,
    /// The producing job vertex of the input.
    pub producer: String,
    /// The subpartition index.
    pub subpartition: u32,
    /// Its bytes, summed over producers.
    pub bytes: u64,
    /// The input's bytes per consumer subtask.
    pub average_bytes_per_task: u64,
}

/// A subpartition read by several subtasks (a `skew_splittable` consumer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkewSplitReport {
    /// The consuming job vertex.
    pub vertex: String,
    /// The subpartition index.
    pub subpartition: u32,
    /// Its bytes, summed over producers.
    pub bytes: u64,
    /// The subtasks reading it, each a range of producer partitions.
    pub pieces: u32,
}

/// What the run decided (job vertices in the order they were decided).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdaptiveReport {
    /// Execution vertices of the grown graph at the end.
    pub execution_vertices: u32,
    /// Job vertex id -> parallelism, for every vertex the job graph left undecided (`-1`).
    pub decided_parallelism: Vec<(String, u32)>,
    /// Job vertex id -> bytes read per subtask, for every initialised job vertex.
    pub bytes_per_task: Vec<(String, BytesPerTask)>,
    /// Every skewed subpartition found by a decision, largest first.
    pub skewed_subpartitions: Vec<SkewedSubpartitionReport>,
    /// Every subpartition split across subtasks, by vertex then subpartition.
    pub skew_splits: Vec<SkewSplitReport>,
}

impl AdaptiveReport {
    /// Collects the report from the scheduler at the end of a run. O(N log N) for the medians.
    pub(crate) fn collect(scheduler: &Scheduler, bytes: &ProducedBytes) -> AdaptiveReport {
        let graph = scheduler.graph();
        let job = graph.job_graph();
        let decided_parallelism = scheduler
            .decisions()
            .iter()
            .filter(|d| d.undecided)
            .map(|d| (job.vertex_id(d.job_vertex).to_owned(), d.parallelism))
            .collect();
        let mut bytes_per_task = Vec::new();
        for j in job.vertex_indices() {
            let p = graph.parallelism_of(j);
            if p == 0 {
                continue;
            }
            let mut read: Vec<u64> = (0..p).map(|k| bytes.read(scheduler, j, k)).collect();
            read.sort_unstable();
            let stats = BytesPerTask {
                min: read[0],
                median: read[(read.len() - 1) / 2],
                max: read[read.len() - 1],
            };
            bytes_per_task.push((job.vertex_id(j).to_owned(), stats));
        }
        let mut skewed_subpartitions: Vec<SkewedSubpartitionReport> = scheduler
            .decisions()
            .iter()
            .flat_map(|d| {
                d.skewed_subpartitions.iter().map(move |s| {
                    let edge = job.edge(job.inputs(d.job_vertex)[s.input]);
                    SkewedSubpartitionReport {
                        vertex: job.vertex_id(d.job_vertex).to_owned(),
                        producer: job.vertex_id(edge.source).to_owned(),
                        subpartition: s.subpartition,
                        bytes: s.bytes,
                        average_bytes_per_task: s.average_bytes_per_task,
                    }
                })
            })
            .collect();
        skewed_subpartitions.sort_by_key(|s| std::cmp::Reverse(s.bytes));
        let skew_splits = scheduler
            .decisions()
            .iter()
            .flat_map(|d| {
                d.split_subpartitions.iter().map(move |s| SkewSplitReport {
                    vertex: job.vertex_id(d.job_vertex).to_owned(),
                    subpartition: s.subpartition,
                    bytes: s.bytes,
                    pieces: s.pieces,
                })
            })
            .collect();
        AdaptiveReport {
            execution_vertices: graph.num_execution_vertices(),
            decided_parallelism,
            bytes_per_task,
            skewed_subpartitions,
            skew_splits,
        }
    }
}
