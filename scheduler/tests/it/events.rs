//! Events naming things the graph does not have are refused, never applied elsewhere.

use std::sync::Arc;

use conflux_graph::{
    generate, ExecutionGraph, ExecutionVertexIndex, IntermediateDataSetIndex,
    IntermediateResultPartitionId, JobGraph, PipelinedRegions, ResultPartitionType,
};
use conflux_scheduler::{Event, Scheduler, SchedulerConfig, SchedulerError};

/// A 3 x 3 blocking word count: one result of 3 partitions.
fn word_count() -> Scheduler {
    let json = generate::word_count(3, ResultPartitionType::Blocking);
    let graph = Arc::new(
        ExecutionGraph::build(JobGraph::from_json(&json).expect("valid")).expect("expands"),
    );
    let regions = Arc::new(PipelinedRegions::compute(&graph).expect("regions"));
    Scheduler::new(graph, regions, SchedulerConfig::default())
}

#[test]
fn a_partition_number_beyond_the_producers_is_refused() {
    let mut s = word_count();
    s.handle(0, Event::Start).expect("starts");
    let beyond = IntermediateResultPartitionId {
        result: IntermediateDataSetIndex(0),
        partition: 3,
    };
    assert_eq!(s.graph().checked_partition_index(beyond), None);
    let err = s
        .handle(1, Event::PartitionsLost(vec![beyond]))
        .expect_err("partition 3 of a 3-way producer does not exist");
    assert_eq!(
        err,
        SchedulerError::UnknownPartition {
            result: 0,
            partition: 3
        }
    );
    assert_eq!(
        err.to_string(),
        "unknown partition 3 of intermediate result 0"
    );
    let unknown_result = IntermediateResultPartitionId {
        result: IntermediateDataSetIndex(1),
        partition: 0,
    };
    assert!(matches!(
        s.handle(1, Event::PartitionsLost(vec![unknown_result])),
        Err(SchedulerError::UnknownPartition { result: 1, .. })
    ));
    // Nothing was applied: every partition is still available.
    for partition in 0..3 {
        let p = IntermediateResultPartitionId {
            result: IntermediateDataSetIndex(0),
            partition,
        };
        assert!(s.is_partition_available(p));
    }
}

#[test]
fn a_restart_of_an_unknown_vertex_is_refused() {
    let mut s = word_count();
    s.handle(0, Event::Start).expect("starts");
    assert_eq!(
        s.handle(1, Event::Restart(vec![ExecutionVertexIndex(6)])),
        Err(SchedulerError::UnknownVertex(6))
    );
}

#[test]
#[should_panic(expected = "partition 3 of result 0 is not in this execution graph")]
fn partition_index_panics_on_a_partition_beyond_its_result() {
    let s = word_count();
    s.graph().partition_index(IntermediateResultPartitionId {
        result: IntermediateDataSetIndex(0),
        partition: 3,
    });
}
