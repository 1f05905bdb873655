//! Worked examples of POINTWISE and ALL_TO_ALL expansion (Flink's `EdgeManagerBuildUtil`,
//! FLINK-21326, and `VertexInputInfoComputationUtils`): for every
//! consumer subtask the exact partitions it reads, the number of groups, and each group's
//! `num_consumers`, checked from both sides (consumer -> consumed partition group, partition ->
//! consumer vertex group).

use std::collections::BTreeSet;

use conflux_graph::{
    ConsumedPartitionGroupId, ExecutionGraph, ExecutionVertexIndex, IntermediateResultPartitionId,
    JobEdgeIndex, JobVertexIndex, ResultPartitionType,
};

use crate::support::{build, edge, job, vertex};

/// The job vertex index of `id`.
fn index_of(graph: &ExecutionGraph, id: &str) -> JobVertexIndex {
    graph
        .job_graph()
        .vertex_index(id)
        .unwrap_or_else(|| panic!("no vertex {id}"))
}

/// The consumed partition groups of subtask `subtask` of job vertex `id`, one per input.
fn groups_of(graph: &ExecutionGraph, id: &str, subtask: u32) -> Vec<ConsumedPartitionGroupId> {
    let range = graph.execution_vertices_of(index_of(graph, id));
    assert!(
        subtask < range.end - range.start,
        "{id}#{subtask} out of range"
    );
    graph
        .consumed_partition_groups(ExecutionVertexIndex(range.start + subtask))
        .collect()
}

/// The partitions consumer subtask `subtask` of `id` reads on its only input.
fn single_input_partitions(graph: &ExecutionGraph, id: &str, subtask: u32) -> Vec<u32> {
    let groups = groups_of(graph, id, subtask);
    assert_eq!(groups.len(), 1, "{id}#{subtask} has one input");
    graph
        .consumed_partition_group(groups[0])
        .partitions
        .collect()
}

