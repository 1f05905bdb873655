//! `conflux plan stats|edit|diff|compat|ttl` and `conflux serve`: the planning API
//! (`conflux-planner`) on the command line and over HTTP.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use conflux_graph::json::JobGraphJson;
use conflux_graph::load::{self, LoadOptions};
use conflux_planner::compiled::parse_duration_ms;
use conflux_planner::rescale::{rescale, KeyGroupRange, KeyedState, Rescale};
use conflux_planner::service::{RunningService, ServiceConfig};
use conflux_planner::stats::{mib, thousands};
use conflux_planner::{
    compat, diff, flink_parallelism_overrides, CompatOptions, CompiledPlan, EdgeRef, Edit,
    PlanStats, StatsConfig, TapSide, Verdict, FLINK_PARALLELISM_OVERRIDES,
};
use serde_json::json;

use std::fmt::Write as _;

use crate::{output, read_input, Failure, Format, LoadArgs, OffloadArgs};

/// `conflux plan` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum PlanCommand {
    /// Plan statistics: vertices, channels, network buffers, regions, descriptors, suggestions.
    Stats {
        /// Job graph JSON or Flink JSON plan (`-` for standard input).
        file: PathBuf,
        #[command(flatten)]
        load: LoadArgs,
        #[command(flatten)]
        offload: OffloadArgs,
        /// Output format.
        #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Apply edits to a plan and write the edited plan (job graph JSON) to a new file. Edits
    /// apply in this order: every --edit, then --set-parallelism, --set-partitioner,
    /// --set-slot-sharing-group, --chain, --unchain, --set-ttl, --tap (each in the given order).
    Edit {
        /// Job graph JSON or Flink JSON plan (`-` for standard input).
        file: PathBuf,
        #[command(flatten)]
        load: LoadArgs,
        /// Where to write the edited plan (must differ from FILE); optional with --emit.
        #[arg(help_heading = crate::headings::OUTPUT, long, short, required_unless_present = "emit")]
        output: Option<PathBuf>,
        /// Print the edits in a form Flink applies instead of the report: `flink-overrides`,
        /// the value of Flink's `pipeline.jobvertex-parallelism-overrides`
        /// (`<JobVertexID>:<parallelism>,...`). Parallelism edits of a Flink plan only.
        #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, value_name = "FORM")]
        emit: Option<Emit>,
        /// An edit as JSON, as the service takes it, e.g.
        /// '{"kind": "set_parallelism", "vertex": "map", "parallelism": 8}'.
        #[arg(help_heading = crate::headings::EDITS, long = "edit", value_name = "JSON")]
        edits: Vec<String>,
        /// VERTEX=N.
        #[arg(help_heading = crate::headings::EDITS, long, value_name = "VERTEX=N")]
        set_parallelism: Vec<String>,
        /// EDGE=REBALANCE|RESCALE, EDGE an index or SOURCE->TARGET.
        #[arg(help_heading = crate::headings::EDITS, long, value_name = "EDGE=PARTITIONER")]
        set_partitioner: Vec<String>,
        /// VERTEX=GROUP.
        #[arg(help_heading = crate::headings::EDITS, long, value_name = "VERTEX=GROUP")]
        set_slot_sharing_group: Vec<String>,
        /// EDGE (an index or SOURCE->TARGET): chain a forward edge.
        #[arg(help_heading = crate::headings::EDITS, long, value_name = "EDGE")]
        chain: Vec<String>,
        /// VERTEX:K: split a chain before its operator K.
        #[arg(help_heading = crate::headings::EDITS, long, value_name = "VERTEX:K")]
        unchain: Vec<String>,
        /// VERTEX/OPERATOR/STATE=DURATION (Flink notation, e.g. `1 h`, `3600000 ms`) or `none`.
        #[arg(help_heading = crate::headings::EDITS, long, value_name = "VERTEX/OPERATOR/STATE=TTL")]
        set_ttl: Vec<String>,
        /// VERTEX:input|output: attach a debug tap sink.
        #[arg(help_heading = crate::headings::EDITS, long, value_name = "VERTEX:SIDE")]
        tap: Vec<String>,
        /// Output format of the report.
        #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// What changed between two plans.
    Diff {
        /// The old plan.
        old: PathBuf,
        /// The new plan.
        new: PathBuf,
        #[command(flatten)]
        load: LoadArgs,
        /// Output format.
        #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Whether the new plan can restore the old plan's state (job graphs, Flink plans, or two
    /// Flink compiled plans).
    Compat {
        /// The old plan.
        old: PathBuf,
        /// The new plan.
        new: PathBuf,
        #[command(flatten)]
        load: LoadArgs,
        /// OLD_UID=NEW_UID: an operator whose uid changed on purpose.
        #[arg(help_heading = crate::headings::ANALYSIS, long, value_name = "OLD=NEW")]
        rename: Vec<String>,
        /// Drop the state of removed operators instead of failing (Flink's `-n`).
        #[arg(help_heading = crate::headings::ANALYSIS, long)]
        allow_non_restored_state: bool,
        /// Exit 3 (after printing the report) when the verdict is at least this bad:
        /// `incompatible`, or `unknown` (UNKNOWN or INCOMPATIBLE). Without it the exit code is 0
        /// whatever the verdict.
        #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, value_name = "VERDICT")]
        fail_on: Option<FailOn>,
        /// Output format.
        #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Key groups per old and new subtask when a vertex's parallelism changes (as Flink's
    /// KeyGroupRangeAssignment), which old subtasks' state each new subtask reads, and the share
    /// of state that moves.
    Rescale {
        /// Job graph JSON or Flink JSON plan (`-` for standard input).
        file: PathBuf,
        /// The vertex: its id or a name no other vertex has.
        #[arg(help_heading = crate::headings::ANALYSIS, long)]
        vertex: String,
        /// The new parallelism (at least 1, at most the max parallelism).
        #[arg(help_heading = crate::headings::ANALYSIS, long)]
        parallelism: u32,
        /// The max parallelism the rescaled job runs with; refused unless it is the one the
        /// state was written with.
        #[arg(help_heading = crate::headings::ANALYSIS, long)]
        max_parallelism: Option<u64>,
        /// Parallelism for Flink plan vertices written as -1.
        #[arg(help_heading = crate::headings::JOB, long, default_value_t = conflux_graph::flink_plan::DEFAULT_ADAPTIVE_PARALLELISM,
              value_parser = clap::value_parser!(u32).range(1..))]
        default_parallelism: u32,
        /// Output format.
        #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// List the stateful operators of a Flink compiled plan with their state TTL, or set one.
    Ttl {
        /// A Flink compiled plan (`COMPILE PLAN`, `*.compiled-plan.json`).
        file: PathBuf,
        /// NODE:STATE=DURATION: set a state's TTL (Flink notation, `0 ms` for none); needs
        /// --output.
        #[arg(help_heading = crate::headings::EDITS, long, value_name = "NODE:STATE=TTL", requires = "output")]
        set: Option<String>,
        /// Where to write the edited compiled plan.
        #[arg(help_heading = crate::headings::OUTPUT, long, short)]
        output: Option<PathBuf>,
        /// Output format.
        #[arg(help_heading = crate::headings::OUTPUT, long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

/// What `plan edit --emit` prints.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum Emit {
    /// Flink's `pipeline.jobvertex-parallelism-overrides` value.
    FlinkOverrides,
}

/// The verdict `plan compat --fail-on` fails at (and above).
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum FailOn {
    /// INCOMPATIBLE.
    Incompatible,
    /// UNKNOWN or INCOMPATIBLE.
    Unknown,
}

impl FailOn {
    fn verdict(self) -> Verdict {
        match self {
            FailOn::Incompatible => Verdict::Incompatible,
            FailOn::Unknown => Verdict::Unknown,
        }
    }
}

impl PlanCommand {
    pub(crate) fn format(&self) -> Format {
        match self {
            PlanCommand::Stats { format, .. }
            | PlanCommand::Edit { format, .. }
            | PlanCommand::Diff { format, .. }
            | PlanCommand::Compat { format, .. }
            | PlanCommand::Rescale { format, .. }
            | PlanCommand::Ttl { format, .. } => *format,
        }
    }
}

/// Options of `conflux serve`.
#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// Log output.
    #[command(flatten)]
    pub(crate) log: crate::logging::LogArgs,

    /// Listen address; port 0 picks a free port. Loopback by default.
    #[arg(help_heading = crate::headings::SERVER, long, default_value = "127.0.0.1:8088")]
    address: std::net::SocketAddr,
    /// Largest request body, bytes.
    #[arg(help_heading = crate::headings::SERVER, long, default_value_t = 16 << 20)]
    max_body_bytes: usize,
    /// Most plans kept in memory.
    #[arg(help_heading = crate::headings::SERVER, long, default_value_t = 1000)]
    max_plans: usize,
    /// Memory budget of stored plans, versions and cached statistics, bytes; the least recently
    /// used plans are evicted, a plan that cannot fit alone gets 507.
    #[arg(help_heading = crate::headings::SERVER, long, default_value_t = 1 << 30, value_parser = clap::value_parser!(u64).range(1..))]
    max_store_bytes: u64,
    /// Expensive computations (statistics, edits, analyses) running at once; default: the CPUs.
    #[arg(help_heading = crate::headings::SERVER, long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    max_computations: Option<u64>,
    /// Connections open at once; a new one closes the longest idle one.
    #[arg(help_heading = crate::headings::SERVER, long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    max_connections: u64,
    /// A connection must send a complete request head within this, ms.
    #[arg(help_heading = crate::headings::SERVER, long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    header_read_timeout_ms: u64,
    /// A connection without traffic for this long is closed, ms.
    #[arg(help_heading = crate::headings::SERVER, long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    idle_timeout_ms: u64,
}

pub(crate) fn run(command: &PlanCommand) -> Result<(), Failure> {
    match command {
        PlanCommand::Stats {
            file,
            load,
            offload,
            format,
        } => stats(file, &load.options(), offload, *format),
        PlanCommand::Edit { .. } => edit(command),
        PlanCommand::Diff {
            old,
            new,
            load,
            format,
        } => {
            let options = load.options();
            let (a, b) = (read_plan(old, &options)?, read_plan(new, &options)?);
            let d = diff(&a, &b);
            tracing::debug!(phase = "diff", "compared the plans");
            match format {
                Format::Json => print_json(&d),
                Format::Text => {
                    let mut s = String::new();
                    let name_in = |plan: &JobGraphJson, id: &str| {
                        plan.vertices
                            .iter()
                            .find(|v| v.id == id)
                            .and_then(|v| v.name.clone())
                    };
                    for v in &d.vertices_added {
                        let _ = writeln!(s, "+ vertex {}", labelled(v, name_in(&b, v).as_deref()));
                    }
                    for v in &d.vertices_removed {
                        let _ = writeln!(s, "- vertex {}", labelled(v, name_in(&a, v).as_deref()));
                    }
                    for e in &d.edges_added {
                        let _ = writeln!(s, "+ edge {e}");
                    }
                    for e in &d.edges_removed {
                        let _ = writeln!(s, "- edge {e}");
                    }
                    for c in d.vertices_changed.iter().chain(&d.edges_changed) {
                        for f in &c.fields {
                            let _ = writeln!(s, "~ {}: {} {} -> {}", c.id, f.field, f.old, f.new);
                        }
                    }
                    let _ = writeln!(
                        s,
                        "channels {} -> {}",
                        thousands(d.channels.0),
                        thousands(d.channels.1)
                    );
                    output::print(&s)
                }
            }
        }
        PlanCommand::Compat {
            old,
            new,
            load,
            rename,
            allow_non_restored_state,
            fail_on,
            format,
        } => {
            let mut options = CompatOptions {
                allow_non_restored_state: *allow_non_restored_state,
                ..CompatOptions::default()
            };
            for r in rename {
                let (a, b) = split_pair(r, '=', "--rename")?;
                options.renames.insert(a.to_owned(), b.to_owned());
            }
            let (old_bytes, new_bytes) = (read_input(old)?, read_input(new)?);
            let report = if is_compiled(&old_bytes) && is_compiled(&new_bytes) {
                let a = CompiledPlan::parse(&old_bytes).map_err(Failure::input)?;
                let b = CompiledPlan::parse(&new_bytes).map_err(Failure::input)?;
                compat::analyze_compiled(&a, &b, &options)
            } else {
                let lo = load.options();
                let a = parse_plan(&old_bytes, &lo, old)?;
                let b = parse_plan(&new_bytes, &lo, new)?;
                compat::analyze(&a, &b, &options).map_err(Failure::input)?
            };
            tracing::debug!(
                phase = "compat",
                verdict = report.verdict.as_str(),
                "analysed compatibility"
            );
            match format {
                Format::Json => print_json(&report),
                Format::Text => {
                    let mut s = String::new();
                    let _ = writeln!(s, "verdict {}", report.verdict.as_str());
                    for (name, layer) in [
                        ("business logic", &report.business_logic),
                        ("topology", &report.topology),
                        ("state schema", &report.state_schema),
                    ] {
                        let _ = writeln!(s, "{name}: {}", layer.verdict.as_str());
                        for f in &layer.findings {
                            let _ = writeln!(s, "  {f}");
                        }
                    }
                    output::print(&s)
                }
            }?;
            match fail_on {
                Some(at) if report.verdict >= at.verdict() => Err(Failure::Threshold(anyhow!(
                    "verdict {} is at least {} (--fail-on)",
                    report.verdict.as_str(),
                    at.verdict().as_str()
                ))),
                _ => Ok(()),
            }
        }
        PlanCommand::Rescale {
            file,
            vertex,
            parallelism,
            max_parallelism,
            default_parallelism,
            format,
        } => {
            let options = LoadOptions {
                default_parallelism: *default_parallelism,
                ..LoadOptions::default()
            };
            let mut plan = read_plan(file, &options)?;
            plan.estimate_undecided(*default_parallelism);
            let r =
                rescale(&plan, vertex, *parallelism, *max_parallelism).map_err(Failure::input)?;
            match format {
                Format::Json => print_json(&r),
                Format::Text => output::print(&rescale_text(&r)),
            }
        }
        PlanCommand::Ttl {
            file,
            set,
            output,
            format,
        } => ttl(file, set.as_deref(), output.as_deref(), *format),
    }
}

fn is_compiled(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .is_some_and(|v| v.get("flinkVersion").is_some())
}

fn parse_plan(bytes: &[u8], options: &LoadOptions, path: &Path) -> Result<JobGraphJson, Failure> {
    load::parse(bytes, options)
        .map(|(json, format)| {
            tracing::debug!(
                phase = "parse",
                file = %path.display(),
                ?format,
                vertices = json.vertices.len(),
                edges = json.edges.len(),
                "parsed the plan"
            );
            json
        })
        .with_context(|| format!("reading {}", path.display()))
        .map_err(Failure::Input)
}

fn read_plan(path: &Path, options: &LoadOptions) -> Result<JobGraphJson, Failure> {
    parse_plan(&read_input(path)?, options, path)
}

fn print_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    output::print_json(value)
}

fn stats(
    file: &Path,
    options: &LoadOptions,
    offload: &OffloadArgs,
    format: Format,
) -> Result<(), Failure> {
    let json = read_plan(file, options)?;
    let config = StatsConfig {
        offload_rule: offload.rule()?,
        default_parallelism: Some(options.default_parallelism),
        ..StatsConfig::default()
    };
    let s = PlanStats::compute(&json, &config).map_err(Failure::input)?;
    tracing::debug!(
        phase = "stats",
        channels = s.channels,
        "computed the plan statistics"
    );
    match format {
        Format::Json => print_json(&s),
        Format::Text => {
            let mut out = String::new();
            let _ = writeln!(out, "job {} ({})", s.name, s.job_type);
            let _ = writeln!(
                out,
                "vertices {} job, {} execution; edges {}",
                s.job_vertices,
                thousands(s.execution_vertices),
                s.job_edges
            );
            if !s.undecided_vertices.is_empty() {
                let _ = writeln!(
                    out,
                    "undecided {} (parallelism -1, counted at {})",
                    s.undecided_vertices.join(", "),
                    options.default_parallelism
                );
            }
            let _ = writeln!(out, "channels {}", thousands(s.channels));
            let _ = writeln!(
                out,
                "network buffers {} ({}), required {} ({})",
                thousands(s.network.total.target),
                mib(s.network.bytes),
                thousands(s.network.total.required),
                mib(s.network.required_bytes)
            );
            let _ = writeln!(
                out,
                "scheduling regions {} (largest {} execution vertices), logical regions {}",
                thousands(s.regions.count as u64),
                thousands(u64::from(s.regions.largest)),
                thousands(s.regions.logical as u64)
            );
            let _ = writeln!(
                out,
                "descriptors {} in {} groups, {} bytes compressed, {} groups offloaded ({})",
                thousands(s.descriptors.descriptors),
                thousands(s.descriptors.groups),
                thousands(s.descriptors.compressed_bytes),
                thousands(s.descriptors.offloaded_groups),
                s.descriptors.offload_rule
            );
            let _ = writeln!(out, "topology {} bytes", thousands(s.topology_bytes as u64));
            for e in &s.edges {
                let _ = writeln!(
                    out,
                    "  edge {} {} -> {} {} {} x {}: {} channels, {}",
                    e.index,
                    labelled(&e.source, e.source_name.as_deref()),
                    labelled(&e.target, e.target_name.as_deref()),
                    e.ship_strategy
                        .as_deref()
                        .unwrap_or(&e.distribution_pattern),
                    e.producer_parallelism,
                    e.consumer_parallelism,
                    thousands(e.channels),
                    mib(e.buffer_bytes)
                );
            }
            for sug in &s.suggestions {
                let _ = writeln!(out, "suggestion: {}", sug.message);
            }
            for flag in &s.flags {
                let _ = writeln!(out, "impossible: {}", flag.message);
            }
            output::print(&out)
        }
    }
}

/// A vertex id with its name beside it, `id "name"`, for text output (control characters
/// escaped).
pub(crate) fn labelled(id: &str, name: Option<&str>) -> String {
    match name {
        Some(name) => format!("{id} \"{}\"", crate::failure::escape_controls(name)),
        None => id.to_owned(),
    }
}

fn split_pair<'a>(text: &'a str, sep: char, flag: &str) -> Result<(&'a str, &'a str), Failure> {
    pair(text.split_once(sep), text, sep, flag)
}

