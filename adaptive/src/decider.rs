//! The decider: a vertex's parallelism and its subtasks' input ranges from produced bytes, as
//! Flink 1.20's `DefaultVertexParallelismAndInputInfosDecider`.

use std::borrow::Cow;

use conflux_graph::DistributionPattern;

use crate::decide_error::DecideError;
use crate::input_info::{
    compute_vertex_input_info_for_all_to_all, compute_vertex_input_info_for_pointwise,
    ExecutionVertexInputInfo, IndexRange,
};
use crate::options::BatchExecutionOptions;

/// The most subpartitions of one consumed result that one subtask may read (partitions x
/// subpartitions per partition), as Flink's `MAX_NUM_SUBPARTITIONS_PER_TASK_CONSUME` (32,768): it
/// raises the decided parallelism of very wide inputs and caps the length of balanced ranges.
pub const MAX_NUM_SUBPARTITIONS_PER_TASK_CONSUME: u32 = 32_768;

/// A subpartition is reported as skewed when its bytes exceed `SKEW_FACTOR` times the average
/// bytes per subtask of its input (the input's bytes / the decided parallelism). Beyond Flink
/// 1.20, which does not look for skew; 4 means one such subpartition alone makes a subtask read at
/// least four times its fair share.
pub const SKEW_FACTOR: u64 = 4;

/// One result a vertex consumes, as the decider sees it once all its producers have finished
/// (Flink's `BlockingResultInfo`): the edge's pattern, whether it is broadcast, the number of
/// producer partitions (the producer's parallelism) and the bytes of every subpartition summed
/// over all producer partitions.
///
/// Shapes: `bytes_per_subpartition.len()` is the number of subpartitions of every producer
/// partition (at least 1), in bytes; the caller adds a producer's per-subpartition bytes to it
/// as that producer finishes, and never needs a producer x subpartition matrix.
#[derive(Clone, Copy, Debug)]
pub struct ConsumedInput<'a> {
    /// ALL_TO_ALL or POINTWISE.
    pub pattern: DistributionPattern,
    /// A broadcast result: every consumer reads all of it, from subpartition 0 of each partition
    /// (its subpartitions all carry the same records). Only meaningful for ALL_TO_ALL.
    pub broadcast: bool,
    /// Producer partitions (producer subtasks), at least 1.
    pub num_partitions: u32,
    /// Bytes per subpartition index, summed over the `num_partitions` producer partitions.
    pub bytes_per_subpartition: &'a [u64],
}

impl<'a> ConsumedInput<'a> {
    /// An input of `num_partitions` producer partitions whose subpartitions' bytes, summed over
    /// producers, are `bytes_per_subpartition`.
    pub fn new(
        pattern: DistributionPattern,
        broadcast: bool,
        num_partitions: u32,
        bytes_per_subpartition: &'a [u64],
    ) -> Self {
        ConsumedInput {
            pattern,
            broadcast,
            num_partitions,
            bytes_per_subpartition,
        }
    }

    /// Subpartitions per producer partition (`bytes_per_subpartition.len()`, saturating at
    /// `u32::MAX`).
    pub fn num_subpartitions(&self) -> u32 {
        u32::try_from(self.bytes_per_subpartition.len()).unwrap_or(u32::MAX)
    }

    /// All the bytes the producers wrote to this result (the sum of `bytes_per_subpartition`),
    /// as Flink's `getNumBytesProduced`. For a broadcast result this is one copy: every consumer
    /// reads subpartition 0 only, so only its bytes count.
    pub fn num_bytes_produced(&self) -> u128 {
        if self.broadcast {
            self.bytes_per_subpartition
                .first()
                .map_or(0, |&b| u128::from(b))
        } else {
            self.bytes_per_subpartition
                .iter()
                .map(|&b| u128::from(b))
                .sum()
        }
    }

    fn is_pointwise(&self) -> bool {
        self.pattern == DistributionPattern::Pointwise
    }

    /// Partitions x subpartitions, as Flink's per-result term of `getMaxNumSubpartitions`.
    fn total_subpartitions(&self) -> u64 {
        u64::from(self.num_partitions) * self.bytes_per_subpartition.len() as u64
    }
}

