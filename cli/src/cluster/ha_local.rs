//! `conflux cluster --job-managers N`: N `conflux jobmanager` child processes under ZooKeeper
//! high availability (one leads, the others stand by; a ZooKeeper server of the run's own when
//! no quorum is given), TaskManager children that follow the leader, one job submitted to the
//! leader and waited for across leader changes, and `--kill-job-manager-after-ms`: SIGKILL of
//! the leader, with the time until the new leader deploys again. Every child and the ZooKeeper
//! server are stopped at the end, on error and on Ctrl-C.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context as _};
use conflux_blob::JobId;
use conflux_ha::{HaOptions, LeaderInfo, LeaderRetrieval, LocalZooKeeper};
use conflux_runtime::protocol::{JobOptions, JobSubmission};
use conflux_runtime::{ClientError, JobManagerClient, JobReport};

use super::args::ClusterArgs;
use super::in_process::REGISTRATION_TIMEOUT;
use super::local::{default_slots, options_dir, spawn_task_managers, verify, Children};
use crate::work_dir::{self, Kind, WorkDir};
use crate::Failure;

/// Where the states of a job summary's `tasks` are (Flink's `ExecutionState` order).
const DEPLOYING: usize = 2;
const RUNNING: usize = 3;
const FINISHED: usize = 4;

/// How often the new leader's job is looked at while its deployment is awaited.
const POLL: Duration = Duration::from_millis(10);

/// Runs the job on N JobManagers under ZooKeeper; the report is the leader's at the job's end.
///
/// # Errors
/// An input failure for bad flags or job; a work failure when ZooKeeper, a JobManager or a
/// TaskManager cannot be had, or the job cannot be followed to its end.
pub(super) async fn run(args: &ClusterArgs) -> Result<JobReport, Failure> {
    let started = Instant::now();
    let bytes = crate::read_input(&args.file)?;
    let slots = match args.slots {
        Some(slots) => slots,
        None => default_slots(&bytes, args)?,
    };
    let job_options = args.job.options(&args.load)?;
    args.slowdown_of(0)?;
    // Removed on every exit; after a SIGKILL, by the next `cluster`.
    let work = WorkDir::create(Kind::Cluster)
        .context("creating the cluster's working directory")
        .map_err(Failure::Work)?;
    super::paths::check_utf8(work.path(), "the temporary directory (TMPDIR)")?;
    let (zookeeper, quorum) = match &args.ha.zookeeper_quorum {
        Some(quorum) => (None, quorum.clone()),
        None => {
            let dir = work.path().to_path_buf();
            let zookeeper = tokio::task::spawn_blocking(move || LocalZooKeeper::start(&dir))
                .await
                .map_err(|e| Failure::Work(anyhow!("starting ZooKeeper: {e}")))?
                .map_err(|why| {
                    Failure::Work(anyhow!(
                        "--job-managers {}: {why}; or give --zookeeper-quorum HOST:PORT",
                        args.job_managers
                    ))
                })?;
            let quorum = zookeeper.quorum();
            (Some(zookeeper), quorum)
        }
    };
    let options = args.ha.options(quorum)?;
    eprintln!(
        "{} JobManagers under ZooKeeper {} (cluster id {})",
        args.job_managers, options.quorum, options.cluster_id
    );
    let mut children = Children(Vec::new());
    let result = tokio::select! {
        result = run_on(args, &options, &mut children, bytes, slots, job_options, work.path(), started) => result,
        () = work_dir::stop_requested() => Err(Failure::Work(anyhow!("interrupted: the JobManagers and TaskManagers were stopped"))),
    };
    // Every child killed and reaped, then ZooKeeper stopped.
    drop(children);
    drop(zookeeper);
    result
}

/// The flags that put a child under `options`' high availability.
fn ha_flags(options: &HaOptions) -> Vec<OsString> {
    [
        "--high-availability",
        "zookeeper",
        "--zookeeper-quorum",
        &options.quorum,
        "--zookeeper-path-root",
        &options.path_root,
        "--cluster-id",
        &options.cluster_id,
        "--zookeeper-session-timeout-ms",
        &options.session_timeout_ms.to_string(),
    ]
    .into_iter()
    .map(OsString::from)
    .collect()
}

