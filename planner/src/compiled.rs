//! Flink compiled plans (`COMPILE PLAN`, FLIP-190): the stateful ExecNodes with their states and
//! TTL (FLIP-292), and TTL edits written back with nothing else changed.
//!
//! A compiled plan is edited as text: the byte span of every `nodes[i].state[j].ttl` string is
//! located by a small JSON scanner, and an edit replaces exactly that span. The rest of the file
//! stays byte for byte as Flink wrote it (its layout, key order, number formats), so the output
//! is JSON-equal to the input apart from the edited value, and Flink can `EXECUTE PLAN` it.

use std::ops::Range;

use serde::Serialize;
use serde_json::Value;

use crate::error::PlanError;

/// One state of a stateful ExecNode (`{"index": 0, "ttl": "0 ms", "name": "leftState"}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CompiledState {
    /// The input index the state belongs to (a join has 0 = left, 1 = right).
    pub index: i64,
    /// The state's name, e.g. `leftState`.
    pub name: String,
    /// The TTL as written, e.g. `0 ms`, `12 h`.
    pub ttl: String,
    /// The TTL in milliseconds; 0 means no TTL (Flink's default).
    pub ttl_ms: u64,
    /// Byte span of the TTL's JSON string (quotes included) in the file.
    #[serde(skip)]
    span: Range<usize>,
}

/// A stateful ExecNode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CompiledOperator {
    /// The ExecNode id (the `[n]` in Flink's vertex names).
    pub id: i64,
    /// Its type, e.g. `stream-exec-join_1`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its description.
    pub description: String,
    /// Its states.
    pub states: Vec<CompiledState>,
}

/// A parsed compiled plan: the original text and its stateful operators.
#[derive(Clone, Debug)]
pub struct CompiledPlan {
    text: String,
    flink_version: Option<String>,
    nodes: usize,
    operators: Vec<CompiledOperator>,
}

impl CompiledPlan {
    /// Parses a compiled plan. O(size of the file).
    ///
    /// # Errors
    /// [`PlanError::CompiledPlan`] for bytes that are not UTF-8 JSON, a document without
    /// `nodes`, a node without a numeric `id`, or a state entry without a string `ttl` or a
    /// `name`; [`PlanError::Duration`] for a TTL Flink's notation does not allow.
    pub fn parse(bytes: &[u8]) -> Result<CompiledPlan, PlanError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| PlanError::CompiledPlan(format!("not UTF-8: {e}")))?
            .to_owned();
        // serde_json rejects malformed and too deeply nested input first, so the scanner below
        // only ever sees well-formed JSON of bounded depth.
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| PlanError::CompiledPlan(format!("invalid JSON: {e}")))?;
        let nodes = value
            .get("nodes")
            .and_then(Value::as_array)
            .ok_or_else(|| PlanError::CompiledPlan("no 'nodes' array".to_owned()))?;
        let spans = scan_ttl_spans(&text)?;
        let mut operators = Vec::new();
        for (i, node) in nodes.iter().enumerate() {
            let Some(states) = node.get("state").and_then(Value::as_array) else {
                continue;
            };
            let id = node.get("id").and_then(Value::as_i64).ok_or_else(|| {
                PlanError::CompiledPlan(format!("node at position {i} has no numeric 'id'"))
            })?;
            let mut list = Vec::with_capacity(states.len());
            for (j, s) in states.iter().enumerate() {
                let ttl = s.get("ttl").and_then(Value::as_str).ok_or_else(|| {
                    PlanError::CompiledPlan(format!("node {id}: state {j} has no string 'ttl'"))
                })?;
                let name = s.get("name").and_then(Value::as_str).ok_or_else(|| {
                    PlanError::CompiledPlan(format!("node {id}: state {j} has no 'name'"))
                })?;
                let span = spans
                    .iter()
                    .find(|(n, k, _)| *n == i && *k == j)
                    .map(|(_, _, s)| s.clone())
                    .ok_or_else(|| {
                        PlanError::CompiledPlan(format!(
                            "node {id}: state '{name}': ttl not found in the text (duplicate keys?)"
                        ))
                    })?;
                list.push(CompiledState {
                    index: s.get("index").and_then(Value::as_i64).unwrap_or(j as i64),
                    name: name.to_owned(),
                    ttl: ttl.to_owned(),
                    ttl_ms: parse_duration_ms(ttl)?,
                    span,
                });
            }
            operators.push(CompiledOperator {
                id,
                kind: node
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                description: node
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                states: list,
            });
        }
        Ok(CompiledPlan {
            flink_version: value
                .get("flinkVersion")
                .and_then(Value::as_str)
                .map(str::to_owned),
            nodes: nodes.len(),
            text,
            operators,
        })
    }

    /// The stateful operators, in node order.
    pub fn stateful_operators(&self) -> &[CompiledOperator] {
        &self.operators
    }

    /// The plan's `flinkVersion`.
    pub fn flink_version(&self) -> Option<&str> {
        self.flink_version.as_deref()
    }

    /// Number of ExecNodes.
    pub fn node_count(&self) -> usize {
        self.nodes
    }

    /// The text as read (or as edited).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Sets the TTL of one state of node `node` (the state named by its name, or by its index
    /// as a number) and returns the edited plan. The TTL is written in Flink's notation as
    /// milliseconds (`"3600000 ms"`; 0 means no TTL); nothing else in the text changes.
    ///
    /// # Errors
    /// [`PlanError::CompiledPlan`] naming the node or state when the plan has no such stateful
    /// node or state.
    pub fn with_ttl(&self, node: i64, state: &str, ttl_ms: u64) -> Result<CompiledPlan, PlanError> {
        let op = self
            .operators
            .iter()
            .find(|o| o.id == node)
            .ok_or_else(|| {
                let ids: Vec<String> = self.operators.iter().map(|o| o.id.to_string()).collect();
                PlanError::CompiledPlan(format!(
                    "node {node} is not a stateful node (stateful nodes: {})",
                    if ids.is_empty() {
                        "none".to_owned()
                    } else {
                        ids.join(", ")
                    }
                ))
            })?;
        let target = op
            .states
            .iter()
            .find(|s| s.name == state)
            .or_else(|| {
                state
                    .parse::<i64>()
                    .ok()
                    .and_then(|i| op.states.iter().find(|s| s.index == i))
            })
            .ok_or_else(|| {
                let names: Vec<&str> = op.states.iter().map(|s| s.name.as_str()).collect();
                PlanError::CompiledPlan(format!(
                    "node {node} has no state '{state}' (states: {})",
                    names.join(", ")
                ))
            })?;
        let span = target.span.clone();
        let written = format!("\"{}\"", format_duration_ms(ttl_ms));
        let mut text = String::with_capacity(self.text.len() + written.len());
        text.push_str(&self.text[..span.start]);
        text.push_str(&written);
        text.push_str(&self.text[span.end..]);
        CompiledPlan::parse(text.as_bytes())
    }
}