/// As [`split_pair`], at the last `sep`: for `VERTEX=VALUE`, where a vertex named by its name
/// (Flink's, e.g. `[35]:Sort(orderBy=[revenue DESC])`) may contain `sep` itself.
fn rsplit_pair<'a>(text: &'a str, sep: char, flag: &str) -> Result<(&'a str, &'a str), Failure> {
    pair(text.rsplit_once(sep), text, sep, flag)
}

fn pair<'a>(
    split: Option<(&'a str, &'a str)>,
    text: &str,
    sep: char,
    flag: &str,
) -> Result<(&'a str, &'a str), Failure> {
    split
        .map(|(a, b)| (a.trim(), b.trim()))
        .filter(|(a, b)| !a.is_empty() && !b.is_empty())
        .ok_or_else(|| Failure::Input(anyhow!("{flag} '{text}': expected A{sep}B")))
}

fn edge_ref(text: &str) -> EdgeRef {
    match text.trim().parse::<usize>() {
        Ok(i) => EdgeRef::Index(i),
        Err(_) => match text.split_once("->") {
            Some((s, t)) => EdgeRef::Endpoints {
                source: s.trim().to_owned(),
                target: t.trim().to_owned(),
            },
            None => EdgeRef::Endpoints {
                source: text.trim().to_owned(),
                target: String::new(),
            },
        },
    }
}

