//! The cluster commands: `jobmanager`, `taskmanager`, `submit`, `list`, `cancel`, `status`,
//! `wait` (Flink's `jobmanager.sh`, `taskmanager.sh`, `flink run / list / cancel`) and
//! `cluster`, which starts a JobManager in this process and TaskManager child processes on
//! loopback and runs one job.

mod args;
mod duration_range;
mod follow;
mod forward;
mod ha_local;
mod in_process;
mod local;
mod paths;
mod progress;
mod render;
mod summary;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use conflux_runtime::high_availability::LeaderContext;
use conflux_runtime::protocol::{JobSubmission, JobSummary};
use conflux_runtime::{ClientError, JobManager, JobManagerClient, TaskManager};

pub(crate) use duration_range::parse_duration_range;
use follow::{connection_lost, wait_following};
pub(crate) use forward::jobmanager_flags;
use in_process::{rest_url, shutdown_within_grace};

use crate::output;
use crate::work_dir::{self, Kind, OnSignal, WorkDir};
use crate::{Failure, Format};
pub(crate) use args::{
    CancelArgs, ClusterArgs, JobManagerArgs, JobQueryArgs, ListArgs, SlotRequestArgs, SubmitArgs,
    TaskManagerArgs,
};

fn tokio_runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("conflux-rt")
        .build()
        .context("starting the async runtime")
        .map_err(Failure::Work)
}

