//! Many concurrent uploads and reads of the same and of different keys.

use std::time::Duration;

use bytes::Bytes;
use conflux_blob::{BlobKey, BlobKind};

use crate::common::{content, job, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_puts_and_gets_of_shared_and_distinct_keys() {
    const TASKS: u64 = 48;
    const ROUNDS: u64 = 4;
    let fx = start().await;
    let client = fx.client();
    let shared = Bytes::from(content(99, 200_000));
    let shared_key = BlobKey::for_content(BlobKind::Permanent, Some(job(1)), &shared);

    let work = async {
        let mut tasks = Vec::new();
        for t in 0..TASKS {
            let client = client.clone();
            let shared = shared.clone();
            tasks.push(tokio::spawn(async move {
                let mut mine = Vec::new();
                for r in 0..ROUNDS {
                    // Every task stores the shared content each round, and content of its own.
                    let key = client
                        .put(BlobKind::Permanent, Some(job(1)), shared.clone())
                        .await
                        .unwrap();
                    assert_eq!(key, shared_key);
                    let own = Bytes::from(content(
                        1_000 + t * ROUNDS + r,
                        10_000 + usize::try_from(t).unwrap() * 7,
                    ));
                    let own_key = client
                        .put(BlobKind::Permanent, Some(job(2)), own.clone())
                        .await
                        .unwrap();
                    assert_eq!(client.get(&shared_key).await.unwrap(), shared);
                    assert_eq!(client.get(&own_key).await.unwrap(), own);
                    mine.push(own_key);
                }
                mine
            }));
        }
        let mut own_keys = Vec::new();
        for task in tasks {
            own_keys.extend(task.await.unwrap());
        }
        own_keys
    };
    let own_keys = tokio::time::timeout(Duration::from_secs(40), work)
        .await
        .expect("concurrent clients did not finish within 40 s");

    assert_eq!(fx.server.references(&shared_key), TASKS * ROUNDS);
    assert_eq!(own_keys.len() as u64, TASKS * ROUNDS);
    let stats = fx.server.stats();
    assert_eq!(stats.blobs, 1 + TASKS * ROUNDS);
    assert_eq!(stats.puts, 2 * TASKS * ROUNDS);
    // Nothing half-written is left behind.
    assert!(crate::common::files_under(&fx.storage.path().join("incoming")).is_empty());

    // Concurrent deletes of the shared key: exactly the last one removes it.
    let deletes: Vec<_> = (0..TASKS * ROUNDS)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.delete(&shared_key).await.unwrap() })
        })
        .collect();
    for delete in deletes {
        delete.await.unwrap();
    }
    assert_eq!(fx.server.references(&shared_key), 0);
    assert!(!fx.durable_store().contains(&shared_key).await.unwrap());
}
