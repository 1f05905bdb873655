//! Import of Flink's JSON execution plan (`JsonPlanGenerator.generatePlan`, served by REST as
//! `GET /jobs/<id>/plan`, there wrapped as `{"plan": ...}`).
//!
//! The plan carries vertices (`nodes`, with `id` and `parallelism`) and, per input, the
//! producer, the ship strategy and the exchange (the result partition type, lower case). What it
//! lacks is recovered as Flink does: FORWARD and RESCALE are POINTWISE, every other ship strategy
//! (HASH, `HASH[keys]`, REBALANCE, SHUFFLE, BROADCAST, GLOBAL, CUSTOM, ...) is ALL_TO_ALL
//! (Flink's `StreamingJobGraphGenerator`, see [`ShipStrategy`]); every edge
//! gets a data set of its own (the plan does not say when Flink shared one); max parallelism
//! takes Flink's default; parallelism `-1` (decided at run time by the adaptive batch
//! scheduler) stays `-1`, undecided.
//!
//! Names: Flink writes a node's `description` (its `JobVertex` pretty name or name: the chained
//! operators) for its dashboard, HTML-escaped with lines joined by `<br/>`; import decodes it
//! once ([`decode_text`]: `<br/>` is a line break, `&gt;` is `>`, `&#92;` is `\`), so that every
//! surface shows it as text. A vertex gets as its name the node's `operator` when non-empty,
//! else `contents` (older plan generators) when non-empty, else the description's first line
//! (e.g. `[35]:Sort(orderBy=[revenue DESC])`, the head operator), all decoded alike.

use serde::Deserialize;
use serde_json::Value;

use crate::json::{JobEdgeJson, JobGraphJson, JobVertexJson};
use crate::{GraphError, ResultPartitionType, ShipStrategy};

/// The default estimate of undecided vertices (parallelism `-1`, `--default-parallelism`): 128,
/// the default of Flink's `execution.batch.adaptive.auto-parallelism.max-parallelism`, i.e. the
/// most Flink's adaptive batch scheduler would choose by default. A conservative figure for
/// planning.
pub const DEFAULT_ADAPTIVE_PARALLELISM: u32 = 128;

/// A Flink plan, read from its document (with or without REST's `{"plan": ...}` wrapper) field by
/// field so that an error names the node and the field. Fields Flink writes that Conflux does
/// not use (`jid`, `operator_strategy`, `optimizer_properties`, ...) are ignored.
#[derive(Debug)]
struct FlinkPlan {
    name: String,
    job_type: Option<String>,
    nodes: Vec<FlinkNode>,
}

#[derive(Debug)]
struct FlinkNode {
    id: String,
    /// The vertex name: `operator`, else `contents`, else the description's first line.
    name: Option<String>,
    description: Option<String>,
    parallelism: i64,
    inputs: Vec<FlinkInput>,
}

#[derive(Debug, Deserialize)]
struct FlinkInput {
    num: u32,
    id: String,
    ship_strategy: String,
    exchange: String,
}

/// Whether the bytes look like a Flink plan: a JSON object with `nodes`, or with `plan` holding
/// an object with `nodes`.
pub fn looks_like_flink_plan(value: &serde_json::Value) -> bool {
    let has_nodes = |v: &serde_json::Value| v.get("nodes").is_some();
    has_nodes(value) || value.get("plan").is_some_and(has_nodes)
}