/// The vertex being decided: its parallelism if fixed, and its own bounds (Flink's
/// `vertexInitialParallelism`, `vertexMinParallelism` and `vertexMaxParallelism`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VertexToDecide {
    /// `Some(p)`: the parallelism is fixed at `p` (the job graph gave one); the decider keeps it
    /// and only computes input ranges. `None`: `-1` in the job graph, decided from bytes.
    pub fixed_parallelism: Option<u32>,
    /// The vertex's own lower bound (Flink's dynamic source parallelism), 1 when it has none;
    /// raises the options' `min_parallelism`.
    pub min_parallelism: u32,
    /// The vertex's own max parallelism (its key-group count), at least 1: a decided
    /// parallelism never exceeds it.
    pub max_parallelism: u32,
}

impl VertexToDecide {
    /// An undecided vertex (`-1`) whose own max parallelism is `max_parallelism`.
    pub fn undecided(max_parallelism: u32) -> Self {
        VertexToDecide {
            fixed_parallelism: None,
            min_parallelism: 1,
            max_parallelism,
        }
    }

    /// A vertex whose parallelism is fixed at `parallelism`, with own max parallelism
    /// `max_parallelism`.
    pub fn fixed(parallelism: u32, max_parallelism: u32) -> Self {
        VertexToDecide {
            fixed_parallelism: Some(parallelism),
            min_parallelism: 1,
            max_parallelism,
        }
    }
}

/// A subpartition far above its input's average bytes per subtask (see [`SKEW_FACTOR`]):
/// reported, not split (beyond Flink 1.20).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkewedSubpartition {
    /// The input, as an index into the `inputs` given to the decider.
    pub input: usize,
    /// The subpartition index (the same in every producer partition).
    pub subpartition: u32,
    /// Its bytes, summed over the producer partitions.
    pub bytes: u64,
    /// The input's bytes divided by the decided parallelism (rounded down).
    pub average_bytes_per_task: u64,
}

/// The decision (Flink's `ParallelismAndInputInfos`) plus the skew report.
///
/// Shapes: `input_infos[i]` belongs to `inputs[i]` and has `parallelism` entries, entry `k`
/// for subtask `k`. Empty for a source (no inputs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParallelismAndInputInfos {
    /// The decided (or kept fixed) parallelism, at least 1.
    pub parallelism: u32,
    /// Per input, per subtask: the partitions and subpartitions that subtask reads.
    pub input_infos: Vec<Vec<ExecutionVertexInputInfo>>,
    /// Subpartitions of non-broadcast ALL_TO_ALL inputs above [`SKEW_FACTOR`] times their
    /// input's average bytes per subtask, by input then subpartition. POINTWISE inputs are not
    /// examined: their sums over producers do not tell which subtask reads the bytes.
    pub skewed_subpartitions: Vec<SkewedSubpartition>,
}

