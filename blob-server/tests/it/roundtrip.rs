//! PUT / GET / DELETE over HTTP, and the synchronous `BlobWriter` / `BlobReader` paths.

use bytes::Bytes;
use conflux_blob::{BlobError, BlobKey, BlobKind, BlobReader, BlobWriter};

use crate::common::{content, job, raw, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_get_delete_round_trip() {
    let fx = start().await;
    let client = fx.client();
    let data = Bytes::from(content(1, 300_000));

    let key = client
        .put(BlobKind::Permanent, Some(job(1)), data.clone())
        .await
        .unwrap();
    assert_eq!(
        key,
        BlobKey::for_content(BlobKind::Permanent, Some(job(1)), &data)
    );
    assert_eq!(client.get(&key).await.unwrap(), data);
    assert!(fx.server.blob_path(&key).is_file());
    assert!(fx.durable_store().contains(&key).await.unwrap());

    // The same over plain HTTP, as curl would see it.
    let url = format!("{}/blobs/{key}", fx.server.url());
    let response = raw().get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/octet-stream"
    );
    assert_eq!(response.bytes().await.unwrap(), data);

    client.delete(&key).await.unwrap();
    assert!(matches!(client.get(&key).await, Err(BlobError::NotFound(k)) if k == key));
    assert_eq!(raw().get(&url).send().await.unwrap().status(), 404);
    assert!(!fx.server.blob_path(&key).exists());
    assert!(!fx.durable_store().contains(&key).await.unwrap());
    // Deletes are idempotent.
    client.delete(&key).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_put_answers_created_with_key_and_location() {
    let fx = start().await;
    let url = format!("{}/blobs/transient/no_job", fx.server.url());
    let response = raw().put(&url).body("hello").send().await.unwrap();
    assert_eq!(response.status(), 201);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(response.headers()["x-blob-references"], "1");
    let key: BlobKey = response.text().await.unwrap().trim().parse().unwrap();
    assert_eq!(
        key,
        BlobKey::for_content(BlobKind::Transient, None, b"hello")
    );
    assert_eq!(location, format!("/blobs/{key}"));
    let got = raw()
        .get(format!("{}{location}", fx.server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(got.bytes().await.unwrap(), "hello");
    // Transient blobs get no durable copy.
    assert!(!fx.durable_store().contains(&key).await.unwrap());
    // An empty blob is a blob too.
    let empty = raw()
        .put(format!("{}/blobs/permanent/{}", fx.server.url(), job(2)))
        .body("")
        .send()
        .await
        .unwrap();
    assert_eq!(empty.status(), 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blob_writer_works_from_a_worker_and_from_a_plain_thread() {
    let fx = start().await;
    let data = content(2, 5_000);
    // From inside the runtime (a worker thread): must neither panic nor dead-lock.
    let key = fx.server.put_permanent(job(3), &data).unwrap();
    assert_eq!(fx.server.read(&key).unwrap(), data);
    // From a thread outside any runtime.
    let server = &fx.server;
    let other = content(3, 7_000);
    let key2 = std::thread::scope(|s| {
        s.spawn(|| server.put_permanent(job(3), &other).unwrap())
            .join()
            .unwrap()
    });
    assert_eq!(fx.client().get(&key2).await.unwrap(), other);
    assert!(fx.durable_store().contains(&key2).await.unwrap());
    fx.server.delete_permanent(&key).unwrap();
    assert!(matches!(fx.server.read(&key), Err(BlobError::NotFound(_))));
    let stats = fx.server.stats();
    assert_eq!((stats.puts, stats.blobs), (2, 1));
}

#[test]
fn start_blocking_serves_without_a_caller_runtime() {
    let storage = tempfile::TempDir::new().unwrap();
    let mut config = conflux_blob::BlobServerConfig::new(storage.path());
    config.durable = conflux_blob::DurableStoreConfig::None;
    let server = conflux_blob::BlobServer::start_blocking(config).unwrap();
    let key = server
        .put_permanent(job(4), b"from a plain thread")
        .unwrap();
    assert_eq!(
        server.read(&key).unwrap(),
        Bytes::from_static(b"from a plain thread")
    );
    drop(server);
}
