//! Per-job cleanup on the server: local files, index and durable copies.

use bytes::Bytes;
use conflux_blob::{BlobClient, BlobError, BlobKind, BlobServer, BlobStore, BlobWriter};
use tempfile::TempDir;

use crate::common::{config, content, files_under, job, raw, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_cleanup_deletes_all_blobs_of_the_job_only() {
    let fx = start().await;
    let client = fx.client();
    let mut doomed = Vec::new();
    for seed in 0..3 {
        let key = client
            .put(
                BlobKind::Permanent,
                Some(job(1)),
                Bytes::from(content(60 + seed, 20_000)),
            )
            .await
            .unwrap();
        doomed.push(key);
    }
    // Two references: cleanup ignores counts.
    client
        .put(
            BlobKind::Permanent,
            Some(job(1)),
            Bytes::from(content(60, 20_000)),
        )
        .await
        .unwrap();
    let transient = client
        .put(BlobKind::Transient, Some(job(1)), Bytes::from_static(b"t"))
        .await
        .unwrap();
    doomed.push(transient);
    let kept = client
        .put(
            BlobKind::Permanent,
            Some(job(2)),
            Bytes::from(content(60, 20_000)),
        )
        .await
        .unwrap();

    let response = raw()
        .delete(format!("{}/jobs/{}", fx.server.url(), job(1)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    for key in &doomed {
        assert!(
            matches!(client.get(key).await, Err(BlobError::NotFound(_))),
            "{key}"
        );
        assert!(!fx.durable_store().contains(key).await.unwrap());
    }
    assert!(!fx.storage.path().join(format!("job_{}", job(1))).exists());
    let durable_files = files_under(fx.durable.path());
    assert_eq!(durable_files.len(), 1, "{durable_files:?}");
    assert_eq!(
        client.get(&kept).await.unwrap(),
        Bytes::from(content(60, 20_000))
    );

    // Through the client and the local API too; cleaning an unknown job is fine.
    client.cleanup_job(job(9)).await.unwrap();
    assert_eq!(fx.server.cleanup_job(job(2)).await.unwrap(), 1);
    assert!(files_under(fx.durable.path()).is_empty());
    assert_eq!(fx.server.stats().blobs, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_started_with_its_recovered_jobs_drops_the_others() {
    let storage = TempDir::new().unwrap();
    let durable = TempDir::new().unwrap();
    let server = BlobServer::start(config(storage.path(), durable.path()))
        .await
        .unwrap();
    let mut keys = Vec::new();
    for n in [3u8, 1, 2] {
        keys.push(
            server
                .put_permanent(job(n), &content(u64::from(n), 5_000))
                .unwrap(),
        );
    }
    let unrelated = server
        .put(BlobKind::Permanent, None, Bytes::from(content(9, 5_000)))
        .await
        .unwrap();
    let client = BlobClient::new(server.url(), None).unwrap();
    assert_eq!(client.jobs().await.unwrap(), vec![job(1), job(2), job(3)]);
    let listed = raw()
        .get(format!("{}/jobs", server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(listed.headers()["content-type"], "application/json");
    assert_eq!(
        listed.text().await.unwrap(),
        format!(r#"{{"jobs":["{}","{}","{}"]}}"#, job(1), job(2), job(3))
    );
    server.shutdown().await;

    // The JobManager recovers job 1 only (Flink's retainJobs, FLINK-25436).
    let mut restarted = config(storage.path(), durable.path());
    restarted.recovered_jobs = Some(vec![job(1)]);
    let server = BlobServer::start(restarted).await.unwrap();
    assert_eq!(server.jobs(), vec![job(1)]);
    assert!(server.contains(&keys[1]));
    assert!(server.contains(&unrelated));
    let store = BlobStore::local(durable.path()).unwrap();
    for (key, n) in [(&keys[0], 3u8), (&keys[2], 2)] {
        assert!(!server.contains(key));
        assert!(!store.contains(key).await.unwrap());
        assert!(!storage.path().join(format!("job_{}", job(n))).exists());
    }
    assert!(store.contains(&keys[1]).await.unwrap());
    server.shutdown().await;
}
