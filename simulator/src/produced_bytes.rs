//! The bytes simulated tasks write, for adaptive batch runs: seeded, so a run decides the same
//! parallelisms every time.
//!
//! A source reads its `source_bytes` (the job graph's, else [`BytesModel::source_bytes`]) spread
//! evenly over its subtasks; every other vertex passes on as many bytes as it read: a subtask of
//! a vertex decided at run time reads what its subpartition ranges hold (the scheduler's
//! [`VertexDecision::bytes_per_task`](conflux_scheduler::VertexDecision::bytes_per_task)), one
//! of a vertex built whole an even share of its inputs' totals. A task spreads its bytes over
//! the subpartitions of each data set a decision reads with Zipf weights of exponent
//! [`BytesModel::skew`] over a seeded ranking of the subpartitions (the same ranking for every
//! producer of the data set: a hot key is hot everywhere); 0 spreads them evenly.

use std::collections::HashMap;

use conflux_common::SplitMix64;
use conflux_graph::{ExecutionGraph, IntermediateDataSetIndex, JobVertexIndex};
use conflux_scheduler::Scheduler;

/// Default of [`BytesModel::source_bytes`]: 1 GiB per source vertex.
pub const DEFAULT_SOURCE_BYTES: u64 = 1 << 30;

/// How many bytes simulated tasks write.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BytesModel {
    /// The bytes every source vertex produces in all, over its subtasks, unless its job graph
    /// vertex says `source_bytes` (default [`DEFAULT_SOURCE_BYTES`]).
    pub source_bytes: u64,
    /// The Zipf exponent over subpartitions: 0 (default) spreads a task's bytes evenly, 1.0 gives
    /// the k-th hottest subpartition a weight of 1/k.
    pub skew: f64,
}

impl Default for BytesModel {
    fn default() -> Self {
        BytesModel {
            source_bytes: DEFAULT_SOURCE_BYTES,
            skew: 0.0,
        }
    }
}

/// The bytes of one simulated run (or of the synthetic tasks of a cluster run): per job vertex
/// the total it reads, per data set the Zipf weights (computed when first needed).
#[derive(Debug)]
pub struct ProducedBytes {
    model: BytesModel,
    seed: u64,
    /// Per job vertex, the bytes all its subtasks read together.
    total_in: Vec<u64>,
    /// Per data set, its subpartitions' weights in 2^-32 units, summing to about 2^32.
    weights: HashMap<IntermediateDataSetIndex, Vec<u64>>,
}

impl ProducedBytes {
    /// The totals of every job vertex, in topological order. O(V + E).
    pub fn new(graph: &ExecutionGraph, model: BytesModel, seed: u64) -> ProducedBytes {
        let job = graph.job_graph();
        let mut total_in = vec![0u64; job.vertices().len()];
        for j in job.vertex_indices() {
            let inputs = job.inputs(j);
            total_in[j.idx()] = if inputs.is_empty() {
                job.source_bytes(j).unwrap_or(model.source_bytes)
            } else {
                // Producers come first in topological order: their totals are known.
                inputs
                    .iter()
                    .map(|&e| total_in[job.edge(e).source.idx()])
                    .fold(0u64, u64::saturating_add)
            };
        }
        ProducedBytes {
            model,
            seed,
            total_in,
            weights: HashMap::new(),
        }
    }

    /// The bytes subtask `subtask` of `j` reads. O(decisions).
    pub fn read(&self, scheduler: &Scheduler, j: JobVertexIndex, subtask: u32) -> u64 {
        if let Some(d) = scheduler
            .decisions()
            .iter()
            .find(|d| d.job_vertex == j && !d.bytes_per_task.is_empty())
        {
            return d.bytes_per_task.get(subtask as usize).copied().unwrap_or(0);
        }
        let p = u64::from(scheduler.graph().parallelism_of(j).max(1));
        let total = self.total_in[j.idx()];
        total / p + u64::from(u64::from(subtask) < total % p)
    }

