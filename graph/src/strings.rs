//! Compact string storage for large job graphs: many strings in one buffer ([`StrArena`]) and a
//! hash index over them that stores only `u32` entries, never a second copy of a key
//! ([`StrIndex`]). A job of millions of vertices keeps its ids in about one byte per character
//! plus 4 bytes per id, instead of a `String` (24 bytes plus an allocation) per id and another
//! per hash-map key.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use crate::index_vec::index_u32;

/// Strings appended one after another into one buffer, addressed by their position (0, 1, ...).
/// 4 bytes per string plus its text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct StrArena {
    text: String,
    /// `ends[i]` is the end of string `i` in `text`; it starts where string `i - 1` ends.
    ends: Vec<u32>,
}

impl StrArena {
    /// Appends a string and returns its position.
    ///
    /// # Panics
    /// If the text grows beyond `u32::MAX` bytes: never for a file within the job file limit
    /// (256 MiB); a `JobGraphJson` built in memory would need 4 GiB of strings.
    pub(crate) fn push(&mut self, s: &str) -> u32 {
        let position = index_u32(self.ends.len());
        self.text.push_str(s);
        self.ends.push(index_u32(self.text.len()));
        position
    }

    /// String `i`.
    ///
    /// Panics if `i` is not a position of this arena.
    pub(crate) fn get(&self, i: u32) -> &str {
        let i = i as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    /// Number of strings.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Heap bytes held (at capacity).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * std::mem::size_of::<u32>()
    }

    /// Releases spare capacity.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

/// A hash set of `u32` values whose keys are strings stored elsewhere (looked up through a
/// `key` function on every probe): open addressing with linear probing, at most 3/4 full, so 4
/// to 8 bytes per entry. Hashing is SipHash with random keys (std's [`RandomState`]), so a
/// hostile file cannot make lookups quadratic.
#[derive(Clone, Debug, Default)]
pub(crate) struct StrIndex {
    /// `value + 1`, or 0 for an empty slot. Length 0 or a power of two.
    slots: Vec<u32>,
    len: usize,
    hasher: RandomState,
}

impl StrIndex {
    /// An index sized for `n` entries without growing.
    pub(crate) fn with_capacity(n: usize) -> StrIndex {
        let mut index = StrIndex::default();
        if n > 0 {
            index.slots = vec![0; Self::slots_for(n)];
        }
        index
    }

    fn slots_for(n: usize) -> usize {
        (n + n / 3 + 1).next_power_of_two().max(8)
    }

    /// The value stored under `key`, if any; `key_of` gives the key of a stored value.
    pub(crate) fn get<'k>(&self, key: &str, key_of: impl Fn(u32) -> &'k str) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut slot = self.slot_of(key) & mask;
        loop {
            match self.slots[slot] {
                0 => return None,
                stored if key_of(stored - 1) == key => return Some(stored - 1),
                _ => slot = (slot + 1) & mask,
            }
        }
    }

    /// Stores `value` under `key` unless a value is stored under it already, which is returned
    /// instead (and nothing changes).
    pub(crate) fn insert<'k>(
        &mut self,
        key: &str,
        value: u32,
        key_of: impl Fn(u32) -> &'k str,
    ) -> Option<u32> {
        if let Some(existing) = self.get(key, &key_of) {
            return Some(existing);
        }
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow(&key_of);
        }
        let mask = self.slots.len() - 1;
        let mut slot = self.slot_of(key) & mask;
        while self.slots[slot] != 0 {
            slot = (slot + 1) & mask;
        }
        self.slots[slot] = value + 1;
        self.len += 1;
        None
    }

    fn grow<'k>(&mut self, key_of: &impl Fn(u32) -> &'k str) {
        let old = std::mem::replace(&mut self.slots, vec![0; Self::slots_for(self.len + 1) * 2]);
        let mask = self.slots.len() - 1;
        for stored in old.into_iter().filter(|&s| s != 0) {
            let mut slot = self.slot_of(key_of(stored - 1)) & mask;
            while self.slots[slot] != 0 {
                slot = (slot + 1) & mask;
            }
            self.slots[slot] = stored;
        }
    }

    /// Replaces every stored value `v` by `f(v)`, keeping the keys: the caller guarantees that
    /// the key of `f(v)` under the new key function is the key of `v` under the old one.
    pub(crate) fn remap(&mut self, f: impl Fn(u32) -> u32) {
        for slot in self.slots.iter_mut().filter(|s| **s != 0) {
            *slot = f(*slot - 1) + 1;
        }
    }

    fn slot_of(&self, key: &str) -> usize {
        // Truncation keeps the low bits, which the mask selects.
        #[allow(clippy::cast_possible_truncation)]
        let h = self.hasher.hash_one(key) as usize;
        h
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<u32>()
    }
}

/// Distinct strings numbered in order of first appearance: an arena plus its index.
#[derive(Clone, Debug, Default)]
pub(crate) struct Interner {
    names: StrArena,
    index: StrIndex,
}

impl Interner {
    /// The number of `name`, adding it if it is new.
    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        let next = index_u32(self.names.len());
        let names = &self.names;
        match self.index.insert(name, next, |i| names.get(i)) {
            Some(existing) => existing,
            None => self.names.push(name),
        }
    }

    /// The number of `name`, if it was interned.
    pub(crate) fn find(&self, name: &str) -> Option<u32> {
        self.index.get(name, |i| self.names.get(i))
    }

    /// Name number `i`.
    pub(crate) fn get(&self, i: u32) -> &str {
        self.names.get(i)
    }

    /// Number of distinct names.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    /// The names, without the index.
    pub(crate) fn into_names(self) -> StrArena {
        self.names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_finds_what_was_inserted_across_growth() {
        let mut arena = StrArena::default();
        let mut index = StrIndex::default();
        for i in 0..1000u32 {
            let key = format!("k{i}");
            let position = arena.push(&key);
            assert_eq!(index.insert(&key, position, |v| arena.get(v)), None);
        }
        assert_eq!(index.insert("k7", 5000, |v| arena.get(v)), Some(7));
        for i in 0..1000u32 {
            assert_eq!(index.get(&format!("k{i}"), |v| arena.get(v)), Some(i));
        }
        assert_eq!(index.get("k1000", |v| arena.get(v)), None);
        assert_eq!(arena.get(0), "k0");
        assert_eq!(arena.get(999), "k999");
        let mut interner = Interner::default();
        assert_eq!(
            (
                interner.intern("a"),
                interner.intern("b"),
                interner.intern("a")
            ),
            (0, 1, 0)
        );
        assert_eq!((interner.find("b"), interner.find("c")), (Some(1), None));
    }
}
