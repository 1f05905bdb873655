//! The inspect report for people, rendered from the same summary and lists as the JSON form so
//! that both say the same, and written as it is rendered (the lists of a large job run to
//! hundreds of megabytes).

pub(crate) use conflux_common::format::group_digits;
use std::io::Write;

use serde_json::Value;

use super::lists::Lists;

/// Renders the report for people.
pub(crate) fn render(r: &Value, lists: Lists<'_>, w: &mut dyn Write) -> std::io::Result<()> {
    let n = |v: &Value| group_digits(v.as_u64().unwrap_or(0));
    writeln!(
        w,
        "job {} ({}, {})",
        r["name"],
        r["job_type"].as_str().unwrap_or(""),
        r["input_format"].as_str().unwrap_or("")
    )?;
    let rows = [
        ("job vertices", n(&r["job_vertices"])),
        ("execution vertices", n(&r["execution_vertices"])),
        ("job edges", n(&r["job_edges"])),
        ("logical connections", n(&r["logical_connections"])),
        ("intermediate results", n(&r["intermediate_results"])),
        ("partitions", n(&r["partitions"])),
        (
            "partition groups",
            format!(
                "{} consumed, {} consumer",
                n(&r["consumed_partition_groups"]),
                n(&r["consumer_vertex_groups"])
            ),
        ),
        ("logical regions", n(&r["logical_regions"])),
        ("pipelined regions", n(&r["regions"])),
        (
            "topology",
            format!(
                "{} bytes ({:.1} KiB)",
                n(&r["topology_bytes"]),
                r["topology_bytes"].as_f64().unwrap_or(0.0) / 1024.0
            ),
        ),
    ];
    for (label, value) in rows {
        writeln!(w, "  {label:<22}{value}")?;
    }
    let sizes: Vec<String> = r["region_sizes"]["histogram"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| format!("{} x size {}", n(&h["count"]), n(&h["size"])))
        .collect();
    writeln!(w, "  {:<22}{}", "region sizes", sizes.join(", "))?;
    let wall = &r["wall_ms"];
    writeln!(
        w,
        "  {:<22}parse {:.3} ms, execution graph {:.3} ms, regions {:.3} ms, descriptors {:.3} ms, total {:.3} ms",
        "wall time",
        wall["parse"].as_f64().unwrap_or(0.0),
        wall["execution_graph"].as_f64().unwrap_or(0.0),
        wall["regions"].as_f64().unwrap_or(0.0),
        wall["descriptors"].as_f64().unwrap_or(0.0),
        wall["total"].as_f64().unwrap_or(0.0)
    )?;
    let d = &r["descriptors"];
    writeln!(
        w,
        "  {:<22}{} groups, {} descriptors: {} bytes raw, {} compressed; {} group(s) offloaded ({} bytes), {} bytes inline [offload when {}]",
        "shuffle descriptors",
        n(&d["groups"]),
        n(&d["descriptors"]),
        n(&d["raw_bytes"]),
        n(&d["compressed_bytes"]),
        n(&d["offloaded_groups"]),
        n(&d["offloaded_bytes"]),
        n(&d["inline_bytes"]),
        d["offload_rule"].as_str().unwrap_or("")
    )?;
    writeln!(w, "job vertices")?;
    for v in lists.vertices() {
        writeln!(
            w,
            "  {}  parallelism {}{}, max parallelism {}, slot sharing group {}",
            crate::plan::labelled(v.id, v.name),
            group_digits(u64::from(v.parallelism)),
            if v.undecided { " (undecided)" } else { "" },
            group_digits(v.max_parallelism),
            v.slot_sharing_group
        )?;
        if let Some(d) = v.description {
            writeln!(w, "    description {}", crate::failure::escape_controls(d))?;
        }
    }
    writeln!(w, "edges")?;
    for e in lists.edges() {
        let ship = e.ship_strategy.map(|x| format!(" {x}")).unwrap_or_default();
        writeln!(
            w,
            "  {} -> {}  {} {}{}: {} connections in {} group(s)",
            crate::plan::labelled(e.source, e.source_name),
            crate::plan::labelled(e.target, e.target_name),
            e.distribution_pattern,
            e.result_partition_type,
            ship,
            group_digits(e.connections),
            group_digits(u64::from(e.groups))
        )?;
    }
    writeln!(w, "shuffle descriptor groups (first {} per edge)", 16)?;
    for e in lists.descriptors.rows() {
        for g in e.listed_groups {
            writeln!(
                w,
                "  {} -> {} group {}: {} descriptors for {} consumers, {} bytes raw, {} compressed, {}",
                e.source,
                e.target,
                g.group,
                group_digits(g.descriptors),
                group_digits(g.consumers as u64),
                group_digits(g.raw_bytes),
                group_digits(g.compressed_bytes),
                if g.offloaded { "offloaded" } else { "inline" }
            )?;
        }
    }
    if r.get("vertices").is_some() {
        writeln!(w, "execution vertices")?;
        for v in lists.detail() {
            let groups: Vec<String> = v
                .consumed_partition_groups
                .iter()
                .map(|names| format!("[{}]", names.join(" ")))
                .collect();
            writeln!(
                w,
                "  {}  region {}  consumes {}",
                v.id,
                v.region,
                if groups.is_empty() {
                    "nothing".to_owned()
                } else {
                    groups.join(" ")
                }
            )?;
        }
    }
    Ok(())
}
