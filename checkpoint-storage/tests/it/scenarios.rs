//! Event-sequence scenarios with the exact objects expected alive and deleted.

use std::sync::Arc;
use std::time::Duration;

use conflux_checkpoint::upload_plan::PlanEntry;
use conflux_checkpoint::{
    sweep_orphans, CheckpointError, CheckpointStorage, FileMergingConfig,
    FileMergingSnapshotManager, IncrementalSnapshotTracker, JobCheckpoints, PlaceholderHandle,
    Protection, RestoreMode, Scope, SharedStateKey, StateHandle, SubtaskState,
};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::throttle::{ThrottleConfig, ThrottledStore};

use crate::common::{cp, handle_of, merged, path_of, set, size_of, subtask, Harness};

/// FLINK-29913: two concurrent checkpoints upload the same local file; keyed by physical
/// identity, completing the second deletes exactly the first's copy.
#[tokio::test]
async fn concurrent_checkpoints_uploading_the_same_local_file() {
    for merging in [false, true] {
        let mut h = Harness::new(merged(merging));
        h.checkpoint(1, &["000001.sst"]).await;
        h.complete(1).await;
        let s2 = h.checkpoint(2, &["000001.sst", "000012.sst"]).await;
        let s3 = h.checkpoint(3, &["000001.sst", "000012.sst"]).await;
        let (x, y) = (path_of(&s2, "000012.sst"), path_of(&s3, "000012.sst"));
        assert_ne!(x, y, "two uploads of one local file are two objects");
        assert_ne!(
            handle_of(&s2, "000012.sst").key(),
            handle_of(&s3, "000012.sst").key()
        );
        let base = path_of(&s2, "000001.sst");
        assert_eq!(
            base,
            path_of(&s3, "000001.sst"),
            "both reuse the confirmed file"
        );
        h.complete(2).await;
        assert_eq!(h.objects().await, set(&[&base, &x, &y]));
        let c = h.complete(3).await;
        assert_eq!(c.subsumed, vec![cp(2)]);
        assert_eq!(h.objects().await, set(&[&base, &y]), "merging {merging}");
        h.check_restores().await;
    }
}

/// A confirmed file re-uploaded by a later pending checkpoint is not reused (Flink's
/// `PreviousSnapshot` pruning): its deletion by that checkpoint's completion would break us.
#[tokio::test]
async fn reuse_of_a_confirmed_file_after_a_later_reupload() {
    for merging in [false, true] {
        let mut h = Harness::new(merged(merging));
        let s1 = h.checkpoint(1, &["00001.sst"]).await;
        // cp2 is triggered before cp1 is confirmed: it uploads 00001.sst again.
        let s2 = h.checkpoint(2, &["00001.sst"]).await;
        h.complete(1).await;
        let s3 = h.checkpoint(3, &["00001.sst"]).await;
        assert!(
            matches!(&h.plans[&3][0], PlanEntry::Upload { .. }),
            "pruned: {:?}",
            h.plans[&3]
        );
        let (x, y, z) = (
            path_of(&s1, "00001.sst"),
            path_of(&s2, "00001.sst"),
            path_of(&s3, "00001.sst"),
        );
        assert_eq!(
            h.objects().await,
            set(&[&x, &y, &z]),
            "three uploads of one local file, all alive while cp2 and cp3 are pending"
        );
        h.complete(2).await;
        assert_eq!(
            h.objects().await,
            set(&[&y, &z]),
            "X deleted by cp2's completion"
        );
        h.complete(3).await;
        assert_eq!(h.objects().await, set(&[&z]));
        h.check_restores().await;
    }
}

