//! Per-job cleanup on the server: local files, index and durable copies.

use bytes::Bytes;
use conflux_blob::{BlobError, BlobKind};

use crate::common::{content, files_under, job, raw, start};

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
