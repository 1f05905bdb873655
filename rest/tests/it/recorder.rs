//! The recorder's O(1) updates against a recount over the subtask tables, on seeded random
//! state changes (resets included).

use std::sync::Arc;

use conflux_rest::{ExecutionState, IoCounts, JobRecorder, JobType};

use crate::fake::{two_vertex_job, TM};

/// SplitMix64, enough for a seeded test.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[test]
fn aggregates_equal_a_recount_after_every_change() {
    for seed in 0..50u64 {
        let view = two_vertex_job(9, "random", JobType::Batch);
        let mut recorder = JobRecorder::new(Arc::clone(&view));
        let mut rng = seed;
        let mut attempts = [[0u32; 2]; 2];
        for step in 0..400i64 {
            let vertex = (next(&mut rng) % 2) as usize;
            let subtask = (next(&mut rng) % 2) as u32;
            let state = ExecutionState::ALL[(next(&mut rng) % 8) as usize];
            if state == ExecutionState::Created {
                attempts[vertex][subtask as usize] += 1;
            }
            let attempt = attempts[vertex][subtask as usize];
            {
                let mut update = recorder.vertex(vertex).unwrap();
                if state == ExecutionState::Finished {
                    update.finished_io(
                        subtask,
                        IoCounts {
                            read_bytes: 1,
                            write_bytes: 2,
                            read_records: 3,
                            write_records: 4,
                        },
                    );
                }
                update.set_state(subtask, state, attempt, TM, 1_000 + step);
            }
            recorder.publish(0, Vec::new());
            let snapshot = view.snapshot();
            for v in 0..2 {
                let table = view.subtasks(v).unwrap().clone();
                let mut counts = [0u32; 10];
                let mut io = IoCounts::default();
                let mut reported = 0;
                for r in &table.records {
                    counts[ExecutionState::from(r.state).ordinal()] += 1;
                    if r.reported {
                        io = io.plus(r.io);
                        reported += 1;
                    }
                }
                let aggregate = &snapshot.vertices[v];
                assert_eq!(
                    aggregate.counts, counts,
                    "seed {seed} step {step} vertex {v}"
                );
                assert_eq!(
                    (aggregate.io, aggregate.reported),
                    (io, reported),
                    "seed {seed} step {step}"
                );
                assert!(
                    aggregate.last_change_ms >= 1_000 || aggregate.last_change_ms == 0,
                    "seed {seed} step {step}: last change at {} ms",
                    aggregate.last_change_ms
                );
            }
        }
    }
}
