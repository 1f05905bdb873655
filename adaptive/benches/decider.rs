//! Deciding a consumer of 10,000 producers with 100,000 subpartitions each, from the sums
//! (target: <= 10 ms), and then what each of its subtasks reads (`ResultBytes::bytes_read`,
//! which the scheduler adds to every decision).

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;

use conflux_adaptive::{
    decide_parallelism_and_input_infos, split_skewed_subpartitions, BatchExecutionOptions,
    ConsumedInput, ResultBytes, VertexToDecide,
};
use conflux_graph::DistributionPattern;
use criterion::{criterion_group, criterion_main, Criterion};

const PRODUCERS: u32 = 10_000;
const SUBPARTITIONS: usize = 100_000;

/// Sums of a seeded, uneven spread: about 100 GiB in all.
fn sums() -> Vec<u64> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..SUBPARTITIONS)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (1 << 20) + state % (1 << 21)
        })
        .collect()
}

fn bench_decider(c: &mut Criterion) {
    let sums = sums();
    let options = BatchExecutionOptions::default();
    let mut group = c.benchmark_group("decider");
    for (name, pattern) in [
        ("all_to_all", DistributionPattern::AllToAll),
        ("pointwise", DistributionPattern::Pointwise),
    ] {
        let input = ConsumedInput::new(pattern, false, PRODUCERS, &sums);
        group.bench_function(format!("{name}_10k_producers_100k_subpartitions"), |b| {
            b.iter(|| {
                decide_parallelism_and_input_infos(
                    black_box(&options),
                    &VertexToDecide::undecided(128),
                    black_box(&[input]),
                )
            })
        });
    }
    // One producer, so the 32,768-subpartition cap leaves the byte balancing (and its
    // bisection down to 128 ranges) the whole work.
    let input = ConsumedInput::new(DistributionPattern::AllToAll, false, 1, &sums);
    group.bench_function("all_to_all_balanced_100k_subpartitions", |b| {
        b.iter(|| {
            decide_parallelism_and_input_infos(
                black_box(&options),
                &VertexToDecide::undecided(128),
                black_box(&[input]),
            )
        })
    });
    group.finish();
}

/// The result of 10,000 producers that each wrote `sums / 10,000` per subpartition (the
/// rounding left out), reported one by one.
fn reported(sums: &[u64]) -> ResultBytes {
    let subpartitions = u32::try_from(sums.len()).expect("fits");
    let mut result = ResultBytes::new(PRODUCERS, subpartitions);
    let row: Vec<u64> = sums.iter().map(|&b| b / u64::from(PRODUCERS)).collect();
    for p in 0..PRODUCERS {
        result.add(p, &row).expect("fits");
    }
    result
}

fn bench_bytes_read(c: &mut Criterion) {
    let mut sums = sums();
    let options = BatchExecutionOptions::default();
    let mut group = c.benchmark_group("bytes_read");
    let result = reported(&sums);
    let input = result.input(DistributionPattern::AllToAll, false);
    // The scheduler's whole decision: the decider, then each subtask's bytes.
    group.bench_function(
        "decide_and_bytes_read_10k_producers_100k_subpartitions",
        |b| {
            b.iter(|| {
                let d = decide_parallelism_and_input_infos(
                    black_box(&options),
                    &VertexToDecide::undecided(128),
                    black_box(&[input]),
                )
                .expect("decides");
                black_box(result.bytes_read(&d.input_infos[0]))
            })
        },
    );
    // A hot subpartition every 10,000 (20,000 times the others) split by producer ranges:
    // pieces apportioned by the producers' totals.
    for b in sums.iter_mut().step_by(10_000) {
        *b *= 20_000;
    }
    let skewed = reported(&sums);
    let input = skewed.input(DistributionPattern::AllToAll, false);
    let split = split_skewed_subpartitions(&input, 128, 32_768).expect("splits");
    group.bench_function("bytes_read_split_10k_producers_100k_subpartitions", |b| {
        b.iter(|| black_box(skewed.bytes_read(black_box(&split.input_infos))))
    });
    group.finish();
}

criterion_group!(benches, bench_decider, bench_bytes_read);
criterion_main!(benches);
