//! What a job graph expands to, counted from the job graph alone: execution vertices,
//! partitions, consumed partition groups, an upper bound of the scheduling regions, and the
//! heap bytes the [`ExecutionGraph`](crate::ExecutionGraph) and its
//! [`PipelinedRegions`](crate::PipelinedRegions) will take, as their own
//! `heap_bytes` count them. O(V + E) time and memory, without expanding anything: a JobManager
//! decides from it whether a job fits its memory budget before it allocates anything for it.

use std::mem::size_of;

use crate::{DistributionPattern, EdgeConnection, JobEdgeIndex, JobGraph, LogicalPipelinedRegions};

/// The sizes of a job's expansion, each an exact count except
/// [`max_regions`](Self::max_regions), an upper bound. Counts are `u64`: a job too large for
/// the graph's `u32` indices is still counted (and refused by its size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpansionEstimate {
    /// Job vertices, V.
    pub job_vertices: u64,
    /// Execution vertices (subtasks), N: the sum of the parallelisms (an undecided vertex at
    /// its estimate).
    pub execution_vertices: u64,
    /// Intermediate result partitions: per data set, its producer's parallelism.
    pub partitions: u64,
    /// Consumed partition groups: per job edge 1 (ALL_TO_ALL) or `min(U, D)` (POINTWISE).
    pub groups: u64,
    /// Partitions over all consumed partition groups (a partition counted once per edge that
    /// consumes it): per job edge, its producer's parallelism U. What a descriptor cache
    /// holding every group at once holds.
    pub group_partitions: u64,
    /// Consumer subtasks over all job edges (D per edge): a bound of the consumed groups
    /// listed per region.
    pub edge_consumers: u64,
    /// At most this many scheduling regions: per logical region, 1 when an ALL_TO_ALL edge
    /// joins two of its vertices, else the sum of its members' parallelisms (exact for a
    /// logical region of one vertex, the usual case of a blocking job).
    pub max_regions: u64,
    /// Heap bytes of the execution graph, job graph included, as
    /// [`ExecutionGraph::heap_bytes`](crate::ExecutionGraph::heap_bytes) counts them (vectors at their exact lengths).
    pub execution_graph_bytes: u64,
    /// Heap bytes of the regions with [`max_regions`](Self::max_regions) regions, as
    /// [`PipelinedRegions::heap_bytes`](crate::PipelinedRegions::heap_bytes) counts them.
    pub regions_bytes: u64,
}

