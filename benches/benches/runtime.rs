//! The JobManager's RPC throughput: a JobManager and two TaskManagers in this process, talking
//! over loopback TCP, run a blocking word count whose tasks finish at once. Every task costs
//! the JobManager three messages to handle (submission acknowledgement, RUNNING, FINISHED) and
//! one to send, so the throughput reported is task state updates handled per second (two per
//! task; acknowledgements not counted). `conflux cluster` reports the same path with real
//! TaskManager processes.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use conflux_graph::{generate, ResultPartitionType};
use conflux_runtime::protocol::{JobOptions, JobSubmission};
use conflux_runtime::{JobManager, JobManagerConfig, TaskManager, TaskManagerConfig};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// A JobManager and two TaskManagers of `slots` slots each in this process, on loopback.
struct Cluster {
    runtime: tokio::runtime::Runtime,
    dir: tempfile::TempDir,
    jm: JobManager,
    /// Set to stop the TaskManagers.
    stop: tokio::sync::watch::Sender<bool>,
}

impl Cluster {
    fn start(slots: u32, spread_out_slots: bool) -> Cluster {
        Cluster::start_with(slots, spread_out_slots, false)
    }

    /// With `storage`, the JobManager keeps its jobs and their event logs in a storage
    /// directory (`high-availability.storageDir`) under the temporary directory.
    fn start_with(slots: u32, spread_out_slots: bool, storage: bool) -> Cluster {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = JobManagerConfig::new(
            SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            dir.path().join("blobs"),
        );
        config.scheduler.evenly_spread_out_slots = spread_out_slots;
        if storage {
            config.storage_dir = Some(dir.path().join("ha"));
        }
        let jm = runtime
            .block_on(JobManager::start(config))
            .expect("JobManager");
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        for i in 0..2 {
            let config = TaskManagerConfig::new(
                jm.address().to_string(),
                slots,
                dir.path().join(format!("tm-{i}")),
            );
            let mut stop = stop_rx.clone();
            runtime.spawn(TaskManager::run(config, async move {
                let _ = stop.wait_for(|s| *s).await;
            }));
        }
        runtime.block_on(async {
            while jm.task_managers().len() < 2 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        Cluster {
            runtime,
            dir,
            jm,
            stop,
        }
    }
}

fn bench_rpc_throughput(c: &mut Criterion) {
    let Cluster {
        runtime,
        // Kept to the end: the TaskManagers work in it.
        dir: _dir,
        jm,
        stop: stop_tx,
    } = Cluster::start(1_000, false);

    let mut group = c.benchmark_group("jobmanager_rpc");
    group.sample_size(10);
    for n in [1_000u32, 2_000] {
        let job = generate::word_count(n, ResultPartitionType::Blocking).to_json_pretty();
        group.throughput(Throughput::Elements(u64::from(n) * 2 * 2));
        group.bench_with_input(
            BenchmarkId::new("task_state_updates_word_count", n),
            &job,
            |b, job| {
                b.iter(|| {
                    runtime.block_on(async {
                        let id = jm
                            .submit(JobSubmission {
                                job: job.clone().into_bytes().into(),
                                source: "bench".into(),
                                options: JobOptions {
                                    task_duration_ms: (0, 0),
                                    ..JobOptions::default()
                                },
                            })
                            .await
                            .expect("submitted");
                        let report = jm.wait(id).await.expect("ended");
                        assert_eq!(report.status, "FINISHED");
                    });
                });
            },
        );
    }
    group.finish();
    let _ = stop_tx.send(true);
    runtime.block_on(jm.shutdown());
}

/// The data plane's shuffle: the same in-process cluster (two TaskManagers of 8 slots, slots
/// spread out) runs an 8 x 8 word count of 8,000,000 words whose tasks generate, route, write,
/// serve, read and count one record per word, BLOCKING (partition files) and PIPELINED
/// (credit-bounded queues). Throughput: the shuffle bytes the job reports, so criterion prints
/// the shuffle rate (`conflux cluster` reports it for real processes).
fn bench_word_count_shuffle(c: &mut Criterion) {
    let Cluster {
        runtime,
        dir,
        jm,
        stop: stop_tx,
    } = Cluster::start(8, true);
    let run = |job: &str| {
        runtime.block_on(async {
            let id = jm
                .submit(JobSubmission {
                    job: job.to_owned().into_bytes().into(),
                    source: "bench".into(),
                    options: JobOptions {
                        output_dir: Some(dir.path().join("out")),
                        ..JobOptions::default()
                    },
                })
                .await
                .expect("submitted");
            let report = jm.wait(id).await.expect("ended");
            assert_eq!(report.status, "FINISHED", "{:?}", report.failure_reason);
            report.data.expect("a data report").shuffle_bytes
        })
    };
    let mut group = c.benchmark_group("word_count_shuffle");
    group.sample_size(10);
    for partition_type in [
        ResultPartitionType::Blocking,
        ResultPartitionType::PipelinedBounded,
    ] {
        let mut job = generate::word_count(8, partition_type);
        for v in &mut job.vertices {
            let source = v.id == "source";
            v.invokable = Some(
                if source {
                    "wordcount-source"
                } else {
                    "wordcount-count"
                }
                .into(),
            );
            v.config = [
                ("words-per-source", "1000000"),
                ("vocabulary", "100000"),
                ("seed", "1"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        }
        let job = job.to_json_pretty();
        group.throughput(Throughput::Bytes(run(&job)));
        group.bench_with_input(
            BenchmarkId::new("8x8_8m_words", partition_type.as_str()),
            &job,
            |b, job| b.iter(|| run(job)),
        );
    }
    group.finish();
    let _ = stop_tx.send(true);
    runtime.block_on(jm.shutdown());
}

/// The event log's cost (batch job recovery, FLIP-383): the 10k x 10k no-op blocking word count
/// on the in-process cluster (two TaskManagers of 10,000 slots) with and without a storage
/// directory, side by side; the ratio of the two is the log's share of the wall time. Also
/// prints the size of that job's event log at its largest (every task finished), written
/// through the same writer with the same events.
fn bench_event_log(c: &mut Criterion) {
    let n = 10_000u32;
    let job = generate::word_count(n, ResultPartitionType::Blocking).to_json_pretty();
    {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = conflux_job_store::StorageDir::open(dir.path()).expect("store");
        let mut log = store
            .event_log("0123456789abcdef0123456789abcdef", Default::default())
            .expect("log");
        // Finishes come in bursts of a few hundred per batch in the JobManager.
        let events: Vec<conflux_job_store::JobEvent> = (0..2 * n)
            .map(|v| {
                conflux_job_store::JobEvent::TaskFinished(conflux_job_store::FinishedExecution {
                    vertex: v,
                    attempt: 0,
                    data_address: format!("127.0.0.1:{}", 40_000 + v % 2),
                    produced_bytes: Vec::new(),
                })
            })
            .collect();
        let mut largest = 0;
        for batch in events.chunks(256) {
            log.append(batch).expect("append");
            largest = largest.max(log.bytes());
        }
        eprintln!(
            "event log of the {n} x {n} job: {} bytes at the end, {largest} bytes at most",
            log.bytes()
        );
    }
    let mut group = c.benchmark_group("event_log");
    group.sample_size(10);
    for storage in [false, true] {
        let Cluster {
            runtime,
            dir: _dir,
            jm,
            stop: stop_tx,
        } = Cluster::start_with(n, false, storage);
        group.bench_with_input(
            BenchmarkId::new(
                "word_count_10k_x_10k",
                if storage { "with_log" } else { "without_log" },
            ),
            &job,
            |b, job| {
                b.iter(|| {
                    runtime.block_on(async {
                        let id = jm
                            .submit(JobSubmission {
                                job: job.clone().into_bytes().into(),
                                source: "bench".into(),
                                options: JobOptions {
                                    task_duration_ms: (0, 0),
                                    ..JobOptions::default()
                                },
                            })
                            .await
                            .expect("submitted");
                        let report = jm.wait(id).await.expect("ended");
                        assert_eq!(report.status, "FINISHED");
                    });
                });
            },
        );
        let _ = stop_tx.send(true);
        runtime.block_on(jm.shutdown());
    }
    group.finish();
}

criterion_group!(
    benches,
    bench_rpc_throughput,
    bench_word_count_shuffle,
    bench_event_log
);
criterion_main!(benches);
