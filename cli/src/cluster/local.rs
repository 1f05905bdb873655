//! `conflux cluster`: a JobManager in this process, TaskManager child processes on loopback,
//! one job, and every child stopped at the end, on error and on Ctrl-C.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context as _};
use conflux_graph::ExecutionGraph;
use conflux_runtime::protocol::JobSubmission;
use conflux_runtime::report::KilledTaskManager;
use conflux_runtime::{JobManager, JobReport};

use super::args::{jobmanager_config, ClusterArgs};
use super::in_process::REGISTRATION_TIMEOUT;
use crate::work_dir::{self, Kind, WorkDir};
use crate::Failure;

/// The TaskManager children: killed and reaped when dropped, whatever happened.
pub(super) struct Children(pub(super) Vec<Child>);

impl Children {
    pub(super) fn kill_pid(&mut self, pid: u32) -> bool {
        match self.0.iter_mut().find(|c| c.id() == pid) {
            Some(child) => {
                let killed = child.kill().is_ok();
                let _ = child.wait();
                killed
            }
            None => false,
        }
    }

    /// A child that has exited, with its status.
    pub(super) fn exited(&mut self) -> Option<(u32, std::process::ExitStatus)> {
        self.0
            .iter_mut()
            .find_map(|c| c.try_wait().ok().flatten().map(|s| (c.id(), s)))
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        // The last started first: TaskManagers before the JobManagers they follow.
        for child in self.0.iter_mut().rev() {
            let _ = child.kill();
        }
        for child in &mut self.0 {
            let _ = child.wait();
        }
    }
}

/// Nice levels a TaskManager child's work threads run below its heartbeat thread: 19, so that
/// on one machine the TaskManagers (each on a host of its own in a real cluster) do not starve
/// the JobManager's event loop (at 100k x 100k, 20 busy TaskManagers at nice 10 still
/// outweighed the job loop: its longest call was 13-16 ms of wall time for at most 9 ms of CPU;
/// at 19, 6-9 ms), while their heartbeat threads keep the JobManager's priority: a heartbeat
/// thread at nice 19 waited behind the JobManager's busy threads for up to 0.1-0.7 s.
const TASKMANAGER_WORK_NICE: u8 = 19;

/// Slots per TaskManager: the job's slot demand spread evenly.
pub(super) fn default_slots(bytes: &[u8], args: &ClusterArgs) -> Result<u32, Failure> {
    let job = conflux_graph::load::load(bytes, &args.load.options())
        .map_err(|e| Failure::input(anyhow!("{}: {e}", args.file.display())))?;
    let graph = ExecutionGraph::build(job)
        .map_err(|e| Failure::input(anyhow!("{}: {e}", args.file.display())))?;
    Ok(conflux_sim::slot_demand(&graph)
        .div_ceil(args.task_managers)
        .max(1))
}

pub(super) fn options_dir(args: &ClusterArgs) -> Result<std::path::PathBuf, Failure> {
    args.job
        .output_dir
        .clone()
        .ok_or_else(|| Failure::input(anyhow!("--verify needs --output-dir")))
}

/// Compares the sinks' files in `dir` with the counts computed from the seeds alone of the
/// job read from `file` (`cluster --verify`, `submit --verify`), into the report's
/// `data.output_verified` and `data.first_difference`.
///
/// # Errors
/// Bad input: a job file that cannot be read or runs no word count; failed work: a directory
/// that cannot be read.
pub(super) fn verify(
    file: &std::path::Path,
    load: &crate::LoadArgs,
    dir: &std::path::Path,
    report: &mut JobReport,
) -> Result<(), Failure> {
    let bytes = crate::read_input(file)?;
    let job = conflux_graph::load::load(&bytes, &load.options())
        .map_err(|e| Failure::input(anyhow!("{}: {e}", file.display())))?;
    let Some(word_count) = conflux_runtime::word_count_job_as_run(&job, report)
        .map_err(|e| Failure::input(anyhow!("{}: {e}", file.display())))?
    else {
        return Err(Failure::input(anyhow!(
            "--verify: {} runs no word count (no vertex with invokable wordcount-source)",
            file.display()
        )));
    };
    let verification = conflux_operators::verify_output(&word_count, dir)
        .map_err(|e| Failure::Work(anyhow!("verifying {}: {e}", dir.display())))?;
    let data = report.data.get_or_insert_with(Default::default);
    data.output_verified = Some(verification.verified());
    data.first_difference = verification
        .first_difference
        .as_ref()
        .map(ToString::to_string);
    if !verification.verified() && data.first_difference.is_none() {
        data.first_difference = Some(format!(
            "{} words expected, {} found",
            verification.words_expected, verification.words_found
        ));
    }
    Ok(())
}

