//! The scene: what every picture format draws, read once from the job graph (vertices with
//! their names, parallelism and logical region, edges with their labels, the regions and their
//! colours). Below the picture module that builds it and the formats that write it.

use conflux_graph::{Idx, JobGraph, LogicalPipelinedRegions, LogicalRegionIndex};

use super::options::Options;
use crate::stats::{edge_traffic, thousands, EdgeTraffic};

/// Labels longer than this many characters are cut (with `…`): Flink's vertex names list every
/// chained operator with its arguments and run to kilobytes. DOT keeps the whole name in the
/// tooltip.
pub const MAX_LABEL_CHARS: usize = 60;

/// What every format draws, read once from the graph.
pub(super) struct Scene<'a> {
    /// The job's name.
    pub(super) title: &'a str,
    /// In topological order (the job graph's vertex order).
    pub(super) vertices: Vec<VertexView<'a>>,
    /// In the plan's edge order.
    pub(super) edges: Vec<EdgeView<'a>>,
    /// Per logical region, its members (positions in `vertices`), regions numbered by first
    /// vertex.
    pub(super) regions: Vec<Vec<usize>>,
}

pub(super) struct VertexView<'a> {
    pub(super) id: &'a str,
    /// Flink's name when there is one.
    pub(super) name: Option<&'a str>,
    pub(super) parallelism: u32,
    pub(super) region: usize,
}

pub(super) struct EdgeView<'a> {
    pub(super) source: usize,
    pub(super) target: usize,
    pub(super) ship_strategy: Option<&'a str>,
    pub(super) result_partition_type: &'static str,
    /// With [`Options::edge_stats`].
    pub(super) traffic: Option<EdgeTraffic>,
}

impl<'a> Scene<'a> {
    pub(super) fn of(job: &'a JobGraph, options: &Options) -> Scene<'a> {
        let logical = LogicalPipelinedRegions::compute(job);
        let vertices = job
            .vertex_indices()
            .map(|v| VertexView {
                id: job.vertex_id(v),
                name: job.vertex_name(v),
                parallelism: job.vertex(v).parallelism,
                region: logical.region_of(v).index(),
            })
            .collect();
        let traffic = options
            .edge_stats
            .then(|| edge_traffic(job, &options.buffers));
        let edges = job
            .edges()
            .iter()
            .enumerate()
            .map(|(i, e)| EdgeView {
                source: e.source.idx(),
                target: e.target.idx(),
                ship_strategy: e.ship_strategy.as_deref(),
                result_partition_type: e.result_partition_type.as_str(),
                traffic: traffic.as_ref().map(|t| t[i]),
            })
            .collect();
        let regions = (0..logical.len())
            .map(|r| {
                logical
                    .members(LogicalRegionIndex::from_usize(r))
                    .map(|v| v.idx())
                    .collect()
            })
            .collect();
        Scene {
            title: job.name(),
            vertices,
            edges,
            regions,
        }
    }
}

impl VertexView<'_> {
    /// The text of the box: the name (or id), cut to [`MAX_LABEL_CHARS`], and the parallelism,
    /// on two lines.
    pub(super) fn label(&self) -> String {
        format!(
            "{}\np={}",
            cut(self.name.unwrap_or(self.id)),
            thousands(u64::from(self.parallelism))
        )
    }
}

impl VertexView<'_> {
    /// The second line of the SVG's box: parallelism and logical region.
    pub(super) fn detail(&self) -> String {
        format!(
            "parallelism {} · logical region {}",
            thousands(u64::from(self.parallelism)),
            self.region
        )
    }

    /// The tooltip: the whole name and the id.
    pub(super) fn title(&self) -> String {
        match self.name {
            Some(name) if name != self.id => format!("{name}\n{}", self.id),
            _ => self.id.to_owned(),
        }
    }
}

impl EdgeView<'_> {
    /// The text of the arrow: ship strategy and partition type, then channels and buffers.
    pub(super) fn label(&self) -> String {
        let mut s = match self.ship_strategy {
            Some(ship) => format!("{}\n{}", cut(ship), self.result_partition_type),
            None => self.result_partition_type.to_owned(),
        };
        if let Some(t) = &self.traffic {
            let buffers = t.input_buffers.target + t.output_buffers.target;
            s.push_str(&format!(
                "\n{} ch, {} buf",
                thousands(t.channels),
                thousands(buffers)
            ));
        }
        s
    }
}

/// At most [`MAX_LABEL_CHARS`] characters of `s`, the rest replaced by `…`.
fn cut(s: &str) -> String {
    match s.char_indices().nth(MAX_LABEL_CHARS) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_owned(),
    }
}

/// Fill colours of the regions, in turn: light enough for black text, distinct side by side
/// (ColorBrewer's Pastel1 and Set3).
const PALETTE: [&str; 12] = [
    "#fbb4ae", "#b3cde3", "#ccebc5", "#decbe4", "#fed9a6", "#ffffcc", "#e5d8bd", "#fddaec",
    "#8dd3c7", "#bebada", "#80b1d3", "#fdb462",
];

/// The fill colour of logical region `region`.
pub(super) fn region_colour(region: usize) -> &'static str {
    PALETTE[region % PALETTE.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_LABEL_CHARS + 5);
        let c = cut(&long);
        assert_eq!(c.chars().count(), MAX_LABEL_CHARS + 1);
        assert!(c.ends_with('…'));
        assert_eq!(cut("short"), "short");
    }
}