/// Abort discards exactly the aborted checkpoint's segments; a missed abort notification is
/// healed by a later subsume (a prefix).
#[tokio::test]
async fn abort_and_subsume_prefixes() {
    let mut h = Harness::new(merged(true));
    let s1 = h.checkpoint(1, &["a.sst"]).await;
    h.complete(1).await;
    let p1 = path_of(&s1, "a.sst");
    let s2 = h.checkpoint(2, &["a.sst", "b.sst"]).await;
    let p2 = path_of(&s2, "b.sst");
    assert_eq!(h.objects().await, set(&[&p1, &p2]));
    h.abort(2, true).await;
    assert_eq!(
        h.objects().await,
        set(&[&p1]),
        "cp2's own file goes with its abort"
    );
    let s3 = h.checkpoint(3, &["a.sst", "c.sst"]).await;
    let p3 = path_of(&s3, "c.sst");
    h.abort(3, false).await; // the task never hears of this abort
    let s4 = h.checkpoint(4, &["a.sst", "d.sst"]).await;
    let p4 = path_of(&s4, "d.sst");
    h.complete(4).await; // subsumes 1 only
    assert_eq!(
        h.objects().await,
        set(&[&p1, &p3, &p4]),
        "cp3's file leaked so far"
    );
    let s5 = h.checkpoint(5, &["a.sst", "d.sst", "e.sst"]).await;
    let p5 = path_of(&s5, "e.sst");
    h.complete(5).await; // subsumes 4: the prefix covers 3
    assert_eq!(h.objects().await, set(&[&p1, &p4, &p5]));
    h.check_restores().await;
}

/// Aborts never delete shared state: an aborted checkpoint's acknowledged uploads stay until a
/// later completion's watermark passes them.
#[tokio::test]
async fn aborts_never_delete_shared_state() {
    let mut h = Harness::new(merged(false));
    let s1 = h.checkpoint(1, &["x.sst"]).await;
    let x = path_of(&s1, "x.sst");
    // The job manager aborts; the task is not told (its cleanup cannot delete acked state).
    h.abort(1, false).await;
    assert_eq!(h.objects().await, set(&[&x]));
    let s2 = h.checkpoint(2, &["y.sst"]).await;
    let y = path_of(&s2, "y.sst");
    h.complete(2).await;
    assert_eq!(
        h.objects().await,
        set(&[&y]),
        "collected after the next completion"
    );
}

/// A pending checkpoint's acknowledged uploads and in-flight uploads survive a sweep; orphans
/// of a checkpoint that never completed do not.
#[tokio::test]
async fn pending_uploads_are_protected_and_orphans_swept() {
    let mut h = Harness::new(merged(false));
    let s1 = h.checkpoint(1, &["x.sst"]).await;
    h.complete(1).await;
    let s2 = h.checkpoint(2, &["x.sst", "y.sst"]).await; // acked, pending
    let s3 = h.snapshot(3, &["x.sst", "y.sst", "z.sst"]).await; // uploaded, not acked
    let (x, y, z) = (
        path_of(&s1, "x.sst"),
        path_of(&s2, "y.sst"),
        path_of(&s3, "z.sst"),
    );
    let y3 = path_of(&s3, "y.sst");
    let reachable = h.jm.reachable_paths();
    let report = sweep_orphans(&h.storage, None, Duration::ZERO, || Protection {
        paths: reachable.clone(),
        in_flight_watermark: Some(cp(3)),
    })
    .await
    .unwrap();
    assert!(report.deleted.is_empty(), "{report:?}");
    assert_eq!(report.kept_in_flight, 2);
    // A young object survives without a watermark too.
    let report = sweep_orphans(&h.storage, None, Duration::from_secs(3600), || Protection {
        paths: reachable.clone(),
        in_flight_watermark: None,
    })
    .await
    .unwrap();
    assert!(report.deleted.is_empty());
    assert_eq!(report.kept_young, 2);
    // The job manager fails over: cp2 and cp3 are lost; their uploads are orphans.
    let retained: Vec<_> = h.jm.retained().cloned().collect();
    h.jm = JobCheckpoints::recover(retained, 1);
    let protection = Protection {
        paths: h.jm.reachable_paths(),
        in_flight_watermark: None,
    };
    let report = sweep_orphans(&h.storage, None, Duration::ZERO, || protection)
        .await
        .unwrap();
    let mut deleted = report.deleted.clone();
    deleted.sort();
    let mut expected = vec![y, y3, z];
    expected.sort();
    assert_eq!(deleted, expected);
    assert_eq!(h.objects().await, set(&[&x]));
}

