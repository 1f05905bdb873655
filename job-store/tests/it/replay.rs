//! Replay and compaction: worked examples and a property test against a simple reference.

use std::collections::BTreeMap;

use conflux_job_store::{FinishedExecution, JobEvent, RecoveredJob};
use proptest::prelude::*;

fn finished(vertex: u32, attempt: u32, tm: &str) -> JobEvent {
    JobEvent::TaskFinished(FinishedExecution {
        vertex,
        attempt,
        data_address: tm.to_string(),
        produced_bytes: Vec::new(),
    })
}

#[test]
fn a_reset_forgets_finishes_and_a_later_finish_counts() {
    let events = vec![
        JobEvent::VertexInitialized {
            job_vertex: 1,
            parallelism: 4,
        },
        finished(0, 0, "a:1"),
        finished(1, 0, "a:1"),
        finished(2, 0, "b:1"),
        JobEvent::VerticesReset {
            vertices: vec![1, 2],
        },
        finished(2, 1, "c:1"),
        JobEvent::VertexInitialized {
            job_vertex: 1,
            parallelism: 3,
        },
    ];
    let state = RecoveredJob::replay(&events);
    let got: Vec<(u32, u32, &str)> = state
        .finished
        .values()
        .map(|f| (f.vertex, f.attempt, f.data_address.as_str()))
        .collect();
    assert_eq!(got, vec![(0, 0, "a:1"), (2, 1, "c:1")]);
    assert_eq!(state.decided_parallelism, BTreeMap::from([(1, 3)]));
    assert_eq!(
        state.snapshot(),
        vec![
            JobEvent::VertexInitialized {
                job_vertex: 1,
                parallelism: 3
            },
            finished(0, 0, "a:1"),
            finished(2, 1, "c:1"),
        ]
    );
}

fn event() -> impl Strategy<Value = JobEvent> {
    prop_oneof![
        (0u32..20, 0u32..3, 0u8..3).prop_map(|(v, a, tm)| finished(v, a, &format!("tm{tm}:1"))),
        (0u32..4, 1u32..50).prop_map(|(job_vertex, parallelism)| JobEvent::VertexInitialized {
            job_vertex,
            parallelism
        }),
        proptest::collection::vec(0u32..20, 0..5)
            .prop_map(|vertices| JobEvent::VerticesReset { vertices }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Replay equals a reference that scans the events backwards for each vertex's last word,
    /// and the snapshot replays into the same state.
    #[test]
    fn replay_matches_the_reference_and_compaction_keeps_the_state(
        events in proptest::collection::vec(event(), 0..60)
    ) {
        let state = RecoveredJob::replay(&events);
        for v in 0..20u32 {
            let last = events.iter().rev().find_map(|e| match e {
                JobEvent::TaskFinished(f) if f.vertex == v => Some(Some(f.clone())),
                JobEvent::VerticesReset { vertices } if vertices.contains(&v) => Some(None),
                _ => None,
            }).flatten();
            prop_assert_eq!(state.finished.get(&v).cloned(), last);
        }
        for jv in 0..4u32 {
            let last = events.iter().rev().find_map(|e| match e {
                JobEvent::VertexInitialized { job_vertex, parallelism } if *job_vertex == jv => Some(*parallelism),
                _ => None,
            });
            prop_assert_eq!(state.decided_parallelism.get(&jv).copied(), last);
        }
        prop_assert_eq!(RecoveredJob::replay(&state.snapshot()), state);
    }
}