pub(super) async fn run(args: &ClusterArgs) -> Result<JobReport, Failure> {
    let started = Instant::now();
    let bytes = crate::read_input(&args.file)?;
    let slots = match args.slots {
        Some(slots) => slots,
        None => default_slots(&bytes, args)?,
    };
    let options = args.job.options(&args.load)?;
    // Removed on every exit; after a SIGKILL, by the next `cluster`.
    let work = WorkDir::create(Kind::Cluster)
        .context("creating the cluster's working directory")
        .map_err(Failure::Work)?;
    // Its TaskManagers get their data directories under it as arguments.
    super::paths::check_utf8(work.path(), "the temporary directory (TMPDIR)")?;
    let mut config = jobmanager_config(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        work.path().join("blobs"),
        &args.heartbeat,
        &args.rpc,
        args.scheduler,
        args.limits,
        args.job.seed,
    )?;
    config.scheduler.speculative = args.speculative.options()?;
    config.configuration.clone_from(&args.settings.effective);
    config.rpc.token = args.token.token()?;
    // Checked before anything starts.
    args.slowdown_of(0)?;
    let jm = JobManager::start(config).await.map_err(Failure::input)?;
    // Free ports, so that runs side by side never collide: said where they are.
    eprintln!(
        "JobManager at {}, REST API {} (flink list -m {})",
        jm.address(),
        super::in_process::rest_url(&jm),
        jm.rest_address()
            .map_or_else(|| "-".to_owned(), |a| a.to_string()),
    );
    let mut children = Children(Vec::new());
    let result = tokio::select! {
        result = run_on(&jm, &mut children, args, bytes, slots, options, work.path(), started) => result,
        () = work_dir::stop_requested() => Err(Failure::Work(anyhow!("interrupted: the TaskManagers were stopped"))),
    };
    // The JobManager first, so that the TaskManagers' ends are not reported as losses; then
    // every child is killed and reaped.
    super::in_process::shutdown_within_grace(jm).await;
    drop(children);
    result
}