/// Flink's notation for a TTL in milliseconds: `3600000 ms`.
pub fn format_duration_ms(ms: u64) -> String {
    format!("{ms} ms")
}

/// Reads a duration in Flink's notation (`TimeUtils.parseDuration`): a whole number and an
/// optional unit, with or without a space: `ns`/`nano(s)`/`nanosecond(s)`, `us`/`µs`/`micro(s)`/
/// `microsecond(s)`, `ms`/`milli(s)`/`millisecond(s)` (the default), `s`/`sec(s)`/`second(s)`,
/// `m`/`min`/`minute(s)`, `h`/`hour(s)`, `d`/`day(s)`. Returns whole milliseconds (sub-millisecond
/// durations are refused, as a TTL is kept in milliseconds).
///
/// # Errors
/// [`PlanError::Duration`] naming the text.
pub fn parse_duration_ms(text: &str) -> Result<u64, PlanError> {
    let err = |reason: &str| PlanError::Duration {
        text: text.to_owned(),
        reason: reason.to_owned(),
    };
    let t = text.trim();
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return Err(err("expected a whole number, then an optional unit"));
    }
    let number: u64 = t[..digits]
        .parse()
        .map_err(|_| err("the number is too large"))?;
    let unit = t[digits..].trim().to_lowercase();
    // (nanoseconds per unit)
    let nanos: u128 = match unit.as_str() {
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1_000_000,
        "ns" | "nano" | "nanos" | "nanosecond" | "nanoseconds" => 1,
        "us" | "µs" | "micro" | "micros" | "microsecond" | "microseconds" => 1_000,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000_000_000,
        "m" | "min" | "minute" | "minutes" => 60_000_000_000,
        "h" | "hour" | "hours" => 3_600_000_000_000,
        "d" | "day" | "days" => 86_400_000_000_000,
        _ => return Err(err("unknown unit (expected ms, s, min, h, d, ...)")),
    };
    let total = u128::from(number) * nanos;
    if !total.is_multiple_of(1_000_000) {
        return Err(err("not a whole number of milliseconds"));
    }
    u64::try_from(total / 1_000_000).map_err(|_| err("too large"))
}

/// Byte spans of `nodes[i].state[j].ttl` string values: `(i, j, span)`.
fn scan_ttl_spans(text: &str) -> Result<Vec<(usize, usize, Range<usize>)>, PlanError> {
    let mut s = Scanner {
        b: text.as_bytes(),
        pos: 0,
        path: Vec::new(),
        found: Vec::new(),
    };
    s.value().map_err(|e| match e {
        ScanError::Unexpected(at) => {
            PlanError::CompiledPlan(format!("unexpected input at byte {at}"))
        }
        ScanError::DuplicateKey { key, offset } => PlanError::DuplicateKey { key, offset },
    })?;
    Ok(s.found)
}

