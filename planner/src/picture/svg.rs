//! SVG of a [`Drawing`]: one `<g class="vertex">` box per job vertex filled with its logical
//! region's colour (its name wrapped in lines, the whole name as its `<title>`), one
//! `<g class="edge">` polyline per job edge, and the edge labels in the boxes the layout
//! reserved for them (above [`MAX_PLACED_LABELS`](super::drawing::MAX_PLACED_LABELS) edges, as
//! the edges' `<title>`s only). O(V + E + the routes' points).

use std::fmt::Write as _;

use super::drawing::{Drawing, LABEL_FONT, LINE, VERTEX_FONT};
use super::layout::Point;
use super::scene::{region_colour, Scene};

/// The drawing as a standalone SVG document.
pub(super) fn render(scene: &Scene<'_>, drawing: &Drawing) -> String {
    let mut out = String::with_capacity(512 + 400 * (drawing.vertices.len() + drawing.edges.len()));
    let (w, h) = (drawing.width.ceil(), drawing.height.ceil());
    let _ = writeln!(
        out,
        r##"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="Helvetica, Arial, sans-serif">
<title>{}</title>
<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>"##,
        text(scene.title)
    );
    for (e, line) in scene.edges.iter().zip(&drawing.edges) {
        let blocking = e.result_partition_type.starts_with("blocking");
        let _ = write!(
            out,
            r##"<g class="edge" data-index="{}"><title>{}</title><path d="{}" fill="none" stroke="#555" stroke-width="1.2"{} marker-end="url(#arrow)"/>"##,
            line.index,
            text(&line.label.join(" · ")),
            path(&line.points),
            if blocking {
                r#" stroke-dasharray="5 3""#
            } else {
                ""
            }
        );
        if let Some(r) = &line.label_rect {
            let _ = write!(
                out,
                r##"<text class="edge-label" font-size="{LABEL_FONT}" fill="#333" text-anchor="middle" paint-order="stroke" stroke="#fff" stroke-width="3">"##
            );
            let step = LABEL_FONT + 3.0;
            let top = r.y + (r.height - step * line.label.len() as f64) / 2.0 + LABEL_FONT;
            for (k, l) in line.label.iter().enumerate() {
                let _ = write!(
                    out,
                    r#"<tspan x="{:.1}" y="{:.1}">{}</tspan>"#,
                    r.x + r.width / 2.0,
                    top + k as f64 * step,
                    text(l)
                );
            }
            out.push_str("</text>");
        }
        out.push_str("</g>\n");
    }
    for (v, b) in scene.vertices.iter().zip(&drawing.vertices) {
        let r = &b.rect;
        let _ = write!(
            out,
            r##"<g class="vertex" data-id="{}" data-region="{}"><title>{}</title><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="4" fill="{}" stroke="#33415c"/><text font-size="{VERTEX_FONT}" fill="#1d2330">"##,
            text(v.id),
            v.region,
            text(&v.title()),
            r.x,
            r.y,
            r.width,
            r.height,
            region_colour(v.region),
        );
        for (k, l) in b.lines.iter().enumerate() {
            let _ = write!(
                out,
                r#"<tspan x="{:.1}" y="{:.1}">{}</tspan>"#,
                r.x + 8.0,
                r.y + 18.0 + k as f64 * LINE,
                text(l)
            );
        }
        let _ = write!(
            out,
            r#"<tspan x="{:.1}" y="{:.1}" font-weight="bold">{}</tspan></text></g>"#,
            r.x + 8.0,
            r.y + 18.0 + b.lines.len() as f64 * LINE,
            text(&v.detail())
        );
        out.push('\n');
    }
    out.push_str("</svg>\n");
    out
}

/// An SVG path through `points`.
fn path(points: &[Point]) -> String {
    let mut d = String::with_capacity(16 * points.len());
    for (i, p) in points.iter().enumerate() {
        let _ = write!(
            d,
            "{}{:.1},{:.1}",
            if i == 0 { "M" } else { " L" },
            p.x,
            p.y
        );
    }
    d
}

/// `s` escaped for XML text and double-quoted attribute values.
fn text(s: &str) -> String {
    let mut a = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => a.push_str("&amp;"),
            '<' => a.push_str("&lt;"),
            '>' => a.push_str("&gt;"),
            '"' => a.push_str("&quot;"),
            '\n' => a.push_str("&#10;"),
            c if c.is_control() => {}
            c => a.push(c),
        }
    }
    a
}