/// The same logical file discarded twice (abort after subsume, repeated subsume) counts once
/// (FLINK-36125).
#[tokio::test]
async fn double_discard_of_a_logical_file() {
    let mut h = Harness::new(merged(true));
    let s1 = h.checkpoint(1, &["a.sst", "b.sst"]).await;
    h.complete(1).await;
    let p1 = path_of(&s1, "a.sst");
    let s2 = h.checkpoint(2, &["a.sst"]).await;
    assert_eq!(
        handle_of(&s2, "a.sst"),
        handle_of(&s1, "a.sst"),
        "cp2 reuses cp1's segment of a.sst"
    );
    h.complete(2).await;
    let s = subtask();
    for _ in 0..3 {
        h.manager
            .notify_checkpoint_subsumed(&s, cp(1))
            .await
            .unwrap();
        h.manager
            .notify_checkpoint_aborted(&s, cp(1))
            .await
            .unwrap();
    }
    let stats = h.manager.space_stats();
    assert_eq!(
        (
            stats.physical_files,
            stats.logical_files,
            stats.logical_bytes
        ),
        (1, 1, size_of("a.sst")),
        "{stats:?}"
    );
    assert_eq!(h.objects().await, set(&[&p1]));
    h.check_restores().await;
    let s3 = h.checkpoint(3, &["c.sst"]).await;
    h.complete(3).await;
    h.manager
        .notify_checkpoint_subsumed(&s, cp(2))
        .await
        .unwrap();
    let p3 = path_of(&s3, "c.sst");
    assert_ne!(p3, p1);
    assert_eq!(
        h.objects().await,
        set(&[&p3]),
        "a.sst's file goes once cp2, its last user, is subsumed"
    );
    let stats = h.manager.space_stats();
    assert_eq!(
        (
            stats.physical_files,
            stats.logical_files,
            stats.logical_bytes
        ),
        (1, 1, size_of("c.sst")),
        "{stats:?}"
    );
}

/// A physical file stays while a reused segment in it is live, and goes with its last one.
#[tokio::test]
async fn physical_file_dies_only_with_its_last_live_segment() {
    let mut h = Harness::new(merged(true));
    let s1 = h.checkpoint(1, &["a.sst", "b.sst"]).await;
    let p1 = path_of(&s1, "a.sst");
    assert_eq!(p1, path_of(&s1, "b.sst"), "one physical file");
    h.complete(1).await;
    let s2 = h.checkpoint(2, &["a.sst", "c.sst"]).await;
    let p2 = path_of(&s2, "c.sst");
    h.complete(2).await; // b dies, a lives
    assert_eq!(h.objects().await, set(&[&p1, &p2]));
    h.check_restores().await;
    let s3 = h.checkpoint(3, &["c.sst"]).await;
    h.complete(3).await; // a dies: the file goes
    assert_eq!(h.objects().await, set(&[&p2]));
    h.check_restores().await;
    assert_eq!(path_of(&s3, "c.sst"), p2);
}

