//! Synthetic job graphs.

use crate::json::{JobEdgeJson, JobGraphJson, JobVertexJson};
use crate::ResultPartitionType;

/// The headline workload: vertices `source` and `count`, both of parallelism `parallelism`,
/// joined by one ALL_TO_ALL edge (ship strategy `HASH[word]`) of the given partition type:
/// `2 x parallelism` tasks and `parallelism^2` logical connections. The job is streaming when
/// the type must be consumed pipelined (PIPELINED, PIPELINED_BOUNDED), batch otherwise.
pub fn word_count(parallelism: u32, result_partition_type: ResultPartitionType) -> JobGraphJson {
    let job_type = if result_partition_type.must_be_pipelined_consumed() {
        "streaming"
    } else {
        "batch"
    };
    let vertex = |id: &str| JobVertexJson::new(id, i32::try_from(parallelism).unwrap_or(i32::MAX));
    JobGraphJson {
        name: word_count_name(parallelism, result_partition_type.as_str()),
        job_type: job_type.to_owned(),
        vertices: vec![vertex("source"), vertex("count")],
        edges: vec![JobEdgeJson {
            source: "source".to_owned(),
            target: "count".to_owned(),
            distribution_pattern: "all_to_all".to_owned(),
            result_partition_type: result_partition_type.as_str().to_owned(),
            ship_strategy: Some("HASH[word]".to_owned()),
            data_set: None,
        }],
    }
}

/// The name [`word_count`] gives a job of `parallelism`: `word count P x P (type)`.
fn word_count_name(parallelism: u32, result_partition_type: &str) -> String {
    format!("word count {parallelism} x {parallelism} ({result_partition_type})")
}

/// `name` retitled for a new parallelism when it is the name [`word_count`] generates (`word
/// count 10000 x 10000 (blocking)` at 100000 becomes `word count 100000 x 100000 (blocking)`),
/// so that `--parallelism` does not leave a job titled with a parallelism it no longer has;
/// `None` for any other name. O(name length).
pub fn retitle_word_count(name: &str, parallelism: u32) -> Option<String> {
    let rest = name.strip_prefix("word count ")?;
    let (p, rest) = rest.split_once(" x ")?;
    let (q, rest) = rest.split_once(" (")?;
    let partition_type = rest.strip_suffix(')')?;
    let p: u32 = p.parse().ok()?;
    let generated = q.parse::<u32>().ok() == Some(p)
        && ResultPartitionType::parse(partition_type).is_some()
        && word_count_name(p, partition_type) == name;
    generated.then(|| word_count_name(parallelism, partition_type))
}

/// A job of many small components, written straight as job graph JSON text (one vertex or edge
/// per line, no [`JobGraphJson`] built), to measure the loader on large files: `vertices`
/// vertices `v0`, `v1`, ... of parallelism 1, in components of `component_size` consecutive
/// vertices chained by POINTWISE PIPELINED edges (so `component_size` 1 gives no edges). A
/// streaming job. 6,200,000 vertices in components of 1 make a 216 MB file; every edge adds
/// about 100 bytes.
///
/// # Panics
/// If `component_size` is 0.
pub fn components_json(vertices: u32, component_size: u32) -> String {
    use std::fmt::Write;
    assert!(component_size > 0, "components need at least one vertex");
    let mut out = String::with_capacity(vertices as usize * 35 + 64);
    let _ = writeln!(
        out,
        "{{\"name\":\"{vertices} vertices in components of {component_size}\",\
         \"job_type\":\"streaming\",\"vertices\":["
    );
    for i in 0..vertices {
        let comma = if i + 1 < vertices { "," } else { "" };
        let _ = writeln!(out, "{{\"id\":\"v{i}\",\"parallelism\":1}}{comma}");
    }
    out.push_str("],\"edges\":[\n");
    let mut first = true;
    for i in (0..vertices).filter(|i| i % component_size != 0) {
        let comma = if first { "" } else { "," };
        first = false;
        let _ = writeln!(
            out,
            "{comma}{{\"source\":\"v{}\",\"target\":\"v{i}\",\"distribution_pattern\":\"pointwise\",\
             \"result_partition_type\":\"pipelined\"}}",
            i - 1
        );
    }
    out.push_str("]}\n");
    out
}

