//! SplitMix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number generators", 2014).

use std::ops::Range;

/// SplitMix64: 64 bits of state, one add and two multiply-xorshift rounds per output.
///
/// The same seed gives the same sequence on every platform; that is its whole purpose here
/// (seeded simulations whose `trace_digest`s are compared across runs). Not cryptographic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The golden-ratio increment of the state.
    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

    /// A generator whose state starts at `seed` (used as is: equal seeds, equal sequences).
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(Self::GAMMA);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` by modulo (the bias, below n / 2^64, does not matter for simulations);
    /// 0 when `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// Uniform index in `0..n`; 0 when `n` is 0.
    pub fn index(&mut self, n: usize) -> usize {
        // `below(n)` < n, which fits in usize.
        usize::try_from(self.below(n as u64)).unwrap_or(0)
    }

    /// Uniform in `range`; an empty range gives its start.
    pub fn range(&mut self, range: Range<u64>) -> u64 {
        range.start + self.below(range.end.saturating_sub(range.start))
    }

    /// Uniform in `lo..=hi`; `lo` when `hi <= lo`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo).saturating_add(1))
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `len` pseudo-random bytes (the little-endian bytes of successive draws), for test data.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            let word = self.next_u64().to_le_bytes();
            let take = (len - out.len()).min(word.len());
            out.extend_from_slice(&word[..take]);
        }
        out
    }

    /// True with probability `p` (never for `p <= 0`, always for `p >= 1`). Draws one value
    /// whatever `p` is, except for `p <= 0`, which draws none.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_sequence() {
        // Outputs of the reference C implementation (Vigna's splitmix64.c) from state 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(r.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn bounded_draws_stay_in_bounds() {
        let mut r = SplitMix64::new(7);
        for _ in 0..1000 {
            assert!(r.below(10) < 10);
            assert!((5..9).contains(&r.range(5..9)));
            assert!((3..=4).contains(&r.between(3, 4)));
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
        }
        assert_eq!(r.below(0), 0);
        assert_eq!(r.range(4..4), 4);
        assert_eq!(r.between(9, 2), 9);
        assert!(!r.chance(0.0));
        let bytes = SplitMix64::new(0).bytes(11);
        assert_eq!(bytes.len(), 11);
        assert_eq!(bytes[..8], 0xe220_a839_7b1d_cdaf_u64.to_le_bytes());
        assert!(r.chance(1.0));
    }
}
