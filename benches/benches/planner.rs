//! The planning API: statistics and compatibility analysis for the 10k x 10k word count and for
//! every shared Flink plan at parallelism 10,000 (issue target: <= 20 ms each), and the HTTP
//! service's throughput for a cached plan's statistics (target: >= 2,000 requests/s on
//! loopback).
//!
//! Before criterion runs, a table of every plan is printed (min / median / max of 11 runs), so
//! that one run shows the numbers for all of them; criterion then times a representative few.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use conflux_graph::json::JobGraphJson;
use conflux_graph::load::{parse, LoadOptions};
use conflux_planner::service::{RunningService, ServiceConfig};
use conflux_planner::{analyze, CompatOptions, PlanStats, StatsConfig};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

const TARGET_MS: f64 = 20.0;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

/// (name, plan at parallelism 10,000, the same plan with every vertex above 1 at 9,999: a
/// parallelism change for the compatibility analysis).
fn plans() -> Vec<(String, JobGraphJson, JobGraphJson)> {
    let mut paths = vec![fixtures().join("jobs/wordcount-10k-blocking.json")];
    let mut flink: Vec<PathBuf> = std::fs::read_dir(fixtures().join("flink-plans"))
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".plan.json"))
        .collect();
    flink.sort();
    paths.extend(flink);
    paths
        .iter()
        .map(|p| {
            let bytes = std::fs::read(p).expect("read fixture");
            let at = |n: u32| {
                parse(
                    &bytes,
                    &LoadOptions {
                        parallelism: Some(n),
                        ..LoadOptions::default()
                    },
                )
                .expect("plan parses")
                .0
            };
            let name = p
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .trim_end_matches(".json")
                .to_owned();
            (name, at(10_000), at(9_999))
        })
        .collect()
}

fn time_ms(runs: usize, mut f: impl FnMut()) -> (f64, f64, f64) {
    let mut t: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t[0], t[t.len() / 2], t[t.len() - 1])
}

fn report_all(plans: &[(String, JobGraphJson, JobGraphJson)]) {
    let config = StatsConfig::default();
    println!("planner at parallelism 10,000, ms (min / median / max of 11 runs; target <= {TARGET_MS} ms):");
    println!(
        "{:<44} {:>14} {:>26} {:>26}",
        "plan", "channels", "stats", "compat"
    );
    let mut worst: f64 = 0.0;
    for (name, plan, scaled) in plans {
        let channels = PlanStats::compute(plan, &config).expect("stats").channels;
        let s = time_ms(11, || {
            black_box(PlanStats::compute(black_box(plan), &config).expect("stats"));
        });
        let c = time_ms(11, || {
            black_box(analyze(plan, scaled, &CompatOptions::default()).expect("compat"));
        });
        worst = worst.max(s.1).max(c.1);
        let flag = if s.1 > TARGET_MS || c.1 > TARGET_MS {
            "  ABOVE TARGET"
        } else {
            ""
        };
        println!(
            "{name:<44} {channels:>14} {:>8.2} /{:>7.2} /{:>7.2} {:>8.3} /{:>7.3} /{:>7.3}{flag}",
            s.0, s.1, s.2, c.0, c.1, c.2
        );
    }
    println!("worst median: {worst:.2} ms");
}

/// A keep-alive HTTP/1.1 client over a raw socket (the benches crate has no HTTP client).
struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Client {
    fn connect(addr: std::net::SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Client {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            writer: stream,
        }
    }

    /// Sends a request and returns (status, body length).
    fn request(&mut self, method: &str, path: &str, body: &[u8]) -> (u16, usize) {
        write!(
            self.writer,
            "{method} {path} HTTP/1.1\r\nHost: bench\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .expect("write");
        self.writer.write_all(body).expect("write body");
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("status line");
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("status");
        let mut length = 0usize;
        loop {
            line.clear();
            self.reader.read_line(&mut line).expect("header");
            let l = line.trim();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().expect("length");
                }
            }
        }
        let mut buf = vec![0; length];
        self.reader.read_exact(&mut buf).expect("body");
        (status, length)
    }
}

fn service_with_plan() -> RunningService {
    let service = RunningService::start(ServiceConfig {
        address: "127.0.0.1:0".parse().expect("addr"),
        ..ServiceConfig::default()
    })
    .expect("service");
    let plan = std::fs::read(fixtures().join("jobs/wordcount-10k-blocking.json")).expect("plan");
    let mut c = Client::connect(service.addr());
    assert_eq!(c.request("POST", "/plans", &plan).0, 201);
    // Warm the cache.
    assert_eq!(c.request("GET", "/plans/p1/stats", b"").0, 200);
    service
}

fn report_service_throughput() {
    let service = service_with_plan();
    let addr = service.addr();
    let per_client = 4_000;
    for clients in [1usize, 4] {
        let start = Instant::now();
        let threads: Vec<_> = (0..clients)
            .map(|_| {
                std::thread::spawn(move || {
                    let mut c = Client::connect(addr);
                    for _ in 0..per_client {
                        assert_eq!(c.request("GET", "/plans/p1/stats", b"").0, 200);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("client");
        }
        let rate = (clients * per_client) as f64 / start.elapsed().as_secs_f64();
        println!(
            "service: {clients} keep-alive client(s), cached stats of the 10k x 10k word count: {rate:.0} requests/s (target >= 2,000)"
        );
    }
}

fn bench(c: &mut Criterion) {
    let all = plans();
    report_all(&all);
    report_service_throughput();

    let config = StatsConfig::default();
    let mut group = c.benchmark_group("planner");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for wanted in [
        "wordcount-10k-blocking",
        "rebalance-2000-1000.plan",
        "nexmark-q4.plan",
        "tpch-q5.plan",
        "datastream-mixed-streaming.plan",
    ] {
        let Some((name, plan, scaled)) = all.iter().find(|p| p.0 == wanted) else {
            continue;
        };
        group.bench_with_input(BenchmarkId::new("stats_p10000", name), plan, |b, plan| {
            b.iter(|| PlanStats::compute(black_box(plan), &config).expect("stats"));
        });
        group.bench_with_input(
            BenchmarkId::new("compat_p10000", name),
            &(plan, scaled),
            |b, (plan, scaled)| {
                b.iter(|| {
                    analyze(black_box(plan), scaled, &CompatOptions::default()).expect("compat")
                });
            },
        );
    }
    let service = service_with_plan();
    let mut client = Client::connect(service.addr());
    group.bench_function("service_cached_stats_request", |b| {
        b.iter(|| client.request("GET", "/plans/p1/stats", b""));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
