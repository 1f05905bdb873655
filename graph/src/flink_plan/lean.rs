//! A Flink plan document read in one pass over its bytes, keeping only what the import uses:
//! the plan's `name`, `type` and `nodes`, and of each node its `id`, `description`,
//! `operator`, `contents`, `parallelism` and `inputs`. Every other field, at any depth, is
//! skipped as it is read ([`IgnoredAny`]), never built; a value of the wrong kind is kept as
//! its kind alone; `parallelism` and each input are read from the slice of the document that
//! holds them ([`RawValue`]). Each node goes into the caller's [`PlanSink`] as soon as it is
//! read (the first node that cannot be read, and the first whose values are invalid, are kept
//! as errors instead). Nothing read borrows from the bytes, which the caller may free at once.
//! So a plan costs what its vertices and edges cost, whatever else it carries, where a
//! `serde_json::Value` of the whole document took 30 times the file.
//!
//! The import's checks then run on these fields in the order and with the messages they had
//! over a `serde_json::Value` (the document's kinds are named alike; `parallelism` and inputs
//! are deserialized by the same types).

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::node::{add_node, read_node, FlinkInput, InputsField, NodeFields, PlanSink, Text};
use crate::GraphError;

/// A document: its own fields, and REST's `plan` wrapper when it has one (which then is the
/// plan).
pub(super) struct Document<S> {
    pub(super) fields: PlanPart<S>,
    pub(super) plan: Option<PlanPart<S>>,
}

/// A value that should be a plan object.
pub(super) enum PlanPart<S> {
    Object(Box<PlanFields<S>>),
    /// Not an object: its kind (`an array`, ...).
    Other(&'static str),
}

/// The fields of a plan object the import reads.
pub(super) struct PlanFields<S> {
    pub(super) name: Option<Text>,
    /// `type`.
    pub(super) kind: Option<Text>,
    /// The nodes, or the kind of a `nodes` that is not an array.
    pub(super) nodes: Option<Result<Box<Nodes<S>>, &'static str>>,
}

impl<S> Default for PlanFields<S> {
    fn default() -> Self {
        PlanFields {
            name: None,
            kind: None,
            nodes: None,
        }
    }
}

/// The nodes of a plan as they went into the sink.
pub(super) struct Nodes<S> {
    pub(super) sink: S,
    /// The first node that could not be read (a missing or mistyped field); nothing after it
    /// went into the sink.
    pub(super) read_error: Option<GraphError>,
    /// The first node read whose values are invalid (parallelism, input numbers, exchange);
    /// nothing after it went into the sink.
    pub(super) value_error: Option<GraphError>,
}

/// Reads a document.
///
/// # Errors
/// serde_json's error for bytes that are not one JSON value (with line and column).
pub(super) fn read<S: PlanSink>(bytes: &[u8]) -> Result<Document<S>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let document = de.deserialize_any(PlanVisitor::<S> {
        top: true,
        sink: std::marker::PhantomData,
    })?;
    de.end()?;
    Ok(match document {
        Read::Object(fields, plan) => Document {
            fields: PlanPart::Object(fields),
            plan,
        },
        Read::Other(kind) => Document {
            fields: PlanPart::Other(kind),
            plan: None,
        },
    })
}

/// A node's `parallelism` as an `i64`, with the message deserializing it from a
/// `serde_json::Value` gives. An array or object is not built: its kind is enough.
fn integer(raw: &RawValue) -> Result<i64, String> {
    let text = raw.get();
    let unexpected = match text.as_bytes().first() {
        Some(b'[') => Some("sequence"),
        Some(b'{') => Some("map"),
        _ => None,
    };
    if let Some(unexpected) = unexpected {
        return Err(format!("invalid type: {unexpected}, expected i64"));
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    i64::deserialize(&value).map_err(|e| e.to_string())
}

/// One input of a node, read by its derived deserializer (unknown fields skipped), with the
/// message it gives without a position (the position would be within the input).
fn input(raw: &RawValue) -> Result<FlinkInput, String> {
    serde_json::from_str(raw.get()).map_err(without_position)
}

/// serde_json's message without its ` at line L column C`.
fn without_position(e: serde_json::Error) -> String {
    let text = e.to_string();
    if e.line() == 0 {
        return text;
    }
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&suffix) {
        Some(message) => message.to_owned(),
        None => text,
    }
}

/// What a value is, as the import names kinds, after skipping its contents.
fn kind_of_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<&'static str, A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok("an array")
}

