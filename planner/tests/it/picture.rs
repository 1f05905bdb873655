//! Pictures of job graphs: worked examples in DOT and Mermaid (exact text), SVG read back as
//! XML, and every shared fixture drawn in every format.

use conflux_graph::load::{parse, LoadOptions};
use conflux_graph::JobGraph;
use conflux_planner::picture::{render, render_json, Direction, Format, Options, PictureError};
use conflux_planner::{PlanStats, StatsConfig};

use super::plan;

/// Three vertices in two logical regions: `a -> b` pipelined pointwise (one region), `b -> c`
/// blocking all-to-all (a second). Names with quotes, brackets, `<`, `>` and `|`.
const SMALL: &str = r#"{"name": "q\"1", "job_type": "batch",
  "vertices": [
    {"id": "a", "name": "Source: \"in\" [x]", "parallelism": 2},
    {"id": "b", "parallelism": 2},
    {"id": "c", "name": "Sink: <out>|1", "parallelism": 3}],
  "edges": [
    {"source": "a", "target": "b", "distribution_pattern": "pointwise",
     "result_partition_type": "pipelined_bounded", "ship_strategy": "FORWARD"},
    {"source": "b", "target": "c", "distribution_pattern": "all_to_all",
     "result_partition_type": "blocking", "ship_strategy": "HASH[k]"}]}"#;

fn draw(format: Format, edge_stats: bool) -> String {
    let options = Options {
        edge_stats,
        ..Options::default()
    };
    render_json(&plan(SMALL), format, &options).expect("draws")
}

#[test]
fn dot_of_a_small_job_is_exact() {
    let expected = r##"digraph "q\"1" {
  graph [rankdir=TB, fontname="Helvetica"];
  node [shape=box, style="rounded,filled", fontname="Helvetica"];
  edge [fontname="Helvetica", fontsize=10];
  subgraph cluster_0 {
    label="logical region 0";
    style=dashed;
    "a" [label="Source: \"in\" [x]\np=2", fillcolor="#fbb4ae", tooltip="a\nSource: \"in\" [x]"];
    "b" [label="b\np=2", fillcolor="#fbb4ae"];
  }
  subgraph cluster_1 {
    label="logical region 1";
    style=dashed;
    "c" [label="Sink: <out>|1\np=3", fillcolor="#b3cde3", tooltip="c\nSink: <out>|1"];
  }
  "a" -> "b" [label="FORWARD\npipelined_bounded"];
  "b" -> "c" [label="HASH[k]\nblocking"];
}
"##;
    assert_eq!(draw(Format::Dot, false), expected);
}

#[test]
fn mermaid_of_a_small_job_is_exact() {
    let expected = r##"---
title: "q\"1"
---
flowchart TB
  subgraph r0["logical region 0"]
    v0["Source: #34;in#34; [x]<br/>p=2"]
    v1["b<br/>p=2"]
  end
  subgraph r1["logical region 1"]
    v2["Sink: #60;out#62;#124;1<br/>p=3"]
  end
  v0 -->|"FORWARD<br/>pipelined_bounded"| v1
  v1 -->|"HASH[k]<br/>blocking"| v2
  classDef region0 fill:#fbb4ae
  class v0,v1 region0
  classDef region1 fill:#b3cde3
  class v2 region1
"##;
    assert_eq!(draw(Format::Mermaid, false), expected);
}