/// Job-manager failover, then restore in CLAIM mode: the restored files are collected once no
/// checkpoint needs them, merged or not.
#[tokio::test]
async fn failover_and_restore_in_claim_mode() {
    for merging in [false, true] {
        let mut h = Harness::new(merged(merging));
        let s1 = h.checkpoint(1, &["x.sst", "y.sst"]).await;
        h.complete(1).await;
        let orphan = h.snapshot(2, &["x.sst", "y.sst", "w.sst"]).await; // never acked
                                                                        // Failover: registry rebuilt, a new manager restores the latest checkpoint.
        let retained: Vec<_> = h.jm.retained().cloned().collect();
        let latest = retained[0].clone();
        h.jm = JobCheckpoints::recover(retained, 1);
        let mut config = merged(merging);
        config.nonce = Some("m".to_owned());
        h.manager = FileMergingSnapshotManager::new(
            "job_job_tm_0",
            h.storage.clone(),
            Path::from("root"),
            config,
        );
        let state = latest.subtasks[&subtask()].clone();
        let handles: Vec<StateHandle> = state.shared.iter().map(|(_, h)| h.clone()).collect();
        h.manager
            .restore(&subtask(), cp(1), &handles, RestoreMode::Claim)
            .await
            .unwrap();
        h.tracker = IncrementalSnapshotTracker::restored(cp(1), record(&state));
        let protection = Protection {
            paths: h.jm.reachable_paths(),
            in_flight_watermark: None,
        };
        let swept = sweep_orphans(&h.storage, None, Duration::ZERO, || protection)
            .await
            .unwrap();
        assert_eq!(
            swept.deleted,
            vec![path_of(&orphan, "w.sst")],
            "merging {merging}"
        );
        h.check_restores().await;
        let s3 = h.checkpoint(3, &["y.sst", "z.sst"]).await;
        let z = path_of(&s3, "z.sst");
        h.complete(3).await;
        let y = path_of(&s1, "y.sst");
        if merging {
            // x died, y lives in the same physical file: the file stays.
            assert_eq!(path_of(&s3, "y.sst"), y);
            assert_eq!(h.objects().await, set(&[&y, &z]));
        } else {
            assert_eq!(
                h.objects().await,
                set(&[&y, &z]),
                "x collected by the registry"
            );
        }
        h.checkpoint(4, &["z.sst"]).await;
        h.complete(4).await;
        assert_eq!(h.objects().await, set(&[&z]), "merging {merging}");
        h.check_restores().await;
    }
}

fn record(state: &SubtaskState) -> conflux_checkpoint::upload_plan::SnapshotRecord {
    conflux_checkpoint::upload_plan::SnapshotRecord {
        sst: state
            .shared
            .iter()
            .map(|(n, h)| {
                (
                    n.clone(),
                    conflux_checkpoint::upload_plan::RecordedFile {
                        handle: h.clone(),
                        uploaded: false,
                    },
                )
            })
            .collect(),
        manifest: None,
    }
}

/// A job started from another job's snapshot in NO_CLAIM mode never deletes nor references it.
#[tokio::test]
async fn restore_in_no_claim_mode_never_deletes_the_snapshot() {
    for merging in [false, true] {
        let storage = CheckpointStorage::memory();
        let mut a = Harness::on(storage.clone(), merged(merging), 1);
        let s1 = a.checkpoint(1, &["x.sst", "y.sst"]).await;
        a.complete(1).await;
        let snapshot = a.jm.latest().cloned().unwrap();
        let original = a.objects().await;

        let mut config = merged(merging);
        config.nonce = Some("b".to_owned());
        let mut b = Harness::on(storage.clone(), config, 1);
        b.manager = FileMergingSnapshotManager::new(
            "job_b_tm_0",
            storage.clone(),
            Path::from("root-b"),
            b.manager.config().clone(),
        );
        b.jm.restore_initial(&snapshot, RestoreMode::NoClaim);
        let handles: Vec<StateHandle> = s1.shared.iter().map(|(_, h)| h.clone()).collect();
        b.manager
            .restore(&subtask(), cp(1), &handles, RestoreMode::NoClaim)
            .await
            .unwrap();
        assert_eq!(
            b.manager.try_reuse(cp(2), &handles[0]),
            None,
            "never referenced"
        );
        for id in 2..6 {
            b.checkpoint(id, &["x.sst", "y.sst"]).await;
            b.complete(id).await;
        }
        assert_eq!(
            b.plans[&2]
                .iter()
                .filter(|e| matches!(e, PlanEntry::Upload { .. }))
                .count(),
            2
        );
        let now = b.objects().await;
        assert!(
            original.is_subset(&now),
            "the snapshot stays: {original:?} {now:?}"
        );
        b.check_restores().await;
        assert_eq!(b.jm.registry().highest_not_claimed(), Some(cp(1)));
    }
}

