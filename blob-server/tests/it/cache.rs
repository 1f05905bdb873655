//! The TaskManager-side cache: sources in order, LRU within a byte budget, verification.

use bytes::Bytes;
use conflux_blob::{
    BlobCache, BlobCacheConfig, BlobError, BlobKey, BlobKind, BlobReader, DurableStoreConfig,
    SharedBlobMemory,
};
use tempfile::TempDir;
use tokio::runtime::Handle;

use crate::common::{content, job, start, Fixture};

async fn put(fx: &Fixture, seed: u64, len: usize) -> (BlobKey, Bytes) {
    let data = Bytes::from(content(seed, len));
    let key = fx
        .client()
        .put(BlobKind::Permanent, Some(job(1)), data.clone())
        .await
        .unwrap();
    (key, data)
}

fn cache_of(fx: &Fixture, dir: &TempDir, max_bytes: u64) -> BlobCache {
    let mut config = BlobCacheConfig::new(dir.path());
    config.server_url = Some(fx.server.url());
    config.max_bytes = max_bytes;
    BlobCache::new(config, Handle::current()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evicts_least_recently_used_within_the_budget() {
    let fx = start().await;
    let (a, da) = put(&fx, 1, 100_000).await;
    let (b, db) = put(&fx, 2, 100_000).await;
    let (c, dc) = put(&fx, 3, 100_000).await;
    let (big, dbig) = put(&fx, 4, 300_000).await;
    let dir = TempDir::new().unwrap();
    let cache = cache_of(&fx, &dir, 250_000);

    assert_eq!(cache.get(&a).await.unwrap(), da);
    assert_eq!(cache.get(&b).await.unwrap(), db);
    assert_eq!(cache.get(&a).await.unwrap(), da); // hit: a is now the most recent
    assert_eq!(cache.lru_order(), vec![b, a]);
    assert_eq!(cache.get(&c).await.unwrap(), dc); // evicts b, the least recently used
    assert_eq!(cache.lru_order(), vec![a, c]);
    assert!(!cache.contains(&b) && !cache.blob_path(&b).exists());
    let stats = cache.stats();
    assert_eq!(
        (stats.hits, stats.server_fetches, stats.evictions),
        (1, 3, 1)
    );
    assert_eq!((stats.cached_blobs, stats.cached_bytes), (2, 200_000));

    assert_eq!(cache.get(&b).await.unwrap(), db); // back again: evicts a
    assert_eq!(cache.lru_order(), vec![c, b]);
    // Larger than the whole budget: served, not kept, nothing evicted for it.
    assert_eq!(cache.get(&big).await.unwrap(), dbig);
    assert!(!cache.contains(&big));
    let stats = cache.stats();
    assert_eq!((stats.evictions, stats.misses, stats.hits), (2, 5, 1));
    assert!(stats.cached_bytes <= 250_000);
    assert_eq!(stats.bytes_fetched, 4 * 100_000 + 300_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_the_durable_store_before_the_server() {
    let fx = start().await;
    let (key, data) = put(&fx, 5, 50_000).await;
    let dir = TempDir::new().unwrap();
    let mut config = BlobCacheConfig::new(dir.path());
    config.server_url = Some(fx.server.url());
    config.durable = DurableStoreConfig::Local {
        dir: fx.durable.path().to_path_buf(),
    };
    let cache = BlobCache::new(config, Handle::current()).unwrap();
    let gets_before = fx.server.stats().gets;
    assert_eq!(cache.get(&key).await.unwrap(), data);
    assert_eq!(cache.get(&key).await.unwrap(), data);
    let stats = cache.stats();
    assert_eq!(
        (stats.durable_fetches, stats.server_fetches, stats.hits),
        (1, 0, 1)
    );
    assert_eq!(
        fx.server.stats().gets,
        gets_before,
        "the server was not asked"
    );

    // A transient blob is never in the durable store: the server serves it.
    let transient = fx
        .client()
        .put(
            BlobKind::Transient,
            Some(job(1)),
            Bytes::from_static(b"log"),
        )
        .await
        .unwrap();
    assert_eq!(cache.get(&transient).await.unwrap(), "log");
    assert_eq!(cache.stats().server_fetches, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_cached_file_is_fetched_again_and_sync_reads_work() {
    let fx = start().await;
    let (key, data) = put(&fx, 6, 40_000).await;
    let dir = TempDir::new().unwrap();
    let cache = cache_of(&fx, &dir, 1 << 20);
    assert_eq!(cache.get(&key).await.unwrap(), data);
    let mut damaged = data.to_vec();
    damaged[123] ^= 0xff;
    std::fs::write(cache.blob_path(&key), &damaged).unwrap();

    // BlobReader from a plain thread (the TaskManager's deployment thread).
    let cache_ref = &cache;
    let read = std::thread::scope(|s| s.spawn(|| cache_ref.read(&key).unwrap()).join().unwrap());
    assert_eq!(read, data);
    let stats = cache.stats();
    assert_eq!((stats.digest_mismatches, stats.server_fetches), (1, 2));
    assert_eq!(std::fs::read(cache.blob_path(&key)).unwrap(), data);
    // From a runtime worker too.
    assert_eq!(cache.read(&key).unwrap(), data);
    assert_eq!(cache.stats().hits, 1);

    let unknown = BlobKey::for_content(BlobKind::Permanent, Some(job(1)), b"never stored");
    assert!(matches!(
        cache.get(&unknown).await,
        Err(BlobError::NotFound(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_job_drops_only_that_jobs_blobs() {
    let fx = start().await;
    let (a, _) = put(&fx, 7, 1_000).await;
    let other = fx
        .client()
        .put(
            BlobKind::Permanent,
            Some(job(2)),
            Bytes::from_static(b"job two"),
        )
        .await
        .unwrap();
    let dir = TempDir::new().unwrap();
    let cache = cache_of(&fx, &dir, 1 << 20);
    cache.get(&a).await.unwrap();
    cache.get(&other).await.unwrap();
    assert_eq!(cache.release_job(job(1)).unwrap(), 1);
    assert!(!cache.contains(&a) && !cache.blob_path(&a).exists());
    assert!(cache.contains(&other));
    assert_eq!(cache.stats().cached_bytes, 7);
}

/// Caches in memory: no directory is made; each cache fetches, checks and counts a blob itself,
/// the shared store holds one copy while any cache holds it, and drops it with the last holder
/// (evicted, job released, cache dropped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caches_in_memory_fetch_each_and_share_one_copy() {
    let fx = start().await;
    let (a, da) = put(&fx, 8, 100_000).await;
    let (b, db) = put(&fx, 9, 100_000).await;
    let dir = TempDir::new().unwrap();
    let memory = SharedBlobMemory::new();
    let in_memory = |name: &str, max_bytes: u64| {
        let mut config = BlobCacheConfig::new(dir.path().join(name));
        config.server_url = Some(fx.server.url());
        config.max_bytes = max_bytes;
        config.memory = Some(memory.clone());
        BlobCache::new(config, Handle::current()).unwrap()
    };
    let first = in_memory("first", 150_000);
    let second = in_memory("second", 1 << 20);

    assert_eq!(first.get(&a).await.unwrap(), da);
    assert_eq!(second.get(&a).await.unwrap(), da);
    assert_eq!(first.get(&a).await.unwrap(), da);
    assert_eq!((memory.blobs(), memory.bytes()), (1, 100_000));
    let (s1, s2) = (first.stats(), second.stats());
    assert_eq!((s1.server_fetches, s1.hits), (1, 1));
    assert_eq!((s2.server_fetches, s2.hits), (1, 0));

    // b evicts a from the first cache only: the second still holds a's copy.
    assert_eq!(first.get(&b).await.unwrap(), db);
    assert_eq!(first.lru_order(), vec![b]);
    assert_eq!(first.stats().evictions, 1);
    assert_eq!((memory.blobs(), memory.bytes()), (2, 200_000));
    assert_eq!(second.get(&a).await.unwrap(), da);
    assert_eq!(second.stats().hits, 1);

    // The second lets a go: nobody holds it any more.
    assert_eq!(second.release_job(job(1)).unwrap(), 1);
    assert_eq!((memory.blobs(), memory.bytes()), (1, 100_000));
    // Dropping the first lets b go.
    drop(first);
    assert_eq!((memory.blobs(), memory.bytes()), (0, 0));
    // Neither cache made a file or a directory.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