/// Edge numbers by hand (Flink 1.20's defaults: 2 buffers per channel, 8 floating per gate,
/// 512 per sort-shuffle partition): `a -> b` POINTWISE 2 -> 2 has 2 channels, 2 gates and 2
/// pipelined partitions of 1 channel each with 2 + 8 buffers: 40. `b -> c` ALL_TO_ALL 2 -> 3
/// has 6 channels, 3 gates of 2 x 2 + 8 = 12 buffers and 2 blocking partitions of 512: 1,060.
#[test]
fn edge_stats_are_the_plan_statistics() {
    let dot = draw(Format::Dot, true);
    assert!(dot.contains(r#""a" -> "b" [label="FORWARD\npipelined_bounded\n2 ch, 40 buf"];"#));
    assert!(dot.contains(r#""b" -> "c" [label="HASH[k]\nblocking\n6 ch, 1,060 buf"];"#));
    let mermaid = draw(Format::Mermaid, true);
    assert!(mermaid.contains(r#"v1 -->|"HASH[k]<br/>blocking<br/>6 ch, 1,060 buf"| v2"#));
    let stats = PlanStats::compute(&plan(SMALL), &StatsConfig::default()).expect("stats");
    let numbers: Vec<(u64, u64)> = stats
        .edges
        .iter()
        .map(|e| (e.channels, e.input_buffers.target + e.output_buffers.target))
        .collect();
    assert_eq!(numbers, [(2, 40), (6, 1_060)]);
}

/// The `g` elements of an SVG with `class="<class>"`, after checking that it is XML.
fn svg_groups(svg: &str, class: &str) -> Vec<(String, String)> {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("SVG is not XML: {e}"));
    doc.descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some(class))
        .map(|n| {
            let id = n
                .attribute("data-id")
                .or(n.attribute("data-index"))
                .unwrap_or_default();
            (
                id.to_owned(),
                n.attribute("data-region").unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn svg_of_a_small_job_has_one_box_per_vertex_and_one_path_per_edge() {
    let svg = draw(Format::Svg, true);
    let vertices = svg_groups(&svg, "vertex");
    let ids: Vec<(&str, &str)> = vertices
        .iter()
        .map(|(id, r)| (id.as_str(), r.as_str()))
        .collect();
    assert_eq!(ids, [("a", "0"), ("b", "0"), ("c", "1")]);
    assert_eq!(svg_groups(&svg, "edge").len(), 2);
    // Region colours as fills, and the escaped name as text.
    assert!(svg.contains(r##"fill="#fbb4ae""##) && svg.contains(r##"fill="#b3cde3""##));
    assert!(svg.contains("Sink: &lt;out&gt;|1"));
    assert!(svg.contains("6 ch, 1,060 buf"));
}

#[test]
fn special_characters_in_ids_are_escaped_everywhere() {
    let text = r#"{"name": "x", "job_type": "streaming",
      "vertices": [{"id": "a\"<&>\\", "parallelism": 1},
                   {"id": "line\nbreak", "name": "`tick` #1 end", "parallelism": 1}],
      "edges": [{"source": "a\"<&>\\", "target": "line\nbreak",
                 "distribution_pattern": "pointwise", "result_partition_type": "pipelined",
                 "ship_strategy": "CUSTOM[\"p\"]"}]}"#;
    let json = plan(text);
    let draw = |f| render_json(&json, f, &Options::default()).expect("draws");
    let dot = draw(Format::Dot);
    assert!(dot.contains(r#""a\"<&>\\" -> "line\nbreak" [label="CUSTOM[\"p\"]\npipelined"];"#));
    let mermaid = draw(Format::Mermaid);
    assert!(
        mermaid.contains(r##"v0["a#34;#60;#38;#62;\<br/>p=1"]"##),
        "{mermaid}"
    );
    assert!(mermaid.contains(r##"v1["#96;tick#96; #35;1 end<br/>p=1"]"##));
    let svg = draw(Format::Svg);
    let ids: Vec<String> = svg_groups(&svg, "vertex")
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(ids, ["a\"<&>\\", "line\nbreak"]);
}

#[test]
fn svg_refuses_plans_above_its_limit() {
    let json = conflux_graph::generate::layered(
        1,
        u32::try_from(conflux_planner::picture::MAX_SVG_VERTICES + 1).expect("fits"),
        1,
    );
    let err = render_json(&json, Format::Svg, &Options::default()).expect_err("too large");
    assert!(
        matches!(
            err,
            PictureError::TooLarge {
                vertices: 10_001,
                limit: 10_000
            }
        ),
        "{err}"
    );
    // DOT has no limit.
    assert!(render_json(&json, Format::Dot, &Options::default()).is_ok());
}

/// The generated 200-vertex layered plan (20 layers of 10, 570 edges, edge labels) as SVG, top
/// down: laid out in layers, every box of layer k above every box of layer k + 1 (the middles
/// of the boxes, read back from the XML, one per layer).
#[test]
fn svg_of_a_200_vertex_plan_is_laid_out_in_layers() {
    let json = conflux_graph::generate::layered(20, 10, 4);
    let options = Options {
        edge_stats: true,
        direction: Direction::TopToBottom,
        ..Options::default()
    };
    let svg = render_json(&json, Format::Svg, &options).expect("draws");
    let doc = roxmltree::Document::parse(&svg).expect("SVG is XML");
    let mut tops: Vec<(u32, f64)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("vertex"))
        .map(|g| {
            let id = g.attribute("data-id").expect("data-id");
            let layer = id[1..id.find('v').expect("l<k>v<j>")]
                .parse()
                .expect("layer");
            let rect = g
                .descendants()
                .find(|n| n.has_tag_name("rect"))
                .expect("a box");
            let number = |a: &str| -> f64 { rect.attribute(a).expect(a).parse().expect(a) };
            (layer, number("y") + number("height") / 2.0)
        })
        .collect();
    assert_eq!(tops.len(), 200);
    assert_eq!(svg_groups(&svg, "edge").len(), 570);
    tops.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    for pair in tops.windows(2) {
        let ((layer_a, top_a), (layer_b, top_b)) = (pair[0], pair[1]);
        if layer_a == layer_b {
            assert!((top_a - top_b).abs() < 0.2, "layer {layer_a} is one row");
        } else {
            assert!(
                top_a < top_b,
                "layer {layer_a} at {top_a}, layer {layer_b} at {top_b}"
            );
        }
    }
}

/// Every Flink plan and small job graph of `fixtures/` in every format: the SVG is XML with one box
/// per vertex and one path per edge; DOT and Mermaid have one arrow line per edge.
#[test]
fn every_fixture_draws_in_every_format() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let mut paths = Vec::new();
    for dir in ["flink-plans", "jobs/small"] {
        for entry in std::fs::read_dir(root.join(dir)).expect("fixtures") {
            let path = entry.expect("entry").path();
            let name = path.to_string_lossy().into_owned();
            // `*.jobgraph.json` are Flink's own job graphs (ground truth), not inputs.
            let graph = name.ends_with(".plan.json")
                || (dir == "jobs/small" && !name.ends_with(".expected.json"));
            if graph && name.ends_with(".json") {
                paths.push(path);
            }
        }
    }
    paths.sort();
    assert!(paths.len() > 30, "found {} fixtures", paths.len());
    let options = Options {
        edge_stats: true,
        ..Options::default()
    };
    for path in paths {
        let bytes = std::fs::read(&path).expect("fixture");
        let (json, _) = parse(&bytes, &LoadOptions::default()).expect("parses");
        let job = JobGraph::from_json(&json).expect("valid");
        let (v, e) = (job.vertices().len(), job.edges().len());
        let name = path.display();
        let dot = render(&job, Format::Dot, &options).expect("dot");
        assert_eq!(
            dot.lines().filter(|l| l.contains("\" -> \"")).count(),
            e,
            "{name}"
        );
        let mermaid = render(&job, Format::Mermaid, &options).expect("mermaid");
        assert_eq!(
            mermaid.lines().filter(|l| l.contains(" -->|")).count(),
            e,
            "{name}"
        );
        let svg = render(&job, Format::Svg, &options).unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(svg_groups(&svg, "vertex").len(), v, "{name}");
        assert_eq!(svg_groups(&svg, "edge").len(), e, "{name}");
    }
}

/// The drawing the plan viewer gets for the generated 200-vertex plan, both ways: every vertex
/// box and every edge label box inside the drawing, none overlapping another; every route
/// starts on its source's box and ends on its target's.
#[test]
fn drawing_of_a_200_vertex_plan_has_no_overlapping_boxes() {
    let job = JobGraph::from_json(&conflux_graph::generate::layered(20, 10, 4)).expect("valid");
    for direction in [Direction::LeftToRight, Direction::TopToBottom] {
        let options = Options {
            direction,
            ..Options::default()
        };
        let d = conflux_planner::picture::drawing(&job, &options).expect("lays out");
        assert_eq!((d.vertices.len(), d.edges.len()), (200, 570));
        let mut boxes: Vec<_> = d.vertices.iter().map(|v| v.rect).collect();
        boxes.extend(d.edges.iter().map(|e| e.label_rect.expect("placed")));
        for (i, a) in boxes.iter().enumerate() {
            assert!(
                a.x >= 0.0 && a.y >= 0.0 && a.x + a.width <= d.width && a.y + a.height <= d.height
            );
            for b in &boxes[i + 1..] {
                assert!(!a.intersects(b), "{direction:?}: {a:?} and {b:?} overlap");
            }
        }
        let on = |r: &conflux_planner::picture::layout::Rect,
                  p: &conflux_planner::picture::layout::Point| {
            p.x >= r.x - 1e-6
                && p.x <= r.x + r.width + 1e-6
                && p.y >= r.y - 1e-6
                && p.y <= r.y + r.height + 1e-6
        };
        for (e, line) in job.edges().iter().zip(&d.edges) {
            let first = line.points.first().expect("points");
            let last = line.points.last().expect("points");
            assert!(on(&d.vertices[e.source.idx()].rect, first));
            assert!(on(&d.vertices[e.target.idx()].rect, last));
        }
        // Ranks by longest path: layer k of the generator is rank 2k (labels between).
        for v in &d.vertices {
            let layer: usize = v.id[1..v.id.find('v').expect("l<k>v<j>")]
                .parse()
                .expect("layer");
            assert_eq!(v.rank, 2 * layer, "{}", v.id);
        }
    }
}
