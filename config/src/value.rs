//! The types of configuration values and their text syntax, as Flink 1.20 reads them:
//! durations as `TimeUtils.parseDuration` (`10 s`, `1 min`, `500ms`; a bare number is
//! milliseconds) and memory sizes as `MemorySize.parse` (`16 mb`, `1g`; a bare number is bytes).

use crate::secret::Secret;

/// The type of a key's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    /// `true` or `false` (any case, as Flink's `ConfigurationUtils.convertToBoolean`).
    Bool,
    /// A whole number of 0 or more.
    Int,
    /// A finite number.
    Float,
    /// Any text.
    Text,
    /// A duration (Flink's `Duration` options); kept in milliseconds.
    Duration,
    /// A whole number of seconds (Flink's `Long` options in seconds such as
    /// `jobstore.expiration-time`); kept in milliseconds.
    Seconds,
    /// A memory size (Flink's `MemorySize` options); kept in bytes.
    MemorySize,
    /// Text never printed, logged or shown (shown as [`Secret::HIDDEN`]).
    Secret,
}

impl ValueType {
    /// What a value of this type looks like, for error messages.
    pub fn expected(self) -> &'static str {
        match self {
            ValueType::Bool => "true or false",
            ValueType::Int => "a whole number of 0 or more",
            ValueType::Float => "a number",
            ValueType::Text | ValueType::Secret => "text",
            ValueType::Duration => "a duration such as `10 s`, `1 min` or `500 ms`",
            ValueType::Seconds => "a whole number of seconds",
            ValueType::MemorySize => "a memory size such as `16 mb`, `1 gb` or `1024` (bytes)",
        }
    }

    /// Parses `text` (trimmed) as a value of this type; `None` when it is not one.
    pub fn parse(self, text: &str) -> Option<Value> {
        let text = text.trim();
        Some(match self {
            ValueType::Bool => match text.to_ascii_lowercase().as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => return None,
            },
            ValueType::Int => Value::Int(text.parse().ok()?),
            ValueType::Float => {
                let x: f64 = text.parse().ok()?;
                if !x.is_finite() {
                    return None;
                }
                Value::Float(x)
            }
            ValueType::Text => Value::Text(text.to_owned()),
            ValueType::Secret => Value::Secret(Secret::new(text.to_owned())),
            ValueType::Duration => Value::DurationMs(parse_duration_ms(text)?),
            ValueType::Seconds => Value::DurationMs(text.parse::<u64>().ok()?.checked_mul(1000)?),
            ValueType::MemorySize => Value::Bytes(parse_memory_bytes(text)?),
        })
    }
}

/// A typed value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A boolean.
    Bool(bool),
    /// A whole number.
    Int(u64),
    /// A number.
    Float(f64),
    /// Text.
    Text(String),
    /// A duration, ms.
    DurationMs(u64),
    /// A memory size, bytes.
    Bytes(u64),
    /// A secret.
    Secret(Secret),
}

impl Value {
    /// The value in the unit of Conflux's flags: a duration as whole milliseconds, a memory size
    /// as bytes, a secret as itself (the only place it is revealed: handing it to the flag).
    pub fn flag_text(&self) -> String {
        match self {
            Value::Bool(b) => b.to_string(),
            Value::Int(n) | Value::DurationMs(n) | Value::Bytes(n) => n.to_string(),
            Value::Float(x) => x.to_string(),
            Value::Text(t) => t.clone(),
            Value::Secret(s) => s.reveal().to_owned(),
        }
    }

    /// The value as Flink shows it (`10000 ms`, `16777216 bytes`), a secret as
    /// [`Secret::HIDDEN`].
    pub fn flink_text(&self) -> String {
        match self {
            Value::DurationMs(ms) => format!("{ms} ms"),
            Value::Bytes(n) => format!("{n} bytes"),
            Value::Secret(_) => Secret::HIDDEN.to_owned(),
            other => other.flag_text(),
        }
    }
}

/// Splits `12 ms` into `(12, "ms")`.
fn number_and_unit(text: &str) -> Option<(u64, String)> {
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if digits == 0 {
        return None;
    }
    let number = text[..digits].parse().ok()?;
    Some((number, text[digits..].trim().to_lowercase()))
}