impl ExpansionEstimate {
    /// Counts what `job` expands to. O(V + E) time and memory (the logical regions are
    /// computed; nothing per subtask is).
    pub fn of(job: &JobGraph) -> ExpansionEstimate {
        let u32_bytes = size_of::<u32>() as u64;
        let parallelism = |j: crate::JobVertexIndex| u64::from(job.vertex(j).parallelism);
        let execution_vertices: u64 = job
            .vertices()
            .iter()
            .map(|v| u64::from(v.parallelism))
            .sum();
        let partitions: u64 = job
            .data_sets()
            .iter()
            .map(|d| parallelism(d.producer))
            .sum();
        let mut groups = 0u64;
        let mut group_partitions = 0u64;
        let mut edge_consumers = 0u64;
        for e in job.edges() {
            let (u, d) = (parallelism(e.source), parallelism(e.target));
            groups += match e.distribution_pattern {
                DistributionPattern::AllToAll => 1,
                DistributionPattern::Pointwise => u.min(d),
            };
            group_partitions += u;
            edge_consumers += d;
        }
        let logical = LogicalPipelinedRegions::compute(job);
        let max_regions: u64 = (0..logical.len())
            .map(|r| {
                let r = crate::LogicalRegionIndex(crate::index_u32(r));
                if logical.has_internal_all_to_all(r) {
                    1
                } else {
                    logical.members(r).map(parallelism).sum()
                }
            })
            .sum();
        let (v, e) = (job.vertices().len() as u64, job.edges().len() as u64);
        // As `ExecutionGraph::heap_bytes`: vertex offsets (V + 1), partition starts (one per
        // data set), one connection per edge and the edges sorted by group.
        let execution_graph_bytes = job.heap_bytes() as u64
            + (v + 1 + job.data_sets().len() as u64) * u32_bytes
            + e * (size_of::<EdgeConnection>() + size_of::<JobEdgeIndex>()) as u64;
        // As `PipelinedRegions::heap_bytes`: region of each subtask, members, region offsets;
        // and the logical regions.
        let regions_bytes =
            (2 * execution_vertices + max_regions + 1) * u32_bytes + logical.heap_bytes() as u64;
        ExpansionEstimate {
            job_vertices: v,
            execution_vertices,
            partitions,
            groups,
            group_partitions,
            edge_consumers,
            max_regions,
            execution_graph_bytes,
            regions_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{generate, ExecutionGraph, PipelinedRegions, ResultPartitionType};

    /// Counts equal the built graph's; the byte figures bound its own accounting from above,
    /// by little.
    fn check(job: &JobGraph) {
        let estimate = ExpansionEstimate::of(job);
        let graph = ExecutionGraph::build(job.clone()).unwrap();
        let regions = PipelinedRegions::compute(&graph).unwrap();
        assert_eq!(
            estimate.execution_vertices,
            u64::from(graph.num_execution_vertices())
        );
        assert_eq!(estimate.partitions, u64::from(graph.num_partitions()));
        assert_eq!(estimate.groups, u64::from(graph.num_groups()));
        assert!(estimate.max_regions >= regions.len() as u64);
        let graph_bytes = graph.heap_bytes() as u64;
        assert!(
            estimate.execution_graph_bytes >= graph_bytes
                && estimate.execution_graph_bytes <= graph_bytes * 2,
            "{} estimated, {graph_bytes} counted",
            estimate.execution_graph_bytes
        );
        let regions_bytes = regions.heap_bytes() as u64;
        assert!(
            estimate.regions_bytes >= regions_bytes,
            "{} estimated, {regions_bytes} counted",
            estimate.regions_bytes
        );
    }

    #[test]
    fn counts_are_those_of_the_built_graph() {
        for t in [
            ResultPartitionType::Blocking,
            ResultPartitionType::Pipelined,
        ] {
            check(&JobGraph::from_json(&generate::word_count(100, t)).unwrap());
        }
        let components = crate::load::load(
            generate::components_json(1_000, 4).as_bytes(),
            &Default::default(),
        )
        .unwrap();
        check(&components);
        let pointwise = r#"{"job_type": "batch", "vertices": [
            {"id": "a", "parallelism": 7}, {"id": "b", "parallelism": 3},
            {"id": "c", "parallelism": 10}],
          "edges": [
            {"source": "a", "target": "b", "distribution_pattern": "pointwise",
             "result_partition_type": "blocking"},
            {"source": "b", "target": "c", "distribution_pattern": "pointwise",
             "result_partition_type": "pipelined"}]}"#;
        let job = crate::load::load(pointwise.as_bytes(), &Default::default()).unwrap();
        let estimate = ExpansionEstimate::of(&job);
        assert_eq!(
            (
                estimate.execution_vertices,
                estimate.partitions,
                estimate.groups
            ),
            (20, 10, 3 + 3)
        );
        // a: 7 regions; b and c pipelined pointwise: at most 3 + 10 (3 in fact).
        assert_eq!(estimate.max_regions, 7 + 13);
        check(&job);
    }

    /// The 95-byte job of 2^26 subtasks is counted in O(1) memory.
    #[test]
    fn a_huge_parallelism_is_counted_not_expanded() {
        let job = br#"{"job_type":"batch","vertices":[{"id":"a","parallelism":67108864,"max_parallelism":67108864}]}"#;
        let job = crate::load::load(job, &Default::default()).unwrap();
        let estimate = ExpansionEstimate::of(&job);
        assert_eq!(estimate.execution_vertices, 1 << 26);
        assert_eq!(estimate.max_regions, 1 << 26);
        // Region of each subtask, members and offsets: 12 bytes per subtask.
        assert!(estimate.regions_bytes >= 12 << 26);
    }
}
