//! Benchmarks of conflux-checkpoint: writing and restoring 1,000 small state files of one
//! checkpoint with and without file merging (in memory, so the figure is the crate's own cost),
//! and the registry's completion with many entries.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;

use conflux_checkpoint::{
    block_on, CheckpointId, CheckpointStorage, FileMergingConfig, FileMergingSnapshotManager,
    JobCheckpoints, ObjectPath as Path, Scope, StateHandle, SubtaskKey, SubtaskState,
};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

const FILES: usize = 1000;

fn write_checkpoint(merged: bool) -> (CheckpointStorage, Vec<StateHandle>) {
    block_on(async {
        let storage = CheckpointStorage::memory();
        let config = FileMergingConfig {
            enabled: merged,
            nonce: Some("b".to_owned()),
            ..FileMergingConfig::default()
        };
        let mut m = FileMergingSnapshotManager::new("tm", storage.clone(), Path::from("r"), config);
        let s = SubtaskKey::new("j", "o", 0, 1);
        let data = vec![7u8; 1024];
        let mut handles = Vec::with_capacity(FILES);
        for _ in 0..FILES {
            handles.push(
                m.write_state(&s, CheckpointId(1), Scope::Shared, &data)
                    .await
                    .expect("write"),
            );
        }
        m.finish_snapshot(&s, CheckpointId(1))
            .await
            .expect("finish");
        (storage, handles)
    })
    .expect("runtime")
}

fn bench_write(c: &mut Criterion) {
    let mut group = c.benchmark_group("checkpoint_write_1000_files");
    for merged in [true, false] {
        group.bench_function(if merged { "merged" } else { "unmerged" }, |b| {
            b.iter(|| black_box(write_checkpoint(merged)));
        });
    }
    group.finish();
}

fn bench_restore(c: &mut Criterion) {
    let mut group = c.benchmark_group("checkpoint_restore_1000_files");
    for merged in [true, false] {
        let (storage, handles) = write_checkpoint(merged);
        group.bench_function(if merged { "merged" } else { "unmerged" }, |b| {
            b.iter(|| {
                block_on(async {
                    for h in &handles {
                        black_box(storage.read_handle(h).await.expect("read"));
                    }
                })
                .expect("runtime");
            });
        });
    }
    group.finish();
}

fn bench_registry(c: &mut Criterion) {
    let (_, handles) = write_checkpoint(false);
    let s = SubtaskKey::new("j", "o", 0, 1);
    c.bench_function("registry_ack_and_complete_1000_shared", |b| {
        b.iter_batched(
            || JobCheckpoints::new(1),
            |mut jm| {
                for id in 1..=3u64 {
                    jm.trigger(CheckpointId(id), [s.clone()]).expect("trigger");
                    let state = SubtaskState {
                        shared: handles
                            .iter()
                            .enumerate()
                            .map(|(i, h)| (format!("{i}.sst"), h.clone()))
                            .collect(),
                        private: Vec::new(),
                    };
                    jm.acknowledge(CheckpointId(id), &s, state).expect("ack");
                    black_box(jm.complete(CheckpointId(id)).expect("complete"));
                }
            },
            BatchSize::SmallInput,
        );
    });
}

criterion_group!(benches, bench_write, bench_restore, bench_registry);
criterion_main!(benches);