/// The async runtime of a process hosting a JobManager: its threads yield to the job loop (see
/// [`conflux_runtime::thread_priority`]); a priority that cannot be lowered is kept.
fn jobmanager_runtime() -> Result<tokio::runtime::Runtime, Failure> {
    use conflux_runtime::thread_priority::{
        lower_current_thread_priority, JOBMANAGER_IO_NICE_STEPS,
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("conflux-rt")
        .on_thread_start(|| {
            if let Err(e) = lower_current_thread_priority(JOBMANAGER_IO_NICE_STEPS) {
                tracing::debug!("I/O thread keeps its priority: {e}");
            }
        })
        .build()
        .context("starting the async runtime")
        .map_err(Failure::Work)
}

/// `path`, or a new working directory of `kind` (removed on every exit) when it is not given.
fn working_dir(
    given: Option<&std::path::Path>,
    kind: Kind,
) -> Result<(std::path::PathBuf, Option<WorkDir>), Failure> {
    match given {
        Some(path) => Ok((path.to_owned(), None)),
        None => {
            let dir = WorkDir::create(kind)
                .context("creating the working directory")
                .map_err(Failure::Work)?;
            Ok((dir.path().to_owned(), Some(dir)))
        }
    }
}

/// Ends `runtime` without waiting for its blocking tasks (a submission being loaded, the job
/// runner's join) beyond a moment: the process exits next.
fn end_runtime(runtime: tokio::runtime::Runtime) {
    runtime.shutdown_timeout(Duration::from_millis(200));
}

pub(crate) fn jobmanager(args: &JobManagerArgs) -> Result<(), Failure> {
    work_dir::install(OnSignal::Graceful);
    let mut config = args.config()?;
    let ha = args.ha.options()?;
    if ha.is_some() && args.ha_storage_dir.is_none() {
        return Err(Failure::input(anyhow::anyhow!(
            "--high-availability zookeeper needs --ha-storage-dir DIR (Flink's \
             high-availability.storageDir), where the leader stores submitted jobs"
        )));
    }
    // Removed when this function returns, whatever ends it.
    let (blob_dir, _dir) = working_dir(args.blob_dir.as_deref(), Kind::JobManager)?;
    config.blob_dir = blob_dir;
    let runtime = jobmanager_runtime()?;
    let exit_with_parent = args.exit_with_parent;
    let result = runtime.block_on(async {
        let stop = stop_watch(exit_with_parent);
        let leader = match (&ha, &args.ha_storage_dir) {
            (Some(options), Some(storage)) => match campaign(options, &stop).await? {
                Some(leadership) => {
                    // The cluster id's own job store: `JobManager::start` recovers every job
                    // in it that has not ended (its event log replayed).
                    config.storage_dir = Some(storage.join(options.cluster_id.trim_matches('/')));
                    config.leader = Some(LeaderContext::new(Arc::clone(&leadership), options));
                    Some((options, leadership))
                }
                // Stopped while standing by.
                None => return Ok(()),
            },
            _ => None,
        };
        let advertised = config.advertised_host.clone();
        let jm = JobManager::start(config).await.map_err(Failure::input)?;
        // The JobManager logs where it listens at INFO; said here when that line is filtered out.
        if !tracing::enabled!(target: "conflux_runtime::jobmanager", tracing::Level::INFO) {
            eprintln!(
                "JobManager listening on {} (blob server {}, REST API {}); Ctrl-C stops it",
                jm.address(),
                jm.blob_server_url(),
                rest_url(&jm),
            );
        }
        let Some((options, leadership)) = leader else {
            stopped(&stop).await;
            shutdown_within_grace(jm).await;
            return Ok(());
        };
        let host = advertised.unwrap_or_else(|| jm.address().ip().to_string());
        // An IP as a socket address (brackets for IPv6), a host name as it is.
        let rpc_address = match host.parse::<std::net::IpAddr>() {
            Ok(ip) => std::net::SocketAddr::new(ip, jm.address().port()).to_string(),
            Err(_) => format!("{host}:{}", jm.address().port()),
        };
        let info = conflux_ha::LeaderInfo {
            rpc_address,
            rest_url: jm.rest_address().map(|a| format!("http://{a}")),
            fencing_token: leadership.token(),
            pid: Some(std::process::id()),
        };
        leadership
            .publish(options, &info)
            .await
            .map_err(|e| Failure::Work(e.into()))?;
        tracing::info!(
            cluster_id = %options.cluster_id,
            fencing_token = leadership.token(),
            "JobManager leads cluster id {} (fencing token {}); {} jobs recovered",
            options.cluster_id,
            leadership.token(),
            jm.list().len()
        );
        tokio::select! {
            () = stopped(&stop) => {
                shutdown_within_grace(jm).await;
                Ok(())
            }
            () = leadership.lost() => {
                shutdown_within_grace(jm).await;
                Err(Failure::Work(anyhow::anyhow!(
                    "lost the leadership of cluster id {} (ZooKeeper session or lease ended): \
                     stopped acting; another JobManager takes over",
                    options.cluster_id
                )))
            }
        }
    });
    end_runtime(runtime);
    result
}

/// Joins the election of `options`' cluster id and waits to lead; `None` when a stop is
/// requested while standing by.
async fn campaign(
    options: &conflux_ha::HaOptions,
    stop: &tokio::sync::watch::Receiver<bool>,
) -> Result<Option<Arc<conflux_ha::Leadership>>, Failure> {
    let election = conflux_ha::LeaderElection::join(options)
        .await
        .map_err(|e| Failure::Work(e.into()))?;
    eprintln!(
        "JobManager standing by for the leadership of cluster id {} (ZooKeeper {})",
        options.cluster_id, options.quorum
    );
    tokio::select! {
        leadership = election.await_leadership() => {
            Ok(Some(Arc::new(leadership.map_err(|e| Failure::Work(e.into()))?)))
        }
        () = stopped(stop) => Ok(None),
    }
}

/// Becomes true once the process is asked to stop: a signal, or with `exit_with_parent` the end
/// of its standard input (`conflux cluster` holds it: its end means the parent is gone, however
/// it died, so no child outlives it).
fn stop_watch(exit_with_parent: bool) -> tokio::sync::watch::Receiver<bool> {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let tx = Arc::new(tx);
    if exit_with_parent {
        let tx = Arc::clone(&tx);
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
            let _ = tx.send(true);
        });
    }
    tokio::spawn(async move {
        work_dir::stop_requested().await;
        let _ = tx.send(true);
    });
    rx
}

/// Resolves once `stop` (of [`stop_watch`]) is true.
async fn stopped(stop: &tokio::sync::watch::Receiver<bool>) {
    let mut stop = stop.clone();
    let _ = stop.wait_for(|s| *s).await;
}