/// Builds `U -> D` with one edge of this pattern and type, then checks, for every consumer
/// subtask `i`: it has one input whose group holds exactly `reads[i]`, with
/// `num_consumers[i]` consumers; the edge has `groups` groups (CPGs and CVGs alike); and from
/// the partition side, the consumer vertex group of each partition holds exactly the consumers
/// that read it and is paired with a consumed group containing it.
fn check(
    u: u32,
    d: u32,
    pattern: &str,
    partition_type: &str,
    reads: &[&[u32]],
    num_consumers: &[u32],
    groups: u32,
) {
    let what = format!("{u}->{d} {pattern} {partition_type}");
    let expected_type = ResultPartitionType::parse(partition_type).expect("known type");
    let d_len = usize::try_from(d).expect("usize");
    assert_eq!(
        reads.len(),
        d_len,
        "{what}: table row has one entry per consumer"
    );
    assert_eq!(
        num_consumers.len(),
        d_len,
        "{what}: table row has one entry per consumer"
    );

    let (graph, _) = build(&job(
        vec![vertex("U", u), vertex("D", d)],
        vec![edge("U", "D", pattern, partition_type)],
    ));
    let edge_index = JobEdgeIndex(0);
    let result = graph.job_graph().edge(edge_index).data_set;
    assert_eq!(graph.num_groups(), groups, "{what}: number of groups");
    assert_eq!(
        graph.connection(edge_index).num_groups,
        groups,
        "{what}: connection groups"
    );

    // Consumer side.
    let mut seen_groups = BTreeSet::new();
    for (i, (expected_parts, &expected_consumers)) in reads.iter().zip(num_consumers).enumerate() {
        let i = u32::try_from(i).expect("u32");
        let ids = groups_of(&graph, "D", i);
        assert_eq!(ids.len(), 1, "{what}: D#{i} has one input");
        let group = graph.consumed_partition_group(ids[0]);
        assert_eq!(
            group.partitions.clone().collect::<Vec<_>>(),
            *expected_parts,
            "{what}: partitions of D#{i}"
        );
        assert_eq!(
            group.num_consumers, expected_consumers,
            "{what}: num_consumers of D#{i}'s group"
        );
        assert_eq!(group.edge, edge_index, "{what}: edge of D#{i}'s group");
        assert_eq!(group.result, result, "{what}: result of D#{i}'s group");
        assert_eq!(
            group.result_partition_type, expected_type,
            "{what}: group type"
        );
        seen_groups.insert(ids[0]);
    }
    assert_eq!(
        u32::try_from(seen_groups.len()).expect("u32"),
        groups,
        "{what}: distinct consumed partition groups"
    );

    // Partition side: the consumer group of a partition is exactly the consumers reading it.
    let d_vertex = index_of(&graph, "D");
    let u_start = graph.execution_vertices_of(index_of(&graph, "U")).start;
    let mut seen_consumer_groups = BTreeSet::new();
    for p in 0..u {
        let partition = IntermediateResultPartitionId {
            result,
            partition: p,
        };
        assert_eq!(
            graph.producer_of(partition),
            ExecutionVertexIndex(u_start + p),
            "{what}: producer of partition {p}"
        );
        let cvgs: Vec<_> = graph.consumer_vertex_groups(partition).collect();
        assert_eq!(cvgs.len(), 1, "{what}: partition {p} has one consumer edge");
        let cvg = graph.consumer_vertex_group(cvgs[0]);
        let readers: Vec<u32> = (0..d)
            .zip(reads)
            .filter(|(_, parts)| parts.contains(&p))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(
            cvg.subtasks.clone().collect::<Vec<_>>(),
            readers,
            "{what}: consumers of partition {p}"
        );
        assert_eq!(
            cvg.job_vertex, d_vertex,
            "{what}: consumer job vertex of {p}"
        );
        assert_eq!(
            cvg.edge, edge_index,
            "{what}: edge of partition {p}'s group"
        );
        assert_eq!(cvg.result_partition_type, expected_type, "{what}: cvg type");
        // Paired: the consumed group of the same number contains the partition, and its
        // num_consumers is the size of this consumer group.
        let paired = graph.consumed_partition_group(cvg.id.consumed_partition_group());
        assert!(
            paired.partitions.contains(&p),
            "{what}: partition {p} is in its paired group"
        );
        assert_eq!(
            usize::try_from(paired.num_consumers).expect("usize"),
            cvg.subtasks.len(),
            "{what}: num_consumers = consumer group size for partition {p}"
        );
        seen_consumer_groups.insert(cvgs[0]);
    }
    assert_eq!(
        u32::try_from(seen_consumer_groups.len()).expect("u32"),
        groups,
        "{what}: distinct consumer vertex groups"
    );
}

/// Checks one pointwise row with both a blocking and a pipelined edge (the type must not change
/// the expansion).
fn check_pointwise(u: u32, d: u32, reads: &[&[u32]], num_consumers: &[u32], groups: u32) {
    for partition_type in ["blocking", "pipelined_bounded"] {
        check(
            u,
            d,
            "pointwise",
            partition_type,
            reads,
            num_consumers,
            groups,
        );
    }
}

/// Checks ALL_TO_ALL `U -> D`: every consumer reads every partition, one group, D consumers.
fn check_all_to_all(u: u32, d: u32) {
    let all: Vec<u32> = (0..u).collect();
    let d_len = usize::try_from(d).expect("usize");
    let reads: Vec<&[u32]> = vec![all.as_slice(); d_len];
    let num_consumers = vec![d; d_len];
    for partition_type in ["blocking", "pipelined", "hybrid_full"] {
        check(
            u,
            d,
            "all_to_all",
            partition_type,
            &reads,
            &num_consumers,
            1,
        );
    }
}

/// `(U, D, partitions read by each consumer, num_consumers seen by each consumer, #groups)`.
type Row = (u32, u32, &'static [&'static [u32]], &'static [u32], u32);

