//! Pictures of the job graph: `inspect --format dot|mermaid|svg` of a generated 200-vertex
//! layered plan (20 layers of 10, three inputs per vertex, 570 edges; target: <= 200 ms each).
//!
//! Before criterion runs, a table gives min / median / max of 11 runs of what `inspect --format
//! FORMAT` does after reading the file: load the bytes, validate, compute the logical regions
//! and edge numbers, and draw.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;
use std::time::{Duration, Instant};

use conflux_graph::generate::layered;
use conflux_graph::load::{load, LoadOptions};
use conflux_planner::picture::{render, Format, Options};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

const TARGET_MS: f64 = 200.0;

/// The plan measured, as a file's bytes (`conflux generate layered --layers 20 --width 10`):
/// 200 vertices.
fn plan_bytes() -> Vec<u8> {
    layered(20, 10, 4).to_json_pretty().into_bytes()
}

/// What `inspect --format FORMAT --edge-stats` does with the bytes of a file.
fn inspect_picture(bytes: &[u8], format: Format) -> String {
    let job = load(bytes, &LoadOptions::default()).expect("plan loads");
    let options = Options {
        edge_stats: true,
        ..Options::default()
    };
    render(&job, format, &options).expect("draws")
}

fn time_ms(runs: usize, mut f: impl FnMut()) -> (f64, f64, f64) {
    let mut t: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t[0], t[t.len() / 2], t[t.len() - 1])
}

fn report() {
    println!(
        "inspect --format F --edge-stats of a layered plan (10 per layer, 3 inputs each), ms (min / median / max of 11 runs; target <= {TARGET_MS} ms):"
    );
    let bytes = plan_bytes();
    let bytes = bytes.as_slice();
    for format in Format::ALL {
        let size = inspect_picture(bytes, format).len();
        let (min, median, max) = time_ms(11, || {
            black_box(inspect_picture(black_box(bytes), format));
        });
        let flag = if median > TARGET_MS {
            "  ABOVE TARGET"
        } else {
            ""
        };
        println!(
            "{format:<8} 200 vertices {min:>8.2} / {median:>8.2} / {max:>8.2}   {size:>9} bytes{flag}"
        );
    }
}

fn bench(c: &mut Criterion) {
    report();
    let mut group = c.benchmark_group("picture");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let bytes = plan_bytes();
    for format in Format::ALL {
        group.bench_with_input(
            BenchmarkId::new("inspect_layered", format.as_str()),
            &bytes,
            |b, bytes| b.iter(|| inspect_picture(black_box(bytes), format)),
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
