//! The JobManager side: which descriptor a consumer gets, the per-group cache, offloading and
//! invalidation, with Flink's worked examples.

use std::sync::Arc;

use conflux_deploy::{
    load_input_gate, shuffle_descriptor_for, ConsumptionPolicy, DeployError, ExecutionState,
    MaybeOffloaded, OffloadRule, ProducerView, ShuffleDescriptor, ShuffleDescriptorsCache,
};
use conflux_graph::{ExecutionVertexIndex, IntermediateResultPartitionId, ResultPartitionType};

use crate::support::{attempt, factory, location, slot, two_vertex_graph, States, JOB};

const FORCE: OffloadRule = OffloadRule::DescriptorCount { threshold: 0 };

/// Deploys all producers of `A -> B` (vertices `0..u`) as RUNNING.
fn run_producers(states: &mut States, u: u32) {
    for v in 0..u {
        states.set(v, ExecutionState::Running);
    }
}

#[test]
fn descriptor_choice_follows_flink() {
    use ExecutionState::*;
    use ResultPartitionType::*;
    let batch = ConsumptionPolicy::for_job_type(conflux_graph::JobType::Batch);
    let streaming = ConsumptionPolicy::for_job_type(conflux_graph::JobType::Streaming);
    let only_finished = ConsumptionPolicy {
        hybrid_only_finished: true,
        ..batch
    };
    // (type, producer state, deployed, all data produced, policy, expected: Some(known) / None error)
    let k = Some(true);
    let u = Some(false);
    let cases = [
        (Blocking, Running, true, false, batch, u),
        (Blocking, Finished, true, true, batch, k),
        (Blocking, Created, false, false, batch, u),
        (Pipelined, Running, true, false, streaming, k),
        (PipelinedBounded, Scheduled, true, false, streaming, k),
        (PipelinedBounded, Deploying, true, false, streaming, k),
        (PipelinedBounded, Initializing, true, false, streaming, k),
        (PipelinedBounded, Created, false, false, streaming, None),
        (PipelinedBounded, Failed, true, false, streaming, None),
        (PipelinedBounded, Canceling, true, false, streaming, None),
        (PipelinedBounded, Canceled, true, false, batch, u),
        (HybridFull, Running, true, false, batch, k),
        (HybridFull, Running, true, false, only_finished, u),
        (HybridSelective, Finished, true, true, only_finished, k),
        (Blocking, Finished, true, true, streaming, k),
        (Blocking, Running, true, false, streaming, None),
    ];
    for (t, state, deployed, produced, policy, expected) in cases {
        let producer = ProducerView {
            attempt: attempt(0),
            state,
            location: deployed.then(|| location(0)),
        };
        let got = shuffle_descriptor_for((0, 0), t, &producer, produced, 0, &policy);
        match (expected, got) {
            (Some(known), Ok(d)) => assert_eq!(!d.is_unknown(), known, "{t} {state:?}"),
            (None, Err(s)) => assert_eq!(s, state),
            (e, g) => panic!("{t} {state:?}: expected {e:?}, got {g:?}"),
        }
    }
}

#[test]
fn all_to_all_group_is_serialised_once_and_shared() {
    let graph = two_vertex_graph(4, 4, "all_to_all", "pipelined");
    let mut states = States::new(&graph);
    run_producers(&mut states, 4);
    let (mut f, store) = factory(&graph, OffloadRule::default(), usize::MAX);
    let tdds: Vec<_> = (4..8)
        .map(|v| {
            f.create_deployment(&graph, attempt(v), slot(v), &states)
                .expect("tdd")
        })
        .collect();
    let s = f.stats();
    assert_eq!(
        (
            s.cache_misses,
            s.cache_hits,
            s.groups_serialized,
            s.descriptors_computed
        ),
        (1, 3, 1, 4)
    );
    assert_eq!(
        store.puts(),
        0,
        "4 x 4 is far below the 2048 x 2048 offload threshold"
    );
    for t in &tdds[1..] {
        assert!(Arc::ptr_eq(
            &t.input_gates[0].descriptor_groups,
            &tdds[0].input_gates[0].descriptor_groups
        ));
    }
    // Each consumer reads subpartition = its subtask of all 4 partitions.
    for (i, t) in tdds.iter().enumerate() {
        let gate = &t.input_gates[0];
        assert_eq!(gate.number_of_channels, 4);
        assert_eq!(gate.consumed_subpartitions, i as u32..=i as u32);
    }
    // A producer creates D = 4 subpartitions.
    let producer = f.create(&graph, attempt(0), slot(0)).expect("producer tdd");
    assert_eq!(producer.produced_partitions[0].number_of_subpartitions, 4);
    assert!(producer.input_gates.is_empty());
}

