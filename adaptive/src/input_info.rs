//! Which partitions and subpartitions each consumer subtask reads, by subpartition counts alone:
//! as Flink 1.20's `VertexInputInfoComputationUtils` for a dynamic graph.

use std::fmt;

/// An inclusive range of indices `start..=end` (Flink's `IndexRange`): of producer partitions
/// (one partition per producer subtask) or of the subpartitions within each of them.
///
/// Invariant: `start <= end` (never empty).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IndexRange {
    /// The first index in the range.
    pub start: u32,
    /// The last index in the range (inclusive).
    pub end: u32,
}

impl IndexRange {
    /// The range `start..=end`.
    ///
    /// # Panics
    /// If `start > end`.
    pub fn new(start: u32, end: u32) -> Self {
        assert!(start <= end, "IndexRange {start}..={end} is empty");
        IndexRange { start, end }
    }

    /// The number of indices in the range (`end - start + 1`, at least 1).
    pub fn len(&self) -> u32 {
        self.end - self.start + 1
    }

    /// Always `false`: a range holds at least one index (here for clippy's `len` convention).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The indices of the range, as a `std::ops::RangeInclusive`.
    pub fn indices(&self) -> std::ops::RangeInclusive<u32> {
        self.start..=self.end
    }
}

impl fmt::Display for IndexRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {}]", self.start, self.end)
    }
}

/// What one consumer subtask reads from one consumed result (Flink's `ExecutionVertexInputInfo`):
/// the subpartitions `subpartition_range` of every producer partition in `partition_range`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExecutionVertexInputInfo {
    /// The consumer subtask, `0..parallelism`.
    pub subtask_index: u32,
    /// The producer partitions (producer subtask indices) read.
    pub partition_range: IndexRange,
    /// The subpartitions read within each of those partitions.
    pub subpartition_range: IndexRange,
}

/// The subpartitions that consumer `consumer_subtask_index` of `num_consumers` reads from a
/// partition of `num_subpartitions` subpartitions, spreading subpartitions evenly by count: consumer
/// `i` gets `i * n / c ..= (i + 1) * n / c - 1`. A broadcast partition is read whole by every
/// consumer from subpartition 0 (its subpartitions all carry the same records). As Flink 1.20's
/// `VertexInputInfoComputationUtils.computeConsumedSubpartitionRange` for a dynamic graph (the
/// index is taken modulo `num_consumers`, as Flink does).
///
/// # Panics
/// If `num_consumers == 0`, or (not broadcast) `num_consumers > num_subpartitions`.
pub fn compute_consumed_subpartition_range(
    consumer_subtask_index: u32,
    num_consumers: u32,
    num_subpartitions: u32,
    broadcast: bool,
) -> IndexRange {
    assert!(num_consumers > 0, "no consumers");
    if broadcast {
        return IndexRange::new(0, 0);
    }
    assert!(
        num_consumers <= num_subpartitions,
        "{num_consumers} consumers cannot share {num_subpartitions} subpartitions"
    );
    let consumer = u64::from(consumer_subtask_index % num_consumers);
    let (n, c) = (u64::from(num_subpartitions), u64::from(num_consumers));
    let start = consumer * n / c;
    let next_start = (consumer + 1) * n / c;
    // Both are at most `num_subpartitions`, so they fit in u32.
    IndexRange::new(narrow(start), narrow(next_start - 1))
}

/// Every consumer subtask's input from an ALL_TO_ALL result of `num_partitions` producer
/// partitions with `num_subpartitions` subpartitions each, read by `parallelism` consumers: all
/// partitions, and subpartitions spread evenly by count
/// ([`compute_consumed_subpartition_range`]). One entry per subtask, in subtask order. As Flink
/// 1.20's `computeVertexInputInfoForAllToAll` for a dynamic graph.
///
/// # Panics
/// If `num_partitions == 0`, `parallelism == 0`, or (not broadcast) `parallelism >
/// num_subpartitions`.
pub fn compute_vertex_input_info_for_all_to_all(
    num_partitions: u32,
    parallelism: u32,
    num_subpartitions: u32,
    broadcast: bool,
) -> Vec<ExecutionVertexInputInfo> {
    assert!(num_partitions > 0, "no producer partitions");
    let partition_range = IndexRange::new(0, num_partitions - 1);
    (0..parallelism)
        .map(|i| ExecutionVertexInputInfo {
            subtask_index: i,
            partition_range,
            subpartition_range: compute_consumed_subpartition_range(
                i,
                parallelism,
                num_subpartitions,
                broadcast,
            ),
        })
        .collect()
}

/// Every consumer subtask's input from a POINTWISE result of `num_partitions` producer
/// partitions with `num_subpartitions` subpartitions each, read by `parallelism` consumers. With
/// at least as many producers as consumers, consumer `i` reads whole partitions
/// `i * p / c ..= (i + 1) * p / c - 1` (all their subpartitions); with fewer, each partition is
/// read by a contiguous group of consumers, which split its subpartitions evenly by count. One
/// entry per subtask, in subtask order. As Flink 1.20's `computeVertexInputInfoForPointwise` for
/// a dynamic graph.
///
/// # Panics
/// If `num_partitions == 0`, `parallelism == 0`, or a partition's group of consumers is larger
/// than `num_subpartitions` (needs `ceil(parallelism / num_partitions) <= num_subpartitions`).
pub fn compute_vertex_input_info_for_pointwise(
    num_partitions: u32,
    parallelism: u32,
    num_subpartitions: u32,
) -> Vec<ExecutionVertexInputInfo> {
    assert!(
        num_partitions > 0 && parallelism > 0,
        "no producers or no consumers"
    );
    let (p, c) = (u64::from(num_partitions), u64::from(parallelism));
    let mut infos = Vec::with_capacity(usize::try_from(parallelism).unwrap_or(0));
    if p >= c {
        for index in 0..c {
            let start = index * p / c;
            let end = (index + 1) * p / c;
            infos.push(ExecutionVertexInputInfo {
                subtask_index: narrow(index),
                partition_range: IndexRange::new(narrow(start), narrow(end - 1)),
                subpartition_range: compute_consumed_subpartition_range(
                    0,
                    1,
                    num_subpartitions,
                    false,
                ),
            });
        }
    } else {
        for partition in 0..p {
            let start = (partition * c).div_ceil(p);
            let end = ((partition + 1) * c).div_ceil(p);
            let consumers = narrow(end - start);
            let partition_range = IndexRange::new(narrow(partition), narrow(partition));
            for i in start..end {
                infos.push(ExecutionVertexInputInfo {
                    subtask_index: narrow(i),
                    partition_range,
                    subpartition_range: compute_consumed_subpartition_range(
                        narrow(i),
                        consumers,
                        num_subpartitions,
                        false,
                    ),
                });
            }
        }
    }
    infos
}

/// Narrows a value known to be at most a `u32` input back to `u32`.
fn narrow(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}
