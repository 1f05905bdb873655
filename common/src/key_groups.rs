//! Key groups, as Flink's `KeyGroupRangeAssignment`: how a key is routed to the subtask that
//! owns it, and which key groups each subtask owns.
//!
//! The chain for a string key is Java's `String.hashCode` over the key's UTF-16 code units
//! ([`java_string_hash`]), then Flink's `MathUtils.murmurHash` ([`murmur_hash`]), then
//! `% max_parallelism` (the key group, [`key_group_for_hash`]), then
//! `key_group * parallelism / max_parallelism` (the operator index,
//! [`operator_index_for_key_group`]). Every step is bit-exact with the JVM, so that a word is
//! routed to the same subtask as Flink would route it. [`key_group_range`] is the inverse view:
//! the contiguous range of key groups one subtask owns.

/// A range of key groups, both ends included (Flink's `KeyGroupRange`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyGroupRange {
    /// The first key group.
    pub start: u64,
    /// The last key group (included).
    pub end: u64,
}

impl KeyGroupRange {
    /// Number of key groups in the range: `end - start + 1`, 0 when empty.
    pub fn len(self) -> u64 {
        (self.end + 1).saturating_sub(self.start)
    }

    /// Whether the range is empty (never, for the ranges of [`key_group_range`] with
    /// `parallelism <= max_parallelism`).
    pub fn is_empty(self) -> bool {
        self.end < self.start
    }

    /// Whether `key_group` is in the range.
    pub fn contains(self, key_group: u64) -> bool {
        self.start <= key_group && key_group <= self.end
    }

    /// The key groups in both ranges, if any.
    pub fn intersection(self, other: KeyGroupRange) -> Option<KeyGroupRange> {
        let (start, end) = (self.start.max(other.start), self.end.min(other.end));
        (start <= end).then_some(KeyGroupRange { start, end })
    }
}

/// The key groups subtask `index` of `parallelism` owns out of `max_parallelism`, as Flink's
/// `KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex`: start
/// `ceil(index * max_parallelism / parallelism)`, end
/// `ceil((index + 1) * max_parallelism / parallelism) - 1`. Arithmetic in 64 bits (Flink's is
/// 32-bit, within its cap of 32,768). Exactly the key groups `k` with
/// `operator_index_for_key_group(max_parallelism, parallelism, k) == index`.
///
/// # Panics
/// When `parallelism` is 0, above `max_parallelism`, or `index >= parallelism` (callers check).
pub fn key_group_range(max_parallelism: u64, parallelism: u64, index: u64) -> KeyGroupRange {
    assert!(
        parallelism >= 1 && parallelism <= max_parallelism && index < parallelism,
        "bug: subtask {index} of {parallelism} with max parallelism {max_parallelism}"
    );
    KeyGroupRange {
        start: (index * max_parallelism).div_ceil(parallelism),
        end: ((index + 1) * max_parallelism - 1) / parallelism,
    }
}

/// The subtask of `parallelism` that owns `key_group`, as Flink's
/// `KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup`:
/// `key_group * parallelism / max_parallelism`.
///
/// # Panics
/// When `max_parallelism` is 0 (division by zero).
pub fn operator_index_for_key_group(max_parallelism: u64, parallelism: u64, key_group: u64) -> u64 {
    key_group * parallelism / max_parallelism
}

/// Java's `String.hashCode` of `s`: `h = 31 * h + c` over its UTF-16 code units (a character
/// outside the Basic Multilingual Plane counts as its two surrogates), wrapping in 32 bits.
/// O(len).
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// Flink's `MathUtils.murmurHash`: one MurmurHash3 (x86, 32-bit) round of `code` with seed 0
/// and length 4, then the finaliser, then made non-negative (`-h` for negative `h`, 0 for
/// `i32::MIN`). Spreads Java's weak `hashCode`s before the modulo. Always in `0..=i32::MAX`.
pub fn murmur_hash(code: i32) -> u32 {
    let mut h = code.wrapping_mul(0xcc9e_2d51_u32 as i32);
    h = h.rotate_left(15);
    h = h.wrapping_mul(0x1b87_3593);
    h = h.rotate_left(13);
    h = h.wrapping_mul(5).wrapping_add(0xe654_6b64_u32 as i32);
    h ^= 4;
    h = bit_mix(h);
    // `unsigned_abs` is `-h` for negative `h`; i32::MIN maps to 0 as in Flink.
    if h == i32::MIN {
        0
    } else {
        h.unsigned_abs()
    }
}

