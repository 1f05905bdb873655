//! The TaskManager side: offloaded groups fetched once per TaskManager, a cache bounded in bytes.

use conflux_blob_api::{BlobReader, BlobWriter, JobId, MemoryBlobStore};
use conflux_deploy::wire::encode_descriptor_group;
use conflux_deploy::{
    load_input_gate, ExecutionState, OffloadRule, ShuffleDescriptorGroup, ShuffleDescriptorsCache,
};

use crate::support::{attempt, factory, slot, two_vertex_graph, States, JOB};

#[test]
fn offloaded_group_is_fetched_and_decoded_once_per_task_manager() {
    let graph = two_vertex_graph(50, 50, "all_to_all", "pipelined");
    let mut states = States::new(&graph);
    for v in 0..50 {
        states.set(v, ExecutionState::Running);
    }
    let (mut f, store) = factory(
        &graph,
        OffloadRule::DescriptorCount { threshold: 1 },
        usize::MAX,
    );
    let mut cache = ShuffleDescriptorsCache::new(1 << 20);
    for v in 50..100 {
        let t = f
            .create_deployment(&graph, attempt(v), slot(v), &states)
            .expect("tdd");
        let channels =
            load_input_gate(&t.input_gates[0], JOB, store.as_ref(), &mut cache).expect("load");
        assert_eq!(channels.number_of_channels(), 50);
        assert_eq!(channels.descriptor(7).partition().partition, 7);
    }
    assert_eq!(store.reads(), 1);
    let s = cache.stats();
    assert_eq!((s.misses, s.hits), (1, 49));
    cache.clear_job(JobId([9; 16]));
    assert_eq!(
        cache.len(),
        1,
        "another job's clean-up keeps this job's groups"
    );
    cache.clear_job(JOB);
    assert!(cache.is_empty());
    assert_eq!(cache.stats().bytes, 0);
}

fn group_of(n: usize, tag: u32) -> ShuffleDescriptorGroup {
    ShuffleDescriptorGroup {
        descriptors: (0..n as u32)
            .map(|i| conflux_deploy::ShuffleDescriptor::Unknown {
                partition: conflux_deploy::ResultPartitionId {
                    result: tag,
                    partition: i,
                    producer: attempt(i),
                },
            })
            .collect(),
        indices: None,
    }
}

#[test]
fn cache_evicts_least_recently_used_within_its_byte_budget() {
    let store = MemoryBlobStore::new();
    let keys: Vec<_> = (0..4)
        .map(|tag| {
            let (bytes, _) = encode_descriptor_group(&group_of(100, tag)).expect("encode");
            store.put_permanent(JOB, &bytes).expect("put")
        })
        .collect();
    // Measure one entry, then allow three.
    let mut probe = ShuffleDescriptorsCache::new(usize::MAX);
    probe.get_or_load(JOB, &keys[0], &store).expect("load");
    let one = probe.stats().bytes;
    let mut cache = ShuffleDescriptorsCache::new(3 * one);
    for k in &keys[..3] {
        cache.get_or_load(JOB, k, &store).expect("load");
    }
    cache
        .get_or_load(JOB, &keys[0], &store)
        .expect("hit refreshes 0"); // order now 1, 2, 0
    cache
        .get_or_load(JOB, &keys[3], &store)
        .expect("load 3 evicts 1");
    assert_eq!(cache.stats().evictions, 1);
    let reads = store.reads();
    cache
        .get_or_load(JOB, &keys[0], &store)
        .expect("0 still cached");
    cache
        .get_or_load(JOB, &keys[2], &store)
        .expect("2 still cached");
    assert_eq!(store.reads(), reads);
    cache
        .get_or_load(JOB, &keys[1], &store)
        .expect("1 was evicted");
    assert_eq!(store.reads(), reads + 1);
    assert!(cache.stats().bytes <= 3 * one);
    // A group larger than the whole budget is served but not kept.
    let mut tiny = ShuffleDescriptorsCache::new(one / 2);
    tiny.get_or_load(JOB, &keys[0], &store).expect("served");
    assert!(tiny.is_empty());
}

#[test]
fn corrupted_blob_is_rejected_with_a_clear_error() {
    struct Corrupting(MemoryBlobStore);
    impl BlobReader for Corrupting {
        fn read(
            &self,
            key: &conflux_blob_api::BlobKey,
        ) -> Result<bytes::Bytes, conflux_blob_api::BlobError> {
            let mut b = self.0.read(key)?.to_vec();
            let last = b.len() - 1;
            b[last] ^= 0xff;
            Ok(b.into())
        }
    }
    let inner = MemoryBlobStore::new();
    let (bytes, _) = encode_descriptor_group(&group_of(10, 0)).expect("encode");
    let key = inner.put_permanent(JOB, &bytes).expect("put");
    let mut cache = ShuffleDescriptorsCache::new(1 << 20);
    let error = cache
        .get_or_load(JOB, &key, &Corrupting(inner))
        .expect_err("corrupted");
    assert!(error.to_string().contains("checksum mismatch"), "{error}");
    assert!(cache.is_empty());
}
