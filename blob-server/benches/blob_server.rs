//! The blob server over loopback (release build, 2 cores), client and server in one process on
//! one two-worker tokio runtime. Issue targets:
//!
//! - `get_16mib`: GET of a 16 MiB blob, read from disk and verified by the server, verified
//!   again by the client: >= 500 MB/s.
//! - `put_16mib`: PUT of a new 16 MiB blob (client digest check, streamed to a temporary file
//!   while hashed, renamed, durable copy in a local directory): >= 200 MB/s. Every iteration
//!   uploads new content; the blob is deleted again outside the timed part.
//! - `small_get_64_clients`: 1 KiB GETs from 64 concurrent clients (one connection pool
//!   each): >= 5,000 GETs/s.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::time::{Duration, Instant};

use bytes::Bytes;
use conflux_blob::{
    BlobClient, BlobKey, BlobKind, BlobServer, BlobServerConfig, DurableStoreConfig, JobId,
};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tempfile::TempDir;
use tokio::runtime::Runtime;

const BIG: usize = 16 << 20;
const SMALL: usize = 1 << 10;
const CLIENTS: usize = 64;
const GETS_PER_CLIENT: usize = 16;

struct Bench {
    runtime: Runtime,
    server: BlobServer,
    client: BlobClient,
    _storage: TempDir,
    _durable: TempDir,
}

fn content(seed: u64, len: usize) -> Vec<u8> {
    conflux_common::SplitMix64::new(seed).bytes(len)
}

fn setup() -> Bench {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let storage = TempDir::new().expect("temp dir");
    let durable = TempDir::new().expect("temp dir");
    let mut config = BlobServerConfig::new(storage.path());
    config.durable = DurableStoreConfig::Local {
        dir: durable.path().to_path_buf(),
    };
    let server = runtime
        .block_on(BlobServer::start(config))
        .expect("server starts");
    let client = BlobClient::new(server.url(), None).expect("client");
    Bench {
        runtime,
        server,
        client,
        _storage: storage,
        _durable: durable,
    }
}

fn bench_big(c: &mut Criterion, bench: &Bench) {
    let job = Some(JobId([7; 16]));
    let data = Bytes::from(content(1, BIG));
    let key = bench
        .runtime
        .block_on(bench.client.put(BlobKind::Permanent, job, data.clone()))
        .expect("put");

    let mut group = c.benchmark_group("blob_server");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(BIG as u64));
    group.bench_function("get_16mib", |b| {
        b.iter(|| {
            let got = bench.runtime.block_on(bench.client.get(&key)).expect("get");
            assert_eq!(got.len(), BIG);
        });
    });

    let mut buffer = content(2, BIG);
    let mut counter = 0u64;
    group.bench_function("put_16mib", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                counter += 1;
                buffer[..8].copy_from_slice(&counter.to_le_bytes());
                let fresh = Bytes::from(buffer.clone());
                let start = Instant::now();
                let key = bench
                    .runtime
                    .block_on(bench.client.put(BlobKind::Permanent, job, fresh))
                    .expect("put");
                total += start.elapsed();
                bench
                    .runtime
                    .block_on(bench.client.delete(&key))
                    .expect("delete");
            }
            total
        });
    });
    group.finish();
}

fn bench_small(c: &mut Criterion, bench: &Bench) {
    let job = Some(JobId([8; 16]));
    let keys: Vec<BlobKey> = (0..CLIENTS as u64)
        .map(|i| {
            let data = Bytes::from(content(100 + i, SMALL));
            bench
                .runtime
                .block_on(bench.client.put(BlobKind::Permanent, job, data))
                .expect("put")
        })
        .collect();
    let clients: Vec<BlobClient> = (0..CLIENTS)
        .map(|_| BlobClient::new(bench.server.url(), None).expect("client"))
        .collect();

    let mut group = c.benchmark_group("blob_server");
    group.throughput(Throughput::Elements((CLIENTS * GETS_PER_CLIENT) as u64));
    group.bench_function("small_get_64_clients", |b| {
        b.iter(|| {
            bench.runtime.block_on(async {
                let tasks: Vec<_> = clients
                    .iter()
                    .zip(&keys)
                    .map(|(client, key)| {
                        let (client, key) = (client.clone(), *key);
                        tokio::spawn(async move {
                            for _ in 0..GETS_PER_CLIENT {
                                let got = client.get(&key).await.expect("get");
                                assert_eq!(got.len(), SMALL);
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.expect("client task");
                }
            });
        });
    });
    group.finish();
}

fn blob_server(c: &mut Criterion) {
    let bench = setup();
    bench_big(c, &bench);
    bench_small(c, &bench);
    let stats = bench.server.stats();
    println!(
        "server: {} puts, {} gets, {} MB received, {} MB served",
        stats.puts,
        stats.gets,
        stats.bytes_received / 1_000_000,
        stats.bytes_served / 1_000_000
    );
}

criterion_group!(benches, blob_server);
criterion_main!(benches);
