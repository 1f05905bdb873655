//! The durable store on S3: `s3s-fs` started by the test on a free loopback port
//! (`conflux_test_support::S3sFs`; without `s3s-fs` these tests fail, unless
//! `CONFLUX_SKIP_S3=1`).

use bytes::Bytes;
use conflux_blob::{
    BlobCache, BlobCacheConfig, BlobClient, BlobKind, BlobServer, BlobServerConfig, BlobStore,
    DurableStoreConfig,
};
use conflux_test_support::S3sFs;
use tempfile::TempDir;
use tokio::runtime::Handle;

use crate::common::{content, job};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_copies_live_in_s3() {
    let Some(s3) = S3sFs::start("blobs") else {
        return;
    };
    let durable = DurableStoreConfig::S3(s3.config("cluster-1/blob"));
    let store = BlobStore::s3(&s3.config("cluster-1/blob")).unwrap();
    let storage = TempDir::new().unwrap();
    let mut config = BlobServerConfig::new(storage.path());
    config.durable = durable.clone();
    let server = BlobServer::start(config).await.unwrap();
    let client = BlobClient::new(server.url(), None).unwrap();

    let small = Bytes::from(content(70, 300_000));
    // Above 16 MiB: uploaded in parts.
    let large = Bytes::from(content(71, 17 << 20));
    let small_key = client
        .put(BlobKind::Permanent, Some(job(1)), small.clone())
        .await
        .unwrap();
    let large_key = client
        .put(BlobKind::Permanent, Some(job(1)), large.clone())
        .await
        .unwrap();
    client
        .put(BlobKind::Permanent, Some(job(1)), small.clone())
        .await
        .unwrap();
    assert!(store.contains(&small_key).await.unwrap());
    assert_eq!(store.get(&large_key).await.unwrap(), large);
    let listed = store.list().await.unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    server.shutdown().await;

    // A server on an empty storage directory recovers everything from S3, counts included.
    let fresh = TempDir::new().unwrap();
    let mut config = BlobServerConfig::new(fresh.path());
    config.durable = durable.clone();
    let server = BlobServer::start(config).await.unwrap();
    let client = BlobClient::new(server.url(), None).unwrap();
    assert_eq!(client.get(&large_key).await.unwrap(), large);
    assert_eq!(server.references(&small_key), 2);

    // A TaskManager cache reads S3 directly, without asking the server.
    let cache_dir = TempDir::new().unwrap();
    let mut cache_config = BlobCacheConfig::new(cache_dir.path());
    cache_config.server_url = Some(server.url());
    cache_config.durable = durable;
    let cache = BlobCache::new(cache_config, Handle::current()).unwrap();
    let gets = server.stats().gets;
    assert_eq!(cache.get(&small_key).await.unwrap(), small);
    assert_eq!(cache.stats().durable_fetches, 1);
    assert_eq!(server.stats().gets, gets);

    // The last reference removes the S3 copy; job cleanup removes the rest.
    client.delete(&small_key).await.unwrap();
    assert!(store.contains(&small_key).await.unwrap());
    client.delete(&small_key).await.unwrap();
    assert!(!store.contains(&small_key).await.unwrap());
    client.cleanup_job(job(1)).await.unwrap();
    assert!(store.list().await.unwrap().is_empty());
    server.shutdown().await;
}