/// Starts JobManager child `i`: free ports, its blobs and log under `work`, the storage
/// directory every JobManager of the run shares, and the flags of this command line that
/// `jobmanager` takes.
fn spawn_jobmanager(
    args: &ClusterArgs,
    options: &HaOptions,
    exe: &Path,
    work: &Path,
    i: u32,
    children: &mut Children,
) -> Result<(), Failure> {
    let log = std::fs::File::create(work.join(format!("jm-{i}.log")))
        .with_context(|| format!("creating JobManager {i}'s log"))
        .map_err(Failure::Work)?;
    let mut command = Command::new(exe);
    // The secret goes in the child's environment: its command line is visible to `ps`.
    command.env_remove(crate::token::TOKEN_ENV);
    if let Some(token) = args.token.token()? {
        command.env(crate::token::TOKEN_ENV, token);
    }
    let child = command
        .arg("jobmanager")
        .args(["--address", "127.0.0.1:0", "--rest-port", "0"])
        .arg("--blob-dir")
        .arg(work.join(format!("jm-{i}-blobs")))
        .arg("--ha-storage-dir")
        .arg(work.join("ha-storage"))
        .args(ha_flags(options))
        .arg("--exit-with-parent")
        .args(&args.jobmanager_flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting JobManager {i}"))
        .map_err(Failure::Work)?;
    children.0.push(child);
    Ok(())
}

/// The last lines of JobManager `i`'s log, for an error.
fn log_tail(work: &Path, i: u32) -> String {
    let text = std::fs::read_to_string(work.join(format!("jm-{i}.log"))).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join("\n")
}

/// Fails when a child has exited (none should before the job's end).
fn none_exited(children: &mut Children, work: &Path, job_managers: u32) -> Result<(), Failure> {
    match children.exited() {
        None => Ok(()),
        Some((pid, status)) => {
            // The JobManagers were started first.
            let index = children
                .0
                .iter()
                .position(|c| c.id() == pid)
                .and_then(|i| u32::try_from(i).ok());
            let what = match index {
                Some(i) if i < job_managers => {
                    format!(
                        "JobManager {i} (pid {pid}) exited ({status}): {}",
                        log_tail(work, i)
                    )
                }
                _ => format!("TaskManager process {pid} exited ({status})"),
            };
            Err(Failure::Work(anyhow!("{what}")))
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn run_on(
    args: &ClusterArgs,
    options: &HaOptions,
    children: &mut Children,
    bytes: Vec<u8>,
    slots: u32,
    job_options: JobOptions,
    work: &Path,
    started: Instant,
) -> Result<JobReport, Failure> {
    let exe = std::env::current_exe()
        .context("finding the conflux executable")
        .map_err(Failure::Work)?;
    let token = args.token.token()?;
    for i in 0..args.job_managers {
        spawn_jobmanager(args, options, &exe, work, i, children)?;
    }
    let spinner = crate::progress::spinner(format!(
        "electing a leader among {} JobManagers",
        args.job_managers
    ));
    let retrieval = LeaderRetrieval::start(options)
        .await
        .map_err(|e| Failure::Work(e.into()))?;
    let deadline = Instant::now() + REGISTRATION_TIMEOUT;
    let leader = loop {
        none_exited(children, work, args.job_managers)?;
        if let Some(leader) = retrieval.current() {
            break leader;
        }
        if Instant::now() > deadline {
            return Err(Failure::Work(anyhow!(
                "no JobManager led within {} s",
                REGISTRATION_TIMEOUT.as_secs()
            )));
        }
        tokio::time::sleep(POLL).await;
    };
    spawn_task_managers(args, &exe, slots, work, &ha_flags(options), children)?;
    if let Some(spinner) = &spinner {
        spinner.set_message(format!("starting {} TaskManagers", args.task_managers));
    }
    let mut client = JobManagerClient::connect(&leader.rpc_address, token.clone())
        .await
        .map_err(|e| Failure::Work(e.into()))?;
    loop {
        none_exited(children, work, args.job_managers)?;
        let registered = client
            .task_manager_count()
            .await
            .map_err(|e| Failure::Work(e.into()))?;
        if registered >= u64::from(args.task_managers) {
            break;
        }
        if Instant::now() > deadline {
            return Err(Failure::Work(anyhow!(
                "only {registered} of {} TaskManagers registered within {} s",
                args.task_managers,
                REGISTRATION_TIMEOUT.as_secs()
            )));
        }
        tokio::time::sleep(POLL).await;
    }
    let submission = JobSubmission {
        job: bytes.into(),
        source: args.file.display().to_string(),
        options: job_options,
    };
    let job = client.submit(submission).await.map_err(|e| match e {
        ClientError::JobManager(m) => Failure::input(anyhow!("{m}")),
        e => Failure::Work(e.into()),
    })?;
    if let Some(spinner) = &spinner {
        spinner.set_message(format!(
            "running {} on {} TaskManagers",
            args.file.display(),
            args.task_managers
        ));
    }
    let changes = Arc::new(AtomicU64::new(0));
    let counter = tokio::spawn(count_leader_changes(
        retrieval.subscribe(),
        leader.fencing_token,
        Arc::clone(&changes),
    ));
    let follow = (retrieval, leader);
    let (done, done_rx) = tokio::sync::watch::channel(false);
    let waiting = async {
        let report = super::follow::wait_following(&mut client, &follow, token.clone(), job).await;
        let _ = done.send(true);
        report
    };
    let killing = kill_leader(args, &follow.0, children, job, token.clone(), done_rx);
    let (report, (kill_skipped, recovery_ms)) = tokio::join!(waiting, killing);
    counter.abort();
    drop(spinner);
    let mut report = report?;
    report.wall_ms.total = started.elapsed().as_secs_f64() * 1e3;
    // The output of a job that did not finish is incomplete (no `_SUCCESS`): nothing to verify.
    if args.verify && report.status == "FINISHED" {
        verify(&args.file, &args.load, &options_dir(args)?, &mut report)?;
    }
    report.kill_skipped = kill_skipped;
    report.leader_changes = Some(changes.load(Ordering::Relaxed));
    report.recovery_ms = recovery_ms.map(conflux_report::round::ms);
    Ok(report)
}

/// Counts the leaders published after the one of `first` (each a leader change).
async fn count_leader_changes(
    mut leader: tokio::sync::watch::Receiver<Option<LeaderInfo>>,
    first: u64,
    changes: Arc<AtomicU64>,
) {
    let mut last = first;
    while leader.changed().await.is_ok() {
        let token = leader.borrow_and_update().as_ref().map(|l| l.fencing_token);
        if let Some(token) = token.filter(|t| *t != last) {
            last = token;
            changes.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// `--kill-job-manager-after-ms T`: T ms after the submission, SIGKILL of the leader (one of
/// `children`), then the time until the next leader deploys the job's tasks. Returns why
/// nothing was killed (or `None`) and that time (`None` when nothing was killed, or the job
/// ended first: `done` became true).
async fn kill_leader(
    args: &ClusterArgs,
    retrieval: &LeaderRetrieval,
    children: &mut Children,
    job: JobId,
    token: Option<String>,
    done: tokio::sync::watch::Receiver<bool>,
) -> (Option<String>, Option<Duration>) {
    let Some(after) = args.kill_job_manager_after_ms else {
        return (None, None);
    };
    let ended = || {
        let mut done = done.clone();
        async move {
            let _ = done.wait_for(|d| *d).await;
        }
    };
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(after)) => {}
        () = ended() => {
            return (Some(format!("the job ended before {after} ms: nothing was killed")), None);
        }
    }
    let Some(leader) = retrieval.current() else {
        return (
            Some(format!(
                "no leader was published at {after} ms: nothing was killed"
            )),
            None,
        );
    };
    let killed_at = Instant::now();
    match leader.pid {
        Some(pid) if children.kill_pid(pid) => {
            tracing::warn!(
                pid,
                fencing_token = leader.fencing_token,
                "injected fault: leading JobManager killed"
            );
        }
        pid => {
            return (
                Some(format!(
                    "the leader (pid {pid:?}) is not one of this run's JobManagers: nothing was \
                     killed"
                )),
                None,
            );
        }
    }
    tokio::select! {
        deployed = first_deployment(retrieval, leader.fencing_token, job, token) => {
            (None, deployed.then(|| killed_at.elapsed()))
        }
        () = ended() => (None, None),
    }
}

/// Waits until a leader after the one of `killed` shows job `job` deploying (a task deploying
/// or running, or more finished than it first showed: those it kept) or ended; `false` when no
/// new leader is published within 10 minutes.
async fn first_deployment(
    retrieval: &LeaderRetrieval,
    killed: u64,
    job: JobId,
    token: Option<String>,
) -> bool {
    let mut after = killed;
    loop {
        let Ok(leader) = crate::ha::next_leader(retrieval, after, Duration::from_secs(600)).await
        else {
            return false;
        };
        let Ok(mut client) = JobManagerClient::connect(&leader.rpc_address, token.clone()).await
        else {
            tokio::time::sleep(POLL).await;
            continue;
        };
        let mut kept = None;
        loop {
            match client.status(job).await {
                Ok(summary) => {
                    let finished = summary.tasks[FINISHED];
                    let kept = *kept.get_or_insert(finished);
                    if summary.tasks[DEPLOYING] + summary.tasks[RUNNING] > 0
                        || finished > kept
                        || summary.ended()
                    {
                        return true;
                    }
                }
                // Not recovered yet: asked again.
                Err(ClientError::JobManager(_)) => {}
                // This leader is gone too: the next one.
                Err(_) => {
                    after = leader.fencing_token;
                    break;
                }
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
