//! Ship strategies: the partitioner a plan names on an edge (Flink's `StreamPartitioner`
//! names as the JSON plan prints them: `FORWARD`, `RESCALE`, `REBALANCE`, `HASH[keys]`, ...).

use std::fmt;

use crate::DistributionPattern;

/// A ship strategy read from a plan. Parsing never fails: a name Conflux does not know is kept
/// as [`ShipStrategy::Other`], and keys (`HASH[a, b]`) are dropped, so `HASH[a]` and `hash`
/// read alike. What Conflux derives from it comes from Flink's `StreamingJobGraphGenerator`
/// and the partitioners' own semantics.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ShipStrategy {
    /// `FORWARD`: subtask i to subtask i (Flink's `ForwardPartitioner`).
    Forward,
    /// `RESCALE`: round robin within a local range of subtasks (`RescalePartitioner`).
    Rescale,
    /// `REBALANCE`: round robin over all consumer subtasks (`RebalancePartitioner`).
    Rebalance,
    /// `HASH`, with or without keys: by key group (`KeyGroupStreamPartitioner`).
    Hash,
    /// `SHUFFLE`: random (`ShufflePartitioner`).
    Shuffle,
    /// `BROADCAST`: every record to every subtask (`BroadcastPartitioner`).
    Broadcast,
    /// `GLOBAL`: everything to subtask 0 (`GlobalPartitioner`).
    Global,
    /// `CUSTOM`: a user partitioner (`CustomPartitionerWrapper`).
    Custom,
    /// Any other name, upper case and without keys.
    Other(String),
}

impl ShipStrategy {
    /// Reads a ship strategy as a plan writes it: the name before any `[keys]`, trimmed, case
    /// insensitive. O(length of the text).
    pub fn parse(text: &str) -> ShipStrategy {
        let name = text
            .split_once('[')
            .map_or(text, |(name, _)| name)
            .trim()
            .to_ascii_uppercase();
        match name.as_str() {
            "FORWARD" => ShipStrategy::Forward,
            "RESCALE" => ShipStrategy::Rescale,
            "REBALANCE" => ShipStrategy::Rebalance,
            "HASH" => ShipStrategy::Hash,
            "SHUFFLE" => ShipStrategy::Shuffle,
            "BROADCAST" => ShipStrategy::Broadcast,
            "GLOBAL" => ShipStrategy::Global,
            "CUSTOM" => ShipStrategy::Custom,
            _ => ShipStrategy::Other(name),
        }
    }

    /// The name, upper case and without keys: `HASH[a, b]` -> `HASH`.
    pub fn name(&self) -> &str {
        match self {
            ShipStrategy::Forward => "FORWARD",
            ShipStrategy::Rescale => "RESCALE",
            ShipStrategy::Rebalance => "REBALANCE",
            ShipStrategy::Hash => "HASH",
            ShipStrategy::Shuffle => "SHUFFLE",
            ShipStrategy::Broadcast => "BROADCAST",
            ShipStrategy::Global => "GLOBAL",
            ShipStrategy::Custom => "CUSTOM",
            ShipStrategy::Other(name) => name,
        }
    }

    /// Whether records are partitioned by key, so the edge must stay hash-partitioned for the
    /// consumer's keyed state: `HASH`, and any name starting with `HASH` or `KEY` (key-group
    /// partitioners of other tools).
    pub fn is_keyed(&self) -> bool {
        match self {
            ShipStrategy::Hash => true,
            ShipStrategy::Other(name) => name.starts_with("HASH") || name.starts_with("KEY"),
            _ => false,
        }
    }

    /// The distribution pattern Flink connects the edge with: FORWARD and RESCALE are
    /// POINTWISE, every other strategy ALL_TO_ALL (`StreamingJobGraphGenerator`).
    pub fn distribution_pattern(&self) -> DistributionPattern {
        match self {
            ShipStrategy::Forward | ShipStrategy::Rescale => DistributionPattern::Pointwise,
            _ => DistributionPattern::AllToAll,
        }
    }
}

impl fmt::Display for ShipStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ship_strategies_map_to_patterns_as_flink() {
        for (s, p) in [
            ("FORWARD", DistributionPattern::Pointwise),
            ("RESCALE", DistributionPattern::Pointwise),
            ("HASH", DistributionPattern::AllToAll),
            ("HASH[o_orderkey, o_custkey]", DistributionPattern::AllToAll),
            ("REBALANCE", DistributionPattern::AllToAll),
            ("SHUFFLE", DistributionPattern::AllToAll),
            ("BROADCAST", DistributionPattern::AllToAll),
            ("GLOBAL", DistributionPattern::AllToAll),
            ("CUSTOM", DistributionPattern::AllToAll),
        ] {
            assert_eq!(ShipStrategy::parse(s).distribution_pattern(), p, "{s}");
        }
    }

    #[test]
    fn names_drop_keys_and_case() {
        for (text, name, keyed) in [
            ("HASH[a, b]", "HASH", true),
            (" hash ", "HASH", true),
            ("KEY_GROUP[x]", "KEY_GROUP", true),
            ("HASHED", "HASHED", true),
            ("rescale", "RESCALE", false),
            ("Rebalance", "REBALANCE", false),
            ("FORWARD", "FORWARD", false),
            ("BROADCAST", "BROADCAST", false),
            ("RANGE[k]", "RANGE", false),
        ] {
            let s = ShipStrategy::parse(text);
            assert_eq!((s.name(), s.is_keyed()), (name, keyed), "{text}");
            assert_eq!(s.to_string(), name);
        }
        assert_eq!(ShipStrategy::parse("rescale"), ShipStrategy::Rescale);
        assert_eq!(
            ShipStrategy::parse("range[k]"),
            ShipStrategy::Other("RANGE".to_owned())
        );
    }
}