    /// What a finished subtask reports: per data set its vertex produces, the bytes per
    /// subpartition where a decision reads them (else empty). `None` when no decision reads
    /// any (a plain finish). O(subpartitions of those data sets).
    pub fn report(
        &mut self,
        scheduler: &Scheduler,
        j: JobVertexIndex,
        subtask: u32,
    ) -> Option<Vec<Vec<u64>>> {
        let produced = scheduler.graph().job_graph().produced_data_sets(j).to_vec();
        if produced
            .iter()
            .all(|&d| scheduler.subpartitions_of(d).is_none())
        {
            return None;
        }
        let read = self.read(scheduler, j, subtask);
        Some(
            produced
                .into_iter()
                .map(|d| match scheduler.subpartitions_of(d) {
                    Some(n) => self.spread(d, n, read),
                    None => Vec::new(),
                })
                .collect(),
        )
    }

    /// `bytes` over `n` subpartitions of `d` by its weights (see [`spread_bytes`]).
    fn spread(&mut self, d: IntermediateDataSetIndex, n: u32, bytes: u64) -> Vec<u64> {
        let (skew, seed) = (self.model.skew, self.seed);
        let weights = self
            .weights
            .entry(d)
            .or_insert_with(|| zipf_weights(n, skew, weights_seed(seed, d)));
        spread_by_weights(weights, bytes)
    }
}

/// The seed of a data set's subpartition ranking in a run of seed `seed`.
pub fn weights_seed(seed: u64, d: IntermediateDataSetIndex) -> u64 {
    seed ^ u64::from(d.0)
}

/// What one task writes: `bytes` over `n` subpartitions with Zipf weights of exponent `skew`
/// over the ranking drawn from `seed` ([`weights_seed`]); the rounding remainder goes to the
/// first subpartitions, so the result sums to `bytes` exactly. O(n). What a synthetic task of
/// the cluster reports, from the parameters its JobManager sends.
pub fn spread_bytes(bytes: u64, n: u32, skew: f64, seed: u64) -> Vec<u64> {
    spread_by_weights(&zipf_weights(n, skew, seed), bytes)
}

fn spread_by_weights(weights: &[u64], bytes: u64) -> Vec<u64> {
    let total: u128 = weights.iter().map(|&w| u128::from(w)).sum::<u128>().max(1);
    let mut out: Vec<u64> = weights
        .iter()
        .map(|&w| u64::try_from(u128::from(bytes) * u128::from(w) / total).unwrap_or(u64::MAX))
        .collect();
    let mut left = bytes.saturating_sub(out.iter().sum::<u64>());
    for b in &mut out {
        if left == 0 {
            break;
        }
        *b += 1;
        left -= 1;
    }
    out
}

/// Weights of `n` subpartitions, in 2^-32 units: the subpartition of rank k (a seeded
/// permutation) weighs `1 / (k + 1)^skew`.
fn zipf_weights(n: u32, skew: f64, seed: u64) -> Vec<u64> {
    let mut ranks: Vec<u32> = (0..n).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..ranks.len()).rev() {
        let j = rng.index(i + 1);
        ranks.swap(i, j);
    }
    ranks
        .into_iter()
        .map(|rank| {
            let w = (f64::from(rank) + 1.0).powf(-skew) * 4_294_967_296.0;
            // In (0, 2^32]: a weight is at most 1.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let w = w.round().max(1.0) as u64;
            w
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_weights_spread_exactly() {
        let w = zipf_weights(4, 0.0, 7);
        assert_eq!(w, vec![1 << 32; 4]);
    }

    /// With exponent 1 the hottest subpartition weighs 1, the next 1/2, ...; the ranking is a
    /// permutation.
    #[test]
    fn zipf_weights_are_a_permutation_of_one_over_k() {
        let mut w = zipf_weights(4, 1.0, 7);
        w.sort_unstable();
        assert_eq!(
            w,
            vec![1_073_741_824, 1_431_655_765, 2_147_483_648, 4_294_967_296]
        );
    }
}