#[test]
fn pointwise_subpartitions_follow_flinks_modulo_rule() {
    // 3 -> 7: consumers read partitions [0,0,0,1,1,2,2] at subpartitions [0,1,2,1,0,1,0];
    // producers create [3,2,2] subpartitions.
    let graph = two_vertex_graph(3, 7, "pointwise", "blocking");
    let mut states = States::new(&graph);
    for v in 0..3 {
        states.finish(&graph, v);
    }
    let (mut f, _) = factory(&graph, OffloadRule::Never, usize::MAX);
    let sub: Vec<u32> = (3..10)
        .map(|v| {
            *f.create_deployment(&graph, attempt(v), slot(v), &states)
                .expect("tdd")
                .input_gates[0]
                .consumed_subpartitions
                .start()
        })
        .collect();
    assert_eq!(sub, [0, 1, 2, 1, 0, 1, 0]);
    let counts: Vec<u32> = (0..3)
        .map(|v| {
            f.create(&graph, attempt(v), slot(v))
                .expect("tdd")
                .produced_partitions[0]
                .number_of_subpartitions
        })
        .collect();
    assert_eq!(counts, [3, 2, 2]);
    assert_eq!(f.stats().cache_misses, 3);
    assert_eq!(f.stats().cache_hits, 4);
}

#[test]
fn streaming_consumer_of_an_undeployed_producer_is_an_error_naming_the_partition() {
    let graph = two_vertex_graph(2, 2, "all_to_all", "pipelined_bounded");
    let mut states = States::new(&graph);
    states.set(0, ExecutionState::Running);
    let (mut f, _) = factory(&graph, OffloadRule::default(), usize::MAX);
    let error = f
        .create_deployment(&graph, attempt(2), slot(2), &states)
        .expect_err("A#1 is not deployed");
    match &error {
        DeployError::ProducerNotReady { partition, state } => {
            assert_eq!(partition, "A#1");
            assert_eq!(*state, ExecutionState::Created);
        }
        other => panic!("unexpected {other}"),
    }
    assert!(error.to_string().contains("partition A#1"), "{error}");
    assert_eq!(f.cached_groups(), 0, "nothing is cached for a failed group");
}

/// Flink's `RemoveCachedShuffleDescriptorTest`: parallelism 4, blocking, offload forced.
#[test]
fn remove_cached_descriptors_all_to_all() {
    let graph = two_vertex_graph(4, 4, "all_to_all", "blocking");
    let mut states = States::new(&graph);
    for v in 0..4 {
        states.finish(&graph, v);
    }
    let (mut f, store) = factory(&graph, FORCE, 0);
    assert_eq!(store.len(), 3, "job information and 2 task informations");
    for v in 4..8 {
        f.create_deployment(&graph, attempt(v), slot(v), &states)
            .expect("tdd");
    }
    assert_eq!(store.len(), 4, "plus one descriptor group");
    // All consumers finished: the release strategy releases the group.
    let group = graph
        .consumed_partition_groups(ExecutionVertexIndex(4))
        .next()
        .expect("group");
    f.on_group_released(group);
    assert_eq!(store.len(), 3);
    assert_eq!(f.cached_groups(), 0);

    // Deploy again, then a failover resets the producers: the group goes too.
    for v in 4..8 {
        f.create_deployment(&graph, attempt(v), slot(v), &states)
            .expect("tdd");
    }
    assert_eq!(store.len(), 4);
    for p in 0..4 {
        f.on_producer_reset(&graph, partition(p));
    }
    assert_eq!(store.len(), 3);
    assert_eq!(f.stats().blobs_deleted, 2);
}

