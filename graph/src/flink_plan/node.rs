//! One node of a Flink plan: the fields of it the import reads, checked into a `FlinkNode`
//! (errors name the node and the field), and added to a [`PlanSink`] as its vertex and edges.
//! Below both the one-pass reader of the document and the import that drives it.

use serde::Deserialize;

use crate::{GraphError, ResultPartitionType, ShipStrategy};

/// One node of a Flink plan, read field by field so that an error names the node and the
/// field. Fields Flink writes that Conflux does not use (`jid`, `operator_strategy`,
/// `optimizer_properties`, ...) are skipped.
#[derive(Debug)]
pub(super) struct FlinkNode {
    id: String,
    /// The vertex name: `operator`, else `contents`, else the description's first line.
    name: Option<String>,
    description: Option<String>,
    parallelism: i64,
    inputs: Vec<FlinkInput>,
}

#[derive(Debug, Deserialize)]
pub(super) struct FlinkInput {
    pub(super) num: u32,
    pub(super) id: String,
    pub(super) ship_strategy: String,
    pub(super) exchange: String,
}

/// Where a plan's vertices and edges go as its nodes are read: job graph JSON (for editing),
/// or the compact form a [`JobGraph`](crate::JobGraph) is validated from (for loading).
pub(super) trait PlanSink: Default {
    /// A vertex, in plan order.
    fn vertex(
        &mut self,
        id: String,
        name: Option<String>,
        description: Option<String>,
        parallelism: i32,
    );
    /// An edge into `target`, in plan order and input number order.
    fn edge(&mut self, input: FlinkInput, target: &str, pattern: &str, partition_type: &str);
}

/// A field that should be a string.
pub(super) enum Text {
    Null,
    Str(String),
    /// Neither a string nor null: its kind.
    Other(&'static str),
}

impl Text {
    /// What the value is, for messages.
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Text::Null => "null",
            Text::Str(_) => "a string",
            Text::Other(kind) => kind,
        }
    }
}

/// The fields of one node the import reads (all absent for a node that is not an object).
#[derive(Default)]
pub(super) struct NodeFields {
    pub(super) id: Option<Text>,
    pub(super) description: Option<Text>,
    pub(super) operator: Option<Text>,
    pub(super) contents: Option<Text>,
    /// The value, or the message of reading it as an `i64`.
    pub(super) parallelism: Option<Result<i64, String>>,
    pub(super) inputs: Option<InputsField>,
}

/// A node's `inputs`.
pub(super) enum InputsField {
    Null,
    /// Each input, or the message of reading it.
    List(Vec<Result<FlinkInput, String>>),
    /// Neither an array nor null: its kind.
    Other(&'static str),
}

/// One entry of `nodes`; errors name the node by id (by position while the id is unknown).
pub(super) fn read_node(position: usize, node: NodeFields) -> Result<FlinkNode, GraphError> {
    let id = match node.id {
        Some(Text::Str(id)) => id,
        None => {
            return Err(GraphError::FlinkPlan(format!(
                "node at position {position} of `nodes`: missing field `id`"
            )))
        }
        Some(other) => {
            return Err(GraphError::FlinkPlan(format!(
                "node at position {position} of `nodes`: field `id` is {}, not a string",
                other.kind()
            )))
        }
    };
    let text = |key: &str, value: Option<Text>| match value {
        None | Some(Text::Null) => Ok(None),
        Some(Text::Str(s)) => Ok(Some(s)),
        Some(Text::Other(kind)) => Err(GraphError::FlinkPlan(format!(
            "node {id:?}: field `{key}` is {kind}, not a string"
        ))),
    };
    let description = text("description", node.description)?.map(|d| decode_text(&d));
    let non_empty = |s: Option<String>| s.filter(|s| !s.is_empty());
    let operator = non_empty(text("operator", node.operator)?);
    let contents = non_empty(text("contents", node.contents)?);
    let name = operator.or(contents).map(|n| decode_text(&n)).or_else(|| {
        let d = description.as_deref()?;
        let first = d.split_once('\n').map_or(d, |(first, _)| first);
        (!first.is_empty()).then(|| first.to_owned())
    });
    let parallelism = match node.parallelism {
        None => {
            return Err(GraphError::FlinkPlan(format!(
                "node {id:?}: missing field `parallelism`"
            )))
        }
        Some(p) => {
            p.map_err(|e| GraphError::FlinkPlan(format!("node {id:?}: field `parallelism`: {e}")))?
        }
    };
    let inputs = match node.inputs {
        None | Some(InputsField::Null) => Vec::new(),
        Some(InputsField::List(inputs)) => inputs
            .into_iter()
            .enumerate()
            .map(|(k, input)| {
                input.map_err(|e| {
                    GraphError::FlinkPlan(format!("node {id:?}: input at position {k}: {e}"))
                })
            })
            .collect::<Result<_, _>>()?,
        Some(InputsField::Other(kind)) => {
            return Err(GraphError::FlinkPlan(format!(
                "node {id:?}: field `inputs` is {kind}, not an array"
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

/// Adds one read node to `sink`: its vertex, then its inputs in `num` order as edges.
///
/// # Errors
/// A parallelism other than `-1` or a positive `i32`, two inputs of one number, an unknown
/// exchange; `sink` may then hold part of the node.
pub(super) fn add_node<S: PlanSink>(node: FlinkNode, sink: &mut S) -> Result<(), GraphError> {
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
    let mut inputs = node.inputs;
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
        let pattern = ShipStrategy::parse(&input.ship_strategy)
            .distribution_pattern()
            .as_str();
        sink.edge(input, &node.id, pattern, partition_type.as_str());
    }
    sink.vertex(node.id, node.name, node.description, parallelism);
    Ok(())
}

/// Undoes Flink's dashboard escaping of a name or description (`JsonPlanGenerator`): `<br/>`
/// (how Flink writes a line break) becomes `\n`, then every HTML character reference
/// (`&gt;`, `&#92;`, `&infin;`, ...) its character. Applied once, on import: the result is text,
/// never decoded again (a literal `&gt;` in it stays). O(length).
pub fn decode_text(escaped: &str) -> String {
    let lines = escaped.replace("<br/>", "\n");
    html_escape::decode_html_entities(&lines).into_owned()
}
