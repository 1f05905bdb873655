//! Durations in ms as flags give them: `MIN..MAX` or one value.

/// `MIN..MAX` or one value, ms.
pub(crate) fn parse_duration_range(text: &str) -> Result<(u64, u64), String> {
    let parse = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| format!("{s:?} is not a number of ms"))
    };
    let (lo, hi) = match text.split_once("..") {
        Some((lo, hi)) => (parse(lo)?, parse(hi)?),
        None => {
            let v = parse(text)?;
            (v, v)
        }
    };
    if lo > hi {
        return Err(format!(
            "{lo}..{hi} is empty: the minimum is above the maximum"
        ));
    }
    if hi > 24 * 3_600_000 {
        return Err(format!("{hi} ms is more than a day"));
    }
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_ranges() {
        assert_eq!(parse_duration_range("0"), Ok((0, 0)));
        assert_eq!(parse_duration_range("1000..2000"), Ok((1000, 2000)));
        assert!(parse_duration_range("2..1").unwrap_err().contains("empty"));
        assert!(parse_duration_range("a..1").unwrap_err().contains("\"a\""));
    }
}