fn number<T: std::str::FromStr>(text: &str, flag: &str) -> Result<T, Failure> {
    text.trim()
        .parse()
        .map_err(|_| Failure::Input(anyhow!("{flag}: '{text}' is not a whole number")))
}

/// The edits of `plan edit`, in the documented order.
fn edits_of(command: &PlanCommand) -> Result<Vec<Edit>, Failure> {
    let PlanCommand::Edit {
        edits,
        set_parallelism,
        set_partitioner,
        set_slot_sharing_group,
        chain,
        unchain,
        set_ttl,
        tap,
        ..
    } = command
    else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for e in edits {
        out.push(
            serde_json::from_str(e)
                .map_err(|err| Failure::Input(anyhow!("--edit '{e}': invalid edit: {err}")))?,
        );
    }
    for p in set_parallelism {
        let (v, n) = rsplit_pair(p, '=', "--set-parallelism")?;
        out.push(Edit::SetParallelism {
            vertex: v.to_owned(),
            parallelism: number(n, "--set-parallelism")?,
        });
    }
    for p in set_partitioner {
        let (e, part) = p.rsplit_once('=').ok_or_else(|| {
            Failure::Input(anyhow!(
                "--set-partitioner '{p}': expected EDGE=PARTITIONER"
            ))
        })?;
        out.push(Edit::SetPartitioner {
            edge: edge_ref(e),
            partitioner: part.trim().to_owned(),
        });
    }
    for p in set_slot_sharing_group {
        let (v, g) = rsplit_pair(p, '=', "--set-slot-sharing-group")?;
        out.push(Edit::SetSlotSharingGroup {
            vertex: v.to_owned(),
            group: g.to_owned(),
        });
    }
    for e in chain {
        out.push(Edit::Chain { edge: edge_ref(e) });
    }
    for u in unchain {
        let (v, k) = u
            .rsplit_once(':')
            .ok_or_else(|| Failure::Input(anyhow!("--unchain '{u}': expected VERTEX:K")))?;
        out.push(Edit::Unchain {
            vertex: v.to_owned(),
            at: number(k, "--unchain")?,
            new_vertex: None,
        });
    }
    for t in set_ttl {
        let (path, value) = t.rsplit_once('=').ok_or_else(|| {
            Failure::Input(anyhow!(
                "--set-ttl '{t}': expected VERTEX/OPERATOR/STATE=TTL"
            ))
        })?;
        // From the right: a vertex may be named by a name with a `/` in it.
        let parts: Vec<&str> = path.rsplitn(3, '/').collect();
        let [state, operator, vertex] = parts.as_slice() else {
            return Err(Failure::Input(anyhow!(
                "--set-ttl '{t}': expected VERTEX/OPERATOR/STATE=TTL"
            )));
        };
        let ttl_ms = if value.trim().eq_ignore_ascii_case("none") {
            None
        } else {
            Some(parse_duration_ms(value).map_err(Failure::input)?)
        };
        out.push(Edit::SetStateTtl {
            vertex: (*vertex).to_owned(),
            operator: (*operator).to_owned(),
            state: (*state).to_owned(),
            ttl_ms,
        });
    }
    for t in tap {
        let (v, side) = t
            .rsplit_once(':')
            .ok_or_else(|| Failure::Input(anyhow!("--tap '{t}': expected VERTEX:input|output")))?;
        let side = match side.trim() {
            "input" => TapSide::Input,
            "output" => TapSide::Output,
            other => {
                return Err(Failure::Input(anyhow!(
                    "--tap '{t}': side '{other}' is not input or output"
                )))
            }
        };
        out.push(Edit::AddTap {
            vertex: v.to_owned(),
            side,
            name: None,
        });
    }
    Ok(out)
}