/// Why the scanner stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ScanError {
    /// Input it did not expect, at this byte offset (serde_json accepted the text first, so
    /// this is a bug).
    Unexpected(usize),
    /// The same key twice in one object; the offset of the second one's opening quote.
    DuplicateKey { key: String, offset: usize },
}

impl From<usize> for ScanError {
    fn from(at: usize) -> Self {
        ScanError::Unexpected(at)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// A JSON scanner that only tracks where it is, and refuses duplicate keys (serde_json keeps
/// the last silently). Runs after serde_json accepted the text (so depth is bounded by
/// serde_json's recursion limit); errors carry the byte offset.
struct Scanner<'a> {
    b: &'a [u8],
    pos: usize,
    path: Vec<Seg>,
    found: Vec<(usize, usize, Range<usize>)>,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while self.pos < self.b.len() && matches!(self.b[self.pos], b' ' | b'\n' | b'\r' | b'\t') {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn value(&mut self) -> Result<(), ScanError> {
        self.ws();
        match self.peek() {
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => {
                let start = self.pos;
                self.string()?;
                if let [Seg::Key(n), Seg::Index(i), Seg::Key(s), Seg::Index(j), Seg::Key(t)] =
                    self.path.as_slice()
                {
                    if n == "nodes" && s == "state" && t == "ttl" {
                        self.found.push((*i, *j, start..self.pos));
                    }
                }
                Ok(())
            }
            Some(_) => {
                // Number, true, false, null: up to the next delimiter.
                while let Some(c) = self.peek() {
                    if matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                        break;
                    }
                    self.pos += 1;
                }
                Ok(())
            }
            None => Err(ScanError::Unexpected(self.pos)),
        }
    }

    /// Skips a string token; returns its raw contents' range (without quotes).
    fn string(&mut self) -> Result<Range<usize>, usize> {
        if self.peek() != Some(b'"') {
            return Err(self.pos);
        }
        self.pos += 1;
        let start = self.pos;
        while let Some(c) = self.peek() {
            match c {
                b'\\' => self.pos += 2,
                b'"' => {
                    let end = self.pos;
                    self.pos += 1;
                    return Ok(start..end);
                }
                _ => self.pos += 1,
            }
        }
        Err(self.pos)
    }

    fn object(&mut self) -> Result<(), ScanError> {
        self.pos += 1;
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        let mut keys = std::collections::HashSet::new();
        loop {
            self.ws();
            let key_start = self.pos;
            let raw = self.string()?;
            let raw_text = &self.b[raw];
            let key = if raw_text.contains(&b'\\') {
                let quoted = format!("\"{}\"", String::from_utf8_lossy(raw_text));
                serde_json::from_str::<String>(&quoted).map_err(|_| self.pos)?
            } else {
                String::from_utf8_lossy(raw_text).into_owned()
            };
            if !keys.insert(key.clone()) {
                return Err(ScanError::DuplicateKey {
                    key,
                    offset: key_start,
                });
            }
            self.ws();
            if self.peek() != Some(b':') {
                return Err(self.pos.into());
            }
            self.pos += 1;
            self.path.push(Seg::Key(key));
            self.value()?;
            self.path.pop();
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.pos.into()),
            }
        }
    }

    fn array(&mut self) -> Result<(), ScanError> {
        self.pos += 1;
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        let mut i = 0;
        loop {
            self.path.push(Seg::Index(i));
            self.value()?;
            self.path.pop();
            i += 1;
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.pos.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_flink_notation() {
        for (text, ms) in [
            ("0 ms", 0),
            ("3600000 ms", 3_600_000),
            ("12 h", 43_200_000),
            ("1 d", 86_400_000),
            ("1d", 86_400_000),
            ("36 h", 129_600_000),
            ("90 s", 90_000),
            ("5 min", 300_000),
            ("250", 250),
        ] {
            assert_eq!(parse_duration_ms(text).expect(text), ms, "{text}");
        }
        for bad in ["", "h", "1 fortnight", "-1 ms", "1 us"] {
            assert!(parse_duration_ms(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn scanner_finds_only_state_ttls() {
        let text = r#"{"ttl":"1 ms","nodes":[{"id":1,"ttl":"2 ms"},{"id":2,"state":[{"index":0,"ttl" : "0 ms","name":"s"},{"ttl":"3 h","name":"t"}]}]}"#;
        let spans = scan_ttl_spans(text).expect("scan");
        let found: Vec<(usize, usize, &str)> = spans
            .iter()
            .map(|(i, j, s)| (*i, *j, &text[s.clone()]))
            .collect();
        assert_eq!(found, vec![(1, 0, "\"0 ms\""), (1, 1, "\"3 h\"")]);
    }
}