/// A placeholder for state the registry never saw is refused, and nothing is registered.
#[tokio::test]
async fn placeholder_of_unknown_state_is_refused() {
    let mut jm = JobCheckpoints::new(1);
    jm.trigger(cp(1), [subtask()]).unwrap();
    let state = SubtaskState {
        shared: vec![(
            "x.sst".to_owned(),
            StateHandle::Placeholder(PlaceholderHandle {
                key: SharedStateKey::Object("root/nope".to_owned()),
                size: 3,
            }),
        )],
        private: vec![],
    };
    let err = jm.acknowledge(cp(1), &subtask(), state).unwrap_err();
    assert!(
        matches!(err, CheckpointError::UnknownSharedState { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("root/nope"));
    assert!(jm.registry().is_empty());
}

/// Segments restore byte-exactly; files roll at the size cap; two concurrent checkpoints never
/// write one physical file (within-boundary mode).
#[tokio::test]
async fn segments_roll_restore_and_never_mix_checkpoints() {
    let storage = CheckpointStorage::memory();
    let config = FileMergingConfig {
        max_file_size: 250,
        ..merged(true)
    };
    let mut m = FileMergingSnapshotManager::new("tm", storage.clone(), Path::from("r"), config);
    let s = subtask();
    let mut handles = Vec::new();
    for i in 0..10u8 {
        // Interleave two checkpoints.
        for c in [1, 2] {
            let data = vec![i * 2 + c; 100];
            let h = m
                .write_state(&s, cp(u64::from(c)), Scope::Shared, &data)
                .await
                .unwrap();
            handles.push((c, data, h));
        }
    }
    m.finish_snapshot(&s, cp(1)).await.unwrap();
    m.finish_snapshot(&s, cp(2)).await.unwrap();
    let files = |c: u8| -> std::collections::BTreeSet<String> {
        handles
            .iter()
            .filter(|(x, _, _)| *x == c)
            .map(|(_, _, h)| h.path().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        files(1).len(),
        5,
        "2 segments of 100 bytes per 250-byte file"
    );
    assert!(files(1).is_disjoint(&files(2)));
    for (_, data, h) in &handles {
        assert_eq!(
            storage.read_handle(h).await.unwrap().as_ref(),
            data.as_slice()
        );
    }
    assert_eq!(storage.counts().objects_created, 10);
}

/// Across-boundary mode: an unfilled file takes a later checkpoint's segments, one checkpoint
/// at a time; a concurrent checkpoint gets another file; earlier segments read the same bytes
/// after the file is re-written.
#[tokio::test]
async fn across_boundary_with_concurrent_checkpoints() {
    let storage = CheckpointStorage::memory();
    let config = FileMergingConfig {
        across_checkpoint_boundary: true,
        ..merged(true)
    };
    let mut m = FileMergingSnapshotManager::new("tm", storage.clone(), Path::from("r"), config);
    let s = subtask();
    let a = m
        .write_state(&s, cp(1), Scope::Shared, b"aaaa")
        .await
        .unwrap();
    m.finish_snapshot(&s, cp(1)).await.unwrap();
    m.notify_checkpoint_complete(&s, cp(1));
    let b = m
        .write_state(&s, cp(2), Scope::Shared, b"bbbbbb")
        .await
        .unwrap();
    let c = m
        .write_state(&s, cp(3), Scope::Shared, b"cc")
        .await
        .unwrap();
    assert_eq!(a.path(), b.path(), "cp2 appends to cp1's file");
    assert_ne!(b.path(), c.path(), "cp3 runs concurrently: another file");
    m.finish_snapshot(&s, cp(2)).await.unwrap();
    m.finish_snapshot(&s, cp(3)).await.unwrap();
    assert_eq!(storage.read_handle(&a).await.unwrap().as_ref(), b"aaaa");
    assert_eq!(storage.read_handle(&b).await.unwrap().as_ref(), b"bbbbbb");
    m.notify_checkpoint_complete(&s, cp(2));
    m.notify_checkpoint_subsumed(&s, cp(1)).await.unwrap();
    m.notify_checkpoint_aborted(&s, cp(3)).await.unwrap();
    // The file of a, b is open in the pool with b live; c's file is open with nothing live.
    m.close_idle_files().await.unwrap();
    let objects: Vec<String> = storage
        .list(None)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.location.to_string())
        .collect();
    assert_eq!(objects, vec![b.path().unwrap().to_string()]);
    assert_eq!(storage.read_handle(&b).await.unwrap().as_ref(), b"bbbbbb");
}

/// Handles of non-merged checkpoints restore under merging and are re-uploaded merged; merged
/// handles restore without merging and are re-uploaded as files (compatibility both ways).
#[tokio::test]
async fn merged_and_unmerged_checkpoints_restore_both_ways() {
    for (first, second) in [(false, true), (true, false)] {
        let mut h = Harness::new(merged(first));
        let s1 = h.checkpoint(1, &["x.sst", "y.sst"]).await;
        h.complete(1).await;
        let mut config = merged(second);
        config.nonce = Some("m".to_owned());
        h.manager = FileMergingSnapshotManager::new(
            "job_job_tm_0",
            h.storage.clone(),
            Path::from("root"),
            config,
        );
        let handles: Vec<StateHandle> = s1.shared.iter().map(|(_, h)| h.clone()).collect();
        h.manager
            .restore(&subtask(), cp(1), &handles, RestoreMode::Claim)
            .await
            .unwrap();
        h.tracker = IncrementalSnapshotTracker::restored(cp(1), record(&s1));
        h.check_restores().await;
        let s2 = h.checkpoint(2, &["x.sst", "y.sst"]).await;
        assert!(
            h.plans[&2]
                .iter()
                .all(|e| matches!(e, PlanEntry::Upload { .. })),
            "re-uploaded in the new format"
        );
        let is_segment = matches!(handle_of(&s2, "x.sst"), StateHandle::Segment(_));
        assert_eq!(is_segment, second);
        h.complete(2).await;
        let expected: std::collections::BTreeSet<String> =
            [path_of(&s2, "x.sst"), path_of(&s2, "y.sst")]
                .into_iter()
                .collect();
        assert_eq!(h.objects().await, expected, "{first} -> {second}");
        h.check_restores().await;
    }
}

/// An abort cancels an upload in flight (FLINK-8871): the slow PUT is dropped at once.
#[tokio::test]
async fn abort_cancels_uploads_in_flight() {
    let slow = ThrottledStore::new(
        InMemory::new(),
        ThrottleConfig {
            wait_put_per_call: Duration::from_secs(30),
            ..ThrottleConfig::default()
        },
    );
    let storage = CheckpointStorage::from_object_store(Arc::new(slow), "slow memory");
    let mut m = FileMergingSnapshotManager::new("tm", storage, Path::from("r"), merged(false));
    let canceller = m.canceller();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        canceller.abort(cp(7));
    });
    let start = std::time::Instant::now();
    let err = m
        .write_state(&subtask(), cp(7), Scope::Shared, b"data")
        .await
        .unwrap_err();
    assert!(matches!(err, CheckpointError::Aborted { checkpoint } if checkpoint == cp(7)));
    assert!(start.elapsed() < Duration::from_secs(5));
    // Later writes of the aborted checkpoint are refused at once.
    let err = m
        .write_state(&subtask(), cp(7), Scope::Shared, b"x")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("chk-7 was aborted"), "{err}");
}

