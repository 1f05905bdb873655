//! The data plane end to end on an in-process JobManager and TaskManagers: word counts whose
//! output is checked against the counts computed from the seeds alone, pipelined credit, the
//! data directory quota, and partition files deleted when the job ends.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use conflux_operators::verify_output;
use conflux_runtime::protocol::{JobOptions, JobSubmission};
use conflux_runtime::JobReport;

use crate::support::{
    jm_config, run_job, start_jm, tm_config, wait_for_task_managers, wait_until, Tm, WordCount,
};

/// 4 sources and 3 counters.
fn word_count(job_type: &'static str, partition_type: &'static str) -> WordCount {
    WordCount {
        job_type,
        partition_type,
        ..WordCount::blocking(4, Some(3), 20_000, 2_000, 11)
    }
}

/// Its job graph.
fn word_count_job(job_type: &'static str, partition_type: &'static str) -> Bytes {
    word_count(job_type, partition_type).job()
}

fn submission(job: Bytes, output: &Path, credit: u32, sink_delay_us: u64) -> JobSubmission {
    JobSubmission {
        job,
        source: "wordcount.json".into(),
        options: JobOptions {
            output_dir: Some(output.to_owned()),
            credit,
            sink_delay_us,
            ..JobOptions::default()
        },
    }
}

