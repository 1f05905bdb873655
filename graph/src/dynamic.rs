//! Which job vertices an adaptive batch run initialises late: the dynamic suffix of the
//! topological order.
//!
//! An undecided vertex (`-1`) with inputs is decided once all its producers have finished (as
//! Flink's `AdaptiveBatchScheduler`), so it and every vertex after it in topological order are
//! initialised one at a time, in that order, by
//! [`ExecutionGraph::initialize_next`](crate::ExecutionGraph::initialize_next): the graph grows
//! at its end and nothing is renumbered. A later fixed vertex waits for its turn too, which keeps
//! the index ranges append-only; it never waits on a vertex that depends on it, so the order
//! cannot deadlock. Undecided sources are decided when the job starts (no bytes to wait for).

use crate::{GraphError, JobGraph, JobVertexIndex};

/// The first vertex of the dynamic suffix: the first undecided vertex (topological order) that
/// has inputs; `None` when there is none (a static job, or only undecided sources). O(V + E).
///
/// # Errors
/// [`GraphError::NotDynamic`] naming the first vertex of the suffix that cannot be initialised
/// on its own: one with a must-be-pipelined input or output edge (its pipelined region would
/// span vertices initialised at different times) or with a co-location group. A caller may then
/// fix the undecided vertices at their estimate instead
/// ([`JobGraph::fix_undecided`]).
pub fn first_dynamic_vertex(job: &JobGraph) -> Result<Option<JobVertexIndex>, GraphError> {
    let Some(first) = job
        .vertex_indices()
        .find(|&j| job.vertex(j).undecided && !job.inputs(j).is_empty())
    else {
        return Ok(None);
    };
    for j in (first.idx()..job.vertices().len()).map(|j| JobVertexIndex(crate::index_u32(j))) {
        let reason = if job.co_location_group(j).is_some() {
            Some("it is in a co-location group")
        } else if job
            .inputs(j)
            .iter()
            .any(|&e| !job.edge(e).result_partition_type.is_region_boundary())
            || job
                .produced_data_sets(j)
                .iter()
                .any(|&d| !job.data_set(d).result_partition_type.is_region_boundary())
        {
            Some("it has a pipelined input or output")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(GraphError::NotDynamic {
                vertex: job.vertex_id(j).to_owned(),
                reason,
            });
        }
    }
    Ok(Some(first))
}
