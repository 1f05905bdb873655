//! The simulator's queue of future events in virtual time.
//!
//! Events come out by time, and events of one time in the order they were pushed: the order of
//! a binary heap over (time, push sequence), which the simulator used before. A run of a
//! 1,000,000 x 1,000,000 job holds 2,000,000 events at once (each deployed task's RUNNING and
//! FINISHED) over a few thousand distinct times; a binary heap of them took a cache miss per
//! level on every pop, a quarter of the run. Here each time is one FIFO bucket, so a push or a
//! pop touches one small ordered map of times (O(log T) for T distinct pending times) and the
//! end of one bucket.

use std::collections::{BTreeMap, VecDeque};

/// Pending events by virtual time, FIFO within a time.
///
/// Invariant: no bucket in `buckets` is empty.
#[derive(Debug)]
pub(crate) struct EventQueue<E> {
    buckets: BTreeMap<u64, VecDeque<E>>,
    /// Emptied buckets, kept for reuse so that their capacity is allocated once.
    spare: Vec<VecDeque<E>>,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            buckets: BTreeMap::new(),
            spare: Vec::new(),
        }
    }
}

/// Spare buckets kept at most (each may hold the capacity of a million events).
const MAX_SPARE: usize = 8;

impl<E> EventQueue<E> {
    /// An empty queue.
    pub(crate) fn new() -> EventQueue<E> {
        EventQueue::default()
    }

    /// Adds `event` at virtual time `at`, after every event already queued at `at`.
    pub(crate) fn push(&mut self, at: u64, event: E) {
        let spare = &mut self.spare;
        self.buckets
            .entry(at)
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push_back(event);
    }

    /// Takes the earliest event (the first pushed among the earliest) and its time.
    pub(crate) fn pop(&mut self) -> Option<(u64, E)> {
        let mut first = self.buckets.first_entry()?;
        let at = *first.key();
        let event = first.get_mut().pop_front()?;
        if first.get().is_empty() {
            let bucket = first.remove();
            if self.spare.len() < MAX_SPARE {
                self.spare.push(bucket);
            }
        }
        Some((at, event))
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    use conflux_common::SplitMix64;

    use super::*;

    /// Against the binary heap over (time, push sequence) it replaces: pushes at random times
    /// no earlier than the last pop, interleaved with pops, give the same sequence.
    #[test]
    fn pops_in_the_order_of_a_heap_over_time_and_push_sequence() {
        for seed in 0..50 {
            let mut rng = SplitMix64::new(seed);
            let mut queue = EventQueue::new();
            let mut heap = BinaryHeap::new();
            let (mut seq, mut now) = (0u64, 0u64);
            for _ in 0..2_000 {
                if rng.chance(0.6) {
                    let at = now + rng.below(20);
                    seq += 1;
                    queue.push(at, seq);
                    heap.push(Reverse((at, seq)));
                } else {
                    let expected = heap.pop().map(|Reverse(x)| x);
                    assert_eq!(queue.pop(), expected, "seed {seed}");
                    if let Some((at, _)) = expected {
                        now = at;
                    }
                }
            }
            while let Some(Reverse(x)) = heap.pop() {
                assert_eq!(queue.pop(), Some(x));
            }
            assert_eq!(queue.pop(), None);
        }
    }
}