#[allow(clippy::too_many_arguments)]
async fn run_on(
    jm: &JobManager,
    children: &mut Children,
    args: &ClusterArgs,
    bytes: Vec<u8>,
    slots: u32,
    options: conflux_runtime::protocol::JobOptions,
    work: &std::path::Path,
    started: Instant,
) -> Result<JobReport, Failure> {
    let exe = std::env::current_exe()
        .context("finding the conflux executable")
        .map_err(Failure::Work)?;
    let jobmanager = [
        std::ffi::OsString::from("--jobmanager"),
        jm.address().to_string().into(),
    ];
    spawn_task_managers(args, &exe, slots, work, &jobmanager, children)?;
    // Cleared on every return path (dropped).
    let spinner = crate::progress::spinner(format!("starting {} TaskManagers", args.task_managers));
    let deadline = Instant::now() + REGISTRATION_TIMEOUT;
    while jm.task_managers().len() < args.task_managers as usize {
        if let Some((pid, status)) = children.exited() {
            return Err(Failure::Work(anyhow!(
                "TaskManager process {pid} exited before registering ({status})"
            )));
        }
        if Instant::now() > deadline {
            return Err(Failure::Work(anyhow!(
                "only {} of {} TaskManagers registered within {} s",
                jm.task_managers().len(),
                args.task_managers,
                REGISTRATION_TIMEOUT.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let submission = JobSubmission {
        job: bytes.into(),
        source: args.file.display().to_string(),
        options,
    };
    let job = jm.submit(submission).await.map_err(Failure::input)?;
    if let Some(spinner) = &spinner {
        spinner.set_message(format!(
            "running {} on {} TaskManagers",
            args.file.display(),
            args.task_managers
        ));
    }
    let submitted = Instant::now();
    let mut killed = None;
    let mut kill_skipped = None;
    let report = match args.kill_task_manager_after_ms {
        None => jm.wait(job).await,
        Some(after) => {
            let wait = jm.wait(job);
            tokio::pin!(wait);
            tokio::select! {
                report = &mut wait => {
                    kill_skipped = Some(format!("the job ended before {after} ms: nothing was killed"));
                    report
                }
                () = tokio::time::sleep(Duration::from_millis(after)) => {
                    // The TaskManager with the most deployed tasks; ties: the lowest id.
                    let victim = jm
                        .task_managers()
                        .into_iter()
                        .max_by_key(|t| (t.job_tasks, std::cmp::Reverse(t.id)));
                    if let Some(victim) = victim {
                        if children.kill_pid(victim.pid) {
                            tracing::warn!(task_manager = %victim.id, pid = victim.pid, "injected fault: TaskManager killed");
                            killed = Some(KilledTaskManager {
                                id: victim.id.to_string(),
                                pid: victim.pid,
                                tasks: victim.job_tasks,
                                after_ms: u64::try_from(submitted.elapsed().as_millis()).unwrap_or(u64::MAX),
                            });
                        }
                    }
                    wait.await
                }
            }
        }
    };
    drop(spinner);
    let mut report = report.map_err(|e| Failure::Work(e.into()))?;
    report.wall_ms.total = started.elapsed().as_secs_f64() * 1e3;
    // The output of a job that did not finish is incomplete (no `_SUCCESS`): nothing to verify.
    if args.verify && report.status == "FINISHED" {
        verify(&args.file, &args.load, &options_dir(args)?, &mut report)?;
    }
    report.killed_task_manager = killed;
    report.kill_skipped = kill_skipped;
    // One JobManager, in this process: it never changes.
    report.leader_changes = Some(0);
    Ok(report)
}

/// Starts `args.task_managers` TaskManager children of `exe` with `slots` slots each, their data
/// directories under `work`, registering with what `jobmanager` names (`--jobmanager ADDRESS`,
/// or the high-availability flags that find the leader); each is pushed onto `children` as it
/// starts.
///
/// # Errors
/// A work failure when a child cannot be started; an input failure for a bad slowdown.
pub(super) fn spawn_task_managers(
    args: &ClusterArgs,
    exe: &std::path::Path,
    slots: u32,
    work: &std::path::Path,
    jobmanager: &[std::ffi::OsString],
    children: &mut Children,
) -> Result<(), Failure> {
    let token = args.token.token()?;
    for i in 0..args.task_managers {
        let slowdown = args.slowdown_of(i)?;
        // Its work threads lower their own priority (`--work-nice`), its heartbeat thread does not.
        let mut command = Command::new(exe);
        // A TaskManager daemon logs at INFO by default; as children of one run they only warn,
        // unless RUST_LOG says otherwise (it is inherited); the ZooKeeper client's retries
        // (high availability) are not news.
        if std::env::var_os("RUST_LOG").is_none() {
            command.env("RUST_LOG", "warn,zookeeper_client=error");
        }
        // The secret goes in the child's environment: its command line is visible to `ps`.
        command.env_remove(crate::token::TOKEN_ENV);
        if let Some(token) = &token {
            command.env(crate::token::TOKEN_ENV, token);
        }
        command.arg("taskmanager");
        if args.log.log_format == crate::logging::LogFormat::Json {
            command.args(["--log-format", "json"]);
        }
        let child = command
            .args(jobmanager)
            .arg("--slots")
            .arg(slots.to_string())
            .arg("--data-dir")
            .arg(work.join(format!("tm-{i}")))
            .arg("--exit-with-parent")
            .arg("--work-nice")
            .arg(TASKMANAGER_WORK_NICE.to_string())
            .args(args.partition_requests.to_args())
            .args(
                (slowdown > 1.0)
                    .then(|| ["--slowdown".to_owned(), slowdown.to_string()])
                    .into_iter()
                    .flatten(),
            )
            .args(
                args.data_dir_max_bytes
                    .map(|b| ["--data-dir-max-bytes".to_owned(), b.to_string()])
                    .into_iter()
                    .flatten(),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .with_context(|| format!("starting TaskManager {i}"))
            .map_err(Failure::Work)?;
        children.0.push(child);
    }
    Ok(())
}
