//! Import of Flink's JSON execution plan (`JsonPlanGenerator.generatePlan`, served by REST as
//! `GET /jobs/<id>/plan`, there wrapped as `{"plan": ...}`).
//!
//! The plan carries vertices (`nodes`, with `id` and `parallelism`) and, per input, the
//! producer, the ship strategy and the exchange (the result partition type, lower case). What it
//! lacks is recovered as Flink does: FORWARD and RESCALE are POINTWISE, every other ship strategy
//! (HASH, `HASH[keys]`, REBALANCE, SHUFFLE, BROADCAST, GLOBAL, CUSTOM, ...) is ALL_TO_ALL
//! (Flink's `StreamingJobGraphGenerator`, see [`ShipStrategy`](crate::ShipStrategy)); every edge
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

use crate::job_graph::raw_job::RawJob;
use crate::json::{JobEdgeJson, JobGraphJson, JobVertexJson};
use crate::GraphError;

mod lean;
mod node;

use lean::{Document, Nodes, PlanFields, PlanPart};
use node::{FlinkInput, PlanSink, Text};

pub use node::decode_text;

pub use crate::json::DEFAULT_ADAPTIVE_PARALLELISM;

/// Job graph JSON's vertices and edges.
#[derive(Default)]
struct JsonSink {
    vertices: Vec<JobVertexJson>,
    edges: Vec<JobEdgeJson>,
}

impl PlanSink for JsonSink {
    fn vertex(
        &mut self,
        id: String,
        name: Option<String>,
        description: Option<String>,
        parallelism: i32,
    ) {
        self.vertices.push(JobVertexJson {
            name,
            description,
            ..JobVertexJson::new(id, parallelism)
        });
    }

    fn edge(&mut self, input: FlinkInput, target: &str, pattern: &str, partition_type: &str) {
        self.edges.push(JobEdgeJson {
            source: input.id,
            target: target.to_owned(),
            distribution_pattern: pattern.to_owned(),
            result_partition_type: partition_type.to_owned(),
            ship_strategy: Some(input.ship_strategy),
            data_set: None,
        });
    }
}

impl PlanSink for RawJob {
    fn vertex(
        &mut self,
        id: String,
        name: Option<String>,
        description: Option<String>,
        parallelism: i32,
    ) {
        self.push_vertex(
            &id,
            name.as_deref(),
            description.as_deref(),
            parallelism,
            None,
            None,
            None,
            Vec::new(),
            None,
            false,
        );
    }

    fn edge(&mut self, input: FlinkInput, target: &str, pattern: &str, partition_type: &str) {
        self.push_edge(
            &input.id,
            target,
            pattern,
            partition_type,
            Some(&input.ship_strategy),
            None,
        );
    }
}

/// Whether the bytes look like a Flink plan: a JSON object with `nodes`, or with `plan` holding
/// an object with `nodes`.
pub fn looks_like_flink_plan(value: &serde_json::Value) -> bool {
    let has_nodes = |v: &serde_json::Value| v.get("nodes").is_some();
    has_nodes(value) || value.get("plan").is_some_and(has_nodes)
}

/// Converts a Flink plan into job graph JSON. Vertices keep the plan's order and ids (Flink's
/// 32-hex `JobVertexID`s); the inputs of a node become its edges in `num` order. The document
/// is read field by field, unknown fields skipped as they are read: memory is that of the
/// result, whatever else the plan carries.
///
/// # Errors
/// [`GraphError::Json`] when the bytes are not JSON; [`GraphError::FlinkPlan`] for a missing or
/// mistyped field (`nodes`, `type`, or a node's `id`, `parallelism`, `inputs`, naming the node and
/// the input) and naming the node and input for a parallelism other than `-1` or a positive
/// number, an unknown exchange, or duplicate input numbers. Unknown producers and cycles are reported when the result is
/// validated by [`JobGraph::from_json`](crate::JobGraph::from_json).
pub fn import(bytes: &[u8]) -> Result<JobGraphJson, GraphError> {
    let (name, job_type, sink) = read::<JsonSink>(bytes)?;
    Ok(JobGraphJson {
        name,
        job_type,
        vertices: sink.vertices,
        edges: sink.edges,
    })
}

/// As [`import`], into the compact form a [`JobGraph`](crate::JobGraph) is validated from,
/// node by node as they are read: no job graph JSON is built, and nothing read borrows the
/// bytes, which the caller may free at once.
///
/// # Errors
/// As [`import`].
pub(crate) fn import_raw(bytes: &[u8]) -> Result<RawJob, GraphError> {
    let (name, job_type, mut raw) = read::<RawJob>(bytes)?;
    raw.name = name;
    raw.job_type = job_type;
    Ok(raw)
}

/// Reads a plan: its name, job type (`streaming` or `batch`) and what its nodes gave `S`.
/// Errors come in a fixed order: `nodes` missing or mistyped, `name`, `type`, a node that
/// cannot be read (the first), an unknown job type, a node whose values are invalid (the
/// first).
fn read<S: PlanSink>(bytes: &[u8]) -> Result<(String, String, S), GraphError> {
    let document = lean::read::<S>(bytes).map_err(|e| GraphError::Json {
        format: "Flink plan",
        message: e.to_string(),
    })?;
    let (name, kind, nodes) = read_plan(document)?;
    let job_type = match kind.as_deref() {
        None => "streaming",
        Some(t) if t.eq_ignore_ascii_case("STREAMING") => "streaming",
        Some(t) if t.eq_ignore_ascii_case("BATCH") => "batch",
        Some(other) => {
            return Err(GraphError::FlinkPlan(format!(
                "unknown job type '{other}' (expected STREAMING or BATCH)"
            )))
        }
    };
    if let Some(e) = nodes.value_error {
        return Err(e);
    }
    Ok((name, job_type.to_owned(), nodes.sink))
}

/// The plan of a document: `plan` when REST wrapped it, else the document itself; its name,
/// `type` and nodes, checked in order: `nodes` missing or mistyped, `name`, `type`, the first
/// node that could not be read.
fn read_plan<S: PlanSink>(
    document: Document<S>,
) -> Result<(String, Option<String>, Nodes<S>), GraphError> {
    let fields = match document.plan.unwrap_or(document.fields) {
        PlanPart::Object(fields) => fields,
        PlanPart::Other(kind) => {
            return Err(GraphError::FlinkPlan(format!(
                "the plan is {kind}, not an object"
            )))
        }
    };
    let PlanFields { name, kind, nodes } = *fields;
    let text = |key: &str, value: Option<Text>| match value {
        None | Some(Text::Null) => Ok(None),
        Some(Text::Str(s)) => Ok(Some(s)),
        Some(Text::Other(kind)) => Err(GraphError::FlinkPlan(format!(
            "field `{key}` is {kind}, not a string"
        ))),
    };
    let nodes = match nodes {
        Some(Ok(nodes)) => nodes,
        Some(Err(kind)) => {
            return Err(GraphError::FlinkPlan(format!(
                "field `nodes` is {kind}, not an array"
            )))
        }
        None => {
            return Err(GraphError::FlinkPlan(
                "missing field `nodes` (the list of job vertices)".to_owned(),
            ))
        }
    };
    let name = text("name", name)?.unwrap_or_default();
    let kind = text("type", kind)?;
    if let Some(e) = nodes.read_error {
        return Err(e);
    }
    Ok((name, kind, *nodes))
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
