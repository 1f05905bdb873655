//! Property test of skew splitting: every subpartition of every producer partition is read
//! exactly once after a split, no subtask reads more than the split threshold unless one
//! producer's share of one subpartition alone is larger, and the split parallelism stays within
//! its bound.

#![allow(clippy::cast_possible_truncation)] // test shapes are small

use conflux_adaptive::{split_skewed_subpartitions, split_threshold, ConsumedInput};
use conflux_graph::DistributionPattern;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn every_subpartition_of_every_producer_is_read_once(
        partitions in 1u32..20,
        sums in prop::collection::vec(prop_oneof![4 => 0u64..1_000, 1 => 0u64..100_000], 1..60),
        parallelism in 1u32..40,
        max in 1u32..200,
    ) {
        let input = ConsumedInput::new(DistributionPattern::AllToAll, false, partitions, &sums);
        let Some(split) = split_skewed_subpartitions(&input, parallelism, max) else {
            return Ok(());
        };
        prop_assert!(split.parallelism <= max);
        prop_assert_eq!(split.input_infos.len(), split.parallelism as usize);
        // The naive reference: a counter per (producer, subpartition) pair.
        let mut read = vec![0u32; partitions as usize * sums.len()];
        let limit = split_threshold(&input, parallelism);
        for (k, info) in split.input_infos.iter().enumerate() {
            prop_assert_eq!(info.subtask_index as usize, k);
            let mut bytes = 0u128;
            for p in info.partition_range.indices() {
                for s in info.subpartition_range.indices() {
                    read[p as usize * sums.len() + s as usize] += 1;
                }
            }
            for s in info.subpartition_range.indices() {
                bytes += u128::from(sums[s as usize]) * u128::from(info.partition_range.len())
                    / u128::from(partitions);
            }
            // A range of several whole subpartitions reads at most the limit.
            if info.partition_range.len() == partitions && info.subpartition_range.len() > 1 {
                prop_assert!(bytes <= u128::from(limit), "{info:?}");
            }
        }
        prop_assert!(read.iter().all(|&r| r == 1), "{read:?}");
        // A split subpartition is above the limit and cut into as many pieces as it holds
        // limits (at most one per producer), whose producer ranges differ by at most one.
        for s in &split.split {
            prop_assert!(s.bytes > limit);
            let expected = s.bytes.div_ceil(limit).min(u64::from(partitions));
            prop_assert_eq!(u64::from(s.pieces), expected);
            let lens: Vec<u32> = split
                .input_infos
                .iter()
                .filter(|i| i.subpartition_range.start == s.subpartition
                    && i.partition_range.len() < partitions || expected == 1
                    && i.subpartition_range == conflux_adaptive::IndexRange::new(s.subpartition, s.subpartition))
                .map(|i| i.partition_range.len())
                .collect();
            prop_assert_eq!(lens.len() as u64, expected);
            let (lo, hi) = (lens.iter().min(), lens.iter().max());
            prop_assert!(hi.zip(lo).is_some_and(|(h, l)| h - l <= 1), "{lens:?}");
        }
    }
}
