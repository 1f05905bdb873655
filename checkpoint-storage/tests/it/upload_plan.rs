//! Incremental upload plans: classification, reuse only from the confirmed base, MANIFEST ranges.

use conflux_checkpoint::upload_plan::{classify, FileClass, LocalFile, ManifestPolicy, PlanEntry};
use conflux_checkpoint::{
    IncrementalSnapshotTracker, LocalSnapshot, Scope, StateHandle, UploadPlanConfig,
};

use crate::common::{cp, merged, Harness};

#[test]
fn classification() {
    for (name, class) in [
        ("000012.sst", FileClass::Sst),
        ("MANIFEST-000004", FileClass::Manifest),
        ("CURRENT", FileClass::SmallMutable),
        ("OPTIONS-000007", FileClass::SmallMutable),
        ("LOG", FileClass::Log),
        ("LOG.old.1700000000", FileClass::Log),
        ("000003.log", FileClass::Log),
    ] {
        assert_eq!(classify(name), class, "{name}");
    }
}

#[test]
fn logs_are_never_uploaded_and_small_files_go_in_full() {
    let dir = tempfile::tempdir().unwrap();
    for (name, size) in [
        ("LOG", 5000),
        ("CURRENT", 16),
        ("OPTIONS-000002", 900),
        ("000001.sst", 100),
    ] {
        std::fs::write(dir.path().join(name), vec![1u8; size]).unwrap();
    }
    let snapshot = LocalSnapshot::scan(dir.path()).unwrap();
    assert_eq!(snapshot.files.len(), 4);
    let plan = IncrementalSnapshotTracker::new().plan(
        cp(1),
        &snapshot,
        &UploadPlanConfig::default(),
        |_| None,
    );
    let skipped: Vec<_> = plan
        .entries
        .iter()
        .filter_map(|e| match e {
            PlanEntry::Skip { name } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(skipped, vec!["LOG"]);
    assert_eq!(plan.upload_bytes(), (100, 916));
    assert!(plan.entries.iter().any(|e| matches!(e, PlanEntry::Upload { name, scope: Scope::Exclusive, .. } if name == "CURRENT")));
}

#[test]
fn scan_of_a_missing_directory_names_it() {
    let err = LocalSnapshot::scan(std::path::Path::new("/no/such/snapshot")).unwrap_err();
    assert!(err.to_string().contains("/no/such/snapshot"), "{err}");
}

/// The MANIFEST goes up as appended ranges chained from the confirmed base, reassembled on
/// restore; a new MANIFEST number starts a new chain; Flink's policy uploads it whole.
#[tokio::test]
async fn manifest_as_appended_ranges() {
    let mut h = Harness::new(merged(true));
    // The harness sizes files by name; drive the tracker directly for the MANIFEST.
    let snapshot = |len: u64| LocalSnapshot {
        files: vec![LocalFile {
            name: "MANIFEST-000001".to_owned(),
            size: len,
        }],
    };
    let config = UploadPlanConfig::default();
    let p1 = h.tracker.plan(cp(1), &snapshot(100), &config, |_| None);
    assert_eq!(
        p1.entries,
        vec![PlanEntry::ManifestRange {
            name: "MANIFEST-000001".to_owned(),
            base: vec![],
            range: 0..100
        }]
    );
    let record1 = conflux_checkpoint::upload_plan::SnapshotRecord {
        sst: Default::default(),
        manifest: Some(conflux_checkpoint::upload_plan::ManifestChain {
            name: "MANIFEST-000001".to_owned(),
            pieces: vec![conflux_checkpoint::upload_plan::ManifestPiece {
                range: 0..100,
                handle: StateHandle::File(conflux_checkpoint::FileHandle {
                    path: "x".into(),
                    size: 100,
                    scope: Scope::Shared,
                }),
            }],
            uploaded_from: 0,
        }),
    };
    h.tracker.record(cp(1), record1);
    // Not confirmed yet: nothing is reused.
    let p2 = h
        .tracker
        .plan(cp(2), &snapshot(150), &config, |h| Some(h.clone()));
    assert!(
        matches!(&p2.entries[0], PlanEntry::ManifestRange { base, range, .. } if base.is_empty() && *range == (0..150))
    );
    h.tracker.notify_complete(cp(1));
    let p3 = h
        .tracker
        .plan(cp(3), &snapshot(150), &config, |h| Some(h.clone()));
    assert!(
        matches!(&p3.entries[0], PlanEntry::ManifestRange { base, range, .. } if base.len() == 1 && *range == (100..150))
    );
    assert_eq!(p3.upload_bytes(), (0, 50));
    // A rolled MANIFEST (new number) starts over.
    let rolled = LocalSnapshot {
        files: vec![LocalFile {
            name: "MANIFEST-000009".to_owned(),
            size: 70,
        }],
    };
    let p4 = h.tracker.plan(cp(4), &rolled, &config, |h| Some(h.clone()));
    assert_eq!(p4.upload_bytes(), (0, 70));
    let full = UploadPlanConfig {
        manifest: ManifestPolicy::Full,
        ..config
    };
    let p5 = h
        .tracker
        .plan(cp(5), &snapshot(150), &full, |h| Some(h.clone()));
    assert_eq!(p5.upload_bytes(), (0, 150));
}

/// End to end through storage: chained MANIFEST pieces restore byte-exactly.
#[tokio::test]
async fn manifest_chain_restores() {
    for merging in [false, true] {
        let mut h = Harness::new(merged(merging));
        for id in 1..6 {
            // The harness sizes files by name: vary the name's length through the id.
            let name = "MANIFEST-000001";
            let state = h.snapshot(id, &[name, "a.sst"]).await;
            h.ack(id, state);
            h.complete(id).await;
            h.check_restores().await;
        }
    }
}
