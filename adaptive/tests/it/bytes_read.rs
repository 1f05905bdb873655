//! What each decided subtask reads ([`ResultBytes::bytes_read`]): hand-computed examples
//! (uneven producers, POINTWISE fan-in and fan-out, a split hot subpartition) and a property
//! test against a reference that keeps the full producer x subpartition matrix.

#![allow(clippy::cast_possible_truncation)] // test shapes are small

use conflux_adaptive::{
    compute_vertex_input_info_for_all_to_all, compute_vertex_input_info_for_pointwise,
    split_skewed_subpartitions, BytesRead, ExecutionVertexInputInfo, ResultBytes,
};
use conflux_graph::DistributionPattern;
use proptest::prelude::*;

/// The reference: the bytes an info reads, summed cell by cell from the full matrix
/// (`rows[p][s]`).
fn brute_force(rows: &[Vec<u64>], info: &ExecutionVertexInputInfo) -> u64 {
    info.partition_range
        .indices()
        .flat_map(|p| {
            info.subpartition_range
                .indices()
                .map(move |s| rows[p as usize][s as usize])
        })
        .sum()
}

/// `rows` reported producer by producer into `result`.
fn reported(mut result: ResultBytes, rows: &[Vec<u64>]) -> ResultBytes {
    for (p, row) in (0u32..).zip(rows) {
        assert_eq!(result.add(p, row), Ok(true));
    }
    assert!(result.is_complete());
    result
}

fn bytes(read: &[BytesRead]) -> Vec<u64> {
    read.iter().map(|r| r.bytes).collect()
}

/// POINTWISE fan-out: 2 producers of 4 subpartitions (a consumer of width 8) read by 4
/// subtasks, two per producer, each half its subpartitions. Producer 0 wrote 1, 2, 3, 4 bytes,
/// producer 1 ten times as much: the subtasks read 1 + 2, 3 + 4, 10 + 20 and 30 + 40. The
/// sums alone (11, 22, 33, 44) shared by producer count would give 16, 38, 16, 38.
#[test]
fn pointwise_fan_out_reads_each_producers_own_subpartitions() {
    let rows = vec![vec![1, 2, 3, 4], vec![10, 20, 30, 40]];
    let infos = compute_vertex_input_info_for_pointwise(2, 4, 4);
    let result = reported(ResultBytes::pointwise(2, 4), &rows);
    let read = result.bytes_read(&infos);
    assert_eq!(bytes(&read), vec![3, 7, 30, 70]);
    assert!(read.iter().all(BytesRead::is_exact));
    let by_pattern = reported(
        ResultBytes::for_pattern(DistributionPattern::Pointwise, 2, 4),
        &rows,
    );
    assert_eq!(by_pattern, result);
}

/// POINTWISE fan-in: 8 producers of 1 subpartition, producer k wrote k + 1 MiB, read by 3
/// subtasks: partitions [0, 1], [2, 4], [5, 7] hold 3, 12 and 21 MiB (by count: 9, 13.5, 13.5).
/// Whole partitions are exact from the partitions' totals alone, without the rows.
#[test]
fn pointwise_fan_in_reads_whole_uneven_partitions() {
    const MIB: u64 = 1 << 20;
    let rows: Vec<Vec<u64>> = (1..=8).map(|k| vec![k * MIB]).collect();
    let infos = compute_vertex_input_info_for_pointwise(8, 3, 1);
    for result in [ResultBytes::pointwise(8, 1), ResultBytes::new(8, 1)] {
        let read = reported(result, &rows).bytes_read(&infos);
        assert_eq!(bytes(&read), vec![3 * MIB, 12 * MIB, 21 * MIB]);
        assert!(read.iter().all(BytesRead::is_exact));
    }
}

/// ALL_TO_ALL and broadcast consumers read their subpartitions from every producer: exact from
/// the sums, however uneven the producers.
#[test]
fn all_to_all_and_broadcast_are_exact_from_the_sums() {
    let rows = vec![vec![0, 5, 7, 1], vec![9, 0, 0, 2], vec![4, 4, 4, 4]];
    let result = reported(ResultBytes::new(3, 4), &rows);
    let infos = compute_vertex_input_info_for_all_to_all(3, 2, 4, false);
    let read = result.bytes_read(&infos);
    assert_eq!(bytes(&read), vec![13 + 9, 11 + 7]);
    assert!(read.iter().all(BytesRead::is_exact));
    // Broadcast: every subtask reads subpartition 0 of every producer (13 bytes).
    let infos = compute_vertex_input_info_for_all_to_all(3, 3, 4, true);
    assert_eq!(bytes(&result.bytes_read(&infos)), vec![13; 3]);
}

/// A hot subpartition split by producer ranges, producers uneven but alike in shape (producer
/// 0 wrote twice what each other did, in the same proportions): subpartition 2 (30 of 50
/// bytes) is split in 3 at a parallelism of 4 (limit 13), read from producers [0], [1] and
/// [2, 3]: 12, 6 and 12 bytes, found exactly by apportioning by the producers' totals (by
/// producer count: 7, 7 and 15). The other ranges read every producer: exact.
#[test]
fn split_pieces_of_producers_alike_are_apportioned_exactly() {
    let rows = vec![
        vec![2, 2, 12, 4],
        vec![1, 1, 6, 2],
        vec![1, 1, 6, 2],
        vec![1, 1, 6, 2],
    ];
    let result = reported(ResultBytes::new(4, 4), &rows);
    let input = result.input(DistributionPattern::AllToAll, false);
    let split = split_skewed_subpartitions(&input, 4, 128).expect("split");
    let read = result.bytes_read(&split.input_infos);
    assert_eq!(bytes(&read), vec![10, 12, 6, 12, 10]);
    let truth: Vec<u64> = split
        .input_infos
        .iter()
        .map(|i| brute_force(&rows, i))
        .collect();
    assert_eq!(bytes(&read), truth);
    let exact: Vec<bool> = read.iter().map(BytesRead::is_exact).collect();
    assert_eq!(exact, vec![true, false, false, false, true]);
    // Piece [0, 0]: at most producer 0's 20 bytes, at least 30 - the others' 30.
    assert_eq!((read[1].low, read[1].high), (0, 20));
}

