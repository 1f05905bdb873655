//! The durable store's errors keep the object store's error as a typed source.

use bytes::Bytes;
use conflux_blob::{BlobError, BlobKey, BlobKind, BlobStore};
use tempfile::TempDir;

use crate::common::job;

#[tokio::test]
async fn store_failures_keep_the_object_store_error_as_their_source() {
    let dir = TempDir::new().unwrap();
    let store = BlobStore::local(dir.path()).unwrap();
    let key = BlobKey::for_content(BlobKind::Permanent, Some(job(5)), b"payload");
    // A file where the job's folder belongs: the write cannot create the object.
    std::fs::write(dir.path().join(format!("job_{}", job(5))), b"in the way").unwrap();

    let err = store
        .put(&key, Bytes::from_static(b"payload"))
        .await
        .unwrap_err();
    let BlobError::Store { context, .. } = &err else {
        panic!("expected a store error, got {err:?}");
    };
    assert!(context.starts_with("writing job_"), "{context}");
    let source = std::error::Error::source(&err).expect("a store error has a source");
    assert!(
        source.downcast_ref::<object_store::Error>().is_some(),
        "the source is the object_store error itself: {source:?}"
    );
}
