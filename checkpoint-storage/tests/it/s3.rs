//! Checkpoint storage on S3: `s3s-fs` started by the test on a free loopback port
//! (`conflux_test_support::S3sFs`; without `s3s-fs` this test fails, unless
//! `CONFLUX_SKIP_S3=1`).

use conflux_checkpoint::sim::{run, SimConfig};
use conflux_checkpoint::{CheckpointError, CheckpointStorage, StorageConfig};
use conflux_test_support::S3sFs;
use object_store::path::Path;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_on_s3_restore_every_byte() {
    let Some(s3) = S3sFs::start("checkpoints") else {
        return;
    };
    let storage = CheckpointStorage::s3(&s3.config("cluster-1")).unwrap();
    // Create-if-absent, ranged reads, listing, idempotent deletes on the real protocol.
    let path = Path::from("probe/cp1-x-1");
    storage
        .create(&path, bytes::Bytes::from_static(b"0123456789"))
        .await
        .unwrap();
    let again = storage
        .create(&path, bytes::Bytes::from_static(b"x"))
        .await
        .unwrap_err();
    assert!(matches!(again, CheckpointError::Store { .. }), "{again}");
    assert_eq!(
        storage.read_range(&path, 2..5).await.unwrap().as_ref(),
        b"234"
    );
    assert_eq!(storage.list(None).await.unwrap().len(), 1);
    assert!(storage.delete(&path).await.is_ok());
    assert!(storage.delete(&path).await.is_ok());
    assert!(matches!(
        storage.read(&path).await.unwrap_err(),
        CheckpointError::Missing { .. }
    ));

    let config = SimConfig {
        subtasks: 2,
        checkpoints: 12,
        files_per_checkpoint: 40,
        failovers: 1,
        storage: StorageConfig::S3(s3.config("cluster-1")),
        ..SimConfig::default()
    };
    let report = run(&config).await.unwrap();
    for r in [&report.merged, &report.unmerged] {
        assert_eq!(r.restore_failures, 0, "{:?}", r.first_failure);
        assert!(r.restored_files_checked > 0);
    }
    assert!(report.objects_ratio > 5.0, "{report:?}");
}
