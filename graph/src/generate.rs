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
    let vertex = |id: &str| JobVertexJson {
        id: id.to_owned(),
        name: None,
        description: None,
        parallelism: i32::try_from(parallelism).unwrap_or(i32::MAX),
        max_parallelism: None,
        slot_sharing_group: None,
        co_location_group: None,
        operators: Vec::new(),
        invokable: None,
        config: Default::default(),
        source_bytes: None,
        skew_splittable: false,
    };
    JobGraphJson {
        name: format!("word count {parallelism} x {parallelism} ({result_partition_type})"),
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

#[cfg(test)]
mod tests {
    use super::*;

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
