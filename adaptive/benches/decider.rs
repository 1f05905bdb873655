//! Deciding a consumer of 10,000 producers with 100,000 subpartitions each, from the sums
//! (target: <= 10 ms).

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;

use conflux_adaptive::{
    decide_parallelism_and_input_infos, BatchExecutionOptions, ConsumedInput, VertexToDecide,
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

criterion_group!(benches, bench_decider);
criterion_main!(benches);