/// Flink's worked examples (PointwisePatternTest, EdgeManagerTest,
/// VertexInputInfoComputationUtilsTest, PipelinedRegionSchedulingStrategyTest), plus 5->2 and
/// 3->5.
const POINTWISE_TABLE: &[Row] = &[
    (
        3,
        7,
        &[&[0], &[0], &[0], &[1], &[1], &[2], &[2]],
        &[3, 3, 3, 2, 2, 2, 2],
        3,
    ),
    (7, 3, &[&[0, 1], &[2, 3], &[4, 5, 6]], &[1, 1, 1], 3),
    (4, 2, &[&[0, 1], &[2, 3]], &[1, 1], 2),
    (2, 4, &[&[0], &[0], &[1], &[1]], &[2, 2, 2, 2], 2),
    (5, 5, &[&[0], &[1], &[2], &[3], &[4]], &[1, 1, 1, 1, 1], 5),
    (2, 5, &[&[0], &[0], &[0], &[1], &[1]], &[3, 3, 3, 2, 2], 2),
    (5, 2, &[&[0, 1], &[2, 3, 4]], &[1, 1], 2),
    (2, 3, &[&[0], &[0], &[1]], &[2, 2, 1], 2),
    (4, 3, &[&[0], &[1], &[2, 3]], &[1, 1, 1], 3),
    (3, 2, &[&[0], &[1, 2]], &[1, 1], 2),
    (
        4,
        6,
        &[&[0], &[0], &[1], &[2], &[2], &[3]],
        &[2, 2, 1, 2, 2, 1],
        4,
    ),
    (
        6,
        10,
        &[&[0], &[0], &[1], &[1], &[2], &[3], &[3], &[4], &[4], &[5]],
        &[2, 2, 2, 2, 1, 2, 2, 2, 2, 1],
        6,
    ),
    (5, 3, &[&[0], &[1, 2], &[3, 4]], &[1, 1, 1], 3),
    (
        10,
        3,
        &[&[0, 1, 2], &[3, 4, 5], &[6, 7, 8, 9]],
        &[1, 1, 1],
        3,
    ),
    (6, 4, &[&[0], &[1, 2], &[3], &[4, 5]], &[1, 1, 1, 1], 4),
    (
        10,
        6,
        &[&[0], &[1, 2], &[3, 4], &[5], &[6, 7], &[8, 9]],
        &[1; 6],
        6,
    ),
    (3, 5, &[&[0], &[0], &[1], &[1], &[2]], &[2, 2, 2, 2, 1], 3),
    (1, 1, &[&[0]], &[1], 1),
    (1, 3, &[&[0], &[0], &[0]], &[3, 3, 3], 1),
    (3, 1, &[&[0, 1, 2]], &[1], 1),
    // FLINK-22863: the 1.13 float fan-out overshot here (ArrayIndexOutOfBounds).
    (
        11,
        29,
        &[
            &[0],
            &[0],
            &[0],
            &[1],
            &[1],
            &[1],
            &[2],
            &[2],
            &[3],
            &[3],
            &[3],
            &[4],
            &[4],
            &[4],
            &[5],
            &[5],
            &[6],
            &[6],
            &[6],
            &[7],
            &[7],
            &[7],
            &[8],
            &[8],
            &[9],
            &[9],
            &[9],
            &[10],
            &[10],
        ],
        &[
            3, 3, 3, 3, 3, 3, 2, 2, 3, 3, 3, 3, 3, 3, 2, 2, 3, 3, 3, 3, 3, 3, 2, 2, 3, 3, 3, 2, 2,
        ],
        11,
    ),
];

#[test]
fn pointwise_worked_examples() {
    for &(u, d, reads, num_consumers, groups) in POINTWISE_TABLE {
        check_pointwise(u, d, reads, num_consumers, groups);
    }
}

#[test]
fn all_to_all_worked_examples() {
    // The same pairs: one group holding every partition, read by all D consumers (EdgeManagerTest:
    // 5->2 gives 2,2; 2->5 and 5->5 give 5 x 5).
    for &(u, d, _, _, _) in POINTWISE_TABLE {
        check_all_to_all(u, d);
    }
}

