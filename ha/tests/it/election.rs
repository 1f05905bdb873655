//! Leader election, retrieval, fencing and job pointers against one real ZooKeeper server.

use std::time::Duration;

use conflux_ha::{
    HaOptions, JobPointers, LeaderElection, LeaderInfo, LeaderRetrieval, LocalZooKeeper,
};

/// A server, or `None` after printing why the test is skipped.
fn server() -> Option<(LocalZooKeeper, tempfile::TempDir)> {
    let dir = tempfile::tempdir().expect("temp dir");
    match LocalZooKeeper::start(dir.path()) {
        Ok(zk) => Some((zk, dir)),
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            None
        }
    }
}

fn options(quorum: &str, cluster: &str) -> HaOptions {
    let mut o = HaOptions::new(quorum);
    o.cluster_id = cluster.into();
    o.session_timeout_ms = 2_000;
    o
}

fn info(rpc: &str) -> LeaderInfo {
    LeaderInfo {
        rpc_address: rpc.into(),
        rest_url: None,
        fencing_token: 0,
        pid: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_then_the_standby_with_a_larger_token() {
    let Some((zk, _dir)) = server() else { return };
    let o = options(&zk.quorum(), "a");
    let first = LeaderElection::join(&o).await.expect("join");
    let second = LeaderElection::join(&o).await.expect("join");
    assert!(second.token() > first.token());
    let retrieval = LeaderRetrieval::start(&o).await.expect("retrieval");
    let leader = first.await_leadership().await.expect("leads");
    leader.publish(&o, &info("h:1")).await.expect("publish");
    let seen = retrieval
        .await_leader(Duration::from_secs(5))
        .await
        .expect("seen");
    assert_eq!(seen.rpc_address, "h:1");
    assert_eq!(seen.fencing_token, leader.token());
    // The standby does not lead while the first does.
    let standby = tokio::spawn(second.await_leadership());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!standby.is_finished());
    // Job pointers: written fenced by the leader, listed by anyone.
    let pointers = JobPointers::new(&o);
    pointers
        .put(&leader, "job1", "/store/job1.json")
        .await
        .expect("put");
    let first_token = leader.token();
    assert!(leader.is_valid());
    drop(leader); // closes the session: the latch node goes at once
    let next = tokio::time::timeout(Duration::from_secs(10), standby)
        .await
        .expect("the standby leads within 10 s")
        .expect("join")
        .expect("leads");
    assert!(next.token() > first_token);
    next.publish(&o, &info("h:2")).await.expect("publish");
    let mut rx = retrieval.subscribe();
    let changed = tokio::time::timeout(
        Duration::from_secs(5),
        rx.wait_for(|l| l.as_ref().is_some_and(|l| l.rpc_address == "h:2")),
    )
    .await;
    assert!(changed.is_ok(), "retrieval follows the new leader");
    assert_eq!(
        pointers.list(next.client()).await.expect("list"),
        vec![("job1".to_owned(), "/store/job1.json".to_owned())]
    );
    pointers.remove(&next, "job1").await.expect("remove");
    assert!(pointers.list(next.client()).await.expect("list").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_cluster_id_is_another_election_and_store() {
    let Some((zk, _dir)) = server() else { return };
    let (oa, ob) = (options(&zk.quorum(), "a"), options(&zk.quorum(), "b"));
    let a = LeaderElection::join(&oa).await.expect("join");
    let b = LeaderElection::join(&ob).await.expect("join");
    // Both lead: each id has an election of its own.
    let la = tokio::time::timeout(Duration::from_secs(5), a.await_leadership())
        .await
        .expect("a leads within 5 s")
        .expect("a");
    let lb = tokio::time::timeout(Duration::from_secs(5), b.await_leadership())
        .await
        .expect("b leads within 5 s")
        .expect("b");
    JobPointers::new(&oa).put(&la, "j", "p").await.expect("put");
    assert!(JobPointers::new(&ob)
        .list(lb.client())
        .await
        .expect("list")
        .is_empty());
    assert_eq!(
        JobPointers::new(&oa)
            .list(lb.client())
            .await
            .expect("list")
            .len(),
        1
    );
}
