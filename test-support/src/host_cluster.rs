//! A Conflux cluster across [`Hosts`]: `conflux jobmanager` on host `jm` and `conflux
//! taskmanager` on hosts `tm1` ... `tmN`, each bound to and advertising its own host's address,
//! and clients (`conflux submit`) run on host `jm`. Every process logs at INFO into the
//! cluster's working directory, which is removed with it; the processes and namespaces go when
//! it is dropped (see [`Hosts`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::hosts::{Hosts, HostsError};

/// The JobManager's port on its host.
pub const JOBMANAGER_PORT: u16 = 6123;

/// What to start.
#[derive(Clone, Debug)]
pub struct ClusterSpec {
    /// TaskManagers (hosts `tm1` ... `tmN`).
    pub task_managers: u32,
    /// Slots of each.
    pub slots: u32,
    /// Flags added to `conflux jobmanager` (heartbeats, restart strategy, ...).
    pub jobmanager_args: Vec<String>,
    /// Flags added to every `conflux taskmanager`.
    pub taskmanager_args: Vec<String>,
}

/// The running cluster.
#[derive(Debug)]
pub struct HostCluster {
    /// The hosts (`jm`, `tm1`, ...); faults are applied through them.
    pub hosts: Hosts,
    /// Logs (`jm.log`, `tm1.log`, ...), data directories and whatever the test puts there.
    pub dir: tempfile::TempDir,
    conflux: PathBuf,
}

/// Names of the TaskManager hosts of a cluster of `n`.
pub fn task_manager_names(n: u32) -> Vec<String> {
    (1..=n).map(|i| format!("tm{i}")).collect()
}

impl HostCluster {
    /// Makes the hosts, starts the JobManager and the TaskManagers, and waits (up to 30 s)
    /// until every TaskManager has registered.
    ///
    /// # Errors
    /// As [`Hosts::create`], or a process that could not start or register (its log's tail).
    pub fn start(conflux: &Path, spec: &ClusterSpec) -> Result<HostCluster, HostsError> {
        let tms = task_manager_names(spec.task_managers);
        let mut names = vec!["jm"];
        names.extend(tms.iter().map(String::as_str));
        let hosts = Hosts::create(&names)?;
        let dir = crate::hosts::work_dir("cluster").map_err(|e| HostsError(e.to_string()))?;
        let mut cluster = HostCluster {
            hosts,
            dir,
            conflux: conflux.to_owned(),
        };
        let jm = cluster.jobmanager();
        let jm_ip = cluster.hosts.ip("jm").to_string();
        let mut args: Vec<String> = [
            "jobmanager",
            "--address",
            &jm,
            "--advertised-address",
            &jm_ip,
            "--rest-port",
            "0",
            "--blob-dir",
        ]
        .map(String::from)
        .to_vec();
        args.push(cluster.dir.path().join("blobs").display().to_string());
        args.extend(spec.jobmanager_args.iter().cloned());
        cluster.spawn("jm", "jm", &args)?;
        cluster.wait_for_log("jm", "JobManager listening on", Duration::from_secs(30))?;
        for tm in &tms {
            let ip = cluster.hosts.ip(tm).to_string();
            let mut args: Vec<String> = [
                "taskmanager",
                "--jobmanager",
                &jm,
                "--slots",
                &spec.slots.to_string(),
                "--advertised-address",
                &ip,
                "--data-dir",
            ]
            .map(String::from)
            .to_vec();
            args.push(cluster.dir.path().join(tm).display().to_string());
            args.extend(spec.taskmanager_args.iter().cloned());
            cluster.spawn(tm, tm, &args)?;
        }
        for tm in &tms {
            cluster.wait_for_log(tm, "registered", Duration::from_secs(30))?;
        }
        Ok(cluster)
    }

    /// The JobManager's `IP:port`.
    pub fn jobmanager(&self) -> String {
        format!("{}:{JOBMANAGER_PORT}", self.hosts.ip("jm"))
    }

    fn spawn(&mut self, host: &str, label: &str, args: &[String]) -> Result<u32, HostsError> {
        let dir = self.dir.path().to_owned();
        let mut command = self.hosts.command(host, &self.conflux);
        // Every process at INFO: its registrations, losses and cancellations are what the
        // tests read.
        command
            .args(args)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1");
        self.hosts.spawn(label, command, &dir)
    }

    /// The log of the process started as `label` so far (empty when there is none).
    pub fn log(&self, label: &str) -> String {
        std::fs::read_to_string(crate::hosts::log_path(self.dir.path(), label)).unwrap_or_default()
    }

    /// Waits until `label`'s log contains `text`.
    ///
    /// # Errors
    /// When it does not within `timeout`: the log's tail.
    pub fn wait_for_log(
        &self,
        label: &str,
        text: &str,
        timeout: Duration,
    ) -> Result<(), HostsError> {
        let deadline = Instant::now() + timeout;
        loop {
            let log = self.log(label);
            if log.contains(text) {
                return Ok(());
            }
            if Instant::now() > deadline {
                let tail: String = log.lines().rev().take(20).collect::<Vec<_>>().join("\n");
                return Err(HostsError(format!(
                    "{label} did not log {text:?} within {} s; its last lines (newest first):\n{tail}",
                    timeout.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A `conflux` command run on host `host` (e.g. `submit ... --jobmanager` [`jobmanager`](Self::jobmanager)).
    pub fn conflux_on(&self, host: &str) -> Command {
        self.hosts.command(host, &self.conflux)
    }

    /// Starts `conflux submit FILE --jobmanager JM --format json ARGS` on host `jm`, its
    /// stdout piped (the report), its stderr into `submit.log`.
    ///
    /// # Errors
    /// When it cannot start.
    pub fn submit(&self, file: &Path, args: &[&str]) -> Result<Child, HostsError> {
        let log = crate::hosts::log_path(self.dir.path(), "submit");
        let stderr = std::fs::File::create(&log)
            .map_err(|e| HostsError(format!("{}: {e}", log.display())))?;
        self.conflux_on("jm")
            .arg("submit")
            .arg(file)
            .args(["--jobmanager", &self.jobmanager(), "--format", "json"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| HostsError(format!("starting submit: {e}")))
    }
}

/// Waits for `child` up to `timeout` and returns its stdout; a child still running then is
/// killed and reaped, and the error says it hung.
///
/// # Errors
/// A hung child, or one whose output cannot be read.
pub fn finish(
    mut child: Child,
    timeout: Duration,
) -> Result<(std::process::ExitStatus, String), HostsError> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(HostsError(format!(
                    "still running after {} s: it hangs",
                    timeout.as_secs()
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(HostsError(e.to_string())),
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| HostsError(e.to_string()))?;
    Ok((
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}
