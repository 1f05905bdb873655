//! Flink 1.20's worked examples, ported with the same expected parallelisms and ranges:
//! `DefaultVertexParallelismAndInputInfosDeciderTest` and `VertexInputInfoComputationUtilsTest`
//! (dynamic graph cases), plus the word count known answer and the options' defaults.

use conflux_adaptive::{
    compute_consumed_subpartition_range, compute_vertex_input_info_for_all_to_all,
    compute_vertex_input_info_for_pointwise, decide_parallelism_and_input_infos,
    BatchExecutionOptions, ConsumedInput, DecideError, ExecutionVertexInputInfo, IndexRange,
    ParallelismAndInputInfos, VertexToDecide, MIB,
};
use conflux_graph::DistributionPattern::{AllToAll, Pointwise};

const MB_256: u64 = 256 * MIB;
const MB_512: u64 = 512 * MIB;
const GB_1: u64 = 1024 * MIB;
const GB_8: u64 = 8 * GB_1;
const TB_1: u64 = 1024 * GB_1;

/// Flink's test constants.
const MAX_PARALLELISM: u32 = 100;
const MIN_PARALLELISM: u32 = 3;
const VERTEX_MAX_PARALLELISM: u32 = 256;
const DEFAULT_SOURCE_PARALLELISM: u32 = 10;
const DATA_VOLUME_PER_TASK: u64 = GB_1;

/// The ten subpartition sums most of Flink's cases use.
const BYTES: [u64; 10] = [10, 15, 13, 12, 1, 10, 8, 20, 12, 17];

fn options(min: u32, max: u32, volume: u64) -> BatchExecutionOptions {
    BatchExecutionOptions {
        min_parallelism: min,
        max_parallelism: max,
        avg_data_volume_per_task: volume,
        default_source_parallelism: Some(DEFAULT_SOURCE_PARALLELISM),
    }
}