/// Partition `p` of the only result of `A -> B`.
fn partition(p: u32) -> IntermediateResultPartitionId {
    IntermediateResultPartitionId {
        result: conflux_graph::IntermediateDataSetIndex(0),
        partition: p,
    }
}

#[test]
fn remove_cached_descriptors_pointwise() {
    let graph = two_vertex_graph(4, 4, "pointwise", "blocking");
    let mut states = States::new(&graph);
    for v in 0..4 {
        states.finish(&graph, v);
    }
    let (mut f, store) = factory(&graph, FORCE, 0);
    for v in 4..8 {
        f.create_deployment(&graph, attempt(v), slot(v), &states)
            .expect("tdd");
    }
    assert_eq!(
        store.len(),
        7,
        "1 job information + 2 task informations + 4 groups"
    );
    // The first consumer finishes: only its own group is released.
    let first = graph
        .consumed_partition_groups(ExecutionVertexIndex(4))
        .next()
        .expect("group");
    f.on_group_released(first);
    assert_eq!(store.len(), 6);
    assert_eq!(f.cached_groups(), 3);
    // After the release, producer 1 fails over: only the group holding partition 1 goes.
    f.on_producer_reset(&graph, partition(1));
    assert_eq!(store.len(), 5);
    assert_eq!(f.cached_groups(), 2);

    // Fresh: a failover of producer 0 drops only its group (Flink: 7 -> 6).
    let (mut f, store) = factory(&graph, FORCE, 0);
    for v in 4..8 {
        f.create_deployment(&graph, attempt(v), slot(v), &states)
            .expect("tdd");
    }
    f.on_producer_reset(&graph, partition(0));
    assert_eq!(store.len(), 6);
    assert_eq!(f.cached_groups(), 3);
}

#[test]
fn without_offload_the_cache_entries_disappear_the_same_way() {
    let graph = two_vertex_graph(4, 4, "pointwise", "blocking");
    let mut states = States::new(&graph);
    for v in 0..4 {
        states.finish(&graph, v);
    }
    let (mut f, store) = factory(&graph, OffloadRule::Never, usize::MAX);
    for v in 4..8 {
        f.create_deployment(&graph, attempt(v), slot(v), &states)
            .expect("tdd");
    }
    assert_eq!((store.len(), f.cached_groups()), (0, 4));
    f.clear();
    assert_eq!(f.cached_groups(), 0);
}

/// Flink's hybrid test (FLINK-29768): A2A HYBRID_FULL 4 -> 4 with ONLY_FINISHED_PRODUCERS.
#[test]
fn hybrid_groups_grow_as_producers_finish() {
    let graph = two_vertex_graph(4, 4, "all_to_all", "hybrid_full");
    let mut states = States::new(&graph);
    run_producers(&mut states, 4);
    let store = Arc::new(conflux_blob_api::MemoryBlobStore::new());
    let mut config = conflux_deploy::DeploymentConfig::for_job_type(conflux_graph::JobType::Batch);
    config.policy.hybrid_only_finished = true;
    let mut f =
        conflux_deploy::TaskDeploymentDescriptorFactory::new(&graph, JOB, config, store.clone())
            .expect("f");

    let groups_of =
        |t: &conflux_deploy::TaskDeploymentDescriptor| t.input_gates[0].descriptor_groups.len();
    let c0 = f
        .create_deployment(&graph, attempt(4), slot(4), &states)
        .expect("c0");
    assert_eq!(groups_of(&c0), 1);
    for p in 0..2 {
        states.finish(&graph, p);
        f.on_partition_finished(&graph, partition(p), &states);
    }
    let c1 = f
        .create_deployment(&graph, attempt(5), slot(5), &states)
        .expect("c1");
    assert_eq!(groups_of(&c1), 2);
    states.finish(&graph, 2);
    f.on_partition_finished(&graph, partition(2), &states);
    let c2 = f
        .create_deployment(&graph, attempt(6), slot(6), &states)
        .expect("c2");
    assert_eq!(groups_of(&c2), 3);
    assert_eq!(groups_of(&c0), 1, "an earlier TDD keeps its snapshot");

    // On the TaskManager, later groups fill the unknown channels.
    let mut cache = ShuffleDescriptorsCache::new(1 << 20);
    let channels =
        load_input_gate(&c2.input_gates[0], JOB, store.as_ref(), &mut cache).expect("load");
    let known: Vec<bool> = channels.descriptors().map(|d| !d.is_unknown()).collect();
    assert_eq!(known, [true, true, true, false]);
    for (i, d) in channels.descriptors().enumerate() {
        assert_eq!(d.partition().partition, i as u32);
    }
}