/// Partition files (finished or being written) under `dir`.
fn partition_files(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.to_string_lossy().contains(".part") {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

async fn run_on_two_task_managers(
    dir: &Path,
    job: Bytes,
    credit: u32,
    sink_delay_us: u64,
    quota: Option<u64>,
) -> JobReport {
    let mut config = jm_config(dir);
    if quota.is_some() {
        config.scheduler.restart = conflux_scheduler::RestartStrategy::FixedDelay {
            attempts: 0,
            delay_ms: 0,
        };
    }
    let jm = start_jm(config).await;
    let address = jm.address().to_string();
    let mut tms = Vec::new();
    for name in ["tm-a", "tm-b"] {
        let mut config = tm_config(&address, 4, &dir.join(name));
        config.data_dir_max_bytes = quota;
        tms.push(Tm::spawn(config));
    }
    wait_for_task_managers(&jm, 2).await;
    let submission = submission(job, &dir.join("out"), credit, sink_delay_us);
    let report = run_job(&jm, submission, Duration::from_secs(60)).await;
    // The job's end deletes its partitions on every TaskManager.
    wait_until(
        "the partition files are deleted",
        Duration::from_secs(10),
        || partition_files(dir).is_empty(),
    )
    .await;
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_word_count_counts_every_word() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report =
        run_on_two_task_managers(dir.path(), word_count_job("batch", "blocking"), 4, 0, None).await;
    assert_eq!(report.status, "FINISHED", "{report:?}");
    let data = report.data.expect("a data report");
    assert_eq!(data.words, word_count("batch", "blocking").words());
    // One record per word, each at least a length byte and one byte of text.
    assert!(data.shuffle_bytes >= 2 * data.words, "{data:?}");
    assert_eq!(
        data.peak_buffered_bytes, 0,
        "blocking partitions buffer nothing"
    );
    assert_eq!(data.reruns.values().sum::<u64>(), 0, "{data:?}");
    let verification = verify_output(
        &word_count("batch", "blocking").expected(),
        &dir.path().join("out"),
    )
    .expect("verifies");
    assert!(verification.verified(), "{verification:?}");
    assert_eq!(verification.words_found, data.words);
    assert!(
        dir.path().join("out").join("_SUCCESS").exists(),
        "a finished job's output is marked complete"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_word_count_with_a_slow_sink_stays_within_its_credit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = run_on_two_task_managers(
        dir.path(),
        word_count_job("streaming", "pipelined_bounded"),
        2,
        300,
        None,
    )
    .await;
    assert_eq!(report.status, "FINISHED", "{report:?}");
    let data = report.data.expect("a data report");
    assert_eq!(data.words, word_count("batch", "blocking").words());
    // 3 subpartitions x 2 buffers x 32 KiB.
    assert_eq!(data.buffered_bytes_bound, 3 * 2 * 32 * 1024);
    assert!(
        data.peak_buffered_bytes > 0 && data.peak_buffered_bytes <= data.buffered_bytes_bound,
        "{data:?}"
    );
    let verification = verify_output(
        &word_count("batch", "blocking").expected(),
        &dir.path().join("out"),
    )
    .expect("verifies");
    assert!(verification.verified(), "{verification:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_data_directory_fails_the_job_naming_the_quota() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A source writes about 90 KB: past a quota of 50,000 bytes.
    let report = run_on_two_task_managers(
        dir.path(),
        word_count_job("batch", "blocking"),
        4,
        0,
        Some(50_000),
    )
    .await;
    assert_eq!(report.status, "FAILED", "{report:?}");
    let reason = report.failure_reason.unwrap_or_default();
    assert!(reason.contains("quota of 50000 bytes exceeded"), "{reason}");
    // No sink wrote anything: no consumer ever ran on a partial partition.
    assert_eq!(
        std::fs::read_dir(dir.path().join("out"))
            .map(|d| d.count())
            .unwrap_or(0),
        0
    );
}

/// Speaks the data protocol's hello for a job this cluster does not run (welcomed: it can read
/// nothing), then sends credit for a channel that is not open every 50 ms, reconnecting
/// whenever the server closes it: a connection that does nothing useful, forever.
async fn useless_connection(address: std::net::SocketAddr) {
    use conflux_runtime::secret::Secret;
    use conflux_runtime::shuffle::protocol::{DataRequest, DATA_PROTOCOL_VERSION};
    use tokio::io::AsyncWriteExt;
    let hello = crate::support::frame(&crate::support::msgpack(&DataRequest::Hello {
        version: DATA_PROTOCOL_VERSION,
        token: None,
        job: conflux_blob_api::JobId([0xee; 16]),
        secret: Secret([0xee; 16]),
    }));
    let credit = crate::support::frame(&crate::support::msgpack(&DataRequest::Credit {
        channel: 77,
        credit: 1,
    }));
    loop {
        let Ok(mut stream) = tokio::net::TcpStream::connect(address).await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        if stream.write_all(&hello).await.is_ok() {
            while stream.write_all(&credit).await.is_ok() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Regression: 1,100 connections to a TaskManager's data server, each sending credit for an
/// unknown channel every 20 s, held its connection cap (any frame reset the idle timer) and a
/// 16 x 16 word count made no progress until they were released. Scaled down: a cap of 8 and
/// 24 such connections per TaskManager, reconnecting whenever closed; the word count finishes
/// with every word counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn useless_data_connections_do_not_stall_a_word_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jm = start_jm(jm_config(dir.path())).await;
    let address = jm.address().to_string();
    let mut tms = Vec::new();
    for name in ["tm-a", "tm-b"] {
        let mut config = tm_config(&address, 4, &dir.path().join(name));
        config.data_max_connections = 8;
        tms.push(Tm::spawn(config));
    }
    wait_for_task_managers(&jm, 2).await;
    let mut flood = tokio::task::JoinSet::new();
    for tm in jm.task_managers() {
        for _ in 0..24 {
            flood.spawn(useless_connection(tm.data_address));
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let word_count = WordCount {
        counters: Some(4),
        ..word_count("batch", "blocking")
    };
    let submission = submission(word_count.job(), &dir.path().join("out"), 4, 0);
    let report = run_job(&jm, submission, Duration::from_secs(60)).await;
    flood.abort_all();
    assert_eq!(report.status, "FINISHED", "{report:?}");
    let verification =
        verify_output(&word_count.expected(), &dir.path().join("out")).expect("verifies");
    assert!(verification.verified(), "{verification:?}");
    jm.shutdown().await;
}

/// A TCP proxy to the current upstream; `cut` drops every connection through it (as a
/// JobManager killed with SIGKILL, seen from its TaskManagers) and sends later ones to a new
/// upstream.
struct Proxy {
    address: std::net::SocketAddr,
    upstream: std::sync::Arc<std::sync::Mutex<std::net::SocketAddr>>,
    connections: std::sync::Arc<std::sync::Mutex<tokio::task::JoinSet<()>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    async fn start(upstream: std::net::SocketAddr) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        let upstream = std::sync::Arc::new(std::sync::Mutex::new(upstream));
        let connections = std::sync::Arc::new(std::sync::Mutex::new(tokio::task::JoinSet::new()));
        let accept = tokio::spawn({
            let (upstream, connections) = (upstream.clone(), connections.clone());
            async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    let to = *upstream.lock().expect("lock");
                    connections.lock().expect("lock").spawn(async move {
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(to).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                }
            }
        });
        Proxy {
            address,
            upstream,
            connections,
            accept,
        }
    }

    fn cut(&self, new_upstream: std::net::SocketAddr) {
        *self.upstream.lock().expect("lock") = new_upstream;
        self.connections.lock().expect("lock").abort_all();
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.connections.lock().expect("lock").abort_all();
    }
}

/// Regression: a JobManager that died mid-job (SIGKILL) left its job's partitions on the
/// TaskManagers: they registered with the next JobManager but kept every job still in their
/// partition table (16 files, 40 MB, served through 4 later jobs). Registration releases every
/// job the new JobManager does not recover (without high availability: all). The TaskManager
/// reaches its JobManager through a proxy whose cut is the first one's death.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_of_a_dead_jobmanagers_job_go_when_the_task_manager_registers_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = start_jm(jm_config(dir.path())).await;
    let proxy = Proxy::start(first.address()).await;
    let _tm = Tm::spawn(tm_config(
        &proxy.address.to_string(),
        8,
        &dir.path().join("tm"),
    ));
    wait_for_task_managers(&first, 1).await;
    // A slow sink: the sources' partitions stay while the counts run.
    let submission = submission(
        word_count_job("batch", "blocking"),
        &dir.path().join("out"),
        1,
        200_000,
    );
    first.submit(submission).await.expect("accepted");
    wait_until(
        "the sources' partitions are written",
        Duration::from_secs(20),
        || partition_files(&dir.path().join("tm")).len() >= 4,
    )
    .await;
    let second = start_jm(jm_config(&dir.path().join("second"))).await;
    proxy.cut(second.address());
    wait_for_task_managers(&second, 1).await;
    wait_until(
        "the dead JobManager's partitions are deleted",
        Duration::from_secs(5),
        || partition_files(&dir.path().join("tm")).is_empty(),
    )
    .await;
    drop(proxy);
    second.shutdown().await;
    first.shutdown().await;
}
