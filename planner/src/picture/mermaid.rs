//! A Mermaid flowchart: vertices `v<k>` (by topological position, since Mermaid ids must be
//! plain words) labelled with their names, logical regions as subgraphs `r<k>`, and one class
//! per region for its fill colour.

use std::fmt::Write as _;

use super::scene::{region_colour, Scene};

/// The scene as Mermaid text. O(V + E).
pub(super) fn render(scene: &Scene<'_>) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_mermaid(scene, &mut out);
    out
}

fn write_mermaid(scene: &Scene<'_>, out: &mut String) -> std::fmt::Result {
    writeln!(out, "---")?;
    writeln!(out, "title: {}", yaml_quoted(scene.title))?;
    writeln!(out, "---")?;
    writeln!(out, "flowchart TB")?;
    for (r, members) in scene.regions.iter().enumerate() {
        writeln!(out, "  subgraph r{r}[\"logical region {r}\"]")?;
        for &v in members {
            writeln!(out, "    v{v}[\"{}\"]", text(&scene.vertices[v].label()))?;
        }
        writeln!(out, "  end")?;
    }
    for e in &scene.edges {
        writeln!(
            out,
            "  v{} -->|\"{}\"| v{}",
            e.source,
            text(&e.label()),
            e.target
        )?;
    }
    for (r, members) in scene.regions.iter().enumerate() {
        writeln!(out, "  classDef region{r} fill:{}", region_colour(r))?;
        let ids: Vec<String> = members.iter().map(|v| format!("v{v}")).collect();
        writeln!(out, "  class {} region{r}", ids.join(","))?;
    }
    Ok(())
}

/// `s` for a quoted Mermaid label: characters that end or mark up a label (`"`, `#`, `|`, `<`,
/// `>`, `&`, backtick) as Mermaid's numeric entity codes (`#34;`), line breaks as `<br/>`.
fn text(s: &str) -> String {
    let mut t = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' | '#' | '|' | '<' | '>' | '&' | '`' => {
                let _ = write!(t, "#{};", u32::from(c));
            }
            '\n' => t.push_str("<br/>"),
            '\r' => {}
            c => t.push(c),
        }
    }
    t
}

/// `s` as a YAML double-quoted scalar on one line (the front matter's title).
fn yaml_quoted(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' | '\r' | '\t' => q.push(' '),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

#[cfg(test)]
mod tests {
    use super::{text, yaml_quoted};

    #[test]
    fn markup_characters_become_entity_codes() {
        assert_eq!(
            text("Sink: \"out\" [a|b] <x> #1 &amp;\nnext"),
            "Sink: #34;out#34; [a#124;b] #60;x#62; #35;1 #38;amp;<br/>next"
        );
        assert_eq!(yaml_quoted("a \"b\"\\\nc"), r#""a \"b\"\\ c""#);
    }
}
