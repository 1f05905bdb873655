//! A stored blob whose bytes no longer match its digest is never served.

use bytes::Bytes;
use conflux_blob::{BlobError, BlobKind, DurableStoreConfig};

use crate::common::{content, job, raw, start, start_with};

fn corrupt(path: &std::path::Path) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x5a;
    std::fs::write(path, &bytes).unwrap();
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_local_file_is_replaced_from_the_durable_copy() {
    let fx = start().await;
    let data = Bytes::from(content(30, 250_000));
    let key = fx
        .client()
        .put(BlobKind::Permanent, Some(job(1)), data.clone())
        .await
        .unwrap();
    corrupt(&fx.server.blob_path(&key));

    assert_eq!(fx.client().get(&key).await.unwrap(), data);
    let stats = fx.server.stats();
    assert_eq!((stats.digest_mismatches, stats.durable_fetches), (1, 1));
    // Repaired: the next read is local again.
    assert_eq!(std::fs::read(fx.server.blob_path(&key)).unwrap(), data);
    assert_eq!(fx.client().get(&key).await.unwrap(), data);
    assert_eq!(fx.server.stats().durable_fetches, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_blob_without_a_good_copy_is_an_error() {
    let fx = start_with(|c| c.durable = DurableStoreConfig::None).await;
    let data = Bytes::from(content(31, 10_000));
    let key = fx
        .client()
        .put(BlobKind::Permanent, Some(job(1)), data)
        .await
        .unwrap();
    let damaged = corrupt(&fx.server.blob_path(&key));

    let response = raw()
        .get(format!("{}/blobs/{key}", fx.server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 500);
    let body = response.bytes().await.unwrap();
    assert_ne!(body.as_ref(), damaged.as_slice());
    assert!(String::from_utf8_lossy(&body).contains("does not match its digest"));
    assert!(matches!(
        fx.client().get(&key).await,
        Err(BlobError::Remote(_))
    ));
    assert!(matches!(
        fx.server.get(&key).await,
        Err(BlobError::DigestMismatch { key: k }) if k == key
    ));

    // Damaged both locally and durably: still never served.
    let fx = start().await;
    let key = fx
        .client()
        .put(
            BlobKind::Permanent,
            Some(job(2)),
            Bytes::from(content(32, 10_000)),
        )
        .await
        .unwrap();
    corrupt(&fx.server.blob_path(&key));
    let durable_file = crate::common::files_under(fx.durable.path())
        .into_iter()
        .find(|p| p.file_name().unwrap().to_str().unwrap() == format!("p-{}", key.digest))
        .unwrap();
    corrupt(&durable_file);
    assert!(matches!(
        fx.server.get(&key).await,
        Err(BlobError::DigestMismatch { .. })
    ));
}
