//! SVG laid out by `layout-rs` (a layered, Graphviz-`dot`-like layout): one `<g class="vertex">`
//! box per job vertex filled with its region's colour, one `<g class="edge">` path per job
//! edge with its label along it. `layout-rs` has no clusters: regions are colours only.

use layout::backends::svg::SVGWriter;
use layout::core::base::Orientation;
use layout::core::color::Color;
use layout::core::style::StyleAttr;
use layout::std_shapes::render::get_shape_size;
use layout::std_shapes::shapes::{Arrow, Element, ShapeKind};
use layout::topo::layout::VisualGraph;

use super::{region_colour, PictureError, Scene, MAX_SVG_VERTICES};

/// Font size of vertex labels, px; edge labels are smaller.
const VERTEX_FONT: usize = 14;
const EDGE_FONT: usize = 11;

/// Above this many job vertices plus job edges, `layout-rs`'s optimisation passes (rank
/// optimisation and crossing reduction, about quadratic in the laid-out elements and 80 % of its
/// time: about 0.3 s for 100 vertices and 270 edges) are skipped: boxes keep their longest-path
/// ranks and their order within a rank, so a large plan may show more crossings but is drawn in
/// tens of milliseconds.
pub(super) const MAX_OPTIMISED_ELEMENTS: usize = 200;

/// The scene laid out as SVG. The layout is superlinear in V + E (placement over the ranks, and
/// the optimisation passes up to [`MAX_OPTIMISED_ELEMENTS`]); refused above
/// [`MAX_SVG_VERTICES`].
pub(super) fn render(scene: &Scene<'_>) -> Result<String, PictureError> {
    let (vertices, edges) = (scene.vertices.len(), scene.edges.len());
    if vertices > MAX_SVG_VERTICES {
        return Err(PictureError::TooLarge {
            vertices,
            limit: MAX_SVG_VERTICES,
        });
    }
    let mut graph = VisualGraph::new(Orientation::TopToBottom);
    let handles: Vec<_> = scene
        .vertices
        .iter()
        .map(|v| {
            let shape = ShapeKind::new_box(&v.label());
            let look = StyleAttr::new(
                Color::fast("black"),
                1,
                Some(Color::fast(region_colour(v.region))),
                6,
                VERTEX_FONT,
            );
            let size = get_shape_size(Orientation::TopToBottom, &shape, VERTEX_FONT, false);
            let properties = format!(
                "class=\"vertex\" data-id=\"{}\" data-region=\"{}\"",
                attribute(v.id),
                v.region
            );
            graph.add_node(Element::create_with_properties(
                shape,
                look,
                Orientation::TopToBottom,
                size,
                properties,
            ))
        })
        .collect();
    // Edges go in by source in topological order: layout-rs turns each edge around when its
    // target already reaches its source, by a walk that is exponential in the paths from the
    // target; added this way, the target has no successors yet.
    let mut order: Vec<usize> = (0..scene.edges.len()).collect();
    order.sort_by_key(|&i| (scene.edges[i].source, scene.edges[i].target));
    for i in order {
        let e = &scene.edges[i];
        let mut arrow =
            Arrow::simple_with_properties(&e.label(), format!("class=\"edge\" data-index=\"{i}\""));
        arrow.look = StyleAttr::new(Color::fast("black"), 1, None, 0, EDGE_FONT);
        graph.add_edge(arrow, handles[e.source], handles[e.target]);
    }
    // Its validation re-checks the whole DAG after every change by that same exponential walk
    // (minutes at 200 vertices); a job graph is a validated DAG already.
    graph.dag.set_validate(false);
    let optimise = vertices + edges <= MAX_OPTIMISED_ELEMENTS;
    // layout-rs asserts its invariants; a failure there must not take a service thread down.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let mut svg = SVGWriter::new();
        graph.do_it(false, !optimise, false, &mut svg);
        svg.finalize()
    }))
    .map_err(|payload| PictureError::Layout {
        vertices,
        edges,
        reason: payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned()),
    })
}

/// `s` for a double-quoted XML attribute value.
fn attribute(s: &str) -> String {
    let mut a = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => a.push_str("&amp;"),
            '<' => a.push_str("&lt;"),
            '>' => a.push_str("&gt;"),
            '"' => a.push_str("&quot;"),
            '\n' => a.push_str("&#10;"),
            c => a.push(c),
        }
    }
    a
}