/// Space control: compaction rewrites the most wasteful file and the next checkpoint uses the
/// copies, so the old file drains (Alibaba); exclusion stops reuse instead (Flink).
#[tokio::test]
async fn space_control_compacts_or_excludes() {
    for control in [
        conflux_checkpoint::SpaceControl::Compaction,
        conflux_checkpoint::SpaceControl::ExcludeFromReuse,
    ] {
        let config = FileMergingConfig {
            max_space_amplification: 1.2,
            space_control: control,
            ..merged(true)
        };
        let mut h = Harness::new(config);
        let names: Vec<String> = (0..10).map(|i| format!("{i:02}.sst")).collect();
        let all: Vec<&str> = names.iter().map(String::as_str).collect();
        let s1 = h.checkpoint(1, &all).await;
        h.complete(1).await;
        // Only 2 of 10 files survive: the first file is 80% waste.
        let s2 = h.checkpoint(2, &all[..2]).await;
        h.complete(2).await;
        let before = h.manager.space_stats().amplification();
        assert!(before > 3.0, "{before}");
        let report = h.manager.control_space().await.unwrap();
        assert_eq!(report.files_selected, 1, "{report:?}");
        let s3 = h.checkpoint(3, &all[..2]).await;
        let old = path_of(&s1, "00.sst");
        assert_eq!(path_of(&s2, "00.sst"), old);
        match control {
            conflux_checkpoint::SpaceControl::Compaction => {
                assert!(h.plans[&3]
                    .iter()
                    .all(|e| matches!(e, PlanEntry::Reuse { .. })));
                assert_eq!(report.segments_copied, 2);
            }
            conflux_checkpoint::SpaceControl::ExcludeFromReuse => {
                assert!(h.plans[&3]
                    .iter()
                    .all(|e| matches!(e, PlanEntry::Upload { .. })));
            }
        }
        assert_ne!(path_of(&s3, "00.sst"), old);
        h.complete(3).await;
        assert!(!h.objects().await.contains(&old), "{control:?}");
        let after = h.manager.space_stats().amplification();
        assert!((after - 1.0).abs() < 1e-9, "{control:?}: {after}");
        h.check_restores().await;
    }
}

