//! A first-in first-out queue stored in chunks of fixed capacity, so that no push ever copies
//! the queue.
//!
//! A `VecDeque` doubles when it is full: the push that finds it full copies every element. The
//! slot pool's queues reach a million entries in one scheduling run at 10^6 x 10^6 (a shared
//! slot and a timeout check per source region at `Start`; the consumers' checks on top of the
//! sources' when the last source finishes), and the push that doubled a 16 MiB queue of checks
//! cost 10-30 ms inside one budgeted handler call. Here a push allocates at most one chunk of
//! [`CHUNK`] entries, and a chunk is freed (one is kept for reuse) as soon as its last entry is
//! popped, so the memory also follows what is queued rather than the most ever queued.

use std::collections::VecDeque;

/// Entries per chunk: 4,096 (128 KiB of 32-byte entries, small against the queues that need
/// chunks and large enough that the outer deque of chunk handles stays tiny).
pub(crate) const CHUNK: usize = 4096;

/// A FIFO queue of `Copy` entries in chunks of [`CHUNK`]; pushes and pops are O(1) in the worst
/// case (a push may allocate one chunk).
#[derive(Debug)]
pub(crate) struct ChunkedQueue<T> {
    /// Full chunks, then the last one, which may be partly filled. Never an empty chunk.
    chunks: VecDeque<Vec<T>>,
    /// Entries of the front chunk already popped.
    head: usize,
    /// Entries queued.
    len: usize,
    /// A drained chunk kept for the next push that needs one.
    spare: Option<Vec<T>>,
}

impl<T: Copy> ChunkedQueue<T> {
    /// An empty queue (allocates nothing).
    pub(crate) fn new() -> ChunkedQueue<T> {
        ChunkedQueue {
            chunks: VecDeque::new(),
            head: 0,
            len: 0,
            spare: None,
        }
    }

    /// Entries queued.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Appends `value` at the back.
    pub(crate) fn push_back(&mut self, value: T) {
        if self.chunks.back().is_none_or(|c| c.len() == CHUNK) {
            let chunk = self
                .spare
                .take()
                .unwrap_or_else(|| Vec::with_capacity(CHUNK));
            self.chunks.push_back(chunk);
        }
        if let Some(last) = self.chunks.back_mut() {
            last.push(value);
        }
        self.len += 1;
    }

    /// The entry at the front, if any.
    pub(crate) fn front(&self) -> Option<&T> {
        self.chunks.front().and_then(|c| c.get(self.head))
    }

    /// The entry at the back, if any.
    pub(crate) fn back(&self) -> Option<&T> {
        self.chunks.back().and_then(|c| c.last())
    }

    /// Removes and returns the entry at the front, if any; a chunk emptied by it is freed (or
    /// kept as the spare).
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        let chunk = self.chunks.front()?;
        let value = *chunk.get(self.head)?;
        self.head += 1;
        self.len -= 1;
        if self.head == chunk.len() {
            self.head = 0;
            if let Some(mut drained) = self.chunks.pop_front() {
                drained.clear();
                self.spare = Some(drained);
            }
        }
        Some(value)
    }

    /// Removes every entry and frees every chunk.
    pub(crate) fn clear(&mut self) {
        self.chunks.clear();
        self.spare = None;
        self.head = 0;
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Any sequence of pushes, pops and clears leaves the queue as a `VecDeque` would be,
        /// across chunk boundaries (runs longer than a chunk included).
        #[test]
        fn behaves_as_a_vec_deque(ops in prop::collection::vec((0u8..10, 1usize..3 * CHUNK), 1..24)) {
            let mut queue = ChunkedQueue::new();
            let mut reference = VecDeque::new();
            let mut next = 0u32;
            for (op, count) in ops {
                match op {
                    0..=4 => {
                        for _ in 0..count {
                            queue.push_back(next);
                            reference.push_back(next);
                            next += 1;
                        }
                    }
                    5..=8 => {
                        for _ in 0..count {
                            prop_assert_eq!(queue.pop_front(), reference.pop_front());
                        }
                    }
                    _ => {
                        queue.clear();
                        reference.clear();
                    }
                }
                prop_assert_eq!(queue.len(), reference.len());
                prop_assert_eq!(queue.front(), reference.front());
                prop_assert_eq!(queue.back(), reference.back());
            }
        }
    }

    /// A queue drained to empty and refilled reuses its spare chunk and holds at most the
    /// chunks its entries need.
    #[test]
    fn holds_the_chunks_its_entries_need() {
        let mut queue = ChunkedQueue::new();
        for i in 0..2 * CHUNK + 1 {
            queue.push_back(i);
        }
        assert_eq!(queue.chunks.len(), 3);
        for i in 0..CHUNK {
            assert_eq!(queue.pop_front(), Some(i));
        }
        assert_eq!((queue.chunks.len(), queue.spare.is_some()), (2, true));
        while queue.pop_front().is_some() {}
        assert_eq!((queue.chunks.len(), queue.len()), (0, 0));
        queue.push_back(7);
        assert_eq!((queue.front(), queue.back()), (Some(&7), Some(&7)));
        assert!(queue.spare.is_none(), "the spare chunk was reused");
    }
}
