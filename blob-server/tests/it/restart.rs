//! A restarted server serves its blobs again: from the same storage directory, or from the
//! durable store alone.

use bytes::Bytes;
use conflux_blob::{BlobKey, BlobKind, BlobServer, BlobWriter};
use tempfile::TempDir;

use crate::common::{config, content, job};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_recovers_blobs_and_reference_counts() {
    let storage = TempDir::new().unwrap();
    let durable = TempDir::new().unwrap();
    let shared = content(20, 100_000);
    let single = Bytes::from(content(21, 3 << 20));

    let server = BlobServer::start(config(storage.path(), durable.path()))
        .await
        .unwrap();
    let shared_key = server.put_permanent(job(1), &shared).unwrap();
    server.put_permanent(job(1), &shared).unwrap();
    let single_key = server
        .put(BlobKind::Permanent, Some(job(2)), single.clone())
        .await
        .unwrap();
    let transient_key = server
        .put(BlobKind::Transient, None, Bytes::from_static(b"scratch"))
        .await
        .unwrap();
    let first_addr = server.local_addr();
    server.shutdown().await;
    // The old address is closed.
    assert!(tokio::net::TcpStream::connect(first_addr).await.is_err());

    // Same storage directory and durable store.
    let server = BlobServer::start(config(storage.path(), durable.path()))
        .await
        .unwrap();
    let client = conflux_blob::BlobClient::new(server.url(), None).unwrap();
    assert_eq!(client.get(&shared_key).await.unwrap(), shared);
    assert_eq!(client.get(&single_key).await.unwrap(), single);
    assert_eq!(client.get(&transient_key).await.unwrap(), "scratch");
    assert_eq!(server.references(&shared_key), 2);
    assert_eq!(server.stats().durable_fetches, 0);
    server.shutdown().await;

    // A new, empty storage directory (the JobManager moved): the durable store alone.
    let fresh = TempDir::new().unwrap();
    let server = BlobServer::start(config(fresh.path(), durable.path()))
        .await
        .unwrap();
    let client = conflux_blob::BlobClient::new(server.url(), None).unwrap();
    assert_eq!(client.get(&single_key).await.unwrap(), single);
    assert_eq!(client.get(&shared_key).await.unwrap(), shared);
    assert_eq!(server.stats().durable_fetches, 2);
    // Transient blobs are not durable.
    assert!(client.get(&transient_key).await.is_err());
    // The local copies were restored and the reference count survived.
    assert!(server.blob_path(&single_key).is_file());
    assert_eq!(server.references(&shared_key), 2);
    client.delete(&shared_key).await.unwrap();
    assert_eq!(client.get(&shared_key).await.unwrap(), shared);
    client.delete(&shared_key).await.unwrap();
    assert!(client.get(&shared_key).await.is_err());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staging_files_of_a_killed_server_are_swept_at_start() {
    let storage = TempDir::new().unwrap();
    let durable = TempDir::new().unwrap();
    let server = BlobServer::start(config(storage.path(), durable.path()))
        .await
        .unwrap();
    let kept = server.put_permanent(job(3), &content(30, 10_000)).unwrap();
    server.shutdown().await;
    // What `kill -9` during uploads leaves: the local store's `<object>#<n>` staging files,
    // beside a blob and alone in a job's folder.
    let job3 = durable.path().join(format!("job_{}", job(3)));
    let job4 = durable.path().join(format!("job_{}", job(4)));
    std::fs::create_dir_all(&job4).unwrap();
    let staging = [
        job3.join(format!("p-{}#1", kept.digest)),
        job4.join(format!(
            "p-{}#1",
            BlobKey::for_content(BlobKind::Permanent, Some(job(4)), b"x").digest
        )),
        job4.join("p-0011.refs#2"),
    ];
    for file in &staging {
        std::fs::write(file, b"partial").unwrap();
    }

    let server = BlobServer::start(config(storage.path(), durable.path()))
        .await
        .unwrap();
    for file in &staging {
        assert!(!file.exists(), "{} survived the restart", file.display());
    }
    assert!(!job4.exists(), "the emptied job folder is removed");
    assert_eq!(
        server.get(&kept).await.unwrap(),
        Bytes::from(content(30, 10_000))
    );
    server.shutdown().await;
}
