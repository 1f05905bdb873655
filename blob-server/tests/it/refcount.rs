//! Reference counting: equal content of one job shares a key; the last delete removes it.

use bytes::Bytes;
use conflux_blob::{BlobError, BlobKind, BlobWriter};

use crate::common::{content, job, raw, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn equal_content_shares_a_key_and_counts_references() {
    let fx = start().await;
    let client = fx.client();
    let data = Bytes::from(content(10, 64 * 1024));

    let first = client
        .put(BlobKind::Permanent, Some(job(1)), data.clone())
        .await
        .unwrap();
    let response = raw()
        .put(format!("{}/blobs/permanent/{}", fx.server.url(), job(1)))
        .body(data.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-blob-references"], "2");
    let second: conflux_blob::BlobKey = response.text().await.unwrap().trim().parse().unwrap();
    assert_eq!(first, second);
    // A third owner through the synchronous writer.
    assert_eq!(fx.server.put_permanent(job(1), &data).unwrap(), first);
    assert_eq!(fx.server.references(&first), 3);
    // Another job's identical content is another blob.
    let other = client
        .put(BlobKind::Permanent, Some(job(2)), data.clone())
        .await
        .unwrap();
    assert_ne!(other, first);

    client.delete(&first).await.unwrap();
    fx.server.delete_permanent(&first).unwrap();
    assert_eq!(fx.server.references(&first), 1);
    // Still served, still durable: one owner remains.
    assert_eq!(client.get(&first).await.unwrap(), data);
    assert!(fx.durable_store().contains(&first).await.unwrap());

    client.delete(&first).await.unwrap();
    assert!(matches!(
        client.get(&first).await,
        Err(BlobError::NotFound(_))
    ));
    assert!(!fx.durable_store().contains(&first).await.unwrap());
    // The other job's blob is untouched.
    assert_eq!(client.get(&other).await.unwrap(), data);
    assert_eq!(fx.server.stats().blobs, 1);
}