fn edit(command: &PlanCommand) -> Result<(), Failure> {
    let PlanCommand::Edit {
        file,
        load,
        output,
        emit,
        format,
        ..
    } = command
    else {
        return Ok(());
    };
    if let Some(output) = output {
        refuse_overwriting_input(file, output)?;
    }
    let edits = edits_of(command)?;
    if edits.is_empty() {
        return Err(Failure::Input(anyhow!(
            "no edit given (--edit, --set-parallelism, --set-partitioner, ...)"
        )));
    }
    if emit.is_some() && load.parallelism.is_some() {
        return Err(Failure::Input(anyhow!(
            "--emit flink-overrides takes parallelism from the edits only; --parallelism would not reach Flink (use --set-parallelism per vertex)"
        )));
    }
    let original = read_plan(file, &load.options())?;
    if let Some(Emit::FlinkOverrides) = emit {
        let overrides = flink_parallelism_overrides(&original, &edits).map_err(Failure::input)?;
        if let Some(output) = output {
            let mut plan = original.clone();
            for e in &edits {
                plan = e.apply(&plan).map_err(Failure::input)?;
            }
            write_plan(&plan, output)?;
        }
        return match format {
            Format::Json => print_json(&json!({
                "key": FLINK_PARALLELISM_OVERRIDES,
                "value": overrides.value(),
                "overrides": overrides.overrides.iter().map(|(id, p)| {
                    let name = original.vertices.iter().find(|v| v.id == *id).and_then(|v| v.name.as_deref());
                    json!({"vertex": id, "name": name, "parallelism": p})
                }).collect::<Vec<_>>(),
            })),
            Format::Text => output::print(&format!("{}\n", overrides.value())),
        };
    }
    let mut plan = original.clone();
    for e in &edits {
        plan = e.apply(&plan).map_err(Failure::input)?;
    }
    tracing::debug!(phase = "edit", edits = edits.len(), "applied the edits");
    let Some(output) = output else {
        return Err(Failure::Input(anyhow!(
            "--output is required without --emit"
        )));
    };
    write_plan(&plan, output)?;
    let d = diff(&original, &plan);
    match format {
        Format::Json => print_json(&json!({
            "output": output.display().to_string(),
            "edits": edits,
            "channels": d.channels.1,
            "diff": d,
        })),
        Format::Text => {
            let mut s = String::new();
            let _ = writeln!(
                s,
                "wrote {} ({} edits; channels {} -> {})",
                output.display(),
                edits.len(),
                thousands(d.channels.0),
                thousands(d.channels.1)
            );
            output::print(&s)
        }
    }
}

