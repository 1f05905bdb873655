//! Peak heap of loading a large job graph file, measured with a counting global allocator (the
//! approach of `benches/src/lib.rs`; a test binary of its own, since the allocator is global).
//! Reading a job file, expanding it and computing its regions, as `conflux inspect` does, must
//! peak at no more than 4 times the file's size, the file itself included.

#![allow(missing_docs)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use conflux_graph::load::{self, LoadOptions};
use conflux_graph::{generate, ExecutionGraph, PipelinedRegions};

/// Forwards to the system allocator, counting live and peak bytes (requested sizes).
struct CountingAllocator {
    live: AtomicUsize,
    peak: AtomicUsize,
}

impl CountingAllocator {
    fn added(&self, bytes: usize) {
        let live = self.live.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(live, Ordering::Relaxed);
    }

    fn removed(&self, bytes: usize) {
        self.live.fetch_sub(bytes, Ordering::Relaxed);
    }
}

// A GlobalAlloc must be an `unsafe impl`.
#[allow(unsafe_code)]
// SAFETY: every call forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees carry over; the counters do not affect the memory handed out.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is; the caller upholds `alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            self.added(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            self.added(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is; `ptr` came from this allocator, i.e. from `System`.
        unsafe { System.dealloc(ptr, layout) };
        self.removed(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            self.removed(layout.size());
            self.added(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator {
    live: AtomicUsize::new(0),
    peak: AtomicUsize::new(0),
};

/// Peak heap bytes of loading a generated file and expanding the job, above what was live before the
/// file was made, as a multiple of the file's size.
fn peak_ratio(vertices: u32, component_size: u32) -> (usize, f64) {
    let base = ALLOCATOR.live.load(Ordering::Relaxed);
    let bytes = generate::components_json(vertices, component_size).into_bytes();
    let size = bytes.len();
    ALLOCATOR
        .peak
        .store(ALLOCATOR.live.load(Ordering::Relaxed), Ordering::Relaxed);
    let (job, _) = load::load_owned(bytes, &LoadOptions::default()).expect("valid");
    let graph = ExecutionGraph::build(job).expect("expands");
    let regions = PipelinedRegions::compute(&graph).expect("regions");
    assert_eq!(graph.num_execution_vertices(), vertices);
    assert_eq!(
        regions.len(),
        (vertices as usize).div_ceil(component_size as usize)
    );
    drop((graph, regions));
    let peak = ALLOCATOR.peak.load(Ordering::Relaxed) - base;
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
