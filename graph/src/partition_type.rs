//! Distribution patterns and result partition types, with Flink's attributes.

use std::fmt;

/// How the subtasks of a producer connect to the subtasks of a consumer (Flink's
/// `DistributionPattern`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DistributionPattern {
    /// Every producer subtask connects to every consumer subtask: `U x D` logical connections,
    /// represented by one [`ConsumedPartitionGroup`](crate::ConsumedPartitionGroup) per job edge.
    AllToAll,
    /// Each consumer subtask reads a contiguous range of producer subtasks (`U >= D`) or each
    /// producer subtask feeds a contiguous range of consumers (`U < D`): `max(U, D)` connections.
    Pointwise,
}

impl DistributionPattern {
    /// The name used in the job graph JSON (`all_to_all`, `pointwise`).
    pub fn as_str(self) -> &'static str {
        match self {
            DistributionPattern::AllToAll => "all_to_all",
            DistributionPattern::Pointwise => "pointwise",
        }
    }

    /// Parses the JSON name; `None` for anything else.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "all_to_all" => Some(DistributionPattern::AllToAll),
            "pointwise" => Some(DistributionPattern::Pointwise),
            _ => None,
        }
    }
}

impl fmt::Display for DistributionPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When a consumer may read a partition, relative to its producer (Flink 1.16+
/// `ResultPartitionType.ConsumingConstraint`, FLINK-27902).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConsumingConstraint {
    /// Only after the producer has finished.
    Blocking,
    /// Either while the producer runs or after it finished.
    CanBePipelined,
    /// Only while the producer runs: producer and consumer must run at the same time, so they
    /// share a pipelined region.
    MustBePipelined,
}

/// Who releases a partition once it has been consumed (Flink's `ReleaseBy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReleaseBy {
    /// The producer releases it when the (single) consumer is done.
    Upstream,
    /// The scheduler releases it when every consumer region has finished.
    Scheduler,
}

/// The type of an intermediate result's partitions (Flink's `ResultPartitionType`, as of 1.17+),
/// described by Flink's five attributes.
///
/// Only [`must_be_pipelined_consumed`](Self::must_be_pipelined_consumed) types (PIPELINED,
/// PIPELINED_BOUNDED) join producer and consumer into one pipelined region; every other type is a
/// region boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResultPartitionType {
    /// Fully produced before it is consumed; can be read several times.
    Blocking,
    /// As [`Blocking`](Self::Blocking), but kept beyond the job (never released by the scheduler's
    /// region release).
    BlockingPersistent,
    /// Streamed to a running consumer, unbounded buffering.
    Pipelined,
    /// Streamed to a running consumer with a bounded number of buffers (Flink's streaming default).
    PipelinedBounded,
    /// Pipelined, but a consumer may reconnect after a failure (approximate local recovery).
    PipelinedApproximate,
    /// Hybrid shuffle that spills everything, so it can be re-consumed (FLIP-235).
    HybridFull,
    /// Hybrid shuffle that spills selectively; a restarted consumer cannot re-read it (FLIP-235).
    HybridSelective,
}

impl ResultPartitionType {
    /// Every type, in declaration order.
    pub const ALL: [ResultPartitionType; 7] = [
        ResultPartitionType::Blocking,
        ResultPartitionType::BlockingPersistent,
        ResultPartitionType::Pipelined,
        ResultPartitionType::PipelinedBounded,
        ResultPartitionType::PipelinedApproximate,
        ResultPartitionType::HybridFull,
        ResultPartitionType::HybridSelective,
    ];