/// Converts a Flink plan into job graph JSON. Vertices keep the plan's order and ids (Flink's
/// 32-hex `JobVertexID`s); the inputs of a node become its edges in `num` order.
///
/// # Errors
/// [`GraphError::Json`] when the bytes are not JSON; [`GraphError::FlinkPlan`] for a missing or
/// mistyped field (`nodes`, `type`, or a node's `id`, `parallelism`, `inputs`, naming the node and
/// the input) and naming the node and input for a parallelism other than `-1` or a positive
/// number, an unknown exchange, or duplicate input numbers. Unknown producers and cycles are reported when the result is
/// validated by [`JobGraph::from_json`](crate::JobGraph::from_json).
pub fn import(bytes: &[u8]) -> Result<JobGraphJson, GraphError> {
    let document: Value = serde_json::from_slice(bytes).map_err(|e| GraphError::Json {
        format: "Flink plan",
        message: e.to_string(),
    })?;
    let plan = read_plan(&document)?;
    let job_type = match plan.job_type.as_deref() {
        None => "streaming",
        Some(t) if t.eq_ignore_ascii_case("STREAMING") => "streaming",
        Some(t) if t.eq_ignore_ascii_case("BATCH") => "batch",
        Some(other) => {
            return Err(GraphError::FlinkPlan(format!(
                "unknown job type '{other}' (expected STREAMING or BATCH)"
            )))
        }
    };

    let mut vertices = Vec::with_capacity(plan.nodes.len());
    let mut edges = Vec::new();
    for node in &plan.nodes {
        let parallelism = match node.parallelism {
            -1 => crate::json::PARALLELISM_UNDECIDED,
            p if p >= 1 => i32::try_from(p).map_err(|_| {
                GraphError::FlinkPlan(format!("node {}: parallelism {p} is too large", node.id))
            })?,
            p => {
                return Err(GraphError::FlinkPlan(format!(
                    "node {}: parallelism {p} (expected -1 or at least 1)",
                    node.id
                )))
            }
        };
        vertices.push(JobVertexJson {
            name: node.name.clone(),
            description: node.description.clone(),
            ..JobVertexJson::new(node.id.clone(), parallelism)
        });
        let mut inputs: Vec<&FlinkInput> = node.inputs.iter().collect();
        inputs.sort_by_key(|i| i.num);
        if let Some(w) = inputs.windows(2).find(|w| w[0].num == w[1].num) {
            return Err(GraphError::FlinkPlan(format!(
                "node {}: two inputs with num {}",
                node.id, w[0].num
            )));
        }
        for input in inputs {
            let partition_type = ResultPartitionType::parse(&input.exchange).ok_or_else(|| {
                GraphError::FlinkPlan(format!(
                    "node {} input {} (from {}): unknown exchange '{}'",
                    node.id, input.num, input.id, input.exchange
                ))
            })?;
            edges.push(JobEdgeJson {
                source: input.id.clone(),
                target: node.id.clone(),
                distribution_pattern: ShipStrategy::parse(&input.ship_strategy)
                    .distribution_pattern()
                    .as_str()
                    .to_owned(),
                result_partition_type: partition_type.as_str().to_owned(),
                ship_strategy: Some(input.ship_strategy.clone()),
                data_set: None,
            });
        }
    }
    Ok(JobGraphJson {
        name: plan.name,
        job_type: job_type.to_owned(),
        vertices,
        edges,
    })
}

/// The plan of a document: `plan` when REST wrapped it, else the document itself.
fn read_plan(document: &Value) -> Result<FlinkPlan, GraphError> {
    let plan = document.get("plan").unwrap_or(document);
    let Value::Object(fields) = plan else {
        return Err(GraphError::FlinkPlan(format!(
            "the plan is {}, not an object",
            kind(plan)
        )));
    };
    let text = |key: &str| match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(GraphError::FlinkPlan(format!(
            "field `{key}` is {}, not a string",
            kind(other)
        ))),
    };
    let nodes = match fields.get("nodes") {
        Some(Value::Array(nodes)) => nodes,
        Some(other) => {
            return Err(GraphError::FlinkPlan(format!(
                "field `nodes` is {}, not an array",
                kind(other)
            )))
        }
        None => {
            return Err(GraphError::FlinkPlan(
                "missing field `nodes` (the list of job vertices)".to_owned(),
            ))
        }
    };
    Ok(FlinkPlan {
        name: text("name")?.unwrap_or_default(),
        job_type: text("type")?,
        nodes: nodes
            .iter()
            .enumerate()
            .map(|(position, node)| read_node(position, node))
            .collect::<Result<_, _>>()?,
    })
}