#[test]
fn failed_upload_falls_back_to_inline() {
    let graph = two_vertex_graph(3, 3, "all_to_all", "blocking");
    let mut states = States::new(&graph);
    for v in 0..3 {
        states.finish(&graph, v);
    }
    let (mut f, store) = factory(&graph, FORCE, usize::MAX);
    store.fail_puts(true);
    let t = f
        .create_deployment(&graph, attempt(3), slot(3), &states)
        .expect("tdd despite the failure");
    assert!(matches!(
        t.input_gates[0].descriptor_groups[0],
        MaybeOffloaded::Inline(_)
    ));
    assert_eq!(f.stats().upload_failures, 1);
    assert_eq!(f.stats().blobs_uploaded, 0);
    // The failure goes back to the caller to report, once.
    let failures = f.take_blob_failures();
    assert_eq!(failures.len(), 1);
    assert!(
        matches!(failures[0], conflux_deploy::BlobFailure::Upload { .. }),
        "{:?}",
        failures[0]
    );
    assert!(failures[0].to_string().starts_with("offloading "));
    assert!(f.take_blob_failures().is_empty());
    let mut cache = ShuffleDescriptorsCache::new(1 << 20);
    let channels = load_input_gate(
        &t.input_gates[0],
        crate::support::JOB,
        store.as_ref(),
        &mut cache,
    )
    .expect("load");
    assert!(channels
        .descriptors()
        .all(|d| matches!(d, ShuffleDescriptor::Known { .. })));
}

#[test]
fn the_10k_group_is_offloaded_by_default_and_small_when_compressed() {
    let graph = two_vertex_graph(10_000, 10_000, "all_to_all", "blocking");
    let mut states = States::new(&graph);
    for v in 0..10_000 {
        states.finish(&graph, v);
    }
    let (mut f, store) = factory(
        &graph,
        OffloadRule::default(),
        conflux_deploy::DEFAULT_OFFLOAD_MIN_SIZE,
    );
    let t = f
        .create_deployment(&graph, attempt(10_000), slot(10_000), &states)
        .expect("tdd");
    let serialized = &t.input_gates[0].descriptor_groups[0];
    assert!(serialized.is_offloaded(), "10,000 x 10,000 >= 2048 x 2048");
    assert_eq!(store.len(), 1, "information stays inline below 1 MiB");
    assert!(
        serialized.len() <= 100 * 1024,
        "compressed group is {} bytes",
        serialized.len()
    );
    // 2,000 x 2,000 stays inline under the count rule.
    let small = two_vertex_graph(2_000, 2_000, "all_to_all", "blocking");
    let mut states = States::new(&small);
    for v in 0..2_000 {
        states.finish(&small, v);
    }
    let (mut f, _) = factory(&small, OffloadRule::default(), usize::MAX);
    let t = f
        .create_deployment(&small, attempt(2_000), slot(2_000), &states)
        .expect("tdd");
    assert!(!t.input_gates[0].descriptor_groups[0].is_offloaded());
}

/// What an adaptive scheduler decided, by hand: the data set's producers write 128
/// subpartitions, and consumer subtask `k` reads `ranges[k]` of the partitions `partitions[k]`.
struct Decided {
    subpartitions: u32,
    ranges: Vec<(u32, u32)>,
    partitions: Vec<(u32, u32)>,
}

