//! Property tests: after any decision, every subpartition of every producer partition of a
//! non-broadcast input is read by exactly one subtask (ALL_TO_ALL and POINTWISE), broadcast
//! inputs are read whole by every subtask, and the parallelism respects its bounds.

#![allow(clippy::cast_possible_truncation)] // test shapes are small

use conflux_adaptive::{
    compute_vertex_input_info_for_pointwise, decide_parallelism_and_input_infos,
    BatchExecutionOptions, ConsumedInput, ExecutionVertexInputInfo, IndexRange, VertexToDecide,
};
use conflux_graph::DistributionPattern;
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Input {
    pattern: DistributionPattern,
    broadcast: bool,
    partitions: u32,
    sums: Vec<u64>,
}

#[derive(Clone, Debug)]
struct Case {
    options: BatchExecutionOptions,
    vertex: VertexToDecide,
    inputs: Vec<Input>,
}

/// Byte sums with zeros, small values and the odd large one.
fn sums(len: usize) -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(
        prop_oneof![3 => 0u64..1_000, 1 => Just(0u64), 1 => 0u64..100_000],
        len,
    )
}

/// An input whose subpartition counts fit the vertex, as in a dynamic graph where producers
/// write as many subpartitions as the consumer's max parallelism (or more): ALL_TO_ALL
/// non-broadcast inputs share `shared` subpartitions, POINTWISE ones have their own count of at
/// least `vertex_max`, broadcast ones have one.
fn input(shared: usize, vertex_max: u32) -> impl Strategy<Value = Input> {
    (0u8..4, 1u32..=20, 0usize..=40).prop_flat_map(move |(kind, partitions, extra)| {
        let (pattern, broadcast, len) = match kind {
            0 => (DistributionPattern::AllToAll, true, 1),
            1 => (
                DistributionPattern::Pointwise,
                false,
                vertex_max as usize + extra,
            ),
            _ => (DistributionPattern::AllToAll, false, shared),
        };
        sums(len).prop_map(move |sums| Input {
            pattern,
            broadcast,
            partitions,
            sums,
        })
    })
}

fn case() -> impl Strategy<Value = Case> {
    (
        1u32..=4,
        0u32..=40,
        1u64..=5_000,
        1u32..=64,
        0usize..=40,
        any::<bool>(),
    )
        .prop_flat_map(|(min, extra, volume, vertex_max, shared_extra, fixed)| {
            let options = BatchExecutionOptions {
                min_parallelism: min,
                max_parallelism: min + extra,
                avg_data_volume_per_task: volume,
                default_source_parallelism: None,
            };
            let fixed = if fixed {
                (1..=vertex_max).prop_map(Some).boxed()
            } else {
                Just(None).boxed()
            };
            let shared = vertex_max as usize + shared_extra;
            (
                Just(options),
                fixed,
                prop::collection::vec(input(shared, vertex_max), 1..=4),
            )
                .prop_map(move |(options, fixed_parallelism, inputs)| Case {
                    options,
                    vertex: VertexToDecide {
                        fixed_parallelism,
                        min_parallelism: 1,
                        max_parallelism: vertex_max,
                    },
                    inputs,
                })
        })
}

/// Every (partition, subpartition) of a non-broadcast input is read exactly once.
fn assert_exactly_once(partitions: u32, subpartitions: u32, infos: &[ExecutionVertexInputInfo]) {
    let mut reads = vec![0u32; (partitions * subpartitions) as usize];
    for info in infos {
        for p in info.partition_range.indices() {
            for s in info.subpartition_range.indices() {
                assert!(
                    p < partitions && s < subpartitions,
                    "{info:?} is out of bounds"
                );
                reads[(p * subpartitions + s) as usize] += 1;
            }
        }
    }
    if let Some(i) = reads.iter().position(|&n| n != 1) {
        let (p, s) = (i as u32 / subpartitions, i as u32 % subpartitions);
        panic!(
            "partition {p} subpartition {s} is read {} times: {infos:?}",
            reads[i]
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn every_subpartition_is_consumed_exactly_once(case in case()) {
        let inputs: Vec<_> = case
            .inputs
            .iter()
            .map(|i| ConsumedInput::new(i.pattern, i.broadcast, i.partitions, &i.sums))
            .collect();
        let decision = decide_parallelism_and_input_infos(&case.options, &case.vertex, &inputs)
            .expect("well-shaped inputs always get a decision");
        let p = decision.parallelism;
        match case.vertex.fixed_parallelism {
            Some(fixed) => prop_assert_eq!(p, fixed),
            None => {
                let vertex_max = case.vertex.max_parallelism;
                let min = case.options.min_parallelism.min(vertex_max);
                let max = case.options.max_parallelism.min(vertex_max);
                prop_assert!(min <= p && p <= max, "{} outside [{}, {}]", p, min, max);
            }
        }
        prop_assert_eq!(decision.input_infos.len(), inputs.len());
        let mut shared_ranges: Option<Vec<IndexRange>> = None;
        for (input, infos) in case.inputs.iter().zip(&decision.input_infos) {
            prop_assert_eq!(infos.len(), p as usize);
            for (k, info) in (0u32..).zip(infos) {
                prop_assert_eq!(info.subtask_index, k);
            }
            let subpartitions = input.sums.len() as u32;
            if input.broadcast {
                for info in infos {
                    prop_assert_eq!(info.partition_range, IndexRange::new(0, input.partitions - 1));
                    prop_assert_eq!(info.subpartition_range, IndexRange::new(0, 0));
                }
            } else {
                assert_exactly_once(input.partitions, subpartitions, infos);
            }
            if !input.broadcast && input.pattern == DistributionPattern::AllToAll {
                // ALL_TO_ALL inputs share one key space: the same ranges for every one of them.
                let ranges: Vec<_> = infos.iter().map(|i| i.subpartition_range).collect();
                match &shared_ranges {
                    Some(shared) => prop_assert_eq!(shared, &ranges),
                    None => shared_ranges = Some(ranges),
                }
            }
        }
        for skew in &decision.skewed_subpartitions {
            let input = &case.inputs[skew.input];
            prop_assert!(!input.broadcast && input.pattern == DistributionPattern::AllToAll);
            prop_assert_eq!(input.sums[skew.subpartition as usize], skew.bytes);
            prop_assert!(skew.bytes > 4 * skew.average_bytes_per_task);
        }
    }

    #[test]
    fn pointwise_reads_every_subpartition_exactly_once(
        partitions in 1u32..=60,
        parallelism in 1u32..=200,
        extra in 0u32..=5,
    ) {
        let subpartitions = parallelism.div_ceil(partitions) + extra;
        let infos = compute_vertex_input_info_for_pointwise(partitions, parallelism, subpartitions);
        prop_assert_eq!(infos.len(), parallelism as usize);
        for (k, info) in (0u32..).zip(&infos) {
            prop_assert_eq!(info.subtask_index, k);
        }
        assert_exactly_once(partitions, subpartitions, &infos);
    }
}