pub(crate) fn taskmanager(args: &TaskManagerArgs) -> Result<(), Failure> {
    work_dir::install(OnSignal::Graceful);
    let mut config = args.config()?;
    // Removed when this function returns, set-up failures included.
    let (data_dir, _dir) = working_dir(args.data_dir.as_deref(), Kind::TaskManager)?;
    config.data_dir = data_dir;
    let exit_with_parent = args.exit_with_parent;
    if args.work_nice > 0 {
        // The heartbeat thread first, at this thread's priority; then this thread lower, and
        // every thread made after it (the runtime's, the tasks') inherits the lower priority.
        conflux_runtime::start_heartbeat_thread()
            .context("starting the heartbeat thread")
            .map_err(Failure::Work)?;
        if let Err(e) = conflux_runtime::thread_priority::lower_current_thread_priority(i32::from(
            args.work_nice,
        )) {
            tracing::debug!("work threads keep their priority: {e}");
        }
    }
    let ha = args.ha.options()?;
    let runtime = tokio_runtime()?;
    runtime.block_on(async {
        // Under high availability the TaskManager follows the leader ZooKeeper publishes.
        let _retrieval = match &ha {
            Some(options) => {
                let retrieval = conflux_ha::LeaderRetrieval::start(options)
                    .await
                    .map_err(|e| Failure::Work(e.into()))?;
                config.leader = Some(retrieval.subscribe());
                Some(retrieval)
            }
            None => None,
        };
        let (parent_gone_tx, parent_gone) = tokio::sync::oneshot::channel::<()>();
        if exit_with_parent {
            // `conflux cluster` holds our stdin: its end means the parent is gone, however it
            // died, so no TaskManager outlives it.
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
                let _ = parent_gone_tx.send(());
            });
        }
        let shutdown = async move {
            tokio::select! {
                () = work_dir::stop_requested() => {}
                Ok(()) = parent_gone, if exit_with_parent => {}
            }
        };
        TaskManager::run(config, shutdown)
            .await
            .map_err(|e| Failure::Work(e.into()))
    })
}

pub(crate) fn submit(args: &SubmitArgs) -> Result<(), Failure> {
    let bytes = crate::read_input(&args.file)?;
    let submission = JobSubmission {
        job: bytes.into(),
        source: args.file.display().to_string(),
        options: args.job.options(&args.load)?,
    };
    let runtime = tokio_runtime()?;
    let token = args.token.token()?;
    let report = runtime.block_on(async {
        let (address, follow) =
            crate::ha::leader_address(args.jobmanager.as_deref(), &args.ha).await?;
        let address = address.as_str();
        let mut client = JobManagerClient::connect(address, token.clone())
            .await
            .map_err(|e| Failure::Work(e.into()))?;
        let job = client.submit(submission).await.map_err(|e| match e {
            ClientError::JobManager(_) => Failure::input(anyhow::Error::new(e)),
            e if connection_lost(&e) => Failure::Work(anyhow::anyhow!(
                "the JobManager at {address} closed the connection before it answered the \
                 submission ({e}): whether the job was queued is unknown; `conflux list` on \
                 that JobManager tells, if it still runs"
            )),
            e => Failure::Work(e.into()),
        })?;
        if args.detached {
            return Ok(Err(job));
        }
        if let Some(follow) = &follow {
            return wait_following(&mut client, follow, token.clone(), job)
                .await
                .map(Ok);
        }
        // Drawn only on a terminal; stopped (and cleared) when the wait returns.
        let _progress = crate::progress::on_terminal()
            .then(|| progress::follow(address.to_owned(), token.clone(), job));
        client.wait(job).await.map(Ok).map_err(|e| {
            if connection_lost(&e) {
                Failure::Work(anyhow::anyhow!(
                    "the JobManager at {address} closed the connection while job {job} was \
                     running ({e}): the job's state is unknown; without high availability a \
                     JobManager that stopped took the job with it, and one started again does \
                     not know it"
                ))
            } else {
                Failure::Work(e.into())
            }
        })
    })?;
    match report {
        Err(job) => match args.format {
            Format::Json => output::print_json(&serde_json::json!({ "job_id": job.to_string() })),
            Format::Text => output::print(&format!("{job}\n")),
        },
        Ok(mut report) => {
            // The output of a job that did not finish is incomplete: nothing to verify.
            if args.verify && report.status == "FINISHED" {
                if let Some(dir) = &args.job.output_dir {
                    local::verify(&args.file, &args.load, dir, &mut report)?;
                }
            }
            render::print_report(&report, args.format)?;
            if args.verify && report.status != "FINISHED" {
                return Err(not_verified(&report));
            }
            failed_if_failed(&report)
        }
    }
}

/// Exit 1 (after the report) when the job ended FAILED or its output was checked and wrong.
fn failed_if_failed(report: &conflux_runtime::JobReport) -> Result<(), Failure> {
    if let Some(data) = report
        .data
        .as_ref()
        .filter(|d| d.output_verified == Some(false))
    {
        return Err(Failure::Reported(anyhow::anyhow!(
            "the output is wrong: {}",
            data.first_difference.as_deref().unwrap_or("counts differ")
        )));
    }
    if report.status == "FAILED" {
        return Err(Failure::Reported(anyhow::anyhow!(
            "the job failed: {}",
            report
                .failure_reason
                .as_deref()
                .unwrap_or("no reason given")
        )));
    }
    Ok(())
}