/// A layered job of `layers x width` vertices with fan-in and fan-out, the shape of a large
/// SQL plan (and of the pictures' benchmark): vertex `j` of layer `k > 0` consumes vertices
/// `j`, `j + 1` and `j + width / 2` (mod `width`, those that differ) of layer `k - 1`, so most
/// vertices have three inputs and three consumers. Ship strategies rotate through `HASH`
/// (ALL_TO_ALL), `FORWARD` (POINTWISE) and `REBALANCE` (ALL_TO_ALL); every fourth layer is
/// joined to the previous one by BLOCKING edges, the others by PIPELINED_BOUNDED, so a batch job
/// of `ceil(layers / 4)` layers of logical regions. Vertices are `l<k>v<j>`, all of parallelism
/// `parallelism`, named as Flink names operators (`[l3v1]:Calc(select=[a, "b"])`, brackets and
/// quotes included). O(layers x width) time and memory.
///
/// # Panics
/// If `layers` or `width` is 0.
pub fn layered(layers: u32, width: u32, parallelism: u32) -> JobGraphJson {
    assert!(
        layers > 0 && width > 0,
        "a layered job needs layers and width"
    );
    const OPERATORS: [&str; 4] = [
        "Calc(select=[a, \"b\"])",
        "GroupAggregate(groupBy=[a], select=[a, COUNT(*)])",
        "Join(joinType=[InnerJoin], where=[(a = b)])",
        "Sink: sink[out]",
    ];
    let id = |k: u32, j: u32| format!("l{k}v{j}");
    let mut vertices = Vec::new();
    let mut edges = Vec::new();
    for k in 0..layers {
        for j in 0..width {
            let operator = if k == 0 {
                "Source: events[1]"
            } else {
                OPERATORS[((k + j) % 4) as usize]
            };
            vertices.push(JobVertexJson {
                name: Some(format!("[{}]:{operator}", id(k, j))),
                ..JobVertexJson::new(id(k, j), i32::try_from(parallelism).unwrap_or(i32::MAX))
            });
            if k == 0 {
                continue;
            }
            let mut inputs = vec![j, (j + 1) % width, (j + width / 2) % width];
            inputs.dedup();
            inputs.sort_unstable();
            inputs.dedup();
            for (n, i) in inputs.into_iter().enumerate() {
                let (pattern, ship) = match (j as usize + n) % 3 {
                    0 => ("all_to_all", "HASH[a]"),
                    1 => ("pointwise", "FORWARD"),
                    _ => ("all_to_all", "REBALANCE"),
                };
                let partition = if k % 4 == 0 {
                    "blocking"
                } else {
                    "pipelined_bounded"
                };
                edges.push(JobEdgeJson {
                    source: id(k - 1, i),
                    target: id(k, j),
                    distribution_pattern: pattern.to_owned(),
                    result_partition_type: partition.to_owned(),
                    ship_strategy: Some(ship.to_owned()),
                    data_set: None,
                });
            }
        }
    }
    JobGraphJson {
        name: format!("layered {layers} x {width} (parallelism {parallelism})"),
        job_type: "batch".to_owned(),
        vertices,
        edges,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_word_count_name_is_retitled() {
        let name = word_count(10_000, ResultPartitionType::Blocking).name;
        assert_eq!(name, "word count 10000 x 10000 (blocking)");
        assert_eq!(
            retitle_word_count(&name, 100_000).as_deref(),
            Some("word count 100000 x 100000 (blocking)")
        );
        for other in [
            "word count 10 x 12 (blocking)",
            "word count 10 x 10 (sideways)",
            "word count 010 x 010 (blocking)",
            "word count 10 x 10 (blocking) v2",
            "my word count",
        ] {
            assert_eq!(retitle_word_count(other, 5), None, "{other}");
        }
    }

    #[test]
    fn layered_jobs_have_fan_in_and_out_and_blocking_every_fourth_layer() {
        let json = layered(5, 4, 3);
        assert_eq!(json.vertices.len(), 20);
        // width 4: inputs j, j + 1, j + 2 (mod 4): three distinct, so 3 per vertex past layer 0.
        assert_eq!(json.edges.len(), 4 * 4 * 3);
        let into = |t: &str| json.edges.iter().filter(|e| e.target == t).count();
        let out_of = |s: &str| json.edges.iter().filter(|e| e.source == s).count();
        assert_eq!((into("l1v0"), out_of("l1v0")), (3, 3));
        let blocking: Vec<&str> = json
            .edges
            .iter()
            .filter(|e| e.result_partition_type == "blocking")
            .map(|e| e.target.as_str())
            .collect();
        assert_eq!(blocking.len(), 12);
        assert!(blocking.iter().all(|t| t.starts_with("l4")));
        assert!(crate::JobGraph::from_json(&json).is_ok());
        // Width 1: a chain (the three inputs are one vertex).
        assert_eq!(layered(3, 1, 1).edges.len(), 2);
    }

    #[test]
    fn components_are_chains_of_the_given_size() {
        let json = crate::JobGraphJson::parse(components_json(7, 3).as_bytes()).unwrap();
        assert_eq!(json.vertices.len(), 7);
        let edges: Vec<(&str, &str)> = json
            .edges
            .iter()
            .map(|e| (e.source.as_str(), e.target.as_str()))
            .collect();
        assert_eq!(
            edges,
            [("v0", "v1"), ("v1", "v2"), ("v3", "v4"), ("v4", "v5")]
        );
        let json = crate::JobGraphJson::parse(components_json(2, 1).as_bytes()).unwrap();
        assert!(json.edges.is_empty());
    }
}
