//! The verdict types of the compatibility analysis: verdicts, layers, the operator mapping and
//! the report, and the accumulator that fills them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The verdict of the analysis, worst last: `COMPATIBLE_AS_IS` < `COMPATIBLE_AFTER_RENAME` <
/// `COMPATIBLE_AFTER_MIGRATION` < `UNKNOWN` < `INCOMPATIBLE` (the derived order).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    /// The new plan restores the old state unchanged.
    CompatibleAsIs,
    /// The state restores once operator ids are renamed (State Processor API
    /// `changeOperatorIdentifier`), because the ids changed while the operators did not.
    CompatibleAfterRename,
    /// The state restores after a migration (read with the old serializer, rewritten).
    CompatibleAfterMigration,
    /// Cannot be checked: a plan carries no state information (a vertex without an operator
    /// list, e.g. every vertex of a Flink JSON plan), so whether the restore works depends on
    /// state the analysis cannot see. Worse than every compatible verdict, since it may hide an
    /// incompatibility; better than a known incompatibility.
    Unknown,
    /// The state cannot be restored.
    Incompatible,
}

impl Verdict {
    /// `COMPATIBLE_AS_IS`, `COMPATIBLE_AFTER_RENAME`, `COMPATIBLE_AFTER_MIGRATION`, `UNKNOWN`
    /// or `INCOMPATIBLE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::CompatibleAsIs => "COMPATIBLE_AS_IS",
            Verdict::CompatibleAfterRename => "COMPATIBLE_AFTER_RENAME",
            Verdict::CompatibleAfterMigration => "COMPATIBLE_AFTER_MIGRATION",
            Verdict::Unknown => "UNKNOWN",
            Verdict::Incompatible => "INCOMPATIBLE",
        }
    }
}

/// Options of the analysis.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompatOptions {
    /// Old operator uid (or vertex id) -> new one, for operators whose uid changed on purpose.
    #[serde(default)]
    pub renames: BTreeMap<String, String>,
    /// Flink's `--allowNonRestoredState` (`-n`): state of removed operators is dropped instead
    /// of failing the restore.
    #[serde(default)]
    pub allow_non_restored_state: bool,
}

/// One layer's verdict and findings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Layer {
    /// The worst finding of the layer.
    pub verdict: Verdict,
    /// The findings, for people.
    pub findings: Vec<String>,
}

impl Layer {
    fn new() -> Layer {
        Layer {
            verdict: Verdict::CompatibleAsIs,
            findings: Vec::new(),
        }
    }

    fn add(&mut self, verdict: Verdict, finding: String) {
        self.verdict = self.verdict.max(verdict);
        self.findings.push(finding);
    }
}

/// Which of the three layers a finding belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LayerKind {
    /// Operators mapped old -> new, removed and added.
    Topology,
    /// Mappings that pair different functions, reordered row fields, lost key partitioning.
    BusinessLogic,
    /// State names, kinds, types, TTL, key groups.
    StateSchema,
}

/// An operator of one side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct OperatorRef {
    /// Its vertex.
    pub vertex: String,
    /// Its vertex's name (Flink's for an imported plan), if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vertex_name: Option<String>,
    /// Its position in the vertex's chain.
    pub position: usize,
    /// Its name.
    pub name: String,
    /// Its uid, if set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The operator id its state is stored under: `uid:<uid>`, `vertex:<id>` or `auto:<hash>`.
    pub id: String,
}

/// How an old operator was paired with a new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// The same uid.
    Uid,
    /// The user's rename map.
    Rename,
    /// The same (emulated) auto-generated id: same position in the topology.
    AutoId,
    /// The same vertex id (a vertex without operator list stands for its head operator).
    VertexId,
    /// Structure: the same name where ids differ.
    Structure,
    /// Not paired.
    Unmatched,
}

/// One row of the operator mapping.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct OperatorMapping {
    /// The old operator (absent for an added operator).
    pub old: Option<OperatorRef>,
    /// The new operator (absent for a removed operator).
    pub new: Option<OperatorRef>,
    /// How they were paired.
    pub matched_by: MatchedBy,
    /// This operator's verdict.
    pub verdict: Verdict,
    /// Why, one reason per finding.
    pub reasons: Vec<String>,
}

/// The result of the analysis.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CompatReport {
    /// The overall verdict: the worst of the layers.
    pub verdict: Verdict,
    /// Business-logic layer.
    pub business_logic: Layer,
    /// Topology layer.
    pub topology: Layer,
    /// State-schema layer.
    pub state_schema: Layer,
    /// Every old and new operator, paired where possible.
    pub operators: Vec<OperatorMapping>,
}

/// The three layers while the analysis fills them.
#[derive(Debug)]
pub(super) struct Findings {
    topology: Layer,
    business_logic: Layer,
    state_schema: Layer,
}

impl Findings {
    pub(super) fn new() -> Findings {
        Findings {
            topology: Layer::new(),
            business_logic: Layer::new(),
            state_schema: Layer::new(),
        }
    }

    fn layer(&mut self, kind: LayerKind) -> &mut Layer {
        match kind {
            LayerKind::Topology => &mut self.topology,
            LayerKind::BusinessLogic => &mut self.business_logic,
            LayerKind::StateSchema => &mut self.state_schema,
        }
    }

    /// Adds a finding that changes no verdict (an added operator).
    pub(super) fn inform(&mut self, kind: LayerKind, finding: String) {
        self.layer(kind).findings.push(finding);
    }

    /// Puts a finding first in its layer (the topology's summary line).
    pub(super) fn prepend(&mut self, kind: LayerKind, finding: String) {
        self.layer(kind).findings.insert(0, finding);
    }

    /// The report: the overall verdict is the worst of the layers.
    pub(super) fn into_report(self, operators: Vec<OperatorMapping>) -> CompatReport {
        CompatReport {
            verdict: self
                .business_logic
                .verdict
                .max(self.topology.verdict)
                .max(self.state_schema.verdict),
            business_logic: self.business_logic,
            topology: self.topology,
            state_schema: self.state_schema,
            operators,
        }
    }
}

/// The findings about one old operator: each goes into its layer (prefixed with the operator's
/// label) and into the operator's row.
pub(super) struct RowNotes<'a> {
    findings: &'a mut Findings,
    label: String,
    row: OperatorMapping,
}

impl<'a> RowNotes<'a> {
    /// Notes on `row`, whose operator reads as `label` in the layers' findings.
    pub(super) fn new(findings: &'a mut Findings, label: String, row: OperatorMapping) -> Self {
        RowNotes {
            findings,
            label,
            row,
        }
    }

    /// The row being filled.
    pub(super) fn row_mut(&mut self) -> &mut OperatorMapping {
        &mut self.row
    }

    /// Records one finding.
    pub(super) fn note(&mut self, kind: LayerKind, verdict: Verdict, reason: String) {
        self.findings
            .layer(kind)
            .add(verdict, format!("{}: {reason}", self.label));
        self.row.verdict = self.row.verdict.max(verdict);
        self.row.reasons.push(reason);
    }

    /// The finished row.
    pub(super) fn finish(self) -> OperatorMapping {
        self.row
    }
}