    /// The name used in the job graph JSON and in Flink's plan `exchange` field
    /// (`blocking`, `pipelined_bounded`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ResultPartitionType::Blocking => "blocking",
            ResultPartitionType::BlockingPersistent => "blocking_persistent",
            ResultPartitionType::Pipelined => "pipelined",
            ResultPartitionType::PipelinedBounded => "pipelined_bounded",
            ResultPartitionType::PipelinedApproximate => "pipelined_approximate",
            ResultPartitionType::HybridFull => "hybrid_full",
            ResultPartitionType::HybridSelective => "hybrid_selective",
        }
    }

    /// Parses the JSON name, case-insensitively (Flink writes lower case in plans and upper case
    /// in its enum); `None` for anything else.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(name))
    }

    /// Whether a partition can be read again after it was consumed (needed to restart a consumer
    /// without restarting its producer). HYBRID_FULL is since FLINK-29975 (1.17).
    pub fn is_reconsumable(self) -> bool {
        matches!(
            self,
            ResultPartitionType::Blocking
                | ResultPartitionType::BlockingPersistent
                | ResultPartitionType::HybridFull
        )
    }

    /// Whether the partition uses a bounded number of network buffers.
    pub fn is_bounded(self) -> bool {
        matches!(
            self,
            ResultPartitionType::PipelinedBounded | ResultPartitionType::PipelinedApproximate
        )
    }

    /// Whether the partition outlives the job.
    pub fn is_persistent(self) -> bool {
        self == ResultPartitionType::BlockingPersistent
    }

    /// When a consumer may read the partition.
    pub fn consuming_constraint(self) -> ConsumingConstraint {
        match self {
            ResultPartitionType::Blocking | ResultPartitionType::BlockingPersistent => {
                ConsumingConstraint::Blocking
            }
            ResultPartitionType::Pipelined | ResultPartitionType::PipelinedBounded => {
                ConsumingConstraint::MustBePipelined
            }
            ResultPartitionType::PipelinedApproximate
            | ResultPartitionType::HybridFull
            | ResultPartitionType::HybridSelective => ConsumingConstraint::CanBePipelined,
        }
    }

    /// Who releases the partition.
    pub fn released_by(self) -> ReleaseBy {
        match self {
            ResultPartitionType::Pipelined
            | ResultPartitionType::PipelinedBounded
            | ResultPartitionType::PipelinedApproximate => ReleaseBy::Upstream,
            _ => ReleaseBy::Scheduler,
        }
    }

    /// PIPELINED and PIPELINED_BOUNDED: producer and consumer must run together. The only
    /// property that merges vertices into one pipelined region (Flink's
    /// `mustBePipelinedConsumed`).
    pub fn must_be_pipelined_consumed(self) -> bool {
        self.consuming_constraint() == ConsumingConstraint::MustBePipelined
    }

    /// Everything but BLOCKING and BLOCKING_PERSISTENT: a consumer may be scheduled while the
    /// producer still runs (Flink's `canBePipelinedConsumed`).
    pub fn can_be_pipelined_consumed(self) -> bool {
        self.consuming_constraint() != ConsumingConstraint::Blocking
    }

    /// Whether this type separates pipelined regions: every type that is not
    /// [`must_be_pipelined_consumed`](Self::must_be_pipelined_consumed).
    pub fn is_region_boundary(self) -> bool {
        !self.must_be_pipelined_consumed()
    }

    /// BLOCKING and BLOCKING_PERSISTENT.
    pub fn is_blocking_or_blocking_persistent(self) -> bool {
        self.consuming_constraint() == ConsumingConstraint::Blocking
    }

    /// HYBRID_FULL and HYBRID_SELECTIVE.
    pub fn is_hybrid(self) -> bool {
        matches!(
            self,
            ResultPartitionType::HybridFull | ResultPartitionType::HybridSelective
        )
    }

    /// Whether the scheduler releases the partition (BLOCKING, BLOCKING_PERSISTENT, HYBRID_*).
    pub fn is_release_by_scheduler(self) -> bool {
        self.released_by() == ReleaseBy::Scheduler
    }
}

impl fmt::Display for ResultPartitionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The attribute table of Flink 1.17+ `ResultPartitionType`, row by row.
    #[test]
    fn attributes_match_flinks_table() {
        use ResultPartitionType::*;
        // (type, reconsumable, bounded, persistent, must-pipelined, can-pipelined, by scheduler)
        let table = [
            (Blocking, true, false, false, false, false, true),
            (BlockingPersistent, true, false, true, false, false, true),
            (Pipelined, false, false, false, true, true, false),
            (PipelinedBounded, false, true, false, true, true, false),
            (PipelinedApproximate, false, true, false, false, true, false),
            (HybridFull, true, false, false, false, true, true),
            (HybridSelective, false, false, false, false, true, true),
        ];
        for (t, reconsumable, bounded, persistent, must, can, scheduler) in table {
            assert_eq!(t.is_reconsumable(), reconsumable, "{t} reconsumable");
            assert_eq!(t.is_bounded(), bounded, "{t} bounded");
            assert_eq!(t.is_persistent(), persistent, "{t} persistent");
            assert_eq!(
                t.must_be_pipelined_consumed(),
                must,
                "{t} must be pipelined"
            );
            assert_eq!(t.can_be_pipelined_consumed(), can, "{t} can be pipelined");
            assert_eq!(
                t.is_release_by_scheduler(),
                scheduler,
                "{t} released by scheduler"
            );
            assert_eq!(t.is_region_boundary(), !must, "{t} region boundary");
        }
    }

    #[test]
    fn names_round_trip_and_parse_case_insensitively() {
        for t in ResultPartitionType::ALL {
            assert_eq!(ResultPartitionType::parse(t.as_str()), Some(t));
            assert_eq!(
                ResultPartitionType::parse(&t.as_str().to_uppercase()),
                Some(t)
            );
        }
        assert_eq!(ResultPartitionType::parse("pipelined-bounded"), None);
        assert_eq!(
            DistributionPattern::parse("all_to_all"),
            Some(DistributionPattern::AllToAll)
        );
        assert_eq!(DistributionPattern::parse("ALL_TO_ALL"), None);
    }
}
