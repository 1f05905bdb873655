//! Transient blobs expire after a TTL counted from their last access (controlled clock).

use std::sync::Arc;

use bytes::Bytes;
use conflux_blob::{BlobCache, BlobCacheConfig, BlobError, BlobKind, Clock};
use tempfile::TempDir;
use tokio::runtime::Handle;

use crate::common::{job, manual_clock, start_with};

const TTL_MS: u64 = 1_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_blobs_expire_after_ttl_refreshed_on_access() {
    let clock = manual_clock();
    let server_clock: Arc<dyn Clock> = clock.clone();
    let fx = start_with(|c| {
        c.transient_ttl_ms = TTL_MS;
        c.clock = server_clock;
    })
    .await;
    let client = fx.client();
    let key = client
        .put(
            BlobKind::Transient,
            Some(job(1)),
            Bytes::from_static(b"thread dump"),
        )
        .await
        .unwrap();
    let permanent = client
        .put(
            BlobKind::Permanent,
            Some(job(1)),
            Bytes::from_static(b"jar"),
        )
        .await
        .unwrap();

    let dir = TempDir::new().unwrap();
    let mut config = BlobCacheConfig::new(dir.path());
    config.server_url = Some(fx.server.url());
    config.transient_ttl_ms = TTL_MS;
    config.clock = clock.clone();
    let cache = BlobCache::new(config, Handle::current()).unwrap();

    clock.advance(600);
    assert_eq!(client.get(&key).await.unwrap(), "thread dump"); // refreshes the server's TTL
    assert_eq!(cache.get(&key).await.unwrap(), "thread dump"); // cached at 600
    clock.advance(600);
    assert_eq!(cache.get(&key).await.unwrap(), "thread dump"); // a hit refreshes it too
    assert_eq!(client.get(&key).await.unwrap(), "thread dump");
    assert_eq!(cache.stats().hits, 1);

    clock.advance(TTL_MS + 1);
    // The cache's copy expired (swept explicitly), and so did the server's (on access).
    assert_eq!(cache.expire_transient(), 1);
    assert!(!cache.contains(&key));
    assert!(matches!(
        client.get(&key).await,
        Err(BlobError::NotFound(_))
    ));
    assert!(matches!(cache.get(&key).await, Err(BlobError::NotFound(_))));
    assert!(!fx.server.blob_path(&key).exists());
    // Permanent blobs do not expire.
    assert_eq!(client.get(&permanent).await.unwrap(), "jar");

    // The server's sweep: a second transient blob, never read again.
    let other = client
        .put(BlobKind::Transient, None, Bytes::from_static(b"log"))
        .await
        .unwrap();
    assert_eq!(fx.server.expire_transient().await, 0);
    clock.advance(TTL_MS + 1);
    assert_eq!(fx.server.expire_transient().await, 1);
    assert!(!fx.server.contains(&other));
    assert_eq!(fx.server.stats().expired, 2);
    assert_eq!(cache.stats().expired, 1);
}