/// `(U, D, partitions read by consumer i)`.
type Shape = (u32, u32, fn(u32) -> Vec<u32>);

/// PointwisePatternTest's regular shapes: N->N, 2N->N, 3N->N, N->2N, N->7N.
#[test]
fn pointwise_regular_shapes() {
    let shapes: [Shape; 5] = [
        (23, 23, |i| vec![i]),
        (34, 17, |i| vec![2 * i, 2 * i + 1]),
        (51, 17, |i| vec![3 * i, 3 * i + 1, 3 * i + 2]),
        (41, 82, |i| vec![i / 2]),
        (11, 77, |i| vec![i / 7]),
    ];
    for (u, d, expected) in shapes {
        let (graph, _) = build(&job(
            vec![vertex("U", u), vertex("D", d)],
            vec![edge("U", "D", "pointwise", "pipelined")],
        ));
        for i in 0..d {
            assert_eq!(
                single_input_partitions(&graph, "D", i),
                expected(i),
                "{u}->{d}: D#{i}"
            );
        }
        assert_eq!(graph.num_groups(), u.min(d), "{u}->{d}: groups");
    }
}

/// PointwisePatternTest's irregular shapes, by their stated properties.
#[test]
fn pointwise_irregular_shapes() {
    // Low -> high: every consumer reads one partition; every partition is read by between
    // floor(D/U) and floor(D/U) + 1 consumers.
    for (u, d) in [(3, 16), (19, 21), (15, 20), (11, 31), (11, 29)] {
        let (graph, _) = build(&job(
            vec![vertex("U", u), vertex("D", d)],
            vec![edge("U", "D", "pointwise", "blocking")],
        ));
        let mut readers = vec![0u32; usize::try_from(u).expect("usize")];
        let mut previous = 0;
        for i in 0..d {
            let parts = single_input_partitions(&graph, "D", i);
            assert_eq!(parts.len(), 1, "{u}->{d}: D#{i} reads one partition");
            assert!(
                parts[0] >= previous,
                "{u}->{d}: partitions are non-decreasing"
            );
            previous = parts[0];
            readers[usize::try_from(parts[0]).expect("usize")] += 1;
        }
        for (p, &n) in readers.iter().enumerate() {
            assert!(
                n == d / u || n == d / u + 1,
                "{u}->{d}: partition {p} has {n} consumers"
            );
        }
    }
    // High -> low: every consumer reads between floor(U/D) and floor(U/D) + 1 partitions; every
    // partition is read exactly once.
    for (u, d) in [(16, 3), (21, 19), (20, 15), (31, 11)] {
        let (graph, _) = build(&job(
            vec![vertex("U", u), vertex("D", d)],
            vec![edge("U", "D", "pointwise", "blocking")],
        ));
        let mut all = Vec::new();
        for i in 0..d {
            let parts = single_input_partitions(&graph, "D", i);
            let n = u32::try_from(parts.len()).expect("u32");
            assert!(
                n == u / d || n == u / d + 1,
                "{u}->{d}: D#{i} reads {n} partitions"
            );
            all.extend(parts);
        }
        assert_eq!(
            all,
            (0..u).collect::<Vec<_>>(),
            "{u}->{d}: each partition once, in order"
        );
    }
}

