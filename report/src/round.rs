//! Numbers as reports write them: milliseconds (and other ratios) rounded to 0.001, so that a
//! report says `303.137`, not `303.13685200000003`.

use std::time::Duration;

use serde::Serializer;

/// `value` rounded to the nearest 0.001 (halves away from zero); non-finite values unchanged.
pub fn thousandths(value: f64) -> f64 {
    if value.is_finite() {
        (value * 1e3).round() / 1e3
    } else {
        value
    }
}

/// A duration in milliseconds, rounded to 0.001 ms (one microsecond).
pub fn ms(duration: Duration) -> f64 {
    thousandths(duration.as_secs_f64() * 1e3)
}

/// Serialises a number rounded to 0.001 (`#[serde(serialize_with = "round::serialize")]`).
///
/// # Errors
/// The serializer's.
pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(thousandths(*value))
}

/// Serialises an optional number rounded to 0.001, `null` when absent.
///
/// # Errors
/// The serializer's.
pub fn serialize_option<S: Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => serializer.serialize_some(&thousandths(*v)),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_to_thousandths() {
        assert_eq!(thousandths(303.136_852_000_000_03), 303.137);
        assert_eq!(thousandths(0.000_4), 0.0);
        assert_eq!(thousandths(0.000_5), 0.001);
        assert_eq!(thousandths(-1.234_56), -1.235);
        assert!(thousandths(f64::NAN).is_nan());
        assert_eq!(ms(Duration::from_nanos(1_234_567)), 1.235);
        assert_eq!(ms(Duration::from_secs(2)), 2000.0);
        assert_eq!(
            serde_json::to_string(&thousandths(303.136_852_000_000_03)).unwrap_or_default(),
            "303.137"
        );
    }
}
