//! A job graph's drawing: the boxes of its vertices (names wrapped to lines) and of its edge
//! labels, sized from their text and placed by [`lay_out`]; what the CLI's SVG writes and what
//! the planning service sends the plan viewer (`GET /v1/plans/{id}/layout`), so both draw the
//! same picture.

use serde::Serialize;

use super::layout::{lay_out, Direction, Point, Rect, Size};
use super::scene::Scene;

/// Width of a vertex box, px, unless a line of its name needs more.
pub const VERTEX_WIDTH: f64 = 220.0;
/// Characters per line of a vertex's name.
pub const NAME_CHARS: usize = 34;
/// Lines of a vertex's name at most (the rest cut with `…`; the whole name is the tooltip).
pub const NAME_LINES: usize = 3;
/// Font size of vertex text, px.
pub const VERTEX_FONT: f64 = 11.0;
/// Font size of edge labels, px.
pub const LABEL_FONT: f64 = 10.0;
/// Height of a line of text, px.
pub const LINE: f64 = 14.0;
/// Above this many edges the labels get no boxes of their own (they would double the
/// drawing's size): the viewer shows them on hover, the SVG as tooltips.
pub const MAX_PLACED_LABELS: usize = 600;

/// A laid-out job graph, in px with `y` down.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Drawing {
    /// `LR` (sources on the left, as Flink's dashboard) or `TB` (sources on top).
    pub direction: Direction,
    /// Width of the drawing.
    pub width: f64,
    /// Height of the drawing.
    pub height: f64,
    /// Per job vertex, in the job graph's order.
    pub vertices: Vec<VertexBox>,
    /// Per job edge, in the plan's order.
    pub edges: Vec<EdgeLine>,
}

/// A vertex's box.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct VertexBox {
    /// The vertex id.
    pub id: String,
    /// The box.
    pub rect: Rect,
    /// The name (Flink's, else the id) wrapped to at most 3 lines (`NAME_LINES`).
    pub lines: Vec<String>,
    /// Its logical pipelined region.
    pub logical_region: usize,
    /// Its rank in the layout (0 for sources).
    pub rank: usize,
}

/// An edge's line and label.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct EdgeLine {
    /// The edge's position in the plan.
    pub index: usize,
    /// The polyline from the source's box to the target's.
    pub points: Vec<Point>,
    /// The label's lines (ship strategy, partition type, and with edge statistics channels and
    /// buffers).
    pub label: Vec<String>,
    /// The label's box; absent above 600 edges (`MAX_PLACED_LABELS`).
    pub label_rect: Option<Rect>,
}

/// Lays a scene out. O(layout), see [`lay_out`].
pub(super) fn draw(scene: &Scene<'_>, direction: Direction) -> Drawing {
    let names: Vec<Vec<String>> = scene
        .vertices
        .iter()
        .map(|v| wrap(v.name.unwrap_or(v.id), NAME_CHARS, NAME_LINES))
        .collect();
    let sizes: Vec<Size> = scene
        .vertices
        .iter()
        .zip(&names)
        .map(|(v, lines)| {
            let widest = lines
                .iter()
                .map(|l| text_width(l, VERTEX_FONT))
                .fold(text_width(&v.detail(), VERTEX_FONT), f64::max);
            Size {
                width: VERTEX_WIDTH.max(widest + 16.0),
                height: (lines.len() + 1) as f64 * LINE + 12.0,
            }
        })
        .collect();
    let place_labels = scene.edges.len() <= MAX_PLACED_LABELS;
    let labels: Vec<Vec<String>> = scene
        .edges
        .iter()
        .map(|e| e.label().split('\n').map(str::to_owned).collect())
        .collect();
    let edges: Vec<(usize, usize, Option<Size>)> = scene
        .edges
        .iter()
        .zip(&labels)
        .map(|(e, lines)| {
            let size = place_labels.then(|| Size {
                width: lines
                    .iter()
                    .map(|l| text_width(l, LABEL_FONT))
                    .fold(0.0, f64::max)
                    + 8.0,
                height: lines.len() as f64 * (LABEL_FONT + 3.0) + 4.0,
            });
            (e.source, e.target, size)
        })
        .collect();
    let layout = lay_out(&sizes, &edges, direction);
    Drawing {
        direction,
        width: layout.width,
        height: layout.height,
        vertices: scene
            .vertices
            .iter()
            .zip(names)
            .enumerate()
            .map(|(i, (v, lines))| VertexBox {
                id: v.id.to_owned(),
                rect: layout.nodes[i],
                lines,
                logical_region: v.region,
                rank: layout.ranks[i],
            })
            .collect(),
        edges: layout
            .edges
            .into_iter()
            .zip(labels)
            .enumerate()
            .map(|(index, (route, label))| EdgeLine {
                index,
                points: route.points,
                label,
                label_rect: route.label,
            })
            .collect(),
    }
}

/// `text` in at most `max` lines of at most `width` characters, broken after a separator
/// (space, comma, bracket, dot, colon, equals, dash) in the second half of a line where there
/// is one; the last line ends in `…` when text remains.
pub fn wrap(text: &str, width: usize, max: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().filter(|c| !c.is_control()).collect();
    let mut lines = Vec::new();
    let mut start = 0;
    while start < chars.len() && lines.len() < max {
        let rest = &chars[start..];
        if rest.len() <= width {
            lines.push(rest.iter().collect::<String>());
            start = chars.len();
            break;
        }
        let cut = (width / 2 + 1..=width)
            .rev()
            .find(|&i| " ,([.:=-".contains(rest[i - 1]))
            .unwrap_or(width);
        lines.push(rest[..cut].iter().collect::<String>().trim_end().to_owned());
        start += cut;
        while start < chars.len() && chars[start] == ' ' {
            start += 1;
        }
    }
    if start < chars.len() {
        if let Some(last) = lines.last_mut() {
            let mut kept: String = last.chars().take(width - 1).collect();
            kept.push('…');
            *last = kept;
        }
    }
    lines
}

/// An upper estimate of the width of `text` in a sans-serif font of `font` px (Helvetica's
/// and DejaVu Sans's advance widths rounded up per class of character), so that boxes sized
/// by it hold their text.
pub fn text_width(text: &str, font: f64) -> f64 {
    text.chars()
        .map(|c| match c {
            'M' | 'W' | 'm' | 'w' | '@' | '%' => 1.0,
            'i' | 'j' | 'l' | 'I' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' => 0.34,
            'A'..='Z' | '#' | '&' => 0.8,
            ' ' | '(' | ')' | '[' | ']' | '{' | '}' | '-' | 'f' | 't' | 'r' => 0.42,
            'a'..='z' | '0'..='9' => 0.64,
            c if c.is_ascii() => 0.7,
            _ => 1.0,
        })
        .sum::<f64>()
        * font
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_wrap_after_separators_and_are_cut_with_an_ellipsis() {
        assert_eq!(wrap("short", 10, 3), ["short"]);
        assert_eq!(
            wrap("TableSourceScan(table=[[default, lineitem]])", 20, 3),
            ["TableSourceScan(", "table=[[default,", "lineitem]])"]
        );
        let cut = wrap(&"x".repeat(50), 10, 2);
        assert_eq!(cut, ["xxxxxxxxxx", "xxxxxxxxx…"]);
    }
}