/// `plan rescale` for people: one line per old and per new subtask, then what moves.
fn rescale_text(r: &Rescale) -> String {
    let range = |k: &KeyGroupRange| {
        if k.start == k.end {
            format!("{} (1)", k.start)
        } else {
            format!("{}-{} ({})", k.start, k.end, thousands(k.len()))
        }
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "vertex {}: parallelism {} -> {}, {} key groups (max parallelism, {}); keyed state: {}",
        labelled(&r.vertex, r.name.as_deref()),
        thousands(u64::from(r.old_parallelism)),
        thousands(u64::from(r.new_parallelism)),
        thousands(r.max_parallelism),
        if r.max_parallelism_configured {
            "explicit"
        } else {
            "Flink's default for the old parallelism"
        },
        match r.keyed_state {
            KeyedState::Yes => "yes",
            KeyedState::No => "no",
            KeyedState::Unknown => "unknown (the plan carries no state information)",
        }
    );
    let _ = writeln!(s, "old subtasks");
    for o in &r.old_subtasks {
        let _ = writeln!(s, "  {}: key groups {}", o.subtask, range(&o.key_groups));
    }
    let _ = writeln!(s, "new subtasks");
    for n in &r.new_subtasks {
        let reads: Vec<String> = n
            .reads
            .iter()
            .map(|x| format!("old {} [{}]", x.old_subtask, range(&x.key_groups)))
            .collect();
        let _ = writeln!(
            s,
            "  {}: key groups {}, reads {}",
            n.subtask,
            range(&n.key_groups),
            reads.join(", ")
        );
    }
    let _ = writeln!(
        s,
        "moves {} of {} key groups ({:.1}% of the state)",
        thousands(r.moved_key_groups),
        thousands(r.max_parallelism),
        r.moved_share * 100.0
    );
    s
}