/// A data set with two consumer edges (FLINK-28663) gets groups per edge: numbered by consumer
/// in topological order, listed per partition in edge order.
#[test]
fn data_set_with_two_consumer_edges() {
    for (pattern, groups_per_edge) in [("pointwise", 2), ("all_to_all", 1)] {
        let shared = |target: &str| {
            let mut e = edge("A", target, pattern, "blocking");
            e.data_set = Some("shared".to_owned());
            e
        };
        // C is listed before B, so it comes first in topological order and gets the first
        // groups, although the edge to B comes first in the edge list.
        let (graph, _) = build(&job(
            vec![vertex("A", 4), vertex("C", 2), vertex("B", 2)],
            vec![shared("B"), shared("C")],
        ));
        let job_graph = graph.job_graph();
        assert_eq!(job_graph.data_sets().len(), 1, "{pattern}: one data set");
        let result = job_graph.edge(JobEdgeIndex(0)).data_set;
        assert_eq!(job_graph.edge(JobEdgeIndex(1)).data_set, result);
        assert_eq!(graph.num_groups(), 2 * groups_per_edge, "{pattern}: groups");

        let c_groups: BTreeSet<u32> = (0..2).map(|i| groups_of(&graph, "C", i)[0].0).collect();
        let b_groups: BTreeSet<u32> = (0..2).map(|i| groups_of(&graph, "B", i)[0].0).collect();
        assert_eq!(
            c_groups,
            (0..groups_per_edge).collect(),
            "{pattern}: C's groups come first"
        );
        assert_eq!(
            b_groups,
            (groups_per_edge..2 * groups_per_edge).collect(),
            "{pattern}: B's groups come next"
        );
        for target in ["B", "C"] {
            let expected: [Vec<u32>; 2] = if pattern == "pointwise" {
                [vec![0, 1], vec![2, 3]]
            } else {
                [vec![0, 1, 2, 3], vec![0, 1, 2, 3]]
            };
            for (i, parts) in (0..2).zip(expected) {
                assert_eq!(
                    single_input_partitions(&graph, target, i),
                    parts,
                    "{pattern}: {target}#{i}"
                );
            }
        }

        let (b, c) = (index_of(&graph, "B"), index_of(&graph, "C"));
        for p in 0..4 {
            let partition = IntermediateResultPartitionId {
                result,
                partition: p,
            };
            let cvgs: Vec<_> = graph
                .consumer_vertex_groups(partition)
                .map(|id| graph.consumer_vertex_group(id))
                .collect();
            assert_eq!(
                cvgs.len(),
                2,
                "{pattern}: partition {p} has two consumer groups"
            );
            // Edge order: the edge to B (edge 0) first.
            assert_eq!(cvgs[0].job_vertex, b, "{pattern}: partition {p}: B first");
            assert_eq!(cvgs[0].edge, JobEdgeIndex(0));
            assert_eq!(cvgs[1].job_vertex, c, "{pattern}: partition {p}: then C");
            assert_eq!(cvgs[1].edge, JobEdgeIndex(1));
            let expected: Vec<u32> = if pattern == "pointwise" {
                vec![p / 2]
            } else {
                vec![0, 1]
            };
            for cvg in &cvgs {
                assert_eq!(
                    cvg.subtasks.clone().collect::<Vec<_>>(),
                    expected,
                    "{pattern}: consumers of partition {p}"
                );
                let paired = graph.consumed_partition_group(cvg.id.consumed_partition_group());
                assert!(paired.partitions.contains(&p));
                assert_eq!(paired.edge, cvg.edge);
            }
        }
    }
}

/// Partitions read by consumer `i` of `U -> D` pointwise, computed in 128 bits.
fn reference_range(u: u32, d: u32, i: u32) -> std::ops::Range<u128> {
    let (u, d, i) = (u128::from(u), u128::from(d), u128::from(i));
    if u >= d {
        i * u / d..(i + 1) * u / d
    } else {
        i * u / d..i * u / d + 1
    }
}

