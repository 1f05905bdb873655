//! The word source: a seeded stream of word ids per source subtask, Zipf-distributed over the
//! vocabulary (rank `r`, counted from 1, drawn with probability proportional to `1 / r`).

use conflux_common::SplitMix64;

use crate::error::OperatorError;
use crate::vocabulary_limit::MAX_VOCABULARY_SIZE;

/// Scale of the integer Zipf weights: rank `r` weighs `floor(2^32 / r)`. Integers keep the
/// distribution, and so every stream, the same on every platform (no `powf`).
const WEIGHT_SCALE: u64 = 1 << 32;

/// One column of the alias table: a uniform draw in `0..total` below `threshold` keeps the
/// column's own rank, else takes `alias`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Column {
    threshold: u64,
    alias: u32,
}

/// Zipf's law with exponent 1 over `n` ranks, as a Walker/Vose alias table in integers: a draw
/// is one uniform column and one uniform threshold, O(1) whatever `n`. 16 bytes per rank, a
/// column's threshold and alias side by side (a draw reads one place in memory, not two).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zipf {
    columns: Vec<Column>,
    /// The sum of the weights; every column holds `total` of probability mass, in units of
    /// `1 / (n * total)`.
    total: u64,
}

impl Zipf {
    /// The table for `n` ranks. O(n) time and memory.
    ///
    /// # Errors
    /// [`OperatorError::Vocabulary`] when `n` is 0 or above [`MAX_VOCABULARY_SIZE`].
    pub fn new(n: u32) -> Result<Zipf, OperatorError> {
        if n == 0 || n > MAX_VOCABULARY_SIZE {
            return Err(OperatorError::Vocabulary { size: n });
        }
        let weights: Vec<u64> = (1..=u64::from(n)).map(|r| WEIGHT_SCALE / r).collect();
        let total: u64 = weights.iter().sum();
        // Scaled so that the average column holds exactly `total`: w * n <= 2^32 * 2^24.
        let mut scaled: Vec<u64> = weights.iter().map(|w| w * u64::from(n)).collect();
        let mut threshold = vec![total; n as usize];
        let mut alias: Vec<u32> = (0..n).collect();
        let (mut small, mut large): (Vec<u32>, Vec<u32>) =
            (0..n).partition(|&i| scaled[i as usize] < total);
        // Vose: fill each under-full column with mass from an over-full one.
        while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
            threshold[s as usize] = scaled[s as usize];
            alias[s as usize] = l;
            let lu = l as usize;
            scaled[lu] -= total - scaled[s as usize];
            if scaled[lu] < total {
                large.pop();
                small.push(l);
            }
        }
        // What remains holds exactly `total` (integers: no rounding residue to spread).
        Ok(Zipf {
            columns: threshold
                .into_iter()
                .zip(alias)
                .map(|(threshold, alias)| Column { threshold, alias })
                .collect(),
            total,
        })
    }

    /// Number of ranks.
    pub fn len(&self) -> u32 {
        // At most MAX_VOCABULARY_SIZE, checked in `new`.
        u32::try_from(self.columns.len()).unwrap_or(u32::MAX)
    }

    /// Whether it has no ranks (never: `new` refuses 0).
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// The probability of rank `id` (0-based) in units of `1 / (len * total)`, as the table
    /// holds it: `floor(2^32 / (id + 1)) * len`. For tests and the reference.
    pub fn mass(&self, id: u32) -> u64 {
        WEIGHT_SCALE / (u64::from(id) + 1) * u64::from(self.len())
    }

    /// The sum of the weights, `sum floor(2^32 / r)`: with [`Zipf::mass`], rank `id`'s
    /// probability is `mass(id) / (len * total)`.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// One draw: a rank in `0..len`. Two outputs of `rng`, mapped to ranges by
    /// multiply-shift (Lemire), so exactly the same on every platform.
    #[inline]
    // The column is below len <= MAX_VOCABULARY_SIZE: the casts keep every bit.
    #[allow(clippy::cast_possible_truncation)]
    pub fn sample(&self, rng: &mut SplitMix64) -> u32 {
        let column = mul_high(rng.next_u64(), self.columns.len() as u64) as usize;
        let u = mul_high(rng.next_u64(), self.total);
        let c = self.columns[column];
        if u < c.threshold {
            // column < len <= MAX_VOCABULARY_SIZE.
            column as u32
        } else {
            c.alias
        }
    }
}

/// `floor(x * n / 2^64)`: uniform in `0..n` for uniform `x`.
#[inline]
#[allow(clippy::cast_possible_truncation)]
fn mul_high(x: u64, n: u64) -> u64 {
    // The high half of a 128-bit product always fits in 64 bits.
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

/// The seed of source subtask `subtask`'s stream in a job seeded with `seed`: both mixed by
/// SplitMix64's finaliser, so neighbouring subtasks get unrelated streams (not one stream
/// shifted by a step, as `seed + subtask` would give).
pub fn stream_seed(seed: u64, subtask: u32) -> u64 {
    let a = SplitMix64::new(seed).next_u64();
    let b = SplitMix64::new(u64::from(subtask) ^ 0x5eed_5eed_5eed_5eed).next_u64();
    SplitMix64::new(a ^ b).next_u64()
}

/// The words of one source subtask: `words` word ids drawn from a [`Zipf`] with the stream of
/// [`stream_seed`]`(seed, subtask)`. An iterator; O(1) per word, no allocation.
#[derive(Clone, Debug)]
pub struct WordSource<'z> {
    zipf: &'z Zipf,
    rng: SplitMix64,
    remaining: u64,
}

