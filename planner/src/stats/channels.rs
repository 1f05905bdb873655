//! Logical connections (channels) of an edge: the one formula every channel count of this
//! crate uses (statistics, suggestions, version summaries, diffs).

use conflux_graph::DistributionPattern;

/// Logical connections of an edge: `U x D` for ALL_TO_ALL, `max(U, D)` for POINTWISE.
pub fn channels(pattern: DistributionPattern, producers: u32, consumers: u32) -> u64 {
    let (u, d) = (u64::from(producers), u64::from(consumers));
    match pattern {
        DistributionPattern::AllToAll => u * d,
        DistributionPattern::Pointwise => u.max(d),
    }
}
