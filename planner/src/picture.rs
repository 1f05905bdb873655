//! Pictures of a job graph: Graphviz DOT, Mermaid and SVG.
//!
//! What is drawn, in every format: one box per job vertex with its name (Flink's, for an
//! imported plan; else its id) and parallelism; one arrow per job edge with its ship strategy
//! (the partitioner, as Flink's dashboard labels it) and result partition type; the logical
//! pipelined regions as clusters (DOT subgraphs `cluster_<k>`, Mermaid subgraphs), every region
//! with its own fill colour; and, with [`Options::edge_stats`], each edge's channels and target
//! network buffers from [`edge_traffic`](crate::stats::edge_traffic), the numbers of
//! `PlanStats`.
//!
//! DOT and Mermaid are text that Graphviz and Mermaid lay out themselves; SVG is laid out here by
//! our own layered layout ([`layout`]), the same that the planning service gives the plan viewer
//! ([`drawing()`]), so the CLI's SVG and the page draw the same ranks, order and coordinates. It
//! has no clusters: in SVG the regions are the fill colours (and each box names its logical
//! region).
//!
//! ```
//! use conflux_graph::load::{parse, LoadOptions};
//! use conflux_planner::picture::{render_json, Format, Options};
//!
//! let plan = r#"{"name": "j", "job_type": "streaming",
//!   "vertices": [{"id": "a", "parallelism": 2}, {"id": "b", "parallelism": 2}],
//!   "edges": [{"source": "a", "target": "b", "distribution_pattern": "pointwise",
//!              "result_partition_type": "pipelined_bounded", "ship_strategy": "FORWARD"}]}"#;
//! let (json, _) = parse(plan.as_bytes(), &LoadOptions::default())?;
//! let dot = render_json(&json, Format::Dot, &Options::default())?;
//! assert!(dot.contains(r#""a" -> "b" [label="FORWARD\npipelined_bounded"]"#));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod dot;
pub mod drawing;
pub mod layout;
mod mermaid;
mod options;
mod scene;
mod svg;

use std::fmt;
use std::str::FromStr;

use conflux_graph::{GraphError, JobGraph, JobGraphJson};
use thiserror::Error;

pub use drawing::Drawing;
pub use layout::Direction;
pub use options::Options;
use scene::Scene;
pub use scene::MAX_LABEL_CHARS;

/// The most job vertices an SVG picture (or a [`drawing()`]) lays out: the layout is about
/// linear in vertices, edges and the ranks the edges skip (a 2,000-vertex, 5,880-edge layered
/// plan takes tens of milliseconds), but the SVG grows with them and a browser draws a 10,000-box
/// SVG slowly. DOT and Mermaid, written in O(V + E), have no limit.
pub const MAX_SVG_VERTICES: usize = 10_000;

/// A picture format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Graphviz DOT (`dot -Tsvg` lays it out).
    Dot,
    /// A Mermaid flowchart (renders in Markdown on GitHub and GitLab).
    Mermaid,
    /// SVG, laid out by [`layout`].
    Svg,
}

impl Format {
    /// Every format, in the order of the command-line help.
    pub const ALL: [Format; 3] = [Format::Dot, Format::Mermaid, Format::Svg];

    /// `dot`, `mermaid` or `svg`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Dot => "dot",
            Format::Mermaid => "mermaid",
            Format::Svg => "svg",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = PictureError;

    /// Parses `dot`, `mermaid` or `svg` (as [`Format::as_str`] writes them).
    fn from_str(s: &str) -> Result<Format, PictureError> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| PictureError::UnknownFormat(s.to_owned()))
    }
}

/// Why a picture could not be drawn.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PictureError {
    /// The plan is not a valid job graph; the graph crate's error names the item.
    #[error("invalid plan: {0}")]
    Graph(#[from] GraphError),
    /// A format name that is not `dot`, `mermaid` or `svg`.
    #[error("unknown picture format '{0}' (expected dot, mermaid or svg)")]
    UnknownFormat(String),
    /// An SVG of more job vertices than [`MAX_SVG_VERTICES`].
    #[error("{vertices} job vertices are too many to lay out as SVG (limit {limit}); use dot or mermaid")]
    TooLarge {
        /// Job vertices of the plan.
        vertices: usize,
        /// [`MAX_SVG_VERTICES`].
        limit: usize,
    },
}

/// Draws a job graph. O(V + E) for DOT and Mermaid (plus the logical regions, O(V + E));
/// SVG adds the layered layout ([`drawing()`]).
///
/// # Errors
/// [`PictureError::TooLarge`] for an SVG of more than [`MAX_SVG_VERTICES`] job vertices.
pub fn render(job: &JobGraph, format: Format, options: &Options) -> Result<String, PictureError> {
    let scene = Scene::of(job, options);
    match format {
        Format::Dot => Ok(dot::render(&scene)),
        Format::Mermaid => Ok(mermaid::render(&scene)),
        Format::Svg => {
            let drawing = draw_scene(&scene, options.direction)?;
            Ok(svg::render(&scene, &drawing))
        }
    }
}

/// The layout of a job graph as the SVG draws it, for the plan viewer: boxes, wrapped names,
/// edge routes and label boxes ([`layout`]'s cost).
///
/// # Errors
/// [`PictureError::TooLarge`] above [`MAX_SVG_VERTICES`] job vertices.
pub fn drawing(job: &JobGraph, options: &Options) -> Result<Drawing, PictureError> {
    draw_scene(&Scene::of(job, options), options.direction)
}

fn draw_scene(scene: &Scene<'_>, direction: Direction) -> Result<Drawing, PictureError> {
    let vertices = scene.vertices.len();
    if vertices > MAX_SVG_VERTICES {
        return Err(PictureError::TooLarge {
            vertices,
            limit: MAX_SVG_VERTICES,
        });
    }
    Ok(drawing::draw(scene, direction))
}

/// Validates a plan ([`JobGraph::from_json`]) and draws it as [`render`] does.
///
/// # Errors
/// [`PictureError::Graph`] for an invalid plan; otherwise as [`render`].
pub fn render_json(
    json: &JobGraphJson,
    format: Format,
    options: &Options,
) -> Result<String, PictureError> {
    render(&JobGraph::from_json(json)?, format, options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_as_written() {
        for f in Format::ALL {
            assert_eq!(f.as_str().parse::<Format>().ok(), Some(f));
        }
        assert!(matches!(
            "png".parse::<Format>(),
            Err(PictureError::UnknownFormat(s)) if s == "png"
        ));
    }
}
