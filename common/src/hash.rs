//! FNV-1a, 64 bits (Fowler, Noll, Vo).

/// A 64-bit FNV-1a hasher: stable across runs, platforms and Rust versions (unlike
/// `DefaultHasher`), so digests of seeded runs can be compared and names can seed generators.
///
/// Integers are hashed as their little-endian bytes. Implements [`std::hash::Hasher`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv1a64 {
    state: u64,
}

impl Fnv1a64 {
    /// FNV's 64-bit offset basis.
    pub const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    /// FNV's 64-bit prime.
    pub const PRIME: u64 = 0x0100_0000_01b3;

    /// A hasher at the offset basis.
    pub fn new() -> Fnv1a64 {
        Fnv1a64::with_state(Self::OFFSET_BASIS)
    }

    /// A hasher continuing from `state` (e.g. the offset basis mixed with a seed).
    pub fn with_state(state: u64) -> Fnv1a64 {
        Fnv1a64 { state }
    }

    /// Hashes `bytes` in order.
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.state ^= u64::from(b);
            self.state = self.state.wrapping_mul(Self::PRIME);
        }
    }

    /// Hashes `x` as its 8 little-endian bytes.
    pub fn write_u64_le(&mut self, x: u64) {
        self.write_bytes(&x.to_le_bytes());
    }

    /// The digest so far.
    pub fn digest(&self) -> u64 {
        self.state
    }

    /// The digest of `bytes` alone.
    pub fn hash_bytes(bytes: &[u8]) -> u64 {
        let mut h = Fnv1a64::new();
        h.write_bytes(bytes);
        h.digest()
    }
}

impl Default for Fnv1a64 {
    fn default() -> Self {
        Fnv1a64::new()
    }
}

impl std::hash::Hasher for Fnv1a64 {
    fn finish(&self) -> u64 {
        self.state
    }

    fn write(&mut self, bytes: &[u8]) {
        self.write_bytes(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_published_test_vectors() {
        // From the FNV reference test suite (fnv-1a, 64 bits).
        assert_eq!(Fnv1a64::hash_bytes(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(Fnv1a64::hash_bytes(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(Fnv1a64::hash_bytes(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn integers_hash_as_little_endian_bytes() {
        let mut a = Fnv1a64::new();
        a.write_u64_le(0x0102);
        let mut b = Fnv1a64::new();
        b.write_bytes(&[2, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(a.digest(), b.digest());
    }
}
