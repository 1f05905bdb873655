//! Which tasks restart after a failure, and when.
//!
//! [`tasks_to_restart`] is Flink's `RestartPipelinedRegionFailoverStrategy` (FLINK-21331): a
//! breadth-first search over regions from the failed one, expanding each consumed and each
//! consumer group once, so an all-to-all edge costs O(N) however many regions it joins.
//! [`RestartStrategy`] is Flink's restart back-off (`restart-strategy.*`).

use std::collections::VecDeque;

use conflux_graph::{
    ExecutionGraph, ExecutionVertexIndex, IntermediateResultPartitionId, PipelinedRegionIndex,
    PipelinedRegions, ResultPartitionType,
};

/// `jobmanager.execution.failover-strategy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailoverStrategy {
    /// Restart the pipelined regions a failure touches (Flink's default, `region`).
    #[default]
    Region,
    /// Restart every task (`full`).
    Full,
}

/// Whether a partition can still be read: Flink's availability check, minus the type rule
/// (applied by [`tasks_to_restart`]).
pub trait PartitionAvailability {
    /// Whether the current producer attempt's partition is still held (not lost, not released).
    fn is_tracked(&self, partition: IntermediateResultPartitionId) -> bool;
}

/// The vertices to restart when `failed` fails, before Flink's filter of CREATED vertices
/// (applied by the caller, who knows states). `failed_partition` is a partition the cause names
/// (partition not found): unavailable for this decision.
///
/// Region strategy: the failed region; every consumer region of a restarted region's partitions,
/// whatever the type; the producer region of every consumed partition that is not available,
/// where PIPELINED, PIPELINED_BOUNDED and HYBRID_SELECTIVE (not reconsumable) are never
/// available. Each group is expanded once. Time O(N + groups + partitions reached); regions
/// come out in index (topological) order, vertices ascending.
pub fn tasks_to_restart(
    graph: &ExecutionGraph,
    regions: &PipelinedRegions,
    strategy: FailoverStrategy,
    failed: ExecutionVertexIndex,
    failed_partition: Option<IntermediateResultPartitionId>,
    availability: &dyn PartitionAvailability,
) -> Vec<ExecutionVertexIndex> {
    if strategy == FailoverStrategy::Full {
        return (0..graph.num_execution_vertices())
            .map(ExecutionVertexIndex)
            .collect();
    }
    let available = |p: IntermediateResultPartitionId, t: ResultPartitionType| {
        Some(p) != failed_partition
            && (t.is_reconsumable() || t == ResultPartitionType::PipelinedApproximate)
            && availability.is_tracked(p)
    };
    let mut region_visited = vec![false; regions.len()];
    let mut group_visited = vec![false; graph.num_groups() as usize];
    let mut consumer_group_visited = vec![false; graph.num_groups() as usize];
    let mut queue = VecDeque::new();
    let start = regions.region_of(failed);
    region_visited[start.idx()] = true;
    queue.push_back(start);
    while let Some(region) = queue.pop_front() {
        let mut enqueue = |r: PipelinedRegionIndex, queue: &mut VecDeque<PipelinedRegionIndex>| {
            if !region_visited[r.idx()] {
                region_visited[r.idx()] = true;
                queue.push_back(r);
            }
        };
        for v in regions.members(region) {
            // Upstream: producers of unavailable consumed partitions.
            for g in graph.consumed_partition_groups(v) {
                if std::mem::replace(&mut group_visited[g.0 as usize], true) {
                    continue;
                }
                let group = graph.consumed_partition_group(g);
                for p in group.partitions.clone() {
                    let partition = IntermediateResultPartitionId {
                        result: group.result,
                        partition: p,
                    };
                    if !available(partition, group.result_partition_type) {
                        enqueue(regions.region_of(graph.producer_of(partition)), &mut queue);
                    }
                }
            }
            // Downstream: every consumer of every produced partition.
            for partition in graph.produced_partitions(v) {
                for cvg in graph.consumer_vertex_groups(partition) {
                    if std::mem::replace(&mut consumer_group_visited[cvg.0 as usize], true) {
                        continue;
                    }
                    let group = graph.consumer_vertex_group(cvg);
                    let first = graph.execution_vertices_of(group.job_vertex).start;
                    let mut last = None;
                    for s in group.subtasks {
                        let r = regions.region_of(ExecutionVertexIndex(first + s));
                        if last != Some(r) {
                            enqueue(r, &mut queue);
                            last = Some(r);
                        }
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    for (r, visited) in region_visited.iter().enumerate() {
        if *visited {
            out.extend(regions.members(PipelinedRegionIndex(crate::topology::index_u32(r))));
        }
    }
    out.sort_unstable();
    out
}

/// Flink's restart strategies (`restart-strategy.type`), with their defaults in Flink 1.20.
/// Jitter is left out so that runs replay exactly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RestartStrategy {
    /// Never restart: the first failure fails the job.
    None,
    /// Up to `attempts` restarts, each after `delay_ms`.
    FixedDelay {
        /// Restarts allowed before the job fails.
        attempts: u32,
        /// Delay before each restart, ms.
        delay_ms: u64,
    },
    /// Delays growing by `multiplier` from `initial_ms` up to `max_ms`, reset after
    /// `reset_after_ms` without failure; the job fails after `attempts` restarts.
    ExponentialDelay {
        /// First delay, ms (Flink: 1 s).
        initial_ms: u64,
        /// Largest delay, ms (Flink 1.20: 1 min).
        max_ms: u64,
        /// Growth per failure (Flink 1.20: 1.5).
        multiplier: f64,
        /// A quiet period after which the delay starts over, ms (Flink: 1 h).
        reset_after_ms: u64,
        /// Restarts allowed before the job fails.
        attempts: u32,
    },
    /// Restart after `delay_ms` unless more than `max_failures` failures fell within the last
    /// `interval_ms`.
    FailureRate {
        /// Failures allowed per interval (Flink: 1).
        max_failures: u32,
        /// The interval, ms (Flink: 1 min).
        interval_ms: u64,
        /// Delay before each restart, ms (Flink: 1 s).
        delay_ms: u64,
    },
}

/// Flink's default number of restart attempts of the exponential-delay strategy
/// (`Integer.MAX_VALUE`): restarts go on; only the back-off grows.
pub const FLINK_MAX_ATTEMPTS: u32 = i32::MAX as u32;

impl RestartStrategy {
    /// Flink 1.20's exponential-delay defaults (its default strategy with checkpointing), with at
    /// most `attempts` restarts.
    pub fn exponential_default(attempts: u32) -> RestartStrategy {
        RestartStrategy::ExponentialDelay {
            initial_ms: 1_000,
            max_ms: 60_000,
            multiplier: 1.5,
            reset_after_ms: 3_600_000,
            attempts,
        }
    }
}

/// The state of a restart strategy over a job's failures.
#[derive(Clone, Debug)]
pub(crate) struct RestartBackoff {
    strategy: RestartStrategy,
    restarts: u32,
    next_delay_ms: u64,
    last_failure_ms: Option<u64>,
    recent: VecDeque<u64>,
}

impl RestartBackoff {
    pub(crate) fn new(strategy: RestartStrategy) -> RestartBackoff {
        let next_delay_ms = match strategy {
            RestartStrategy::ExponentialDelay { initial_ms, .. } => initial_ms,
            _ => 0,
        };
        RestartBackoff {
            strategy,
            restarts: 0,
            next_delay_ms,
            last_failure_ms: None,
            recent: VecDeque::new(),
        }
    }

    /// Restarts granted so far.
    pub(crate) fn restarts(&self) -> u32 {
        self.restarts
    }

    /// A failure at `now_ms`: the delay before restarting, or `None` when the job must fail.
    pub(crate) fn on_failure(&mut self, now_ms: u64) -> Option<u64> {
        let delay = match self.strategy {
            RestartStrategy::None => None,
            RestartStrategy::FixedDelay { attempts, delay_ms } => {
                (self.restarts < attempts).then_some(delay_ms)
            }
            RestartStrategy::ExponentialDelay {
                initial_ms,
                max_ms,
                multiplier,
                reset_after_ms,
                attempts,
            } => {
                if self
                    .last_failure_ms
                    .is_some_and(|last| now_ms.saturating_sub(last) >= reset_after_ms)
                {
                    self.next_delay_ms = initial_ms;
                    self.restarts = 0;
                }
                (self.restarts < attempts).then(|| {
                    let delay = self.next_delay_ms.min(max_ms);
                    // Float maths, then back to whole ms: the delay is capped by max_ms anyway.
                    let grown = (self.next_delay_ms as f64 * multiplier).clamp(0.0, max_ms as f64);
                    #[allow(clippy::cast_possible_truncation)] // clamped to [0, max_ms] above
                    let grown = grown as u64;
                    self.next_delay_ms = grown;
                    delay
                })
            }
            RestartStrategy::FailureRate {
                max_failures,
                interval_ms,
                delay_ms,
            } => {
                self.recent.push_back(now_ms);
                while self
                    .recent
                    .front()
                    .is_some_and(|&t| now_ms.saturating_sub(t) > interval_ms)
                {
                    self.recent.pop_front();
                }
                (self.recent.len() <= max_failures as usize).then_some(delay_ms)
            }
        };
        self.last_failure_ms = Some(now_ms);
        if delay.is_some() {
            self.restarts += 1;
        }
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_delay_allows_its_attempts() {
        let mut b = RestartBackoff::new(RestartStrategy::FixedDelay {
            attempts: 2,
            delay_ms: 10,
        });
        assert_eq!(b.on_failure(0), Some(10));
        assert_eq!(b.on_failure(5), Some(10));
        assert_eq!(b.on_failure(9), None);
        assert_eq!(b.restarts(), 2);
    }

    #[test]
    fn exponential_delay_grows_caps_and_resets() {
        let mut b = RestartBackoff::new(RestartStrategy::ExponentialDelay {
            initial_ms: 100,
            max_ms: 300,
            multiplier: 2.0,
            reset_after_ms: 10_000,
            attempts: 10,
        });
        let delays: Vec<_> = [0, 1, 2, 3].iter().map(|&t| b.on_failure(t)).collect();
        assert_eq!(delays, [Some(100), Some(200), Some(300), Some(300)]);
        assert_eq!(
            b.on_failure(20_000),
            Some(100),
            "a quiet hour resets the back-off"
        );
    }

    #[test]
    fn failure_rate_counts_failures_in_the_interval() {
        let mut b = RestartBackoff::new(RestartStrategy::FailureRate {
            max_failures: 2,
            interval_ms: 1_000,
            delay_ms: 5,
        });
        assert_eq!(b.on_failure(0), Some(5));
        assert_eq!(b.on_failure(500), Some(5));
        assert_eq!(b.on_failure(900), None, "third failure within one second");
        let mut b = RestartBackoff::new(RestartStrategy::FailureRate {
            max_failures: 2,
            interval_ms: 1_000,
            delay_ms: 5,
        });
        assert_eq!(b.on_failure(0), Some(5));
        assert_eq!(b.on_failure(500), Some(5));
        assert_eq!(
            b.on_failure(1_600),
            Some(5),
            "the first two left the interval"
        );
        assert_eq!(
            RestartBackoff::new(RestartStrategy::None).on_failure(0),
            None
        );
    }
}