/// Milliseconds of a Flink duration: a whole number and an optional unit (`ns`, `us`/`µs`, `ms`,
/// `s`, `min`/`m`, `h`, `d`, or their words `nano(s)`, `micro(s)`, `milli(s)`,
/// `millisecond(s)`, `sec(s)`, `second(s)`, `minute(s)`, `hour(s)`, `day(s)`); none means ms.
/// Below a millisecond rounds down. `None` for anything else or an overflow.
pub fn parse_duration_ms(text: &str) -> Option<u64> {
    let (n, unit) = number_and_unit(text.trim())?;
    let (multiplier, divisor): (u64, u64) = match unit.as_str() {
        "ns" | "nano" | "nanos" | "nanosecond" | "nanoseconds" => (1, 1_000_000),
        "us" | "µs" | "micro" | "micros" | "microsecond" | "microseconds" => (1, 1_000),
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => (1, 1),
        "s" | "sec" | "secs" | "second" | "seconds" => (1_000, 1),
        "m" | "min" | "mins" | "minute" | "minutes" => (60_000, 1),
        "h" | "hour" | "hours" => (3_600_000, 1),
        "d" | "day" | "days" => (86_400_000, 1),
        _ => return None,
    };
    n.checked_mul(multiplier).map(|v| v / divisor)
}

/// Bytes of a Flink memory size: a whole number and an optional unit (`b`/`bytes`,
/// `k`/`kb`/`kibibytes`, `m`/`mb`/`mebibytes`, `g`/`gb`/`gibibytes`, `t`/`tb`/`tebibytes`, any
/// case; powers of 1024); none means bytes. `None` for anything else or an overflow.
pub fn parse_memory_bytes(text: &str) -> Option<u64> {
    let (n, unit) = number_and_unit(text.trim())?;
    let shift = match unit.as_str() {
        "" | "b" | "bytes" => 0,
        "k" | "kb" | "kibibytes" => 10,
        "m" | "mb" | "mebibytes" => 20,
        "g" | "gb" | "gibibytes" => 30,
        "t" | "tb" | "tebibytes" => 40,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_flink_writes_them() {
        for (text, ms) in [
            ("10 s", 10_000),
            ("10s", 10_000),
            ("1 min", 60_000),
            ("2 m", 120_000),
            ("500", 500),
            ("500 ms", 500),
            ("3 h", 10_800_000),
            ("1 d", 86_400_000),
            ("1500 us", 1),
            ("2000000 ns", 2),
            (" 5 SECONDS ", 5_000),
        ] {
            assert_eq!(parse_duration_ms(text), Some(ms), "{text}");
        }
        for bad in [
            "",
            "s",
            "ten s",
            "1.5 s",
            "-1 s",
            "10 parsecs",
            "99999999999999999999 d",
        ] {
            assert_eq!(parse_duration_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn memory_sizes_as_flink_writes_them() {
        for (text, bytes) in [
            ("1024", 1024),
            ("16 mb", 16 << 20),
            ("16m", 16 << 20),
            ("1 GB", 1 << 30),
            ("4 gibibytes", 4 << 30),
            ("2k", 2048),
            ("7 bytes", 7),
        ] {
            assert_eq!(parse_memory_bytes(text), Some(bytes), "{text}");
        }
        for bad in ["mb", "1.5 gb", "16 megs", "99999999 tb"] {
            assert_eq!(parse_memory_bytes(bad), None, "{bad}");
        }
    }

    #[test]
    fn values_in_flag_units_and_flink_shape() {
        let d = ValueType::Duration.parse("1 min").unwrap();
        assert_eq!(
            (d.flag_text(), d.flink_text()),
            ("60000".into(), "60000 ms".into())
        );
        let s = ValueType::Seconds.parse("3600").unwrap();
        assert_eq!(s.flag_text(), "3600000");
        assert_eq!(ValueType::Bool.parse("TRUE"), Some(Value::Bool(true)));
        assert_eq!(ValueType::Int.parse("-3"), None);
        assert_eq!(ValueType::Float.parse("NaN"), None);
        let secret = ValueType::Secret.parse("hunter2").unwrap();
        assert_eq!(secret.flink_text(), "******");
        assert!(!format!("{secret:?}").contains("hunter2"));
    }
}
