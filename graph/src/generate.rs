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
        parallelism,
        max_parallelism: None,
        slot_sharing_group: None,
        co_location_group: None,
        operators: Vec::new(),
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
