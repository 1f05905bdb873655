//! The simulation behind `conflux checkpoint-sim`, small and seeded.

use conflux_checkpoint::sim::{run, run_mode, SimConfig};
use conflux_checkpoint::{ManifestPolicy, StorageConfig};

fn small() -> SimConfig {
    SimConfig {
        subtasks: 2,
        checkpoints: 40,
        files_per_checkpoint: 60,
        storage: StorageConfig::Memory,
        ..SimConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merged_run_restores_everything_with_far_fewer_objects() {
    let report = run(&small()).await.unwrap();
    for r in [&report.merged, &report.unmerged] {
        assert_eq!(r.restore_failures, 0, "{:?}", r.first_failure);
        assert!(r.restored_files_checked > 0);
        assert_eq!(r.failovers, 2);
    }
    assert!(report.objects_ratio >= 10.0, "{report:?}");
    assert!((report.unmerged.space_amplification - 1.0).abs() < 1e-9);
    assert!(report.merged.space_amplification <= 1.3, "{report:?}");
    assert_eq!(report.merged.logical_bytes, report.unmerged.logical_bytes);
}

/// Misc bytes per checkpoint stay flat over 1,000 checkpoints (appended MANIFEST
/// ranges), while Flink's full MANIFEST upload grows with the checkpoint count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misc_bytes_per_checkpoint_flat_over_1000_checkpoints() {
    let config = SimConfig {
        subtasks: 1,
        checkpoints: 1000,
        files_per_checkpoint: 8,
        failovers: 0,
        abort_rate: 0.0,
        ..small()
    };
    let ours = run_mode(&config, false).await.unwrap();
    let misc = &ours.misc_bytes_per_checkpoint;
    assert!(misc.last <= misc.first * 1.25 + 64.0, "{misc:?}");
    assert_eq!(ours.restore_failures, 0);
    let flink = run_mode(
        &SimConfig {
            manifest: ManifestPolicy::Full,
            checkpoints: 300,
            ..config
        },
        false,
    )
    .await
    .unwrap();
    let grows = &flink.misc_bytes_per_checkpoint;
    assert!(grows.last > grows.first * 5.0, "{grows:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn across_boundary_and_exclusion_runs_restore_everything() {
    let mut config = small();
    config.merging.across_checkpoint_boundary = true;
    config.max_concurrent = 3;
    config.overlap_rate = 0.5;
    let r = run_mode(&config, true).await.unwrap();
    assert_eq!(r.restore_failures, 0, "{:?}", r.first_failure);
    config.merging.across_checkpoint_boundary = false;
    config.merging.space_control = conflux_checkpoint::SpaceControl::ExcludeFromReuse;
    let r = run_mode(&config, true).await.unwrap();
    assert_eq!(r.restore_failures, 0, "{:?}", r.first_failure);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_filesystem_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = SimConfig {
        checkpoints: 12,
        storage: StorageConfig::Local {
            dir: dir.path().to_path_buf(),
        },
        ..small()
    };
    let report = run(&config).await.unwrap();
    assert_eq!(
        report.merged.restore_failures + report.unmerged.restore_failures,
        0
    );
    assert!(dir.path().join("merged").is_dir());
}

/// Space control holds in both merging modes. Across the checkpoint boundary, files stayed
/// open in the subtask's pool until they filled up, so dead segments piled up where space
/// control never looked: `checkpoint-sim --across-checkpoint-boundary` ended at amplification
/// 2.85 (this run: 3.4), and an abort-heavy run with many concurrent checkpoints at 20.4 with
/// no compaction at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn space_amplification_within_the_limit_in_both_modes() {
    let churn = SimConfig {
        failovers: 0,
        ..small()
    };
    for (config, across) in [
        (churn.clone(), false),
        (churn, true),
        (small(), false),
        (small(), true),
    ] {
        let mut config = config;
        config.merging.across_checkpoint_boundary = across;
        let r = run_mode(&config, true).await.unwrap();
        let what = format!(
            "across boundary {across}, {} failovers: {r:?}",
            config.failovers
        );
        assert_eq!(r.restore_failures, 0, "{what}");
        assert!(r.space_amplification <= 1.2, "{what}");
        assert!(r.steady_space_amplification.max <= 1.2, "{what}");
        assert!(r.compactions > 0, "{what}");
    }
}

/// The abort-heavy reproduction, scaled down: 30% aborts, up to 8 concurrent checkpoints, so
/// several checkpoints are planned between two completions and the last completions run
/// without compaction (no later checkpoint would use the copies). Before the fix, across the
/// boundary it exceeded 10. Then compaction counted segments as live while any pending
/// checkpoint used them and copied them all: the files the newest checkpoint referenced kept
/// what it had already dropped, and each completion realised that waste (this run: 1.23
/// without and 1.29 across the boundary; the full-size `checkpoint-sim` run 1.248).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn space_control_with_aborts_and_concurrent_checkpoints() {
    let aborts = SimConfig {
        abort_rate: 0.3,
        overlap_rate: 0.8,
        max_concurrent: 8,
        failovers: 0,
        seed: 5,
        checkpoints: 60,
        files_per_checkpoint: 100,
        ..small()
    };
    for across in [false, true] {
        let mut config = aborts.clone();
        config.merging.across_checkpoint_boundary = across;
        let r = run_mode(&config, true).await.unwrap();
        let what = format!("across boundary {across}: {r:?}");
        assert_eq!(r.restore_failures, 0, "{what}");
        assert!(r.space_amplification <= 1.2, "{what}");
        assert!(r.steady_space_amplification.max <= 1.2, "{what}");
        assert!(r.compactions > 0, "{what}");
    }
}