/// Large pointwise edges where `i * U` or `p * D` overflows `u32`: the crate's ranges agree with
/// a 128-bit formula for every consumer (the groups tile the partitions in order) and in detail
/// for sampled subtasks around the overflow point.
#[test]
fn pointwise_index_arithmetic_is_64_bit() {
    for (u, d) in [
        (70_000, 65_537),
        (65_537, 70_000),
        (100_000, 99_999),
        (99_999, 100_000),
        (3, 4_000_000),
        (4_000_000, 3),
    ] {
        let (graph, _) = build(&job(
            vec![vertex("U", u), vertex("D", d)],
            vec![edge("U", "D", "pointwise", "pipelined")],
        ));
        assert_eq!(graph.num_groups(), u.min(d), "{u}->{d}: groups");
        let result = graph.job_graph().edge(JobEdgeIndex(0)).data_set;
        let d_range = graph.execution_vertices_of(index_of(&graph, "D"));

        // Every consumer: its range matches the 128-bit formula.
        for i in 0..d {
            let group = graph.consumed_partition_group(
                graph
                    .consumed_partition_groups(ExecutionVertexIndex(d_range.start + i))
                    .next()
                    .expect("one input"),
            );
            let expected = reference_range(u, d, i);
            assert_eq!(
                u128::from(group.partitions.start)..u128::from(group.partitions.end),
                expected,
                "{u}->{d}: D#{i}"
            );
        }

        // Sampled partitions, around the u32 overflow of `p * D` and `i * U`: the consumer group
        // is exactly the consumers whose 128-bit range holds the partition.
        let near_overflow = |factor: u32| -> u32 {
            u32::try_from((1u64 << 32).div_ceil(u64::from(factor))).unwrap_or(u32::MAX)
        };
        let mut samples: BTreeSet<u32> = [0, 1, 2, u / 2, u - 2, u - 1].into_iter().collect();
        for centre in [near_overflow(d), near_overflow(u)] {
            for p in centre.saturating_sub(2)..centre.saturating_add(3) {
                samples.insert(p);
            }
        }
        for p in samples.into_iter().filter(|&p| p < u) {
            let partition = IntermediateResultPartitionId {
                result,
                partition: p,
            };
            let cvg = graph.consumer_vertex_group(
                graph
                    .consumer_vertex_groups(partition)
                    .next()
                    .expect("one consumer edge"),
            );
            // Consumers of p: i with floor(iU/D) <= p < end(i); a contiguous run, found from the
            // formula's inverse and checked at its borders.
            let (u128_u, u128_d, u128_p) = (u128::from(u), u128::from(d), u128::from(p));
            let first = if u >= d {
                ((u128_p + 1) * u128_d).div_ceil(u128_u) - 1
            } else {
                (u128_p * u128_d).div_ceil(u128_u)
            };
            let end = if u >= d {
                first + 1
            } else {
                ((u128_p + 1) * u128_d).div_ceil(u128_u)
            };
            for i in [first, end - 1] {
                let i = u32::try_from(i).expect("u32");
                assert!(
                    reference_range(u, d, i).contains(&u128_p),
                    "{u}->{d}: inverse formula, consumer {i} of partition {p}"
                );
            }
            if first > 0 {
                let before = u32::try_from(first - 1).expect("u32");
                assert!(!reference_range(u, d, before).contains(&u128_p));
            }
            if end < u128::from(d) {
                let after = u32::try_from(end).expect("u32");
                assert!(!reference_range(u, d, after).contains(&u128_p));
            }
            assert_eq!(
                u128::from(cvg.subtasks.start)..u128::from(cvg.subtasks.end),
                first..end,
                "{u}->{d}: consumers of partition {p}"
            );
        }
    }
}

/// ALL_TO_ALL at 100,000 x 100,000 is still one group; 10^10 logical connections.
#[test]
fn all_to_all_large_is_one_group() {
    let (graph, _) = build(&job(
        vec![vertex("U", 100_000), vertex("D", 100_000)],
        vec![edge("U", "D", "all_to_all", "blocking")],
    ));
    assert_eq!(graph.num_groups(), 1);
    assert_eq!(graph.logical_connections(), 10_000_000_000);
    let group = graph.consumed_partition_group(ConsumedPartitionGroupId(0));
    assert_eq!(group.partitions, 0..100_000);
    assert_eq!(group.num_consumers, 100_000);
    let last = graph.execution_vertices_of(index_of(&graph, "D")).end - 1;
    assert_eq!(
        graph
            .consumed_partition_groups(ExecutionVertexIndex(last))
            .collect::<Vec<_>>(),
        vec![ConsumedPartitionGroupId(0)]
    );
}
