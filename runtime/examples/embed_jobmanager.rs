//! A runtime embedding Conflux's JobManager as a library: it starts a JobManager and two
//! TaskManagers in this process (they talk over loopback TCP as separate processes would),
//! submits a 100 x 100 blocking word count, waits for its end and prints the report.
//!
//! Run with `cargo run -p conflux-runtime --example embed_jobmanager`.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use conflux_graph::{generate, ResultPartitionType};
use conflux_runtime::protocol::{JobOptions, JobSubmission};
use conflux_runtime::{JobManager, JobManagerConfig, TaskManager, TaskManagerConfig};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut config = JobManagerConfig::new(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        dir.path().join("blobs"),
    );
    config.heartbeat.interval_ms = 200;
    config.heartbeat.timeout_ms = 1_000;
    let jm = JobManager::start(config).await?;

    let (stop, stopped) = tokio::sync::watch::channel(false);
    for i in 0..2 {
        let tm = TaskManagerConfig::new(
            jm.address().to_string(),
            100,
            dir.path().join(format!("tm-{i}")),
        );
        let mut stopped = stopped.clone();
        tokio::spawn(TaskManager::run(tm, async move {
            let _ = stopped.wait_for(|s| *s).await;
        }));
    }
    while jm.task_managers().len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let job = generate::word_count(100, ResultPartitionType::Blocking).to_json_pretty();
    let id = jm
        .submit(JobSubmission {
            job: job.into_bytes().into(),
            source: "embedded word count".into(),
            options: JobOptions {
                task_duration_ms: (5, 20),
                ..JobOptions::default()
            },
        })
        .await?;
    let report = jm.wait(id).await?;
    println!(
        "{}: {} ({} tasks deployed on {} TaskManagers, deploy {:.1} ms)",
        report.job,
        report.status,
        report.tasks_deployed,
        report.task_managers.len(),
        report.wall_ms.deploy.unwrap_or(0.0)
    );
    let _ = stop.send(true);
    jm.shutdown().await;
    Ok(())
}