/// Writes an edited plan as pretty job graph JSON.
fn write_plan(plan: &JobGraphJson, output: &Path) -> Result<(), Failure> {
    let mut text = plan.to_json_pretty();
    text.push('\n');
    std::fs::write(output, text)
        .with_context(|| format!("writing {}", output.display()))
        .map_err(Failure::Work)
}

/// Refuses an `--output` that is the input file: the same path, or another name for it (a
/// symlink, a hard link, `./x` for `x`), compared by device and inode where the file exists.
fn refuse_overwriting_input(input: &Path, output: &Path) -> Result<(), Failure> {
    if input.as_os_str() != "-" && (input == output || same_file(input, output)) {
        return Err(Failure::Input(anyhow!(
            "--output {} is the input file {}; an edit writes a new file",
            output.display(),
            input.display()
        )));
    }
    Ok(())
}

/// Whether both paths exist and name one file (metadata follows symlinks).
#[cfg(unix)]
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// Whether both paths exist and name one file (canonical paths resolve symlinks).
#[cfg(not(unix))]
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn ttl(
    file: &Path,
    set: Option<&str>,
    output: Option<&Path>,
    format: Format,
) -> Result<(), Failure> {
    let bytes = read_input(file)?;
    let plan = CompiledPlan::parse(&bytes)
        .with_context(|| format!("reading {}", file.display()))
        .map_err(Failure::Input)?;
    tracing::debug!(
        phase = "parse",
        nodes = plan.node_count(),
        "parsed the compiled plan"
    );
    let (plan, written) = match (set, output) {
        (Some(spec), Some(out)) => {
            let (target, value) = spec.rsplit_once('=').ok_or_else(|| {
                Failure::Input(anyhow!("--set '{spec}': expected NODE:STATE=TTL"))
            })?;
            let (node, state) = split_pair(target, ':', "--set")?;
            let node: i64 = number(node, "--set")?;
            let ms = parse_duration_ms(value).map_err(Failure::input)?;
            let edited = plan.with_ttl(node, state, ms).map_err(Failure::input)?;
            refuse_overwriting_input(file, out)?;
            std::fs::write(out, edited.text())
                .with_context(|| format!("writing {}", out.display()))
                .map_err(Failure::Work)?;
            (edited, Some(out.display().to_string()))
        }
        _ => (plan, None),
    };
    match format {
        Format::Json => print_json(&json!({
            "flink_version": plan.flink_version(),
            "nodes": plan.node_count(),
            "stateful_operators": plan.stateful_operators(),
            "output": written,
        })),
        Format::Text => {
            let mut s = String::new();
            for o in plan.stateful_operators() {
                for state in &o.states {
                    let _ = writeln!(
                        s,
                        "node {} {} state {} ({}) ttl {}",
                        o.id, o.kind, state.index, state.name, state.ttl
                    );
                }
            }
            if plan.stateful_operators().is_empty() {
                let _ = writeln!(s, "no stateful operators");
            }
            if let Some(w) = written {
                let _ = writeln!(s, "wrote {w}");
            }
            output::print(&s)
        }
    }
}