/// Decides the parallelism of `vertex` and what each of its subtasks reads from each of
/// `inputs`, as Flink 1.20's `DefaultVertexParallelismAndInputInfosDecider`:
///
/// - No inputs (a source): the fixed parallelism, or
///   [`BatchExecutionOptions::source_parallelism`].
/// - Bounds: `[max(options.min, vertex.min), options.max]`; for an undecided vertex both are
///   lowered to the vertex's own max parallelism where it is below them.
/// - Undecided, all inputs ALL_TO_ALL and not all broadcast ("evenly distribute data"): the
///   non-broadcast inputs' bytes are added per subpartition index and cut greedily into
///   contiguous ranges of at most `avg_data_volume_per_task` bytes (and at most
///   `32768 / max partitions` subpartitions); the number of ranges is the parallelism. If it
///   falls outside the bounds, the byte limit is bisected for the closest legal parallelism
///   (the smallest limit giving it, so the ranges are as even as possible); if none exists, the
///   next rule applies.
/// - Otherwise ("evenly distribute subpartitions"): the fixed parallelism, or
///   `ceil(non-broadcast bytes / avg_data_volume_per_task)` raised to
///   `ceil(max partitions x subpartitions / 32768)` and clamped to the bounds (the minimum if all
///   inputs are broadcast); then ALL_TO_ALL subtasks get all partitions and an even share of
///   subpartitions by count, POINTWISE ones whole partitions, or with fewer producers than
///   consumers a share of one partition's subpartitions (see
///   [`compute_vertex_input_info_for_pointwise`]).
/// - Broadcast inputs never count toward the parallelism or the balancing (Flink 1.17 to 1.20
///   dropped the 1.15/1.16 share capped at half of `avg_data_volume_per_task`, assuming
///   broadcast data small); every subtask reads all their partitions, subpartition 0 only.
///
/// A fixed parallelism is kept and gets ranges even by subpartition count, as Flink 1.20 does.
/// Skew (beyond Flink) is reported in
/// [`ParallelismAndInputInfos::skewed_subpartitions`].
///
/// Cost: O(inputs x subpartitions x log(total bytes)) time for the bisection, O(subpartitions)
/// extra memory when several non-broadcast inputs are merged; no per-producer work.
///
/// # Errors
/// [`DecideError`] for invalid options, vertex bounds or input shapes. Never panics.
pub fn decide_parallelism_and_input_infos(
    options: &BatchExecutionOptions,
    vertex: &VertexToDecide,
    inputs: &[ConsumedInput<'_>],
) -> Result<ParallelismAndInputInfos, DecideError> {
    options.validate()?;
    validate_vertex(vertex)?;
    for (input, info) in inputs.iter().enumerate() {
        if info.num_partitions == 0 || info.bytes_per_subpartition.is_empty() {
            return Err(DecideError::EmptyInput { input });
        }
    }

    if inputs.is_empty() {
        let parallelism = vertex
            .fixed_parallelism
            .unwrap_or_else(|| options.source_parallelism(vertex.max_parallelism));
        return Ok(ParallelismAndInputInfos {
            parallelism,
            input_infos: Vec::new(),
            skewed_subpartitions: Vec::new(),
        });
    }

    let undecided = vertex.fixed_parallelism.is_none();
    let mut min = options.min_parallelism.max(vertex.min_parallelism);
    let mut max = options.max_parallelism;
    if undecided {
        min = min.min(vertex.max_parallelism);
        max = max.min(vertex.max_parallelism);
    }
    if max < min {
        return Err(DecideError::InvalidVertex(
            "its min parallelism is above the max parallelism of the options",
        ));
    }

    let all_to_all = inputs.iter().all(|i| !i.is_pointwise());
    let all_broadcast = inputs.iter().all(|i| i.broadcast);
    let mut decision = None;
    if undecided && all_to_all && !all_broadcast {
        decision = evenly_distribute_data(options, inputs, min, max)?;
    }
    let decision = match decision {
        Some(decision) => decision,
        None => {
            let parallelism = match vertex.fixed_parallelism {
                Some(p) => p,
                None => decide_parallelism(options, inputs, min, max),
            };
            evenly_distribute_subpartitions(inputs, parallelism)?
        }
    };
    Ok(with_skew(decision, inputs))
}

fn validate_vertex(vertex: &VertexToDecide) -> Result<(), DecideError> {
    let broken = if vertex.max_parallelism == 0 {
        Some("max parallelism must be at least 1")
    } else if vertex.min_parallelism == 0 {
        Some("min parallelism must be at least 1")
    } else if vertex.fixed_parallelism == Some(0) {
        Some("a fixed parallelism must be at least 1")
    } else if vertex
        .fixed_parallelism
        .is_some_and(|p| p > vertex.max_parallelism)
    {
        Some("its fixed parallelism is above its max parallelism")
    } else if vertex.min_parallelism > vertex.max_parallelism {
        Some("its min parallelism is above its max parallelism")
    } else {
        None
    };
    match broken {
        Some(rule) => Err(DecideError::InvalidVertex(rule)),
        None => Ok(()),
    }
}

/// Flink's `decideParallelism`: from the non-broadcast bytes, clamped to `[min, max]`.
fn decide_parallelism(
    options: &BatchExecutionOptions,
    inputs: &[ConsumedInput<'_>],
    min: u32,
    max: u32,
) -> u32 {
    let non_broadcast = || inputs.iter().filter(|i| !i.broadcast);
    if non_broadcast().next().is_none() {
        return min;
    }
    let total: u128 = non_broadcast().map(ConsumedInput::num_bytes_produced).sum();
    let by_bytes = total.div_ceil(u128::from(options.avg_data_volume_per_task));
    let widest = non_broadcast()
        .map(ConsumedInput::total_subpartitions)
        .max()
        .unwrap_or(0);
    let by_subpartitions =
        u128::from(widest.div_ceil(u64::from(MAX_NUM_SUBPARTITIONS_PER_TASK_CONSUME)));
    let parallelism = by_bytes.max(by_subpartitions);
    u32::try_from(parallelism.clamp(u128::from(min), u128::from(max))).unwrap_or(max)
}

/// Flink's `decideParallelismAndEvenlyDistributeSubpartitions` once the parallelism is known.
fn evenly_distribute_subpartitions(
    inputs: &[ConsumedInput<'_>],
    parallelism: u32,
) -> Result<ParallelismAndInputInfos, DecideError> {
    let mut input_infos = Vec::with_capacity(inputs.len());
    for (index, input) in inputs.iter().enumerate() {
        let subpartitions = input.num_subpartitions();
        let infos = if input.is_pointwise() {
            let partitions = input.num_partitions;
            if partitions < parallelism && parallelism.div_ceil(partitions) > subpartitions {
                return Err(DecideError::TooFewSubpartitions {
                    input: index,
                    subpartitions,
                    consumers: parallelism.div_ceil(partitions),
                });
            }
            compute_vertex_input_info_for_pointwise(partitions, parallelism, subpartitions)
        } else {
            if !input.broadcast && parallelism > subpartitions {
                return Err(DecideError::TooFewSubpartitions {
                    input: index,
                    subpartitions,
                    consumers: parallelism,
                });
            }
            compute_vertex_input_info_for_all_to_all(
                input.num_partitions,
                parallelism,
                subpartitions,
                input.broadcast,
            )
        };
        input_infos.push(infos);
    }
    Ok(ParallelismAndInputInfos {
        parallelism,
        input_infos,
        skewed_subpartitions: Vec::new(),
    })
}

/// Flink's `decideParallelismAndEvenlyDistributeData`: `None` when no legal parallelism
/// balances the bytes (the caller falls back to evenly distributing subpartitions).
fn evenly_distribute_data(
    options: &BatchExecutionOptions,
    inputs: &[ConsumedInput<'_>],
    min: u32,
    max: u32,
) -> Result<Option<ParallelismAndInputInfos>, DecideError> {
    let mut non_broadcast = inputs.iter().enumerate().filter(|(_, i)| !i.broadcast);
    let Some((_, first)) = non_broadcast.next() else {
        return Ok(None);
    };
    let expected = first.num_subpartitions();
    let mut max_partitions = first.num_partitions;
    let mut bytes: Cow<'_, [u64]> = Cow::Borrowed(first.bytes_per_subpartition);
    for (index, input) in non_broadcast {
        if input.num_subpartitions() != expected {
            return Err(DecideError::SubpartitionCountsDiffer {
                expected,
                input: index,
                found: input.num_subpartitions(),
            });
        }
        max_partitions = max_partitions.max(input.num_partitions);
        for (sum, &b) in bytes.to_mut().iter_mut().zip(input.bytes_per_subpartition) {
            *sum = sum.saturating_add(b);
        }
    }
    let bytes = &*bytes;
    let cut = GreedyCut::new(
        bytes,
        MAX_NUM_SUBPARTITIONS_PER_TASK_CONSUME / max_partitions,
    );
    // Counting stops past `max + 1` ranges: every test below only asks how a count compares
    // with `min` and `max`, or whether it equals a count that is itself at most `max + 1`.
    let cap = max.saturating_add(1);
    let count = |limit: i128| cut.count(limit, cap);

    let initial_limit = i128::from(options.avg_data_volume_per_task);
    let mut limit = initial_limit;
    let parallelism = count(limit);
    if parallelism < min || parallelism > max {
        let min_limit = i128::from(bytes.iter().copied().min().unwrap_or(0));
        let max_limit: i128 = bytes.iter().map(|&b| i128::from(b)).sum();
        if parallelism < min {
            // Too few ranges: the largest limit still giving at least `min` ranges, then the
            // smallest limit giving that same count (the most even ranges).
            limit = find_max_legal_value(|l| count(l) >= min, min_limit, initial_limit);
            let closest = count(limit);
            limit = find_min_legal_value(|l| count(l) == closest, min_limit, limit);
        } else {
            // Too many: the smallest limit giving at most `max` ranges.
            limit = find_min_legal_value(|l| count(l) <= max, initial_limit, max_limit);
        }
        let adjusted = count(limit);
        if adjusted < min || adjusted > max {
            return Ok(None);
        }
    }
    let ranges = cut.ranges(limit);
    let parallelism = u32::try_from(ranges.len()).unwrap_or(u32::MAX);
    let input_infos = inputs
        .iter()
        .map(|input| {
            let partition_range = IndexRange::new(0, input.num_partitions - 1);
            ranges
                .iter()
                .zip(0u32..)
                .map(|(&range, subtask_index)| ExecutionVertexInputInfo {
                    subtask_index,
                    partition_range,
                    subpartition_range: if input.broadcast {
                        IndexRange::new(0, 0)
                    } else {
                        range
                    },
                })
                .collect()
        })
        .collect();
    Ok(Some(ParallelismAndInputInfos {
        parallelism,
        input_infos,
        skewed_subpartitions: Vec::new(),
    }))
}

/// Flink's greedy cut of the subpartition sums into contiguous ranges (`computeSubpartitionRanges`
/// and `computeParallelism`): a range always takes its first subpartition, then the next ones
/// while its bytes stay within the limit and its length within `max_range_size`. Both conditions
/// are monotone along the range, so its end is found by binary search over prefix sums: O(ranges
/// x log subpartitions) per limit instead of a walk over every subpartition.
struct GreedyCut {
    /// `prefix[i]`: the bytes of subpartitions `0..i`; `len` is subpartitions + 1.
    prefix: Vec<i128>,
    /// At least 1 (Flink's limit of 0 leaves one subpartition per range).
    max_range_size: usize,
}

impl GreedyCut {
    fn new(bytes: &[u64], max_range_size: u32) -> Self {
        let mut prefix = Vec::with_capacity(bytes.len() + 1);
        let mut sum = 0i128;
        prefix.push(sum);
        for &b in bytes {
            sum += i128::from(b);
            prefix.push(sum);
        }
        let max_range_size = usize::try_from(max_range_size.max(1)).unwrap_or(usize::MAX);
        GreedyCut {
            prefix,
            max_range_size,
        }
    }

    fn subpartitions(&self) -> usize {
        self.prefix.len() - 1
    }

    /// The last subpartition of the range that starts at `start` (< subpartitions).
    fn end_of_range(&self, start: usize, limit: i128) -> usize {
        let last = self.subpartitions() - 1;
        let by_size = start.saturating_add(self.max_range_size - 1).min(last);
        let bound = self.prefix[start] + limit;
        // Candidates `start + 1 ..= by_size` join while `prefix[j + 1] <= bound`.
        start + self.prefix[start + 2..=by_size + 1].partition_point(|&p| p <= bound)
    }

    /// The number of ranges for `limit`, or `cap` when there are at least `cap` of them.
    fn count(&self, limit: i128, cap: u32) -> u32 {
        let mut count = 0u32;
        let mut start = 0usize;
        while start < self.subpartitions() {
            count += 1;
            if count >= cap {
                return cap;
            }
            start = self.end_of_range(start, limit) + 1;
        }
        count
    }

    /// The ranges for `limit`.
    fn ranges(&self, limit: i128) -> Vec<IndexRange> {
        let mut ranges = Vec::new();
        let mut start = 0usize;
        while start < self.subpartitions() {
            let end = self.end_of_range(start, limit);
            ranges.push(range(start, end));
            start = end + 1;
        }
        ranges
    }
}

fn range(start: usize, end: usize) -> IndexRange {
    IndexRange::new(
        u32::try_from(start).unwrap_or(u32::MAX),
        u32::try_from(end).unwrap_or(u32::MAX),
    )
}

/// The smallest value in `low..=high` that `legal` accepts, `legal` being monotone (false then
/// true); -1 when even `high` is illegal. As Flink's `BisectionSearchUtils.findMinLegalValue`.
fn find_min_legal_value(legal: impl Fn(i128) -> bool, mut low: i128, mut high: i128) -> i128 {
    if !legal(high) {
        return -1;
    }
    while low <= high {
        let mid = (low + high).div_euclid(2);
        if legal(mid) {
            high = mid - 1;
        } else {
            low = mid + 1;
        }
    }
    high + 1
}

/// The largest value in `low..=high` that `legal` accepts, `legal` being monotone (true then
/// false); -1 when even `low` is illegal. As Flink's `BisectionSearchUtils.findMaxLegalValue`.
fn find_max_legal_value(legal: impl Fn(i128) -> bool, mut low: i128, mut high: i128) -> i128 {
    if !legal(low) {
        return -1;
    }
    while low <= high {
        let mid = (low + high).div_euclid(2);
        if legal(mid) {
            low = mid + 1;
        } else {
            high = mid - 1;
        }
    }
    low - 1
}

/// Adds the skew report: subpartitions of non-broadcast ALL_TO_ALL inputs whose bytes exceed
/// [`SKEW_FACTOR`] times the input's bytes per subtask.
fn with_skew(
    mut decision: ParallelismAndInputInfos,
    inputs: &[ConsumedInput<'_>],
) -> ParallelismAndInputInfos {
    for (index, input) in inputs.iter().enumerate() {
        if input.broadcast || input.is_pointwise() {
            continue;
        }
        let average = input.num_bytes_produced() / u128::from(decision.parallelism);
        let threshold = average.saturating_mul(u128::from(SKEW_FACTOR));
        for (subpartition, &bytes) in (0u32..).zip(input.bytes_per_subpartition) {
            if u128::from(bytes) > threshold {
                decision.skewed_subpartitions.push(SkewedSubpartition {
                    input: index,
                    subpartition,
                    bytes,
                    average_bytes_per_task: u64::try_from(average).unwrap_or(u64::MAX),
                });
            }
        }
    }
    decision
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Flink's greedy cut as written, one subpartition at a time: the reference.
    fn reference_ranges(bytes: &[u64], limit: i128, max_range_size: u32) -> Vec<IndexRange> {
        let mut ranges = Vec::new();
        let mut sum = 0i128;
        let mut start = 0usize;
        for (i, &b) in bytes.iter().enumerate() {
            let fits =
                sum + i128::from(b) <= limit && (i - start + 1) as u64 <= u64::from(max_range_size);
            if i == start || fits {
                sum += i128::from(b);
            } else {
                ranges.push(range(start, i - 1));
                start = i;
                sum = i128::from(b);
            }
        }
        ranges.push(range(start, bytes.len() - 1));
        ranges
    }

    proptest! {
        /// The binary-searched cut equals Flink's walk, and counting stops at `cap`.
        #[test]
        fn greedy_cut_agrees_with_the_reference(
            bytes in prop::collection::vec(prop_oneof![0u64..100, Just(0u64)], 1..200),
            limit in -1i128..400,
            max_range_size in 0u32..20,
            cap in 1u32..50,
        ) {
            let expected = reference_ranges(&bytes, limit, max_range_size);
            let cut = GreedyCut::new(&bytes, max_range_size);
            prop_assert_eq!(cut.ranges(limit), expected.clone());
            let full = u32::try_from(expected.len()).unwrap();
            prop_assert_eq!(cut.count(limit, u32::MAX), full);
            prop_assert_eq!(cut.count(limit, cap), full.min(cap));
        }

        /// The bisections find the boundary of a monotone predicate, or -1, as Flink's
        /// `BisectionSearchUtils`.
        #[test]
        fn bisection_finds_the_boundary(low in 0i128..1_000, span in 0i128..1_000, at in 0i128..2_500) {
            let high = low + span;
            let min = find_min_legal_value(|v| v >= at, low, high);
            let expected_min = if at > high { -1 } else { at.max(low) };
            prop_assert_eq!(min, expected_min);
            let max = find_max_legal_value(|v| v <= at, low, high);
            let expected_max = if at < low { -1 } else { at.min(high) };
            prop_assert_eq!(max, expected_max);
        }
    }
}
