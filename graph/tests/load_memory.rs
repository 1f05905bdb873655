//! Peak heap of loading a large job graph file, measured with a counting global allocator (conflux-test-support's;
//! a test binary of its own, since the allocator is global).
//! Reading a job file, expanding it and computing its regions, as `conflux inspect` does, must
//! peak at no more than 4 times the file's size, the file itself included.

#![allow(missing_docs)]

use conflux_graph::load::{self, LoadOptions};
use conflux_graph::{generate, ExecutionGraph, PipelinedRegions};
use conflux_test_support::CountingAllocator;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator::new();

/// Peak heap bytes of loading a generated file and expanding the job, above what was live before the
/// file was made, as a multiple of the file's size.
fn peak_ratio(vertices: u32, component_size: u32) -> (usize, f64) {
    let base = ALLOCATOR.live_bytes();
    let bytes = generate::components_json(vertices, component_size).into_bytes();
    let size = bytes.len();
    ALLOCATOR.reset_peak();
    let (job, _) = load::load_owned(bytes, &LoadOptions::default()).expect("valid");
    let graph = ExecutionGraph::build(job).expect("expands");
    let regions = PipelinedRegions::compute(&graph).expect("regions");
    assert_eq!(graph.num_execution_vertices(), vertices);
    assert_eq!(
        regions.len(),
        (vertices as usize).div_ceil(component_size as usize)
    );
    drop((graph, regions));
    let peak = ALLOCATOR.peak_bytes() - base;
    (size, peak as f64 / size as f64)
}

/// 300,000 vertices (a 10 MB file) without edges, the densest file per vertex, and 100,000
/// in chains of 4 (edges are about 100 bytes of file each and cost less than that): at most 4
/// times the file at the peak (2.6 and 2.5 when written).
#[test]
fn loading_peaks_at_four_times_the_file() {
    for (vertices, component_size) in [(300_000, 1), (100_000, 4)] {
        let (size, ratio) = peak_ratio(vertices, component_size);
        println!(
            "{vertices} vertices in components of {component_size}: {size} bytes, peak {ratio:.2} x"
        );
        assert!(
            ratio <= 4.0,
            "{vertices} vertices in components of {component_size}: peak {ratio:.2} x the \
             {size}-byte file"
        );
    }
}