pub(crate) fn serve(args: &ServeArgs) -> Result<(), Failure> {
    tracing::debug!(
        phase = "start",
        address = %args.address,
        max_body_bytes = args.max_body_bytes,
        max_plans = args.max_plans,
        "starting the planning service"
    );
    let defaults = ServiceConfig::default();
    let service = RunningService::start(ServiceConfig {
        address: args.address,
        max_body_bytes: args.max_body_bytes,
        max_plans: args.max_plans,
        max_store_bytes: usize::try_from(args.max_store_bytes).unwrap_or(usize::MAX),
        max_concurrent_computations: args
            .max_computations
            .map_or(defaults.max_concurrent_computations, |n| {
                usize::try_from(n).unwrap_or(1024)
            }),
        max_connections: usize::try_from(args.max_connections).unwrap_or(65_536),
        header_read_timeout: std::time::Duration::from_millis(args.header_read_timeout_ms),
        idle_timeout: std::time::Duration::from_millis(args.idle_timeout_ms),
        ..defaults
    })
    .map_err(Failure::input)?;
    if tracing::enabled!(tracing::Level::INFO) {
        tracing::info!(url = %service.url(), "planning service listening on {}", service.url());
    } else {
        eprintln!(
            "planning service listening on {}; Ctrl-C stops it",
            service.url()
        );
    }
    // Tests and scripts read the address from the first line of standard output.
    output::print(&format!("{}\n", service.url()))?;
    service.wait();
    Ok(())
}
