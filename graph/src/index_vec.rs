//! Typed dense indices and the vectors they index.
//!
//! Every entity of a graph has a dense `u32` index and its per-entity state lives in a flat
//! vector. [`IndexVec<I, T>`] is that vector, indexable only by its own index type `I`, so a
//! region index can never silently index per-vertex state (a `Vec` indexed with `as usize`
//! casts allows exactly that).

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// A dense `u32` index type (a newtype over `u32`).
pub trait Idx: Copy + Eq + fmt::Debug {
    /// The index from its raw value.
    fn from_u32(raw: u32) -> Self;
    /// The raw value.
    fn as_u32(self) -> u32;
    /// The raw value as a `usize`, for indexing.
    #[inline]
    fn index(self) -> usize {
        self.as_u32() as usize
    }
    /// The index of position `i`.
    ///
    /// # Panics
    /// If `i` does not fit in `u32`: a bug, since graphs are bounded well below that
    /// ([`MAX_EXECUTION_VERTICES`](crate::MAX_EXECUTION_VERTICES)).
    #[inline]
    fn from_usize(i: usize) -> Self {
        Self::from_u32(index_u32(i))
    }
}

/// Converts a position known to fit (bounded by the graph's sizes) into a `u32`.
///
/// # Panics
/// If `i` > `u32::MAX`: a bug, since every graph is bounded by
/// [`MAX_EXECUTION_VERTICES`](crate::MAX_EXECUTION_VERTICES).
#[inline]
pub fn index_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or_else(|_| unreachable!("bug: index {i} does not fit in u32"))
}

/// Implements [`Idx`] and `idx()` for `u32` newtypes.
macro_rules! impl_idx {
    ($($t:ty),* $(,)?) => {$(
        impl $crate::index_vec::Idx for $t {
            #[inline]
            fn from_u32(raw: u32) -> Self {
                Self(raw)
            }
            #[inline]
            fn as_u32(self) -> u32 {
                self.0
            }
        }
    )*};
}
pub(crate) use impl_idx;

/// A `Vec<T>` indexed by `I` only. O(1) indexing; the memory of the `Vec`.
#[derive(Clone, PartialEq, Eq)]
pub struct IndexVec<I, T> {
    raw: Vec<T>,
    _index: PhantomData<fn(&I)>,
}

impl<I: Idx, T> IndexVec<I, T> {
    /// An empty vector.
    pub fn new() -> Self {
        IndexVec::from_raw(Vec::new())
    }

    /// An empty vector with room for `n` elements.
    pub fn with_capacity(n: usize) -> Self {
        IndexVec::from_raw(Vec::with_capacity(n))
    }

    /// `n` copies of `value`.
    pub fn from_elem(value: T, n: usize) -> Self
    where
        T: Clone,
    {
        IndexVec::from_raw(vec![value; n])
    }

    /// Wraps a vector: element `i` gets index `I::from_usize(i)`.
    pub fn from_raw(raw: Vec<T>) -> Self {
        IndexVec {
            raw,
            _index: PhantomData,
        }
    }

    /// Appends `value` and returns its index.
    ///
    /// # Panics
    /// If the vector already holds `u32::MAX + 1` elements.
    pub fn push(&mut self, value: T) -> I {
        let i = I::from_usize(self.raw.len());
        self.raw.push(value);
        i
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The element at `i`, if in range.
    pub fn get(&self, i: I) -> Option<&T> {
        self.raw.get(i.index())
    }

    /// The elements in index order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.raw.iter()
    }

    /// The elements with their indices, in index order.
    pub fn iter_enumerated(&self) -> impl Iterator<Item = (I, &T)> + '_ {
        self.raw
            .iter()
            .enumerate()
            .map(|(i, t)| (I::from_usize(i), t))
    }

    /// Every index, ascending.
    pub fn indices(&self) -> impl Iterator<Item = I> + use<I, T> {
        (0..self.raw.len()).map(I::from_usize)
    }

    /// Sets every element to `value`.
    pub fn fill(&mut self, value: T)
    where
        T: Clone,
    {
        self.raw.fill(value);
    }

    /// Grows (or shrinks) to `n` elements, new ones `value` (an array growing with a dynamic
    /// execution graph). O(elements added).
    pub fn resize(&mut self, n: usize, value: T)
    where
        T: Clone,
    {
        self.raw.resize(n, value);
    }

    /// The allocated capacity, in elements (for heap accounting).
    pub fn capacity(&self) -> usize {
        self.raw.capacity()
    }

    /// The elements as a slice, in index order.
    pub fn as_slice(&self) -> &[T] {
        &self.raw
    }
}

impl<I: Idx, T> Default for IndexVec<I, T> {
    fn default() -> Self {
        IndexVec::new()
    }
}

impl<I: Idx, T> Index<I> for IndexVec<I, T> {
    type Output = T;
    #[inline]
    fn index(&self, i: I) -> &T {
        &self.raw[i.index()]
    }
}

impl<I: Idx, T> IndexMut<I> for IndexVec<I, T> {
    #[inline]
    fn index_mut(&mut self, i: I) -> &mut T {
        &mut self.raw[i.index()]
    }
}

impl<I: Idx, T> FromIterator<T> for IndexVec<I, T> {
    fn from_iter<It: IntoIterator<Item = T>>(iter: It) -> Self {
        IndexVec::from_raw(iter.into_iter().collect())
    }
}

impl<I, T: fmt::Debug> fmt::Debug for IndexVec<I, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.raw, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ExecutionVertexIndex, PipelinedRegionIndex};

    #[test]
    fn indexes_by_its_own_type_only() {
        let mut per_vertex: IndexVec<ExecutionVertexIndex, u8> = IndexVec::from_elem(0, 3);
        per_vertex[ExecutionVertexIndex(2)] = 7;
        assert_eq!(per_vertex.as_slice(), &[0, 0, 7]);
        let mut per_region: IndexVec<PipelinedRegionIndex, &str> = IndexVec::new();
        assert_eq!(per_region.push("a"), PipelinedRegionIndex(0));
        assert_eq!(per_region.push("b"), PipelinedRegionIndex(1));
        let pairs: Vec<_> = per_region
            .iter_enumerated()
            .map(|(i, s)| (i.0, *s))
            .collect();
        assert_eq!(pairs, vec![(0, "a"), (1, "b")]);
        assert_eq!(per_region.get(PipelinedRegionIndex(2)), None);
        assert_eq!(
            per_vertex.indices().collect::<Vec<_>>(),
            [0, 1, 2].map(ExecutionVertexIndex)
        );
    }
}