/// One entry of `nodes`; errors name the node by id (by position while the id is unknown).
fn read_node(position: usize, node: &Value) -> Result<FlinkNode, GraphError> {
    let id = match node.get("id") {
        Some(Value::String(id)) => id.clone(),
        None => {
            return Err(GraphError::FlinkPlan(format!(
                "node at position {position} of `nodes`: missing field `id`"
            )))
        }
        Some(other) => {
            return Err(GraphError::FlinkPlan(format!(
                "node at position {position} of `nodes`: field `id` is {}, not a string",
                kind(other)
            )))
        }
    };
    let text = |key: &str| match node.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(GraphError::FlinkPlan(format!(
            "node {id:?}: field `{key}` is {}, not a string",
            kind(other)
        ))),
    };
    let description = text("description")?.map(|d| decode_text(&d));
    let non_empty = |s: Option<String>| s.filter(|s| !s.is_empty());
    let name = non_empty(text("operator")?)
        .or(non_empty(text("contents")?))
        .map(|n| decode_text(&n))
        .or_else(|| {
            let d = description.as_deref()?;
            let first = d.split_once('\n').map_or(d, |(first, _)| first);
            (!first.is_empty()).then(|| first.to_owned())
        });
    let parallelism = match node.get("parallelism") {
        None => {
            return Err(GraphError::FlinkPlan(format!(
                "node {id:?}: missing field `parallelism`"
            )))
        }
        Some(p) => i64::deserialize(p)
            .map_err(|e| GraphError::FlinkPlan(format!("node {id:?}: field `parallelism`: {e}")))?,
    };
    let inputs = match node.get("inputs") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(inputs)) => inputs
            .iter()
            .enumerate()
            .map(|(k, input)| {
                FlinkInput::deserialize(input).map_err(|e| {
                    GraphError::FlinkPlan(format!("node {id:?}: input at position {k}: {e}"))
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(GraphError::FlinkPlan(format!(
                "node {id:?}: field `inputs` is {}, not an array",
                kind(other)
            )))
        }
    };
    Ok(FlinkNode {
        id,
        name,
        description,
        parallelism,
        inputs,
    })
}

/// Undoes Flink's dashboard escaping of a name or description (`JsonPlanGenerator`): `<br/>`
/// (how Flink writes a line break) becomes `\n`, then every HTML character reference
/// (`&gt;`, `&#92;`, `&infin;`, ...) its character. Applied once, on import: the result is text,
/// never decoded again (a literal `&gt;` in it stays). O(length).
pub fn decode_text(escaped: &str) -> String {
    let lines = escaped.replace("<br/>", "\n");
    html_escape::decode_html_entities(&lines).into_owned()
}

/// What a JSON value is, for messages (the value itself may be large).
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_and_bare_plans_import_alike() {
        let bare = r#"{"jid":"x","name":"j","type":"BATCH","nodes":[
            {"id":"b","parallelism":-1,"inputs":[{"num":0,"id":"a","ship_strategy":"RESCALE","exchange":"blocking"}]},
            {"id":"a","parallelism":3}]}"#;
        let wrapped = format!(r#"{{"plan":{bare}}}"#);
        let a = import(bare.as_bytes()).unwrap();
        let b = import(wrapped.as_bytes()).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.job_type, "batch");
        assert_eq!(a.vertices[0].parallelism, -1, "undecided stays undecided");
        assert_eq!(a.vertices[1].parallelism, 3);
        assert_eq!(a.edges[0].distribution_pattern, "pointwise");
        assert_eq!(a.edges[0].result_partition_type, "blocking");
    }

    #[test]
    fn names_come_from_operator_contents_or_the_description() {
        let plan = r#"{"nodes":[
            {"id":"a","parallelism":1,"operator":"","description":"[35]:Sort(orderBy=[revenue DESC])<br/>+- tpch_q5[36]: Writer<br/>"},
            {"id":"b","parallelism":1,"operator":"Map","description":"x"},
            {"id":"c","parallelism":1,"contents":"Old Map"},
            {"id":"d","parallelism":1,"operator":"","description":""},
            {"id":"e","parallelism":1,"description":"a &gt; b &amp;&amp; c &lt;= &#92;n &#39;x&#39; &infin;<br/>+- next"},
            {"id":"f","parallelism":1,"operator":"Map &amp;gt;"}]}"#;
        let json = import(plan.as_bytes()).unwrap();
        let got: Vec<(Option<&str>, Option<&str>)> = json
            .vertices
            .iter()
            .map(|v| (v.name.as_deref(), v.description.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    Some("[35]:Sort(orderBy=[revenue DESC])"),
                    Some("[35]:Sort(orderBy=[revenue DESC])\n+- tpch_q5[36]: Writer\n")
                ),
                (Some("Map"), Some("x")),
                (Some("Old Map"), None),
                (None, Some("")),
                (
                    Some("a > b && c <= \\n 'x' \u{221e}"),
                    Some("a > b && c <= \\n 'x' \u{221e}\n+- next")
                ),
                // Decoded once: an escaped entity stays one.
                (Some("Map &gt;"), None),
            ]
        );
        let bad = r#"{"nodes":[{"id":"a","parallelism":1,"description":7}]}"#;
        assert_eq!(
            import(bad.as_bytes()).unwrap_err(),
            GraphError::FlinkPlan(
                r#"node "a": field `description` is a number, not a string"#.to_owned()
            )
        );
    }

    #[test]
    fn missing_and_wrong_fields_name_the_node_and_the_field() {
        let cases = [
            (
                r#"{"nodes":[{"id":"a","parallelism":1},{"id":"b"}]}"#,
                r#"node "b": missing field `parallelism`"#,
            ),
            (
                r#"{"plan":{"nodes":[{"id":"b","parallelism":"4"}]}}"#,
                r#"node "b": field `parallelism`: invalid type: string "4", expected i64"#,
            ),
            (
                r#"{"jid":"x","name":"j"}"#,
                "missing field `nodes` (the list of job vertices)",
            ),
            (
                r#"{"nodes":{}}"#,
                "field `nodes` is an object, not an array",
            ),
            (
                r#"{"nodes":[{"parallelism":1}]}"#,
                "node at position 0 of `nodes`: missing field `id`",
            ),
            (
                r#"{"nodes":[{"id":"b","parallelism":1,"inputs":[{"num":0,"id":"a","exchange":"pipelined"}]}]}"#,
                r#"node "b": input at position 0: missing field `ship_strategy`"#,
            ),
            (
                r#"{"type":3,"nodes":[]}"#,
                "field `type` is a number, not a string",
            ),
        ];
        for (plan, expected) in cases {
            let e = import(plan.as_bytes()).unwrap_err();
            assert_eq!(e, GraphError::FlinkPlan(expected.to_owned()), "{plan}");
        }
    }

    #[test]
    fn bad_parallelism_and_exchange_name_the_node() {
        let zero = r#"{"nodes":[{"id":"n1","parallelism":0}]}"#;
        let e = import(zero.as_bytes()).unwrap_err().to_string();
        assert!(e.contains("n1") && e.contains("parallelism 0"), "{e}");
        let exchange = r#"{"nodes":[{"id":"a","parallelism":1},
            {"id":"b","parallelism":1,"inputs":[{"num":0,"id":"a","ship_strategy":"HASH","exchange":"carrier_pigeon"}]}]}"#;
        let e = import(exchange.as_bytes()).unwrap_err().to_string();
        assert!(
            e.contains("node b input 0") && e.contains("carrier_pigeon"),
            "{e}"
        );
    }
}
