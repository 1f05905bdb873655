//! Numbers for people: thousands separators and MiB.

/// Writes `n` with thousands separators: `2,000,000`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Bytes as MiB for messages: `1,024 MiB`, or one decimal below 10 MiB.
pub fn mib(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    if bytes < 10 * MIB {
        let tenths = (bytes * 10 + MIB / 2) / MIB;
        format!("{}.{} MiB", tenths / 10, tenths % 10)
    } else {
        format!("{} MiB", thousands((bytes + MIB / 2) / MIB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_and_mib() {
        assert_eq!(thousands(2_000_000), "2,000,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(mib(1 << 20), "1.0 MiB");
        assert_eq!(mib(2000 << 20), "2,000 MiB");
    }
}