fn kind_of_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<&'static str, A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok("an object")
}

/// A plan object (the document itself when `top`, with its `plan` wrapper), or the kind of a
/// value that is not an object.
enum Read<S> {
    Object(Box<PlanFields<S>>, Option<PlanPart<S>>),
    Other(&'static str),
}

struct PlanVisitor<S> {
    top: bool,
    sink: std::marker::PhantomData<S>,
}

impl<'de, S: PlanSink> Visitor<'de> for PlanVisitor<S> {
    type Value = Read<S>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Flink plan")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Read<S>, A::Error> {
        let mut fields = Box::<PlanFields<S>>::default();
        let mut plan = None;
        // A key given twice keeps its last value, as a JSON object read whole does.
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match key.0.as_ref() {
                "name" => fields.name = Some(map.next_value_seed(TextSeed)?),
                "type" => fields.kind = Some(map.next_value_seed(TextSeed)?),
                "nodes" => {
                    fields.nodes =
                        Some(map.next_value_seed(NodesSeed::<S>(std::marker::PhantomData))?);
                }
                "plan" if self.top => {
                    plan = Some(
                        match map.next_value_seed(PlanSeed::<S>(std::marker::PhantomData))? {
                            Read::Object(fields, _) => PlanPart::Object(fields),
                            Read::Other(kind) => PlanPart::Other(kind),
                        },
                    );
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Read::Object(fields, plan))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Read<S>, A::Error> {
        kind_of_seq(seq).map(Read::Other)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Read<S>, E> {
        Ok(Read::Other("a boolean"))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Read<S>, E> {
        Ok(Read::Other("a number"))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Read<S>, E> {
        Ok(Read::Other("a number"))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Read<S>, E> {
        Ok(Read::Other("a number"))
    }

    fn visit_str<E>(self, _: &str) -> Result<Read<S>, E> {
        Ok(Read::Other("a string"))
    }

    fn visit_unit<E>(self) -> Result<Read<S>, E> {
        Ok(Read::Other("null"))
    }
}

/// The value of REST's `plan` wrapper.
struct PlanSeed<S>(std::marker::PhantomData<S>);

impl<'de, S: PlanSink> DeserializeSeed<'de> for PlanSeed<S> {
    type Value = Read<S>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Read<S>, D::Error> {
        d.deserialize_any(PlanVisitor::<S> {
            top: false,
            sink: std::marker::PhantomData,
        })
    }
}

/// A key, borrowed from the document when it has no escapes.
struct Key<'a>(std::borrow::Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// A field that should be a string.
struct TextSeed;

impl<'de> DeserializeSeed<'de> for TextSeed {
    type Value = Text;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Text, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TextSeed {
    type Value = Text;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_str<E>(self, s: &str) -> Result<Text, E> {
        Ok(Text::Str(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Text, E> {
        Ok(Text::Str(s))
    }

    fn visit_unit<E>(self) -> Result<Text, E> {
        Ok(Text::Null)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Text, E> {
        Ok(Text::Other("a boolean"))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Text, E> {
        Ok(Text::Other("a number"))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Text, E> {
        Ok(Text::Other("a number"))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Text, E> {
        Ok(Text::Other("a number"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Text, A::Error> {
        kind_of_seq(seq).map(Text::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Text, A::Error> {
        kind_of_map(map).map(Text::Other)
    }
}

/// `nodes`: the nodes, each read and put into a new sink at once, or the kind of a value that
/// is not an array.
struct NodesSeed<S>(std::marker::PhantomData<S>);

type NodesRead<S> = Result<Box<Nodes<S>>, &'static str>;

impl<'de, S: PlanSink> DeserializeSeed<'de> for NodesSeed<S> {
    type Value = NodesRead<S>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: PlanSink> Visitor<'de> for NodesSeed<S> {
    type Value = NodesRead<S>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut nodes = Box::new(Nodes {
            sink: S::default(),
            read_error: None,
            value_error: None,
        });
        let mut position = 0;
        while let Some(fields) = seq.next_element_seed(NodeSeed)? {
            if nodes.read_error.is_none() {
                match read_node(position, fields) {
                    Ok(node) if nodes.value_error.is_none() => {
                        if let Err(e) = add_node(node, &mut nodes.sink) {
                            nodes.value_error = Some(e);
                        }
                    }
                    Ok(_) => {}
                    Err(e) => nodes.read_error = Some(e),
                }
            }
            position += 1;
        }
        Ok(Ok(nodes))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        kind_of_map(map).map(Err)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Err("a boolean"))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Err("a number"))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Err("a number"))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Err("a number"))
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Err("a string"))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Err("null"))
    }
}

/// One node: its fields, all absent when it is not an object (as looking a field up in a
/// value that is not an object finds none).
struct NodeSeed;

impl<'de> DeserializeSeed<'de> for NodeSeed {
    type Value = NodeFields;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<NodeFields, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NodeSeed {
    type Value = NodeFields;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NodeFields, A::Error> {
        let mut node = NodeFields::default();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match key.0.as_ref() {
                "id" => node.id = Some(map.next_value_seed(TextSeed)?),
                "description" => node.description = Some(map.next_value_seed(TextSeed)?),
                "operator" => node.operator = Some(map.next_value_seed(TextSeed)?),
                "contents" => node.contents = Some(map.next_value_seed(TextSeed)?),
                "parallelism" => {
                    node.parallelism = Some(integer(map.next_value::<&'de RawValue>()?));
                }
                "inputs" => node.inputs = Some(map.next_value_seed(InputsSeed)?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(node)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<NodeFields, A::Error> {
        kind_of_seq(seq).map(|_| NodeFields::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<NodeFields, E> {
        Ok(NodeFields::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<NodeFields, E> {
        Ok(NodeFields::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<NodeFields, E> {
        Ok(NodeFields::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<NodeFields, E> {
        Ok(NodeFields::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<NodeFields, E> {
        Ok(NodeFields::default())
    }

    fn visit_unit<E>(self) -> Result<NodeFields, E> {
        Ok(NodeFields::default())
    }
}

/// A node's `inputs`: each kept as its slice of the document.
struct InputsSeed;

impl<'de> DeserializeSeed<'de> for InputsSeed {
    type Value = InputsField;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<InputsField, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for InputsSeed {
    type Value = InputsField;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<InputsField, A::Error> {
        let mut inputs = Vec::new();
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            inputs.push(input(raw));
        }
        Ok(InputsField::List(inputs))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<InputsField, A::Error> {
        kind_of_map(map).map(InputsField::Other)
    }

    fn visit_unit<E>(self) -> Result<InputsField, E> {
        Ok(InputsField::Null)
    }

    fn visit_bool<E>(self, _: bool) -> Result<InputsField, E> {
        Ok(InputsField::Other("a boolean"))
    }

    fn visit_i64<E>(self, _: i64) -> Result<InputsField, E> {
        Ok(InputsField::Other("a number"))
    }

    fn visit_u64<E>(self, _: u64) -> Result<InputsField, E> {
        Ok(InputsField::Other("a number"))
    }

    fn visit_f64<E>(self, _: f64) -> Result<InputsField, E> {
        Ok(InputsField::Other("a number"))
    }

    fn visit_str<E>(self, _: &str) -> Result<InputsField, E> {
        Ok(InputsField::Other("a string"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The messages are those of reading the same values from a `serde_json::Value`.
    #[test]
    fn parallelism_and_input_messages_match_the_value_reader() {
        let cases = [
            "\"4\"",
            "1.5",
            "true",
            "null",
            "[1]",
            "{\"a\": 1}",
            "9223372036854775808",
            "-3",
        ];
        for case in cases {
            let raw: &RawValue = serde_json::from_str(case).unwrap();
            let value: serde_json::Value = serde_json::from_str(case).unwrap();
            let expected = i64::deserialize(&value).map_err(|e| e.to_string());
            assert_eq!(integer(raw), expected, "{case}");
        }
        let inputs = [
            r#"{"num": 0, "id": "a", "exchange": "pipelined"}"#,
            r#"{"num": "0", "id": "a", "ship_strategy": "HASH", "exchange": "pipelined"}"#,
            r#"5"#,
            r#"{"num": 0, "id": "a", "ship_strategy": "HASH", "exchange": "pipelined", "junk": [0, 0]}"#,
        ];
        for case in inputs {
            let raw: &RawValue = serde_json::from_str(case).unwrap();
            let value: serde_json::Value = serde_json::from_str(case).unwrap();
            let expected = FlinkInput::deserialize(&value)
                .map(|i| (i.num, i.id))
                .map_err(|e| e.to_string());
            assert_eq!(input(raw).map(|i| (i.num, i.id)), expected, "{case}");
        }
    }
}