/// Producers unlike in shape: producer 0 wrote all its 24 bytes to the hot subpartition 2, the
/// others 2 bytes to each subpartition. The pieces [0], [1], [2, 3] of subpartition 2 truly
/// read 24, 2 and 4 bytes; apportioning gives 15, 5 and 10, an estimate within the bounds the
/// sums allow: [6, 24], [0, 8], [0, 16].
#[test]
fn split_pieces_of_producers_unlike_are_estimates_within_bounds() {
    let rows = vec![
        vec![0, 0, 24, 0],
        vec![2, 2, 2, 2],
        vec![2, 2, 2, 2],
        vec![2, 2, 2, 2],
    ];
    let result = reported(ResultBytes::new(4, 4), &rows);
    let input = result.input(DistributionPattern::AllToAll, false);
    let split = split_skewed_subpartitions(&input, 4, 128).expect("split");
    let read = result.bytes_read(&split.input_infos);
    let pieces: Vec<(u64, u64, u64)> = read[1..4]
        .iter()
        .map(|r| (r.bytes, r.low, r.high))
        .collect();
    assert_eq!(pieces, vec![(15, 6, 24), (5, 0, 8), (10, 0, 16)]);
    let truth: Vec<u64> = split.input_infos[1..4]
        .iter()
        .map(|i| brute_force(&rows, i))
        .collect();
    assert_eq!(truth, vec![24, 2, 4]);
    assert_eq!((read[0].bytes, read[4].bytes), (12, 6));
}

/// A producer x subpartition matrix of `partitions` rows and `subpartitions` columns.
fn matrix() -> impl Strategy<Value = Vec<Vec<u64>>> {
    (1usize..9, 1usize..9).prop_flat_map(|(partitions, subpartitions)| {
        prop::collection::vec(
            prop::collection::vec(
                prop_oneof![3 => 0u64..1_000, 1 => Just(0u64), 1 => 0u64..100_000],
                subpartitions,
            ),
            partitions,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    /// ALL_TO_ALL, broadcast and POINTWISE consumers of every parallelism read exactly what
    /// the full matrix says; split pieces lie within their bounds around the truth, exactly on
    /// it when the matrix is an outer product (producers alike in shape).
    #[test]
    fn bytes_read_agrees_with_the_full_matrix(
        rows in matrix(),
        parallelism in 1u32..40,
        weights in prop::collection::vec(0u64..50, 9),
    ) {
        let (u, s) = (rows.len() as u32, rows[0].len() as u32);
        let truth = |infos: &[ExecutionVertexInputInfo]| -> Vec<u64> {
            infos.iter().map(|i| brute_force(&rows, i)).collect()
        };
        let all_to_all = reported(ResultBytes::new(u, s), &rows);
        let pointwise = reported(ResultBytes::pointwise(u, s), &rows);

        let c = parallelism.min(s);
        let infos = compute_vertex_input_info_for_all_to_all(u, c, s, false);
        prop_assert_eq!(bytes(&all_to_all.bytes_read(&infos)), truth(&infos));
        let infos = compute_vertex_input_info_for_all_to_all(u, parallelism, s, true);
        prop_assert_eq!(bytes(&all_to_all.bytes_read(&infos)), truth(&infos));

        let c = parallelism.min(u * s);
        let infos = compute_vertex_input_info_for_pointwise(u, c, s);
        let read = pointwise.bytes_read(&infos);
        prop_assert!(read.iter().all(BytesRead::is_exact));
        prop_assert_eq!(bytes(&read), truth(&infos));
        let sums_only = all_to_all.bytes_read(&infos);
        for (r, t) in sums_only.iter().zip(truth(&infos)) {
            prop_assert!(r.low <= t && t <= r.high && r.low <= r.bytes && r.bytes <= r.high);
            if c <= u {
                prop_assert_eq!(r.bytes, t, "whole partitions are exact");
            }
        }

        let input = all_to_all.input(DistributionPattern::AllToAll, false);
        if let Some(split) = split_skewed_subpartitions(&input, parallelism, u32::MAX) {
            let read = all_to_all.bytes_read(&split.input_infos);
            for (r, t) in read.iter().zip(truth(&split.input_infos)) {
                prop_assert!(r.low <= t && t <= r.high, "{r:?} around {t}");
                prop_assert!(r.low <= r.bytes && r.bytes <= r.high);
                if r.is_exact() {
                    prop_assert_eq!(r.bytes, t);
                }
            }
        }

        // Producers alike: row p is weights[p] x the subpartition weights of row 0.
        let alike: Vec<Vec<u64>> = (0..rows.len())
            .map(|p| rows[0].iter().map(|&b| b * weights[p]).collect())
            .collect();
        let result = reported(ResultBytes::new(u, s), &alike);
        let input = result.input(DistributionPattern::AllToAll, false);
        if let Some(split) = split_skewed_subpartitions(&input, parallelism, u32::MAX) {
            let read = result.bytes_read(&split.input_infos);
            let truth: Vec<u64> =
                split.input_infos.iter().map(|i| brute_force(&alike, i)).collect();
            prop_assert_eq!(bytes(&read), truth);
        }
    }
}
