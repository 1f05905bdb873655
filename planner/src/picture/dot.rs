//! Graphviz DOT: a `digraph` whose logical regions are `cluster_<k>` subgraphs (Graphviz boxes
//! clusters), vertices filled with their region's colour.

use std::fmt::Write as _;

use super::scene::{region_colour, Scene};

/// The scene as DOT text. O(V + E).
pub(super) fn render(scene: &Scene<'_>) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_dot(scene, &mut out);
    out
}

fn write_dot(scene: &Scene<'_>, out: &mut String) -> std::fmt::Result {
    writeln!(out, "digraph {} {{", quoted(scene.title))?;
    writeln!(out, "  graph [rankdir=TB, fontname=\"Helvetica\"];")?;
    writeln!(
        out,
        "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];"
    )?;
    writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=10];")?;
    for (r, members) in scene.regions.iter().enumerate() {
        writeln!(out, "  subgraph cluster_{r} {{")?;
        writeln!(out, "    label=\"logical region {r}\";")?;
        writeln!(out, "    style=dashed;")?;
        for &v in members {
            let vertex = &scene.vertices[v];
            write!(
                out,
                "    {} [label={}, fillcolor=\"{}\"",
                quoted(vertex.id),
                quoted(&vertex.label()),
                region_colour(vertex.region)
            )?;
            if let Some(name) = vertex.name {
                // The whole name (labels are cut) and the id, on hover.
                write!(
                    out,
                    ", tooltip={}",
                    quoted(&format!("{}\n{name}", vertex.id))
                )?;
            }
            writeln!(out, "];")?;
        }
        writeln!(out, "  }}")?;
    }
    for e in &scene.edges {
        writeln!(
            out,
            "  {} -> {} [label={}];",
            quoted(scene.vertices[e.source].id),
            quoted(scene.vertices[e.target].id),
            quoted(&e.label())
        )?;
    }
    writeln!(out, "}}")
}

/// `s` as a DOT double-quoted string: `"` and `\` escaped (so `\l`, `\N` and the like in a name
/// stay literal), line breaks as `\n` (a centred line in a label).
fn quoted(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\r' => {}
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn quotes_backslashes_and_newlines_are_escaped() {
        assert_eq!(quoted(r#"Sink: "out" [x]"#), r#""Sink: \"out\" [x]""#);
        assert_eq!(quoted("a\\lb"), r#""a\\lb""#);
        assert_eq!(quoted("a\r\nb<c>"), r#""a\nb<c>""#);
    }
}
