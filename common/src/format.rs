//! Numbers for people: digit grouping and byte units in reports and messages.

/// Bytes in a MiB.
const MIB: u64 = 1 << 20;

/// `1234567` -> `"1,234,567"`.
pub fn group_digits(x: u64) -> String {
    let digits = x.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes as MiB for messages, rounded to nearest: one decimal below 10 MiB (`"2.5 MiB"`),
/// grouped whole MiB above (`"1,024 MiB"`).
pub fn mib(bytes: u64) -> String {
    if bytes < 10 * MIB {
        let tenths = (bytes * 10 + MIB / 2) / MIB;
        format!("{}.{} MiB", tenths / 10, tenths % 10)
    } else {
        format!("{} MiB", group_digits(bytes.saturating_add(MIB / 2) / MIB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_digits_by_three() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1000), "1,000");
        assert_eq!(group_digits(1_234_567), "1,234,567");
        assert_eq!(group_digits(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn mib_rounds_to_a_decimal_below_ten() {
        assert_eq!(mib(0), "0.0 MiB");
        assert_eq!(mib(MIB / 2), "0.5 MiB");
        assert_eq!(mib(5 * MIB + MIB / 4), "5.3 MiB");
        assert_eq!(mib(10 * MIB), "10 MiB");
        assert_eq!(mib(1024 * MIB), "1,024 MiB");
    }
}