/// A retired segment keeps its file until its checkpoint is subsumed, but counts as waste at
/// once; a reuse makes it live again; its discard does not subtract its bytes twice.
#[tokio::test]
async fn retired_segments_count_as_waste_until_they_die() {
    let mut h = Harness::new(merged(true));
    let s1 = h.checkpoint(1, &["a.sst", "b.sst", "c.sst"]).await;
    h.complete(1).await;
    let p1 = path_of(&s1, "a.sst");
    let (a, b, c) = (size_of("a.sst"), size_of("b.sst"), size_of("c.sst"));
    let stats = h.manager.space_stats();
    assert_eq!(
        (stats.physical_bytes, stats.logical_bytes),
        (a + b + c, a + b + c)
    );
    h.manager
        .retire(&[handle_of(&s1, "b.sst"), handle_of(&s1, "c.sst")]);
    h.manager.retire(&[handle_of(&s1, "b.sst")]); // idempotent
    let stats = h.manager.space_stats();
    assert_eq!((stats.physical_bytes, stats.logical_bytes), (a + b + c, a));
    assert_eq!(stats.logical_files, 3, "retired segments keep their file");
    // cp2 reuses c after all: live again.
    let s2 = h.checkpoint(2, &["a.sst", "c.sst"]).await;
    assert_eq!(path_of(&s2, "c.sst"), p1);
    assert_eq!(h.manager.space_stats().logical_bytes, a + c);
    h.complete(2).await; // b dies
    let stats = h.manager.space_stats();
    assert_eq!(
        (
            stats.physical_bytes,
            stats.logical_files,
            stats.logical_bytes
        ),
        (a + b + c, 2, a + c)
    );
    assert_eq!(h.objects().await, set(&[&p1]));
    h.check_restores().await;
}