/// Flink's `MathUtils.bitMix`: MurmurHash3's 32-bit finaliser (`fmix32`), with Java's
/// logical shifts.
fn bit_mix(code: i32) -> i32 {
    // Work on the bits as u32 so that `>>` is Java's `>>>`.
    let mut h = code as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h as i32
}

/// The key group of a key whose Java `hashCode` is `key_hash`, as Flink's
/// `KeyGroupRangeAssignment.computeKeyGroupForKeyHash`: `murmur_hash(key_hash) % max_parallelism`.
///
/// # Panics
/// When `max_parallelism` is 0.
pub fn key_group_for_hash(key_hash: i32, max_parallelism: u32) -> u32 {
    murmur_hash(key_hash) % max_parallelism
}

/// The key group of the string `key`, as Flink's `KeyGroupRangeAssignment.assignToKeyGroup`
/// for a `String` key. O(len).
///
/// # Panics
/// When `max_parallelism` is 0.
pub fn key_group_for_str(key: &str, max_parallelism: u32) -> u32 {
    key_group_for_hash(java_string_hash(key), max_parallelism)
}

/// The subtask of `parallelism` that consumes the string `key` with `max_parallelism` key
/// groups, as Flink's `KeyGroupRangeAssignment.assignKeyToParallelOperator` (what a
/// `keyBy` exchange does per record). O(len).
///
/// # Panics
/// When `max_parallelism` is 0.
pub fn operator_index_for_str(key: &str, max_parallelism: u32, parallelism: u32) -> u32 {
    let key_group = key_group_for_str(key, max_parallelism);
    // key_group < max_parallelism, so the quotient is < parallelism and fits in u32.
    let index = operator_index_for_key_group(
        u64::from(max_parallelism),
        u64::from(parallelism),
        u64::from(key_group),
    );
    u32::try_from(index).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One worked example: key, Java hash, max parallelism, key group, parallelism, subtask.
    fn check(key: &str, hash: i32, max: u32, group: u32, parallelism: u32, subtask: u32) {
        assert_eq!(java_string_hash(key), hash, "hash of {key:?}");
        assert_eq!(key_group_for_str(key, max), group, "key group of {key:?}");
        assert_eq!(
            operator_index_for_str(key, max, parallelism),
            subtask,
            "subtask of {key:?}"
        );
        let range = key_group_range(u64::from(max), u64::from(parallelism), u64::from(subtask));
        assert!(range.contains(u64::from(group)), "{key:?}: {range:?}");
    }

    #[test]
    fn routes_as_the_jvm_does() {
        check("flink", 97_520_992, 128, 98, 4, 3);
        check("word", 3_655_434, 128, 93, 64, 46);
        check("événement", -1_156_115_343, 256, 77, 7, 2);
    }

    #[test]
    fn java_string_hash_worked_examples() {
        // Values of `String.hashCode` on the JVM.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("ab"), 97 * 31 + 98);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        // Overflow wraps: "polygenelubricants" hashes to i32::MIN on the JVM.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        // A character outside the BMP counts as two UTF-16 surrogates (0xD83D, 0xDE00).
        assert_eq!(java_string_hash("😀"), 0xD83D * 31 + 0xDE00);
    }

    #[test]
    fn murmur_hash_worked_examples() {
        // MurmurHash3_x86_32 of the 4 little-endian bytes of 0 with seed 0 is 0x2362f9de
        // (positive, kept as is).
        assert_eq!(murmur_hash(0), 0x2362_f9de);
        // Always non-negative.
        for code in [i32::MIN, -1, 1, 42, i32::MAX] {
            assert!(i32::try_from(murmur_hash(code)).is_ok());
        }
    }

    /// The cases of Flink's `KeyGroupRangeTest.testKeyGroupIntersection`.
    #[test]
    fn intersections_as_flink() {
        let r = |start, end| KeyGroupRange { start, end };
        assert_eq!(r(0, 10).intersection(r(3, 7)), Some(r(3, 7)));
        assert_eq!(r(3, 7).intersection(r(0, 10)), Some(r(3, 7)));
        assert_eq!(r(0, 10).intersection(r(0, 10)), Some(r(0, 10)));
        assert_eq!(r(0, 5).intersection(r(6, 10)), None);
        assert_eq!(r(6, 10).intersection(r(0, 5)), None);
        assert_eq!(r(0, 10).intersection(r(5, 20)), Some(r(5, 10)));
        assert_eq!(r(5, 20).intersection(r(0, 10)), Some(r(5, 10)));
        assert_eq!(r(3, 7).len(), 5);
        assert!(r(4, 3).is_empty());
        assert_eq!(r(4, 3).len(), 0);
    }

    #[test]
    fn ranges_partition_the_key_groups() {
        for (max, parallelism) in [(128u64, 4u64), (128, 3), (10, 3), (256, 7), (7, 7), (1, 1)] {
            let mut next = 0;
            for index in 0..parallelism {
                let r = key_group_range(max, parallelism, index);
                assert_eq!(r.start, next, "{max} {parallelism} {index}");
                assert!(!r.is_empty());
                for k in r.start..=r.end {
                    assert_eq!(operator_index_for_key_group(max, parallelism, k), index);
                }
                next = r.end + 1;
            }
            assert_eq!(next, max);
        }
        assert_eq!(
            key_group_range(10, 3, 1),
            KeyGroupRange { start: 4, end: 6 }
        );
    }

    /// The chain written out plainly: Java's hash in i64 reduced mod 2^32 per step, the
    /// surrogates computed by hand, murmur in u64 with explicit masks, the owner found by
    /// scanning the ranges.
    fn reference_subtask(key: &str, max: u32, parallelism: u32) -> (i32, u32, u32) {
        let mut units = Vec::new();
        for c in key.chars() {
            let c = u32::from(c);
            if c >= 0x1_0000 {
                units.push(0xD800 + ((c - 0x1_0000) >> 10));
                units.push(0xDC00 + ((c - 0x1_0000) & 0x3FF));
            } else {
                units.push(c);
            }
        }
        let mut h: i64 = 0;
        for u in units {
            h = (h * 31 + i64::from(u)).rem_euclid(1 << 32);
        }
        let hash = i32::from_le_bytes(u32::try_from(h).expect("reduced").to_le_bytes());
        let m = 0xFFFF_FFFFu64;
        let rotl = |x: u64, r: u32| ((x << r) | (x >> (32 - r))) & m;
        let mut k = u64::from(u32::from_le_bytes(hash.to_le_bytes()));
        k = (k * 0xcc9e_2d51) & m;
        k = rotl(k, 15);
        k = (k * 0x1b87_3593) & m;
        let mut x = rotl(k, 13);
        x = (x * 5 + 0xe654_6b64) & m;
        x ^= 4;
        x ^= x >> 16;
        x = (x * 0x85eb_ca6b) & m;
        x ^= x >> 13;
        x = (x * 0xc2b2_ae35) & m;
        x ^= x >> 16;
        let signed = i64::from(i32::from_le_bytes(
            u32::try_from(x).expect("masked").to_le_bytes(),
        ));
        let positive = if signed == i64::from(i32::MIN) {
            0
        } else {
            signed.abs()
        };
        let group = u32::try_from(positive % i64::from(max)).expect("below max");
        let owner = (0..parallelism)
            .find(|&i| {
                key_group_range(u64::from(max), u64::from(parallelism), u64::from(i))
                    .contains(u64::from(group))
            })
            .expect("ranges cover all key groups");
        (hash, group, owner)
    }

    proptest::proptest! {
        #[test]
        fn chain_matches_reference(
            key in "\\PC{0,12}",
            max in 1u32..=32_768,
            p_seed in 0u32..u32::MAX,
        ) {
            let parallelism = 1 + p_seed % max;
            let (hash, group, owner) = reference_subtask(&key, max, parallelism);
            proptest::prop_assert_eq!(java_string_hash(&key), hash);
            proptest::prop_assert_eq!(key_group_for_str(&key, max), group);
            proptest::prop_assert_eq!(operator_index_for_str(&key, max, parallelism), owner);
        }
    }
}