impl<'z> WordSource<'z> {
    /// The stream of source subtask `subtask` of a job seeded with `seed`, `words` long.
    pub fn new(zipf: &'z Zipf, seed: u64, subtask: u32, words: u64) -> WordSource<'z> {
        WordSource {
            zipf,
            rng: SplitMix64::new(stream_seed(seed, subtask)),
            remaining: words,
        }
    }

    /// Words still to come.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }
}

impl WordSource<'_> {
    /// Draws the next words into `ids` and returns how many it drew: `ids.len()`, fewer only
    /// at the end of the stream. The same words, in the same order, as as many calls of
    /// `next`; drawn in a tight loop, so that the alias table reads of a batch (random over the
    /// whole table: a cache miss each on a large vocabulary) overlap instead of waiting one
    /// after another behind the rest of a word's work.
    pub fn fill(&mut self, ids: &mut [u32]) -> usize {
        let n = ids
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        for id in &mut ids[..n] {
            *id = self.zipf.sample(&mut self.rng);
        }
        self.remaining -= n as u64;
        n
    }
}

impl Iterator for WordSource<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        Some(self.zipf.sample(&mut self.rng))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.remaining).unwrap_or(usize::MAX);
        (n, usize::try_from(self.remaining).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alias_table_holds_exactly_the_weights() {
        // Rebuild each rank's mass from the table: its own column's share plus what other
        // columns alias to it. Integer arithmetic: exact equality.
        for n in [1u32, 2, 3, 10, 1000] {
            let z = Zipf::new(n).expect("valid");
            let mut mass = vec![0u64; n as usize];
            for i in 0..n as usize {
                let c = z.columns[i];
                mass[i] += c.threshold;
                mass[c.alias as usize] += z.total - c.threshold;
            }
            for id in 0..n {
                assert_eq!(mass[id as usize], z.mass(id), "n {n} rank {id}");
            }
            assert_eq!(
                z.total,
                (1..=u64::from(n)).map(|r| WEIGHT_SCALE / r).sum::<u64>()
            );
        }
    }

    #[test]
    fn frequencies_follow_zipf() {
        let z = Zipf::new(100).expect("valid");
        let mut counts = [0u64; 100];
        let draws = 400_000u64;
        for id in WordSource::new(&z, 1, 0, draws) {
            counts[id as usize] += 1;
        }
        // H(100) = 5.187; rank 1 has p = 0.1928, rank 2 half of it, rank 10 a tenth.
        let p = |c: u64| c as f64 / draws as f64;
        assert!((p(counts[0]) - 0.1928).abs() < 0.005, "{}", p(counts[0]));
        assert!((p(counts[1]) - 0.0964).abs() < 0.004, "{}", p(counts[1]));
        assert!((p(counts[9]) - 0.01928).abs() < 0.002, "{}", p(counts[9]));
        assert!(counts.iter().all(|&c| c > 0));
    }

    #[test]
    fn streams_are_seeded_per_subtask() {
        let z = Zipf::new(1000).expect("valid");
        let a: Vec<u32> = WordSource::new(&z, 9, 0, 50).collect();
        assert_eq!(a, WordSource::new(&z, 9, 0, 50).collect::<Vec<_>>());
        assert_ne!(a, WordSource::new(&z, 9, 1, 50).collect::<Vec<_>>());
        assert_ne!(a, WordSource::new(&z, 10, 0, 50).collect::<Vec<_>>());
        // Subtask 1 is not subtask 0 shifted by one draw.
        let b: Vec<u32> = WordSource::new(&z, 9, 1, 51).collect();
        assert_ne!(&a[1..], &b[..49]);
        assert_eq!(WordSource::new(&z, 9, 0, 0).count(), 0);
    }

    #[test]
    fn streams_are_the_same_on_every_platform() {
        // Pinned: integer arithmetic only, so these never change unless the format does.
        let z = Zipf::new(100_000).expect("valid");
        let a: Vec<u32> = WordSource::new(&z, 42, 3, 8).collect();
        assert_eq!(a, PINNED);
    }

    /// The first 8 word ids of source subtask 3 with seed 42 over 100,000 words, recorded when
    /// the format was made: a change here changes every stream and every expected count.
    const PINNED: [u32; 8] = [17533, 0, 19952, 72720, 14723, 141, 424, 1622];

    #[test]
    fn filled_batches_are_the_stream() {
        let zipf = Zipf::new(1_000).expect("zipf");
        let one_by_one: Vec<u32> = WordSource::new(&zipf, 9, 3, 1_000).collect();
        let mut source = WordSource::new(&zipf, 9, 3, 1_000);
        let mut batched = Vec::new();
        let mut batch = [0u32; 300];
        loop {
            let n = source.fill(&mut batch);
            if n == 0 {
                break;
            }
            batched.extend_from_slice(&batch[..n]);
        }
        assert_eq!(batched, one_by_one);
        assert_eq!((source.remaining(), source.fill(&mut batch)), (0, 0));
    }
}