impl conflux_deploy::VertexInputInfoStore for Decided {
    fn number_of_subpartitions(&self, _: conflux_graph::IntermediateDataSetIndex) -> Option<u32> {
        Some(self.subpartitions)
    }

    fn execution_vertex_input_info(
        &self,
        job_vertex: conflux_graph::JobVertexIndex,
        input: usize,
        subtask: u32,
    ) -> Option<conflux_adaptive::ExecutionVertexInputInfo> {
        assert_eq!(
            (job_vertex.0, input),
            (1, 0),
            "only B's one input is asked for"
        );
        let (first, last) = self.ranges[subtask as usize];
        let (from, to) = self.partitions[subtask as usize];
        Some(conflux_adaptive::ExecutionVertexInputInfo {
            subtask_index: subtask,
            partition_range: conflux_adaptive::IndexRange::new(from, to),
            subpartition_range: conflux_adaptive::IndexRange::new(first, last),
        })
    }
}

/// A graph decided at run time: producers write the decided subpartition count, consumers read
/// their decided ranges (one of them a split piece: two of the four producers).
#[test]
fn run_time_decisions_reach_the_descriptors() {
    let graph = two_vertex_graph(4, 3, "all_to_all", "blocking");
    let mut states = States::new(&graph);
    for v in 0..4 {
        states.finish(&graph, v);
    }
    let decided = Decided {
        subpartitions: 128,
        ranges: vec![(0, 40), (41, 41), (41, 127)],
        partitions: vec![(0, 3), (0, 1), (2, 3)],
    };
    let (mut f, _) = factory(&graph, OffloadRule::Never, usize::MAX);
    let producer = f
        .create_with(&graph, attempt(0), slot(0), &decided)
        .expect("tdd");
    assert_eq!(producer.produced_partitions[0].number_of_subpartitions, 128);
    let gates: Vec<_> = (4..7)
        .map(|v| {
            f.prepare_groups(&graph, ExecutionVertexIndex(v), &states)
                .expect("groups");
            let tdd = f
                .create_with(&graph, attempt(v), slot(v), &decided)
                .expect("tdd");
            let gate = &tdd.input_gates[0];
            (
                gate.consumed_subpartitions.clone(),
                gate.consumed_channels.clone(),
                gate.number_of_channels,
            )
        })
        .collect();
    assert_eq!(
        gates,
        [(0..=40, 0..4, 4), (41..=41, 0..2, 4), (41..=127, 2..4, 4)]
    );
    // The static rule where nothing was decided.
    let tdd = f.create(&graph, attempt(5), slot(5)).expect("tdd");
    assert_eq!(tdd.input_gates[0].consumed_subpartitions, 1..=1);
    assert_eq!(tdd.input_gates[0].consumed_channels, 0..4);
}

/// A decision naming partitions its consumer's group does not hold is refused, naming them.
#[test]
fn a_decision_outside_the_group_is_an_error_naming_it() {
    // 4 -> 2 pointwise: B#0 reads partitions 0 and 1 only.
    let graph = two_vertex_graph(4, 2, "pointwise", "blocking");
    let mut states = States::new(&graph);
    for v in 0..4 {
        states.finish(&graph, v);
    }
    let decided = Decided {
        subpartitions: 1,
        ranges: vec![(0, 0), (0, 0)],
        partitions: vec![(2, 3), (2, 3)],
    };
    let (mut f, _) = factory(&graph, OffloadRule::Never, usize::MAX);
    f.prepare_groups(&graph, ExecutionVertexIndex(4), &states)
        .expect("groups");
    let err = f
        .create_with(&graph, attempt(4), slot(4), &decided)
        .expect_err("outside the group")
        .to_string();
    assert!(
        err.contains(
            "B#0 reads partitions 2..=3 of its input 0, outside its consumed partition group"
        ),
        "{err}"
    );
    assert!(err.contains("(partitions 0..2)"), "{err}");
}