pub(crate) fn list(args: &ListArgs) -> Result<(), Failure> {
    let runtime = tokio_runtime()?;
    let jobs = runtime.block_on(async {
        let (address, _follow) =
            crate::ha::leader_address(args.jobmanager.as_deref(), &args.ha).await?;
        let mut client = JobManagerClient::connect(&address, args.token.token()?)
            .await
            .map_err(|e| Failure::Work(e.into()))?;
        client.list().await.map_err(|e| Failure::Work(e.into()))
    })?;
    let selection = summary::Selection::from_flags(args.running, args.scheduled, args.all);
    let shown: Vec<&JobSummary> = jobs.iter().filter(|j| selection.shows(j)).collect();
    match args.format {
        Format::Json => output::print_json(&serde_json::json!({
            "jobs": shown.iter().map(|j| summary::json(j)).collect::<Vec<_>>(),
        })),
        Format::Text => {
            let mut text = String::new();
            for j in &shown {
                text.push_str(&format!(
                    "{}  {:<10}  {}  {:>9}  {:>7}  {}\n",
                    j.job,
                    j.status,
                    summary::time(j.start_ms),
                    summary::duration(j.duration_ms),
                    format!("{}/{}", j.finished_tasks(), j.total_tasks()),
                    crate::failure::escape_controls(&j.name)
                ));
            }
            if jobs.is_empty() {
                text.push_str("no jobs\n");
            } else if shown.is_empty() {
                text.push_str(&format!(
                    "no {} jobs ({} in all: `list -a` shows them)\n",
                    match (selection.running, selection.scheduled) {
                        (true, false) => "running",
                        (false, true) => "scheduled",
                        _ => "running or scheduled",
                    },
                    jobs.len()
                ));
            }
            output::print(&text)
        }
    }
}

/// `text` as a job id (32 hex digits); an input error (exit 2) saying it is not one otherwise.
fn parse_job_id(text: &str) -> Result<conflux_blob::JobId, Failure> {
    text.parse::<conflux_blob::JobId>().map_err(|_| {
        Failure::input(anyhow::anyhow!(
            "{text:?} is not a job id: a job id is 32 hex digits, as `submit` and `list` print it"
        ))
    })
}

/// One job's summary (a per-job request: the job table is not fetched); exit 1 for a job the
/// JobManager does not know (never submitted, or gone from its job history).
async fn job_summary(
    client: &mut JobManagerClient,
    job: conflux_blob::JobId,
    address: &str,
) -> Result<JobSummary, Failure> {
    client.status(job).await.map_err(|e| match e {
        ClientError::JobManager(_) => Failure::Work(anyhow::anyhow!(
            "no job {job} on the JobManager at {address} (never submitted there, or no \
             longer in its job history)"
        )),
        e => Failure::Work(e.into()),
    })
}

/// `conflux status`: the job's state, tasks by state, start time and duration, and for an
/// ended job its report (a wait on an ended job answers at once). Exit 1 for a job the
/// JobManager does not know (never submitted, or gone from its job history).
pub(crate) fn status(args: &JobQueryArgs) -> Result<(), Failure> {
    let job = parse_job_id(&args.job_id)?;
    let runtime = tokio_runtime()?;
    let (summary, report) = runtime.block_on(async {
        let (address, _follow) =
            crate::ha::leader_address(args.jobmanager.as_deref(), &args.ha).await?;
        let address = address.as_str();
        let mut client = JobManagerClient::connect(address, args.token.token()?)
            .await
            .map_err(|e| Failure::Work(e.into()))?;
        let summary = job_summary(&mut client, job, address).await?;
        // The job may leave the history in between: then there is no report to add.
        let report = if summary.ended() {
            client.wait(job).await.ok()
        } else {
            None
        };
        Ok::<_, Failure>((summary, report))
    })?;
    match args.format {
        Format::Json => {
            let mut value = summary::json(&summary);
            value["report"] = serde_json::to_value(&report)
                .context("encoding the report")
                .map_err(Failure::Work)?;
            output::print_json(&value)
        }
        Format::Text => {
            let mut line = format!(
                "{}  {}  {}  tasks {}/{} finished ({})  started {}  duration {}",
                summary.status,
                summary.job,
                crate::failure::escape_controls(&summary.name),
                summary.finished_tasks(),
                summary.total_tasks(),
                summary::states(&summary),
                summary::time(summary.start_ms),
                summary::duration(summary.duration_ms),
            );
            if let Some(reason) = report.as_ref().and_then(|r| r.failure_reason.as_ref()) {
                line.push_str(&format!("  {}", crate::failure::escape_controls(reason)));
            }
            line.push('\n');
            output::print(&line)
        }
    }
}