fn decide(
    min: u32,
    max: u32,
    volume: u64,
    inputs: &[ConsumedInput<'_>],
) -> ParallelismAndInputInfos {
    decide_parallelism_and_input_infos(
        &options(min, max, volume),
        &VertexToDecide::undecided(VERTEX_MAX_PARALLELISM),
        inputs,
    )
    .expect("a decision")
}

fn r(start: u32, end: u32) -> IndexRange {
    IndexRange::new(start, end)
}

fn info(
    subtask: u32,
    partitions: IndexRange,
    subpartitions: IndexRange,
) -> ExecutionVertexInputInfo {
    ExecutionVertexInputInfo {
        subtask_index: subtask,
        partition_range: partitions,
        subpartition_range: subpartitions,
    }
}

/// Every subtask reads `partitions` and its own subpartition range, in subtask order.
fn assert_all_to_all(
    infos: &[ExecutionVertexInputInfo],
    partitions: IndexRange,
    subpartitions: &[IndexRange],
) {
    let expected: Vec<_> = (0u32..)
        .zip(subpartitions)
        .map(|(i, &s)| info(i, partitions, s))
        .collect();
    assert_eq!(infos, expected);
}

/// `TestingBlockingResultInfo` of Flink's parallelism cases: `partitions` x `subpartitions`,
/// `bytes` in all. Non-broadcast ones are POINTWISE here so that the decision takes Flink's
/// `decideParallelism` path (the one those cases call directly); the bytes sit in subpartition 0.
fn sums(subpartitions: usize, bytes: u64) -> Vec<u64> {
    let mut sums = vec![0; subpartitions];
    sums[0] = bytes;
    sums
}

fn decide_parallelism(broadcast: Option<u64>, non_broadcast: u64) -> u32 {
    let broadcast_sums = broadcast.map(|b| sums(1, b));
    let non_broadcast_sums = sums(MAX_PARALLELISM as usize, non_broadcast);
    let mut inputs = vec![ConsumedInput::new(
        Pointwise,
        false,
        MAX_PARALLELISM,
        &non_broadcast_sums,
    )];
    if let Some(b) = &broadcast_sums {
        inputs.insert(0, ConsumedInput::new(AllToAll, true, MAX_PARALLELISM, b));
    }
    decide(
        MIN_PARALLELISM,
        MAX_PARALLELISM,
        DATA_VOLUME_PER_TASK,
        &inputs,
    )
    .parallelism
}

#[test]
fn test_decide_parallelism() {
    assert_eq!(decide_parallelism(Some(MB_256), MB_256 + GB_8), 9);
}

#[test]
fn test_initially_normalized_parallelism_is_larger_than_max_parallelism() {
    assert_eq!(
        decide_parallelism(Some(MB_256), GB_8 + TB_1),
        MAX_PARALLELISM
    );
}

#[test]
fn test_initially_normalized_parallelism_is_smaller_than_min_parallelism() {
    assert_eq!(decide_parallelism(Some(MB_256), MB_512), MIN_PARALLELISM);
}

#[test]
fn test_non_broadcast_bytes_can_not_divided_evenly() {
    assert_eq!(decide_parallelism(Some(MB_512), MB_256 + GB_8), 9);
}

#[test]
fn test_decide_parallelism_with_max_subpartition_limitation() {
    // 1024 x 1024 and 512 x 512 subpartitions of 1 byte in all: ceil(1,048,576 / 32,768) = 32.
    let (a, b) = (sums(1024, 1), sums(512, 1));
    let inputs = [
        ConsumedInput::new(Pointwise, false, 1024, &a),
        ConsumedInput::new(Pointwise, false, 512, &b),
    ];
    assert_eq!(decide(1, 100, MB_256, &inputs).parallelism, 32);
}

#[test]
fn test_all_edges_all_to_all() {
    let second = [8, 12, 21, 9, 13, 7, 19, 13, 14, 5];
    let inputs = [
        ConsumedInput::new(AllToAll, false, 1, &BYTES),
        ConsumedInput::new(AllToAll, false, 1, &second),
    ];
    let decision = decide(1, 10, 60, &inputs);
    assert_eq!(decision.parallelism, 5);
    assert_eq!(decision.input_infos.len(), 2);
    let ranges = [r(0, 1), r(2, 3), r(4, 6), r(7, 8), r(9, 9)];
    assert_all_to_all(&decision.input_infos[0], r(0, 0), &ranges);
    assert_all_to_all(&decision.input_infos[1], r(0, 0), &ranges);
}

#[test]
fn test_all_edges_all_to_all_and_decided_parallelism_is_max_parallelism() {
    let decision = decide(1, 2, 10, &[ConsumedInput::new(AllToAll, false, 1, &BYTES)]);
    assert_eq!(decision.parallelism, 2);
    assert_all_to_all(&decision.input_infos[0], r(0, 0), &[r(0, 5), r(6, 9)]);
}

#[test]
fn test_all_edges_all_to_all_and_decided_parallelism_is_min_parallelism() {
    let decision = decide(
        4,
        10,
        1000,
        &[ConsumedInput::new(AllToAll, false, 1, &BYTES)],
    );
    assert_eq!(decision.parallelism, 4);
    assert_all_to_all(
        &decision.input_infos[0],
        r(0, 0),
        &[r(0, 1), r(2, 5), r(6, 7), r(8, 9)],
    );
}

#[test]
fn test_fall_back_to_evenly_distribute_subpartitions() {
    let bytes = [10, 1, 10, 1, 10, 1, 10, 1, 10, 1];
    let decision = decide(8, 8, 10, &[ConsumedInput::new(AllToAll, false, 1, &bytes)]);
    assert_eq!(decision.parallelism, 8);
    assert_all_to_all(
        &decision.input_infos[0],
        r(0, 0),
        &[
            r(0, 0),
            r(1, 1),
            r(2, 2),
            r(3, 4),
            r(5, 5),
            r(6, 6),
            r(7, 7),
            r(8, 9),
        ],
    );
}

#[test]
fn test_all_edges_all_to_all_and_one_is_broadcast() {
    let inputs = [
        ConsumedInput::new(AllToAll, false, 1, &BYTES),
        ConsumedInput::new(AllToAll, true, 1, &[10]),
    ];
    let decision = decide(1, 10, 60, &inputs);
    assert_eq!(decision.parallelism, 3);
    assert_all_to_all(
        &decision.input_infos[0],
        r(0, 0),
        &[r(0, 4), r(5, 8), r(9, 9)],
    );
    assert_all_to_all(
        &decision.input_infos[1],
        r(0, 0),
        &[r(0, 0), r(0, 0), r(0, 0)],
    );
}

#[test]
fn test_all_edges_broadcast() {
    let inputs = [
        ConsumedInput::new(AllToAll, true, 1, &[10]),
        ConsumedInput::new(AllToAll, true, 1, &[10]),
    ];
    let decision = decide(1, 10, 60, &inputs);
    assert_eq!(decision.parallelism, 1);
    assert_all_to_all(&decision.input_infos[0], r(0, 0), &[r(0, 0)]);
    assert_all_to_all(&decision.input_infos[1], r(0, 0), &[r(0, 0)]);
}

#[test]
fn test_have_pointwise_edges() {
    // Two producers of 5 subpartitions: [8, 12, 21, 9, 13] and [7, 19, 13, 14, 5], summed.
    let pointwise = [15, 31, 34, 23, 18];
    let inputs = [
        ConsumedInput::new(AllToAll, false, 1, &BYTES),
        ConsumedInput::new(Pointwise, false, 2, &pointwise),
    ];
    let decision = decide(1, 10, 60, &inputs);
    assert_eq!(decision.parallelism, 4);
    assert_all_to_all(
        &decision.input_infos[0],
        r(0, 0),
        &[r(0, 1), r(2, 4), r(5, 6), r(7, 9)],
    );
    assert_eq!(
        decision.input_infos[1],
        [
            info(0, r(0, 0), r(0, 1)),
            info(1, r(0, 0), r(2, 4)),
            info(2, r(1, 1), r(0, 1)),
            info(3, r(1, 1), r(2, 4)),
        ]
    );
}

#[test]
fn test_parallelism_already_decided() {
    let decision = decide_parallelism_and_input_infos(
        &options(MIN_PARALLELISM, MAX_PARALLELISM, DATA_VOLUME_PER_TASK),
        &VertexToDecide::fixed(3, VERTEX_MAX_PARALLELISM),
        &[ConsumedInput::new(AllToAll, false, 1, &BYTES)],
    )
    .unwrap();
    assert_eq!(decision.parallelism, 3);
    assert_all_to_all(
        &decision.input_infos[0],
        r(0, 0),
        &[r(0, 2), r(3, 5), r(6, 9)],
    );
}

#[test]
fn test_source_job_vertex() {
    let decision = decide(MIN_PARALLELISM, MAX_PARALLELISM, DATA_VOLUME_PER_TASK, &[]);
    assert_eq!(decision.parallelism, DEFAULT_SOURCE_PARALLELISM);
    assert!(decision.input_infos.is_empty());
}

#[test]
fn test_dynamic_source_parallelism_with_upstream_inputs() {
    let vertex = VertexToDecide {
        fixed_parallelism: None,
        min_parallelism: 4,
        max_parallelism: MAX_PARALLELISM,
    };
    let decision = decide_parallelism_and_input_infos(
        &options(MIN_PARALLELISM, MAX_PARALLELISM, DATA_VOLUME_PER_TASK),
        &vertex,
        &[ConsumedInput::new(AllToAll, false, 1, &BYTES)],
    )
    .unwrap();
    assert_eq!(decision.parallelism, 4);
    assert_all_to_all(
        &decision.input_infos[0],
        r(0, 0),
        &[r(0, 1), r(2, 5), r(6, 7), r(8, 9)],
    );
}

#[test]
fn test_evenly_distribute_data_with_max_subpartition_limitation() {
    // 1024 producers of 1024 subpartitions of 1 byte: sums of 1024 bytes per subpartition.
    let sums = vec![1024; 1024];
    let decision = decide(
        1,
        100,
        MB_256,
        &[ConsumedInput::new(AllToAll, false, 1024, &sums)],
    );
    assert_eq!(decision.parallelism, 32);
    let ranges: Vec<_> = (0..32).map(|i| r(i * 32, (i + 1) * 32 - 1)).collect();
    assert_all_to_all(&decision.input_infos[0], r(0, 1023), &ranges);
}

fn source_parallelism(default_source: Option<u32>) -> u32 {
    let options = BatchExecutionOptions {
        max_parallelism: MAX_PARALLELISM,
        default_source_parallelism: default_source,
        ..BatchExecutionOptions::default()
    };
    let decision = decide_parallelism_and_input_infos(
        &options,
        &VertexToDecide::undecided(VERTEX_MAX_PARALLELISM),
        &[],
    )
    .expect("a decision");
    assert_eq!(
        decision.parallelism,
        options.source_parallelism(VERTEX_MAX_PARALLELISM)
    );
    decision.parallelism
}

#[test]
fn test_compute_source_parallelism_upper_bound() {
    assert_eq!(
        source_parallelism(Some(DEFAULT_SOURCE_PARALLELISM)),
        DEFAULT_SOURCE_PARALLELISM
    );
}

#[test]
fn test_compute_source_parallelism_upper_bound_fallback() {
    assert_eq!(source_parallelism(None), MAX_PARALLELISM);
}

#[test]
fn test_compute_source_parallelism_upper_bound_not_exceed_max_parallelism() {
    assert_eq!(
        source_parallelism(Some(VERTEX_MAX_PARALLELISM * 2)),
        VERTEX_MAX_PARALLELISM
    );
}

// VertexInputInfoComputationUtilsTest, dynamic graph cases.

#[test]
fn test_compute_consumed_subpartition_range_3_to_1() {
    assert_eq!(compute_consumed_subpartition_range(0, 1, 3, false), r(0, 2));
}

#[test]
fn test_compute_consumed_subpartition_range_3_to_2() {
    assert_eq!(compute_consumed_subpartition_range(0, 2, 3, false), r(0, 0));
    assert_eq!(compute_consumed_subpartition_range(1, 2, 3, false), r(1, 2));
}

#[test]
fn test_compute_consumed_subpartition_range_6_to_4() {
    let ranges: Vec<_> = (0..4)
        .map(|i| compute_consumed_subpartition_range(i, 4, 6, false))
        .collect();
    assert_eq!(ranges, [r(0, 0), r(1, 2), r(3, 3), r(4, 5)]);
}

#[test]
fn test_compute_broadcast_consumed_subpartition_range() {
    for i in 0..3 {
        assert_eq!(compute_consumed_subpartition_range(i, 3, 1, true), r(0, 0));
    }
}

#[test]
fn test_compute_vertex_input_info_for_all_to_all_with_dynamic_graph() {
    assert_eq!(
        compute_vertex_input_info_for_all_to_all(2, 3, 10, false),
        [
            info(0, r(0, 1), r(0, 2)),
            info(1, r(0, 1), r(3, 5)),
            info(2, r(0, 1), r(6, 9))
        ]
    );
    assert_eq!(
        compute_vertex_input_info_for_all_to_all(2, 3, 1, true),
        [
            info(0, r(0, 1), r(0, 0)),
            info(1, r(0, 1), r(0, 0)),
            info(2, r(0, 1), r(0, 0))
        ]
    );
}

#[test]
fn test_compute_vertex_input_info_for_pointwise_with_dynamic_graph() {
    assert_eq!(
        compute_vertex_input_info_for_pointwise(2, 3, 4),
        [
            info(0, r(0, 0), r(0, 1)),
            info(1, r(0, 0), r(2, 3)),
            info(2, r(1, 1), r(0, 3))
        ]
    );
}

// Conflux's own cases.

#[test]
fn options_default_to_flink_1_20() {
    let options = BatchExecutionOptions::default();
    assert_eq!(options.min_parallelism, 1);
    assert_eq!(options.max_parallelism, 128);
    assert_eq!(options.avg_data_volume_per_task, 16 * 1024 * 1024);
    assert_eq!(options.default_source_parallelism, None);
    assert_eq!(options.source_parallelism(32_768), 128);
    assert_eq!(options.source_parallelism(50), 50);
    assert_eq!(options.validate(), Ok(()));
}

/// The known answer: a word count whose source produces 1 GiB in all, spread evenly, decides 64
/// for the counting vertex with the defaults (1 GiB / 16 MiB).
#[test]
fn word_count_of_one_gib_decides_64() {
    let options = BatchExecutionOptions::default();
    // The source: undecided, no inputs -> the max parallelism, 128.
    let source =
        decide_parallelism_and_input_infos(&options, &VertexToDecide::undecided(128), &[]).unwrap();
    assert_eq!(source.parallelism, 128);
    // Its 128 subtasks wrote 1 GiB evenly into 128 subpartitions each (the counter's max
    // parallelism); the sums over the producers are 8 MiB per subpartition.
    let per_subpartition = GB_1 / 128;
    let sums = vec![per_subpartition; 128];
    let counter = decide_parallelism_and_input_infos(
        &options,
        &VertexToDecide::undecided(128),
        &[ConsumedInput::new(
            AllToAll,
            false,
            source.parallelism,
            &sums,
        )],
    )
    .unwrap();
    assert_eq!(counter.parallelism, 64);
    for (k, info) in (0u32..).zip(&counter.input_infos[0]) {
        assert_eq!(info.partition_range, r(0, 127));
        assert_eq!(info.subpartition_range, r(2 * k, 2 * k + 1));
    }
    assert!(counter.skewed_subpartitions.is_empty());
    // Spread over 4 producers instead, the answer is the same.
    let counter4 = decide_parallelism_and_input_infos(
        &options,
        &VertexToDecide::undecided(128),
        &[ConsumedInput::new(AllToAll, false, 4, &sums)],
    )
    .unwrap();
    assert_eq!(counter4.parallelism, 64);
}

#[test]
fn the_vertex_max_parallelism_bounds_the_decision() {
    let sums = vec![GB_1 / 128; 128];
    let decision = decide_parallelism_and_input_infos(
        &BatchExecutionOptions::default(),
        &VertexToDecide::undecided(16),
        &[ConsumedInput::new(AllToAll, false, 4, &sums)],
    )
    .unwrap();
    assert_eq!(decision.parallelism, 16);
    assert!(decision.input_infos[0]
        .iter()
        .all(|i| i.subpartition_range.len() == 8));
}

#[test]
fn a_subpartition_far_above_the_average_is_reported() {
    // 63 subpartitions of 1 MiB and one of 200 MiB: the balanced ranges give 6 subtasks (the
    // big subpartition alone in one), about 43.8 MiB each on average; 200 MiB is above 4 x that.
    let mut sums = vec![MIB; 64];
    sums[10] = 200 * MIB;
    let decision = decide_parallelism_and_input_infos(
        &BatchExecutionOptions::default(),
        &VertexToDecide::undecided(128),
        &[ConsumedInput::new(AllToAll, false, 2, &sums)],
    )
    .unwrap();
    assert_eq!(decision.parallelism, 6);
    assert_eq!(decision.input_infos[0][1].subpartition_range, r(10, 10));
    let skewed = &decision.skewed_subpartitions;
    assert_eq!(skewed.len(), 1, "{decision:?}");
    assert_eq!(
        (skewed[0].input, skewed[0].subpartition, skewed[0].bytes),
        (0, 10, 200 * MIB)
    );
    assert_eq!(skewed[0].average_bytes_per_task, 263 * MIB / 6);
    // Just under 4 x the average (120 MiB; 183 MiB over 6 subtasks is 30.5 MiB each), nothing is
    // reported.
    sums[10] = 120 * MIB;
    let decision = decide_parallelism_and_input_infos(
        &BatchExecutionOptions::default(),
        &VertexToDecide::undecided(128),
        &[ConsumedInput::new(AllToAll, false, 2, &sums)],
    )
    .unwrap();
    assert_eq!(decision.parallelism, 6);
    assert!(decision.skewed_subpartitions.is_empty());
    // Evenly spread bytes report nothing.
    let even = vec![MIB; 64];
    let decision = decide_parallelism_and_input_infos(
        &BatchExecutionOptions::default(),
        &VertexToDecide::undecided(128),
        &[ConsumedInput::new(AllToAll, false, 2, &even)],
    )
    .unwrap();
    assert!(decision.skewed_subpartitions.is_empty());
}

#[test]
fn bad_options_vertices_and_inputs_are_errors() {
    let default = BatchExecutionOptions::default();
    let input = [ConsumedInput::new(AllToAll, false, 1, &BYTES)];
    let undecided = VertexToDecide::undecided(128);
    let bad_options = [
        BatchExecutionOptions {
            min_parallelism: 0,
            ..default.clone()
        },
        BatchExecutionOptions {
            max_parallelism: 0,
            ..default.clone()
        },
        BatchExecutionOptions {
            avg_data_volume_per_task: 0,
            ..default.clone()
        },
        BatchExecutionOptions {
            default_source_parallelism: Some(0),
            ..default.clone()
        },
    ];
    for options in bad_options {
        let err = decide_parallelism_and_input_infos(&options, &undecided, &input).unwrap_err();
        assert!(matches!(err, DecideError::InvalidOptions(_)), "{err}");
    }
    for vertex in [
        VertexToDecide::undecided(0),
        VertexToDecide::fixed(0, 10),
        VertexToDecide::fixed(11, 10),
        VertexToDecide {
            fixed_parallelism: None,
            min_parallelism: 0,
            max_parallelism: 10,
        },
        VertexToDecide {
            fixed_parallelism: None,
            min_parallelism: 200,
            max_parallelism: 300,
        },
    ] {
        let err = decide_parallelism_and_input_infos(&default, &vertex, &input).unwrap_err();
        assert!(
            matches!(err, DecideError::InvalidVertex(_)),
            "{vertex:?}: {err}"
        );
    }
    let empty = [ConsumedInput::new(AllToAll, false, 0, &BYTES)];
    assert_eq!(
        decide_parallelism_and_input_infos(&default, &undecided, &empty),
        Err(DecideError::EmptyInput { input: 0 })
    );
    let differ = [
        ConsumedInput::new(AllToAll, false, 1, &BYTES),
        ConsumedInput::new(AllToAll, false, 1, &[1, 2]),
    ];
    assert_eq!(
        decide_parallelism_and_input_infos(&default, &undecided, &differ),
        Err(DecideError::SubpartitionCountsDiffer {
            expected: 10,
            input: 1,
            found: 2
        })
    );
    // A fixed parallelism of 20 over 10 subpartitions cannot be honoured.
    let err = decide_parallelism_and_input_infos(&default, &VertexToDecide::fixed(20, 128), &input)
        .unwrap_err();
    assert_eq!(
        err,
        DecideError::TooFewSubpartitions {
            input: 0,
            subpartitions: 10,
            consumers: 20
        }
    );
    // POINTWISE: 2 producers of 3 subpartitions cannot feed 8 consumers (4 per producer).
    let pointwise = [ConsumedInput::new(Pointwise, false, 2, &[1, 1, 1])];
    let err =
        decide_parallelism_and_input_infos(&default, &VertexToDecide::fixed(8, 128), &pointwise)
            .unwrap_err();
    assert_eq!(
        err,
        DecideError::TooFewSubpartitions {
            input: 0,
            subpartitions: 3,
            consumers: 4
        }
    );
}

/// The bench's shape: 10,000 producers leave ranges of at most 3 subpartitions (32,768 / 10,000),
/// so no legal balanced parallelism exists; as Flink, the decision falls back to the max
/// parallelism (raised by the 10^9 subpartitions / 32,768) with ranges even by count.
#[test]
fn ten_thousand_producers_fall_back_to_even_subpartition_ranges() {
    let sums = vec![MIB; 100_000];
    let decision = decide_parallelism_and_input_infos(
        &BatchExecutionOptions::default(),
        &VertexToDecide::undecided(128),
        &[ConsumedInput::new(AllToAll, false, 10_000, &sums)],
    )
    .unwrap();
    assert_eq!(decision.parallelism, 128);
    let infos = &decision.input_infos[0];
    assert_eq!(infos[0].partition_range, r(0, 9_999));
    assert_eq!(infos[0].subpartition_range, r(0, 780));
    assert_eq!(infos[127].subpartition_range, r(99_218, 99_999));
    assert!(infos
        .iter()
        .all(|i| (781..=782).contains(&i.subpartition_range.len())));
}