/// `conflux wait`: blocks until the job ends and prints its report as attached `submit` does;
/// exit 1 when it did not finish (or its output is wrong), or the JobManager does not know it.
pub(crate) fn wait(args: &JobQueryArgs) -> Result<(), Failure> {
    let job = parse_job_id(&args.job_id)?;
    let runtime = tokio_runtime()?;
    let report = runtime.block_on(async {
        let (address, follow) =
            crate::ha::leader_address(args.jobmanager.as_deref(), &args.ha).await?;
        let address = address.as_str();
        let token = args.token.token()?;
        let mut client = JobManagerClient::connect(address, token.clone())
            .await
            .map_err(|e| Failure::Work(e.into()))?;
        if let Some(follow) = &follow {
            return wait_following(&mut client, follow, token.clone(), job).await;
        }
        client.wait(job).await.map_err(|e| {
            if connection_lost(&e) {
                Failure::Work(anyhow::anyhow!(
                    "the JobManager at {address} closed the connection while job {job} was \
                     running ({e}): the job's state is unknown"
                ))
            } else {
                Failure::Work(e.into())
            }
        })
    })?;
    render::print_report(&report, args.format)?;
    failed_if_failed(&report)
}

pub(crate) fn cancel(args: &CancelArgs) -> Result<(), Failure> {
    let job = parse_job_id(&args.job_id)?;
    let runtime = tokio_runtime()?;
    runtime.block_on(async {
        let (address, _follow) =
            crate::ha::leader_address(args.jobmanager.as_deref(), &args.ha).await?;
        let mut client = JobManagerClient::connect(&address, args.token.token()?)
            .await
            .map_err(|e| Failure::Work(e.into()))?;
        // The JobManager leaves an ended job as it ended: say so instead of "cancelling". A
        // job that ends between the two requests is cancelled as a running one (a no-op).
        let summary = client.status(job).await.map_err(|e| match e {
            ClientError::JobManager(_) => Failure::input(anyhow::Error::new(e)),
            e => Failure::Work(e.into()),
        })?;
        if summary.ended() {
            return Err(Failure::Work(anyhow::anyhow!(
                "job {job} already ended {}: nothing to cancel",
                summary.status
            )));
        }
        client
            .cancel(job)
            .await
            .map_err(|e| Failure::input(anyhow::Error::new(e)))
    })?;
    output::print(&format!("cancelling {job}\n"))
}

pub(crate) fn cluster(args: &ClusterArgs) -> Result<(), Failure> {
    work_dir::install(OnSignal::Graceful);
    let runtime = jobmanager_runtime()?;
    // More than one JobManager, or a ZooKeeper given: JobManager children under high
    // availability; else the JobManager in this process.
    let ha = args.job_managers > 1 || args.ha.zookeeper_quorum.is_some();
    // Checked once here for both paths: with one JobManager there is no standby to take over.
    if args.kill_job_manager_after_ms.is_some() && args.job_managers < 2 {
        return Err(Failure::input(anyhow::anyhow!(
            "--kill-job-manager-after-ms needs --job-managers 2 or more (a standby to take over)"
        )));
    }
    let report = if ha {
        runtime.block_on(ha_local::run(args))
    } else {
        runtime.block_on(local::run(args))
    };
    end_runtime(runtime);
    let report = report?;
    render::print_report(&report, args.format)?;
    if args.verify && report.status != "FINISHED" {
        return Err(not_verified(&report));
    }
    failed_if_failed(&report)
}

/// The exit of a `--verify` run whose job did not finish (its output is incomplete).
fn not_verified(report: &conflux_runtime::JobReport) -> Failure {
    Failure::Reported(anyhow::anyhow!(
        "not verified: the job {}: {}",
        report.status,
        report
            .failure_reason
            .as_deref()
            .unwrap_or("no reason given")
    ))
}

#[cfg(test)]
mod tests {
    use conflux_runtime::protocol::JobOptions;

    #[test]
    fn options_default_to_the_simulator_durations() {
        assert_eq!(JobOptions::default().task_duration_ms, (1_000, 2_000));
    }
}
