//! The cluster commands as real processes on loopback: `conflux cluster` (with a TaskManager
//! killed), and `jobmanager`, `taskmanager`, `submit`, `list` with a TaskManager stopped
//! (SIGSTOP) and a JobManager killed and started again. Every child is killed and reaped by its
//! guard, whatever happens to the test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{conflux, repo};

/// A child process, killed (continued first when stopped) and reaped when dropped.
pub(crate) struct Proc {
    child: Child,
    name: String,
    /// Standard error goes to this file.
    log: PathBuf,
    /// Standard output goes to this file.
    out: PathBuf,
    stopped: bool,
}

impl Proc {
    /// Starts `conflux ARGS` with `RUST_LOG=info`, standard output and error to files in `dir`
    /// named after `name`. With `stdin_piped`, standard input stays open for the child's life.
    pub(crate) fn start(name: &str, args: &[&str], dir: &Path, stdin_piped: bool) -> Proc {
        Proc::start_with_tmpdir(name, args, dir, stdin_piped, None)
    }

    /// [`Proc::start`] with `TMPDIR` set to `tmpdir` (where its working directories go).
    pub(crate) fn start_with_tmpdir(
        name: &str,
        args: &[&str],
        dir: &Path,
        stdin_piped: bool,
        tmpdir: Option<&Path>,
    ) -> Proc {
        Proc::spawn(name, args, dir, stdin_piped, tmpdir, Some("info"))
    }

    /// [`Proc::start`] without `RUST_LOG`: the command's own default log level.
    pub(crate) fn start_without_rust_log(
        name: &str,
        args: &[&str],
        dir: &Path,
        stdin_piped: bool,
    ) -> Proc {
        Proc::spawn(name, args, dir, stdin_piped, None, None)
    }

    fn spawn(
        name: &str,
        args: &[&str],
        dir: &Path,
        stdin_piped: bool,
        tmpdir: Option<&Path>,
        rust_log: Option<&str>,
    ) -> Proc {
        let log = dir.join(format!("{name}.log"));
        let out = dir.join(format!("{name}.out"));
        let mut command = Command::new(env!("CARGO_BIN_EXE_conflux"));
        if let Some(tmpdir) = tmpdir {
            command.env("TMPDIR", tmpdir);
        }
        match rust_log {
            Some(filter) => command.env("RUST_LOG", filter),
            None => command.env_remove("RUST_LOG"),
        };
        let child = command
            .args(args)
            .current_dir(repo())
            .stdin(if stdin_piped {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(std::fs::File::create(&out).expect("stdout file"))
            .stderr(std::fs::File::create(&log).expect("stderr file"))
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        Proc {
            child,
            name: name.to_owned(),
            log,
            out,
            stopped: false,
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub(crate) fn stdout(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap_or_default()
    }

    /// Sends `signal` (`STOP`, `CONT`, `KILL`) with kill(1).
    pub(crate) fn signal(&mut self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .expect("runs kill");
        assert!(status.success(), "kill -{signal} {}", self.name);
        match signal {
            "STOP" => self.stopped = true,
            "CONT" => self.stopped = false,
            _ => {}
        }
    }

    /// Waits (at most `limit`) for the process to exit.
    pub(crate) fn wait(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{} still runs after {} ms\nstdout: {}\nstderr: {}",
                self.name,
                limit.as_millis(),
                self.stdout(),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL and reap.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits (at most `limit`) until its log contains `text` `times` times; returns the log.
    pub(crate) fn wait_for_log(&mut self, text: &str, times: usize, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let log = self.log();
            if log.matches(text).count() >= times {
                return log;
            }
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                panic!(
                    "{} exited ({status}) before logging {text:?}: {log}",
                    self.name
                );
            }
            assert!(
                Instant::now() < deadline,
                "{} did not log {text:?} {times} times within {} ms: {log}",
                self.name,
                limit.as_millis()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.stopped {
            let _ = Command::new("kill")
                .arg("-CONT")
                .arg(self.pid().to_string())
                .status();
        }
        self.kill();
    }
}

/// `conflux generate wordcount` into `dir/NAME`; returns the path.
pub(crate) fn word_count(dir: &Path, parallelism: u32, partition_type: &str) -> String {
    let path = dir.join(format!("wordcount-{parallelism}-{partition_type}.json"));
    let path = path.to_str().expect("utf-8 path").to_owned();
    let out = conflux(&[
        "generate",
        "wordcount",
        "--parallelism",
        &parallelism.to_string(),
        "--result-partition-type",
        partition_type,
        "-o",
        &path,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

/// Runs `conflux ARGS` to its end (at most `limit`); returns its status, stdout and stderr.
pub(crate) fn run_bounded(
    name: &str,
    args: &[&str],
    dir: &Path,
    limit: Duration,
) -> (ExitStatus, String, String) {
    let mut proc = Proc::start(name, args, dir, false);
    let status = proc.wait(limit);
    (status, proc.stdout(), proc.log())
}

pub(crate) fn json(stdout: &str, stderr: &str) -> Value {
    serde_json::from_str(stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}\nstderr: {stderr}"))
}

pub(crate) fn u64_at(report: &Value, key: &str) -> u64 {
    report[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not a count in {report}"))
}

/// A `conflux jobmanager` on `address` with 100 ms heartbeats lost after 500 ms, restarting
/// failed tasks with exponential delay (tests lose TaskManagers); returns it and the address it
/// listens on (parsed from "JobManager listening on ADDR").
pub(crate) fn start_jobmanager(name: &str, address: &str, dir: &Path) -> (Proc, String) {
    let blobs = dir.join(format!("{name}-blobs"));
    let mut jm = Proc::start(
        name,
        &[
            "jobmanager",
            "--rest-port",
            "0",
            "--address",
            address,
            "--blob-dir",
            blobs.to_str().expect("utf-8"),
            "--heartbeat-interval-ms",
            "100",
            "--heartbeat-timeout-ms",
            "500",
            "--restart-strategy",
            "exponential-delay",
        ],
        dir,
        false,
    );
    let log = jm.wait_for_log("JobManager listening on ", 1, Duration::from_secs(10));
    let address = log
        .split("JobManager listening on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("an address after 'listening on'")
        .to_owned();
    assert!(address.starts_with("127.0.0.1:"), "{address}");
    (jm, address)
}

/// A `conflux taskmanager` of `jobmanager` with `slots` slots (it exits with this test process:
/// its standard input is held open).
pub(crate) fn start_taskmanager(name: &str, jobmanager: &str, slots: u32, dir: &Path) -> Proc {
    let data = dir.join(format!("{name}-data"));
    Proc::start(
        name,
        &[
            "taskmanager",
            "--jobmanager",
            jobmanager,
            "--slots",
            &slots.to_string(),
            "--data-dir",
            data.to_str().expect("utf-8"),
            "--exit-with-parent",
        ],
        dir,
        true,
    )
}

/// `conflux list -a --format json`: (job_id, status) of every job.
pub(crate) fn list(jobmanager: &str, dir: &Path) -> Vec<(String, String)> {
    let (status, stdout, stderr) = run_bounded(
        "list",
        &["list", "-a", "--jobmanager", jobmanager, "--format", "json"],
        dir,
        Duration::from_secs(10),
    );
    assert!(status.success(), "{stderr}");
    let listed = json(&stdout, &stderr);
    listed["jobs"]
        .as_array()
        .unwrap_or_else(|| panic!("no jobs array: {listed}"))
        .iter()
        .map(|j| {
            assert!(j["name"].is_string(), "{j}");
            (
                j["job_id"].as_str().expect("job_id").to_owned(),
                j["status"].as_str().expect("status").to_owned(),
            )
        })
        .collect()
}

#[test]
fn cluster_runs_a_word_count_on_two_task_managers_with_the_full_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count(dir.path(), 8, "blocking");
    let (status, stdout, stderr) = run_bounded(
        "cluster",
        &[
            "cluster",
            &file,
            "--task-managers",
            "2",
            "--task-duration-ms",
            "0",
            "--heartbeat-interval-ms",
            "200",
            "--heartbeat-timeout-ms",
            "2000",
            "--format",
            "json",
        ],
        dir.path(),
        Duration::from_secs(60),
    );
    assert!(status.success(), "{status}\n{stdout}\n{stderr}");
    let r = json(&stdout, &stderr);
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert_eq!(r["failure_reason"], Value::Null);
    assert_eq!(r["job"], "word count 8 x 8 (blocking)");
    assert_eq!(r["job_id"].as_str().map(str::len), Some(32), "{r}");
    assert_eq!(u64_at(&r, "tasks"), 16);
    assert_eq!(u64_at(&r, "tasks_deployed"), 16);
    for key in [
        "restarts",
        "task_managers_lost",
        "heartbeat_timeouts",
        "rpc_timeouts",
    ] {
        assert_eq!(u64_at(&r, key), 0, "{key}: {r}");
    }
    assert!(
        r["max_handler_stall_ms"].as_f64().is_some_and(|v| v >= 0.0),
        "{r}"
    );
    // Measured only when a heartbeat was answered while the job ran: null, never 0, otherwise.
    let rtt = &r["max_heartbeat_rtt_ms"];
    assert!(
        rtt.is_null() || rtt.as_f64().is_some_and(|v| v >= 0.0),
        "{r}"
    );
    // A call's CPU time is part of its wall time.
    let cpu = r["max_handler_cpu_ms"]
        .as_f64()
        .expect("max_handler_cpu_ms");
    assert!(
        cpu > 0.0 && cpu <= r["max_handler_stall_ms"].as_f64().unwrap_or(0.0) + 0.01,
        "{r}"
    );
    let deploy = r["wall_ms"]["deploy"].as_f64().expect("wall_ms.deploy");
    let total = r["wall_ms"]["total"].as_f64().expect("wall_ms.total");
    assert!(deploy >= 0.0 && total > 0.0 && deploy <= total, "{r}");
    assert!(u64_at(&r, "jobmanager_peak_rss_bytes") > 0, "{r}");
    let tms = r["task_managers"].as_array().expect("task_managers");
    assert_eq!(tms.len(), 2, "{r}");
    let mut tasks = 0;
    let mut fetches = 0;
    for tm in tms {
        assert!(
            tm["id"].as_str().is_some_and(|id| id.starts_with("tm")),
            "{tm}"
        );
        // The slot demand (8) spread over 2 TaskManagers.
        assert_eq!(u64_at(tm, "slots"), 4, "{tm}");
        assert_eq!(tm["lost"], false, "{tm}");
        for key in ["peak_rss_bytes", "tdd_bytes_received", "blob_fetches"] {
            assert!(tm[key].is_u64(), "{key}: {tm}");
        }
        if u64_at(tm, "tasks") > 0 {
            assert!(u64_at(tm, "tdd_bytes_received") > 0, "{tm}");
            assert!(u64_at(tm, "peak_rss_bytes") > 0, "{tm}");
        }
        tasks += u64_at(tm, "tasks");
        fetches += u64_at(tm, "blob_fetches");
    }
    assert_eq!(tasks, 16);
    assert_eq!(u64_at(&r, "blob_fetches"), fetches);
    assert_eq!(r["killed_task_manager"], Value::Null);
}

#[test]
fn cluster_survives_a_killed_task_manager() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count(dir.path(), 4, "blocking");
    // 3 x 4 slots for a slot demand of 4: the two survivors hold the whole job.
    let (status, stdout, stderr) = run_bounded(
        "cluster-kill",
        &[
            "cluster",
            &file,
            "--task-managers",
            "3",
            "--slots",
            "4",
            "--kill-task-manager-after-ms",
            "300",
            "--restart-strategy",
            "exponential-delay",
            "--task-duration-ms",
            "500..800",
            "--heartbeat-interval-ms",
            "100",
            "--heartbeat-timeout-ms",
            "500",
            "--format",
            "json",
        ],
        dir.path(),
        Duration::from_secs(60),
    );
    assert!(status.success(), "{status}\n{stdout}\n{stderr}");
    let r = json(&stdout, &stderr);
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert_eq!(r["kill_skipped"], Value::Null, "{r}");
    let killed = &r["killed_task_manager"];
    let killed_id = killed["id"]
        .as_str()
        .unwrap_or_else(|| panic!("nothing killed: {r}"));
    assert!(u64_at(killed, "pid") > 0);
    let killed_tasks = u64_at(killed, "tasks");
    assert!(killed_tasks > 0, "the busiest TaskManager had tasks: {r}");
    assert!(u64_at(killed, "after_ms") >= 300, "{r}");
    assert!(u64_at(&r, "task_managers_lost") >= 1, "{r}");
    assert!(u64_at(&r, "restarts") >= 1, "{r}");
    // The lost regions ran again only after the restart delay (1 s, jitter 10%).
    let redeploy = r["max_loss_to_redeploy_ms"]
        .as_f64()
        .unwrap_or_else(|| panic!("no time from the loss to the re-runs: {r}"));
    assert!(redeploy >= 900.0, "{r}");
    // Each restart is logged at WARN with its cause.
    assert!(
        stderr.contains("restarting tasks after a failure") && stderr.contains("was lost"),
        "{stderr}"
    );
    assert_eq!(u64_at(&r, "tasks"), 8);
    assert!(u64_at(&r, "tasks_deployed") > 8, "{r}");
    // Three took part; listed are those that received tasks (the killed one did).
    assert_eq!(u64_at(&r, "task_manager_count"), 3, "{r}");
    let tms = r["task_managers"].as_array().expect("task_managers");
    assert!((2..=3).contains(&tms.len()), "{r}");
    assert!(tms.iter().all(|t| u64_at(t, "tasks") > 0), "{r}");
    let entry = tms
        .iter()
        .find(|t| t["id"] == killed_id)
        .unwrap_or_else(|| panic!("{killed_id} in {r}"));
    assert_eq!(entry["lost"], true, "{r}");
    // Nothing was deployed to it after the kill.
    assert_eq!(u64_at(entry, "tasks"), killed_tasks, "{r}");
    let survivors: Vec<_> = tms.iter().filter(|t| t["id"] != killed_id).collect();
    assert!(survivors.iter().all(|t| t["lost"] == false), "{r}");
    assert_eq!(
        survivors.iter().map(|t| u64_at(t, "tasks")).sum::<u64>() + killed_tasks,
        u64_at(&r, "tasks_deployed")
    );
    // The killed process is gone.
    let pid = u64_at(killed, "pid");
    let alive = Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .expect("runs kill");
    assert!(!alive.success(), "TaskManager {pid} still runs");
}

#[test]
fn a_stopped_task_manager_misses_its_heartbeats_and_the_job_finishes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count(dir.path(), 2, "blocking");
    let (mut jm, address) = start_jobmanager("jm", "127.0.0.1:0", dir.path());
    let mut tm_a = start_taskmanager("tm-a", &address, 4, dir.path());
    tm_a.wait_for_log("registered", 1, Duration::from_secs(10));
    let mut tm_b = start_taskmanager("tm-b", &address, 4, dir.path());
    tm_b.wait_for_log("registered", 1, Duration::from_secs(10));
    jm.wait_for_log("TaskManager registered", 2, Duration::from_secs(10));

    let mut submit = Proc::start(
        "submit",
        &[
            "submit",
            &file,
            "--jobmanager",
            &address,
            "--task-duration-ms",
            "1500",
            "--format",
            "json",
        ],
        dir.path(),
        false,
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let job_id = loop {
        let jobs = list(&address, dir.path());
        if let Some((id, _)) = jobs.iter().find(|(_, status)| status == "RUNNING") {
            assert_eq!(jobs.len(), 1, "{jobs:?}");
            break id.clone();
        }
        assert!(Instant::now() < deadline, "no job RUNNING: {jobs:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    tm_a.signal("STOP");
    let status = submit.wait(Duration::from_secs(40));
    let (stdout, stderr) = (submit.stdout(), submit.log());
    assert!(status.success(), "{status}\n{stdout}\n{stderr}");
    let r = json(&stdout, &stderr);
    assert_eq!(r["job_id"], job_id.as_str());
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert!(u64_at(&r, "task_managers_lost") >= 1, "{r}");
    assert!(u64_at(&r, "heartbeat_timeouts") >= 1, "{r}");
    let jm_log = jm.log();
    assert!(
        jm_log.contains("TaskManager lost: no heartbeat answer within the timeout"),
        "{jm_log}"
    );
    assert_eq!(
        list(&address, dir.path()),
        vec![(job_id, "FINISHED".to_owned())]
    );
    // Continued, the TaskManager finds its connection closed and registers again.
    tm_a.signal("CONT");
    tm_a.wait_for_log("registering again", 1, Duration::from_secs(10));
    tm_a.wait_for_log("registered", 2, Duration::from_secs(10));
    jm.wait_for_log("TaskManager registered", 3, Duration::from_secs(10));
    tm_a.kill();
    tm_b.kill();
    jm.kill();
}

#[test]
fn a_task_manager_cancels_its_tasks_when_its_jobmanager_dies_and_registers_with_the_next() {
    let dir = tempfile::tempdir().expect("tempdir");
    let long = word_count(dir.path(), 2, "blocking");
    let (mut jm, address) = start_jobmanager("jm-1", "127.0.0.1:0", dir.path());
    let mut tm = start_taskmanager("tm", &address, 2, dir.path());
    tm.wait_for_log("registered", 1, Duration::from_secs(10));
    jm.wait_for_log("TaskManager registered", 1, Duration::from_secs(10));

    let (status, stdout, stderr) = run_bounded(
        "submit-detached",
        &[
            "submit",
            &long,
            "--jobmanager",
            &address,
            "--detached",
            "--task-duration-ms",
            "20000",
            "--format",
            "json",
        ],
        dir.path(),
        Duration::from_secs(10),
    );
    assert!(status.success(), "{stderr}");
    let job_id = json(&stdout, &stderr)["job_id"]
        .as_str()
        .expect("job_id")
        .to_owned();
    assert_eq!(job_id.len(), 32);
    // Its two sources are deployed to the only TaskManager.
    let deadline = Instant::now() + Duration::from_secs(10);
    while list(&address, dir.path()) != vec![(job_id.clone(), "RUNNING".to_owned())] {
        assert!(Instant::now() < deadline, "the job does not run");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // A client waiting for a job when the JobManager dies fails, naming it.
    let mut waiting = Proc::start(
        "submit-waiting",
        &[
            "submit",
            &long,
            "--jobmanager",
            &address,
            "--task-duration-ms",
            "0",
        ],
        dir.path(),
        false,
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while list(&address, dir.path()).len() < 2 {
        assert!(Instant::now() < deadline, "the second job is not queued");
        std::thread::sleep(Duration::from_millis(50));
    }

    jm.signal("KILL");
    jm.kill();
    let killed = Instant::now();
    let log = tm.wait_for_log(
        "cannot register with the JobManager at",
        1,
        Duration::from_secs(5),
    );
    // Within the heartbeat timeout (500 ms; the closed connection is seen at once), plus slack.
    assert!(
        killed.elapsed() < Duration::from_secs(3),
        "{:?}",
        killed.elapsed()
    );
    let cancelled = log
        .find("cancelling the tasks of the lost JobManager")
        .unwrap_or_else(|| panic!("no cancellation logged: {log}"));
    let lost = log
        .find("registering again")
        .unwrap_or_else(|| panic!("no re-registration logged: {log}"));
    let failed = log
        .find("cannot register with the JobManager at")
        .expect("found above");
    assert!(cancelled < lost && lost < failed, "{log}");
    assert!(
        log.contains("tasks=2"),
        "both sources were cancelled: {log}"
    );
    let status = waiting.wait(Duration::from_secs(10));
    let stderr = waiting.log();
    assert_eq!(status.code(), Some(1), "{stderr}");
    // Regression: it said only "ADDR closed the connection".
    assert!(
        stderr.contains(&format!(
            "the JobManager at {address} closed the connection while job"
        )) && stderr.contains("the job's state is unknown"),
        "{stderr}"
    );

    // A new JobManager on the same address: the TaskManager registers with it and runs a job
    // that needs its slots.
    let (mut jm2, address2) = start_jobmanager("jm-2", &address, dir.path());
    assert_eq!(address2, address);
    jm2.wait_for_log("TaskManager registered", 1, Duration::from_secs(15));
    tm.wait_for_log("registered", 2, Duration::from_secs(5));
    let (status, stdout, stderr) = run_bounded(
        "submit-short",
        &[
            "submit",
            &long,
            "--jobmanager",
            &address,
            "--task-duration-ms",
            "0",
            "--format",
            "json",
        ],
        dir.path(),
        Duration::from_secs(30),
    );
    assert!(status.success(), "{stdout}\n{stderr}");
    let r = json(&stdout, &stderr);
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert_eq!(u64_at(&r, "tasks_deployed"), 4, "{r}");
    let tms = r["task_managers"].as_array().expect("task_managers");
    assert_eq!(tms.len(), 1, "{r}");
    assert_eq!(u64_at(&tms[0], "slots"), 2);
    // The old job is unknown to the new JobManager.
    assert_eq!(list(&address, dir.path()).len(), 1);
    tm.kill();
    jm2.kill();
}

#[test]
fn submit_list_and_cancel_through_the_cli() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count(dir.path(), 2, "blocking");
    let (mut jm, address) = start_jobmanager("jm", "127.0.0.1:0", dir.path());
    let mut tm = start_taskmanager("tm", &address, 2, dir.path());
    jm.wait_for_log("TaskManager registered", 1, Duration::from_secs(10));

    let (status, stdout, stderr) = run_bounded(
        "list-empty",
        &["list", "--jobmanager", &address],
        dir.path(),
        Duration::from_secs(10),
    );
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, "no jobs\n");
    let (status, stdout, stderr) = run_bounded(
        "submit",
        &[
            "submit",
            &file,
            "--jobmanager",
            &address,
            "--detached",
            "--task-duration-ms",
            "60000",
        ],
        dir.path(),
        Duration::from_secs(10),
    );
    assert!(status.success(), "{stderr}");
    let job_id = stdout.trim().to_owned();
    assert_eq!(job_id.len(), 32, "{stdout}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while list(&address, dir.path()) != vec![(job_id.clone(), "RUNNING".to_owned())] {
        assert!(Instant::now() < deadline, "the job does not run");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, stdout, stderr) = run_bounded(
        "list-text",
        &["list", "--jobmanager", &address],
        dir.path(),
        Duration::from_secs(10),
    );
    assert!(status.success(), "{stderr}");
    // Id, state, start time (UTC), duration, finished/total tasks, name.
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.starts_with(&format!("{job_id}  RUNNING     20")),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("    0/4  word count 2 x 2 (blocking)\n"),
        "{stdout}"
    );

    let (status, stdout, stderr) = run_bounded(
        "cancel",
        &["cancel", &job_id, "--jobmanager", &address],
        dir.path(),
        Duration::from_secs(10),
    );
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, format!("cancelling {job_id}\n"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while list(&address, dir.path()) != vec![(job_id.clone(), "CANCELED".to_owned())] {
        assert!(Instant::now() < deadline, "the job is not cancelled");
        std::thread::sleep(Duration::from_millis(50));
    }
    // As Flink's `flink list`: running and scheduled jobs by default, ended ones with -a.
    for (flags, expected) in [
        (
            &[][..],
            "no running or scheduled jobs (1 in all: `list -a` shows them)\n",
        ),
        (
            &["-r"][..],
            "no running jobs (1 in all: `list -a` shows them)\n",
        ),
        (
            &["-s"][..],
            "no scheduled jobs (1 in all: `list -a` shows them)\n",
        ),
    ] {
        let mut args = vec!["list", "--jobmanager", &address];
        args.extend(flags);
        let (status, stdout, stderr) =
            run_bounded("list-ended", &args, dir.path(), Duration::from_secs(10));
        assert!(status.success(), "{stderr}");
        assert_eq!(stdout, expected, "{flags:?}");
    }
    let (status, stdout, stderr) = run_bounded(
        "list-all",
        &["list", "-a", "--jobmanager", &address],
        dir.path(),
        Duration::from_secs(10),
    );
    assert!(status.success(), "{stderr}");
    assert!(
        stdout.starts_with(&format!("{job_id}  CANCELED    20")),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("    0/4  word count 2 x 2 (blocking)\n"),
        "{stdout}"
    );
    // Bad and unknown ids are input errors (exit 2).
    for (id, message) in [
        ("xyz", "is not a job id"),
        (
            "00000000000000000000000000000000",
            "no job 00000000000000000000000000000000",
        ),
    ] {
        let (status, _, stderr) = run_bounded(
            "cancel-bad",
            &["cancel", id, "--jobmanager", &address],
            dir.path(),
            Duration::from_secs(10),
        );
        assert_eq!(status.code(), Some(2), "{id}: {stderr}");
        assert!(stderr.contains(message), "{id}: {stderr}");
    }
    tm.kill();
    jm.kill();
}

#[test]
fn tokens_taken_addresses_and_absent_jobmanagers_fail_with_clear_messages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let blobs = dir.path().join("blobs");
    let mut jm = Proc::start(
        "jm-token",
        &[
            "jobmanager",
            "--rest-port",
            "0",
            "--address",
            "127.0.0.1:0",
            "--blob-dir",
            blobs.to_str().expect("utf-8"),
            "--token",
            "s3cret",
        ],
        dir.path(),
        false,
    );
    let log = jm.wait_for_log("JobManager listening on ", 1, Duration::from_secs(10));
    let address = log
        .split("JobManager listening on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("an address")
        .to_owned();
    for (token, expected) in [
        (None, "this JobManager requires a token"),
        (Some("wrong"), "wrong token"),
    ] {
        let mut args = vec!["list", "--jobmanager", &address];
        if let Some(token) = token {
            args.extend(["--token", token]);
        }
        let (status, stdout, stderr) =
            run_bounded("list", &args, dir.path(), Duration::from_secs(10));
        assert_eq!(status.code(), Some(1), "{token:?}: {stdout} {stderr}");
        assert!(stderr.contains(expected), "{token:?}: {stderr}");
        // A TaskManager with that token gives up at once.
        let mut targs = vec!["taskmanager", "--jobmanager", &address, "--slots", "1"];
        if let Some(token) = token {
            targs.extend(["--token", token]);
        }
        let (status, _, stderr) =
            run_bounded("tm-refused", &targs, dir.path(), Duration::from_secs(10));
        assert!(!status.success(), "{token:?}: {stderr}");
        assert!(stderr.contains(expected), "{token:?}: {stderr}");
    }
    let (status, stdout, stderr) = run_bounded(
        "list-ok",
        &["list", "--jobmanager", &address, "--token", "s3cret"],
        dir.path(),
        Duration::from_secs(10),
    );
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, "no jobs\n");

    // The address is taken: an input error naming it.
    let (status, _, stderr) = run_bounded(
        "jm-taken",
        &[
            "jobmanager",
            "--rest-port",
            "0",
            "--address",
            &address,
            "--blob-dir",
            blobs.to_str().expect("utf-8"),
        ],
        dir.path(),
        Duration::from_secs(10),
    );
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot listen on {address}")),
        "{stderr}"
    );
    jm.kill();

    // Nobody listens any more: the client fails at once.
    let started = Instant::now();
    let (status, _, stderr) = run_bounded(
        "list-absent",
        &["list", "--jobmanager", &address, "--token", "s3cret"],
        dir.path(),
        Duration::from_secs(15),
    );
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&address), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn cluster_reports_a_skipped_kill_and_refuses_bad_heartbeats() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count(dir.path(), 2, "pipelined");
    let (status, stdout, stderr) = run_bounded(
        "cluster-no-kill",
        &[
            "cluster",
            &file,
            "--task-managers",
            "1",
            "--kill-task-manager-after-ms",
            "60000",
            "--task-duration-ms",
            "0",
            "--format",
            "json",
        ],
        dir.path(),
        Duration::from_secs(60),
    );
    assert!(status.success(), "{stdout}\n{stderr}");
    let r = json(&stdout, &stderr);
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert_eq!(r["job"], "word count 2 x 2 (pipelined)");
    assert_eq!(r["killed_task_manager"], Value::Null, "{r}");
    assert_eq!(
        r["kill_skipped"],
        "the job ended before 60000 ms: nothing was killed"
    );
    assert_eq!(r["task_managers"].as_array().map(Vec::len), Some(1), "{r}");
    assert_eq!(u64_at(&r["task_managers"][0], "slots"), 2, "{r}");

    let (status, stdout, stderr) = run_bounded(
        "cluster-bad-heartbeats",
        &[
            "cluster",
            &file,
            "--heartbeat-interval-ms",
            "500",
            "--heartbeat-timeout-ms",
            "500",
        ],
        dir.path(),
        Duration::from_secs(10),
    );
    assert_eq!(status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("--heartbeat-timeout-ms 500 must be above --heartbeat-interval-ms 500"),
        "{stderr}"
    );
}

#[test]
fn a_paused_jobmanager_loses_its_task_managers_and_the_job_recovers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count(dir.path(), 2, "blocking");
    let (mut jm, address) = start_jobmanager("jm", "127.0.0.1:0", dir.path());
    let mut tm_a = start_taskmanager("tm-a", &address, 2, dir.path());
    let mut tm_b = start_taskmanager("tm-b", &address, 2, dir.path());
    jm.wait_for_log("TaskManager registered", 2, Duration::from_secs(10));
    let mut submit = Proc::start(
        "submit",
        &[
            "submit",
            &file,
            "--jobmanager",
            &address,
            "--task-duration-ms",
            "1000",
            "--format",
            "json",
        ],
        dir.path(),
        false,
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while list(&address, dir.path()).first().map(|(_, s)| s.as_str()) != Some("RUNNING") {
        assert!(Instant::now() < deadline, "the job does not run");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    // Paused for three heartbeat timeouts: both TaskManagers give it up and try again.
    jm.signal("STOP");
    tm_a.wait_for_log("registering again", 1, Duration::from_secs(5));
    tm_b.wait_for_log("registering again", 1, Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(1_000));
    jm.signal("CONT");
    let status = submit.wait(Duration::from_secs(40));
    let (stdout, stderr) = (submit.stdout(), submit.log());
    assert!(
        status.success(),
        "{status}\n{stdout}\n{stderr}\n{}",
        jm.log()
    );
    let r = json(&stdout, &stderr);
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert!(u64_at(&r, "task_managers_lost") >= 2, "{r}");
    assert!(u64_at(&r, "restarts") >= 1, "{r}");
    // Both registered again, under new ids: four took part.
    assert!(u64_at(&r, "task_manager_count") >= 3, "{r}");
    tm_a.kill();
    tm_b.kill();
    jm.kill();
}

/// A word count job of `sources` x `counters` subtasks whose sources emit `words` words each
/// (vocabulary 5,000, seed 5), joined by a BLOCKING all-to-all edge.
pub(crate) fn word_count_with_data(dir: &Path, sources: u32, counters: u32, words: u64) -> String {
    let path = dir.join("wordcount-data.json");
    let job = format!(
        r#"{{"name":"word count","job_type":"batch","vertices":[
            {{"id":"source","parallelism":{sources},"invokable":"wordcount-source",
              "config":{{"words-per-source":"{words}","vocabulary":"5000","seed":"5"}}}},
            {{"id":"count","parallelism":{counters},"invokable":"wordcount-count"}}],
          "edges":[{{"source":"source","target":"count","distribution_pattern":"all_to_all",
              "result_partition_type":"blocking","ship_strategy":"HASH[word]"}}]}}"#
    );
    std::fs::write(&path, job).expect("job file");
    path.to_str().expect("utf-8 path").to_owned()
}

#[test]
fn a_killed_task_manager_loses_its_partitions_and_the_output_is_still_right() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count_with_data(dir.path(), 6, 6, 100_000);
    let out = dir.path().join("out");
    let out = out.to_str().expect("utf-8 path");
    // Sinks take 200 ms per buffer (about 14 buffers each, so at least 2.8 s): consumers are
    // still reading the sources' partitions when the busiest TaskManager is killed at 1 s (and
    // on a machine so slow that sources still run then, the killed sources re-run).
    let (status, stdout, stderr) = run_bounded(
        "cluster-kill-data",
        &[
            "cluster",
            &file,
            "--task-managers",
            "3",
            "--slots",
            "4",
            "--kill-task-manager-after-ms",
            "1000",
            "--restart-strategy",
            "exponential-delay",
            "--sink-delay-us",
            "200000",
            "--heartbeat-interval-ms",
            "100",
            "--heartbeat-timeout-ms",
            "500",
            "--output-dir",
            out,
            "--verify",
            "--format",
            "json",
        ],
        dir.path(),
        Duration::from_secs(90),
    );
    assert!(status.success(), "{status}\n{stdout}\n{stderr}");
    let r = json(&stdout, &stderr);
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert_eq!(r["kill_skipped"], Value::Null, "{r}");
    assert!(u64_at(&r["killed_task_manager"], "tasks") > 0, "{r}");
    let data = &r["data"];
    assert_eq!(data["output_verified"], true, "{r}");
    assert_eq!(u64_at(data, "words"), 600_000, "{r}");
    let reruns: u64 = ["source", "count"]
        .iter()
        .map(|v| u64_at(&data["reruns"], v))
        .sum();
    assert!(reruns >= 1, "tasks of the killed TaskManager re-ran: {r}");
}

/// `submit --verify` checks the sinks' files (here on this machine's disk, which the
/// TaskManager shares) against the seeds after an attached submission, as `cluster --verify`;
/// without `--output-dir` it is refused as bad usage.
#[test]
fn submit_verifies_the_output_on_a_shared_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count_with_data(dir.path(), 2, 2, 10_000);
    let out = dir.path().join("out");
    let out = out.to_str().expect("utf-8 path");
    let (mut jm, address) = start_jobmanager("jm", "127.0.0.1:0", dir.path());
    let mut tm = start_taskmanager("tm", &address, 4, dir.path());
    jm.wait_for_log("TaskManager registered", 1, Duration::from_secs(10));
    let (status, stdout, stderr) = run_bounded(
        "submit",
        &[
            "submit",
            &file,
            "--jobmanager",
            &address,
            "--output-dir",
            out,
            "--verify",
            "--format",
            "json",
        ],
        dir.path(),
        Duration::from_secs(60),
    );
    let (usage, _, usage_stderr) = run_bounded(
        "submit-usage",
        &["submit", &file, "--jobmanager", &address, "--verify"],
        dir.path(),
        Duration::from_secs(30),
    );
    tm.kill();
    jm.kill();
    assert!(status.success(), "{status}\n{stdout}\n{stderr}");
    let r = json(&stdout, &stderr);
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert_eq!(r["data"]["output_verified"], true, "{r}");
    assert_eq!(u64_at(&r["data"], "words"), 20_000, "{r}");
    assert_eq!(usage.code(), Some(2), "{usage_stderr}");
    assert!(usage_stderr.contains("--output-dir"), "{usage_stderr}");
}

/// `cluster --parallelism auto`: the sources get `--default-source-parallelism`, the counters
/// are decided from the bytes the sources measured, the counts are right.
#[test]
fn cluster_decides_an_undecided_word_count_from_measured_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count_with_data(dir.path(), 4, 4, 50_000);
    let out = dir.path().join("out");
    let out = out.to_str().expect("utf-8 path");
    let (status, stdout, stderr) = run_bounded(
        "cluster-adaptive",
        &[
            "cluster",
            &file,
            "--parallelism",
            "auto",
            "--default-source-parallelism",
            "3",
            "--avg-data-volume-per-task",
            "100000",
            "--task-managers",
            "2",
            "--slots",
            "4",
            "--output-dir",
            out,
            "--verify",
            "--format",
            "json",
        ],
        dir.path(),
        Duration::from_secs(90),
    );
    assert!(status.success(), "{status}\n{stdout}\n{stderr}");
    let r = json(&stdout, &stderr);
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert_eq!(u64_at(&r["decided_parallelism"], "source"), 3, "{r}");
    let counters = u64_at(&r["decided_parallelism"], "count");
    // 150,000 words of about 6 bytes: several counters of at most ~100 KB each.
    assert!((4..=128).contains(&counters), "{r}");
    let ranges = r["consumed_subpartitions"]["count"]
        .as_array()
        .expect("ranges");
    assert_eq!(ranges.len() as u64, counters, "{r}");
    assert_eq!(ranges[0][0], 0, "{r}");
    assert_eq!(ranges[ranges.len() - 1][1], 127, "{r}");
    assert_eq!(u64_at(&r, "tasks"), 3 + counters, "{r}");
    let data = &r["data"];
    assert_eq!(data["output_verified"], true, "{r}");
    assert_eq!(u64_at(data, "words"), 150_000, "{r}");
}

/// The cluster follows `run`'s scheduler rules: a forward group of undecided vertices (source 6
/// -> map -1 -> FORWARD sink -1) decides 85 for both map and sink (an earlier Conflux decided
/// the sink alone, 64); and without a restart strategy (Flink's default without checkpointing,
/// none) a task that cannot write its partition (a data directory quota) fails the job at once,
/// naming why (an earlier Conflux retried it forever, silently).
#[test]
fn cluster_decides_forward_groups_and_restarts_nothing_by_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("forward.json");
    std::fs::write(
        &file,
        serde_json::json!({"job_type": "batch",
            "vertices": [{"id": "source", "parallelism": 6}, {"id": "map", "parallelism": -1},
                         {"id": "sink", "parallelism": -1}],
            "edges": [
                {"source": "source", "target": "map", "distribution_pattern": "all_to_all", "result_partition_type": "blocking"},
                {"source": "map", "target": "sink", "distribution_pattern": "pointwise", "result_partition_type": "blocking", "ship_strategy": "FORWARD"}]})
        .to_string(),
    )
    .expect("write");
    let file = file.to_str().expect("utf-8 path");
    let (status, stdout, stderr) = run_bounded(
        "cluster-forward",
        &[
            "cluster",
            file,
            "--task-duration-ms",
            "0",
            "--format",
            "json",
        ],
        dir.path(),
        Duration::from_secs(90),
    );
    assert!(status.success(), "{status}\n{stdout}\n{stderr}");
    let r = json(&stdout, &stderr);
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert_eq!(
        r["decided_parallelism"],
        serde_json::json!({"map": 85, "sink": 85})
    );

    // A lost TaskManager fails its tasks; by default (no restart strategy, as Flink without
    // checkpointing) nothing restarts and the job fails with Flink's reason.
    let (status, stdout, stderr) = run_bounded(
        "cluster-no-restart",
        &[
            "cluster",
            file,
            "--task-managers",
            "2",
            "--task-duration-ms",
            "2000",
            "--kill-task-manager-after-ms",
            "300",
            "--format",
            "json",
        ],
        dir.path(),
        Duration::from_secs(60),
    );
    assert_eq!(status.code(), Some(1), "{stdout}\n{stderr}");
    let r = json(&stdout, &stderr);
    assert_eq!(
        (&r["status"], u64_at(&r, "restarts")),
        (&Value::from("FAILED"), 0),
        "{r}"
    );
    let reason = r["failure_reason"].as_str().expect("a reason");
    assert!(
        reason.starts_with(
            "Recovery is suppressed by the restart strategy NoRestartBackoffTimeStrategy"
        ),
        "{reason}"
    );
    assert!(reason.contains("TaskManager"), "{reason}");
}

/// Flink's adaptive word count plan on the cluster decides 64 counters from 1 GiB of synthetic
/// bytes (as `run`), and the text report says so; `--default-parallelism` decides nothing.
#[test]
fn cluster_decides_a_flink_plan_as_run_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = "fixtures/flink-plans/wordcount-batch-p4-adaptive.plan.json";
    let base = [
        "cluster",
        plan,
        "--task-managers",
        "2",
        "--task-duration-ms",
        "0",
        "--source-bytes",
        "1073741824",
    ];
    let (status, stdout, stderr) =
        run_bounded("cluster-plan", &base, dir.path(), Duration::from_secs(90));
    assert!(status.success(), "{status}\n{stdout}\n{stderr}");
    assert!(stdout.contains("status: FINISHED"), "{stdout}");
    assert!(
        stdout.contains(
            "-> parallelism 64, bytes per task min 16,777,216 / median 16,777,216 / max 16,777,216"
        ),
        "{stdout}"
    );
    let mut fixed = base.to_vec();
    fixed.extend(["--default-parallelism", "4", "--format", "json"]);
    let (status, stdout, stderr) = run_bounded(
        "cluster-plan-fixed",
        &fixed,
        dir.path(),
        Duration::from_secs(90),
    );
    assert!(status.success(), "{status}\n{stdout}\n{stderr}");
    let r = json(&stdout, &stderr);
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert_eq!(r["decided_parallelism"], Value::Null, "{r}");
    assert_eq!(u64_at(&r, "tasks"), 8, "{r}");
}

/// `cluster --speculative --slow-task-managers 1 --slowdown 10`: the first TaskManager's tasks
/// take ten times as long, the detector (no lower bound, checking every 50 ms) finds them, and
/// speculative attempts on the other TaskManagers' spare slots win; the text report says so,
/// and a slowdown below 1, more slow TaskManagers than TaskManagers, or a speculative option
/// out of its range is refused (by `cluster`, `jobmanager` and `taskmanager` alike).
#[test]
fn cluster_speculates_around_a_slow_task_manager() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count(dir.path(), 6, "blocking");
    let speculative = [
        "cluster",
        file.as_str(),
        "--task-managers",
        "3",
        "--slots",
        "4",
        "--evenly-spread-out-slots",
        "--task-duration-ms",
        "100..200",
        "--speculative",
        "--slow-task-managers",
        "1",
        "--slowdown",
        "10",
        "--slow-task-check-interval-ms",
        "50",
        "--slow-task-baseline-lower-bound-ms",
        "0",
        "--slow-task-baseline-ratio",
        "0.5",
    ];
    let mut args = speculative.to_vec();
    args.extend(["--format", "json"]);
    let (status, stdout, stderr) = run_bounded(
        "cluster-speculative",
        &args,
        dir.path(),
        Duration::from_secs(90),
    );
    assert!(status.success(), "{status}\n{stdout}\n{stderr}");
    let r = json(&stdout, &stderr);
    assert_eq!(r["status"], "FINISHED", "{r}");
    let s = &r["speculative_attempts"];
    assert_eq!(s["enabled"], true, "{r}");
    assert!(u64_at(s, "started") > 0, "{r}");
    assert!(u64_at(s, "won") > 0, "{r}");
    assert_eq!(u64_at(s, "failed"), 0, "{r}");
    assert_eq!(
        u64_at(s, "started"),
        u64_at(s, "won") + u64_at(s, "cancelled"),
        "{r}"
    );
    assert_eq!(
        u64_at(&r, "tasks_deployed"),
        u64_at(&r, "tasks") + u64_at(s, "started"),
        "{r}"
    );

    let (status, stdout, stderr) = run_bounded(
        "cluster-speculative-text",
        &speculative,
        dir.path(),
        Duration::from_secs(90),
    );
    assert!(status.success(), "{status}\n{stdout}\n{stderr}");
    assert!(stdout.contains("speculative attempts: "), "{stdout}");

    for (flags, message) in [
        (
            ["--slowdown", "0.5", "--task-managers", "3"],
            "--slowdown 0.5 is not a factor from 1 to 1000",
        ),
        (
            ["--slow-task-managers", "4", "--task-managers", "3"],
            "--slow-task-managers 4 is more than --task-managers 3",
        ),
    ] {
        let mut args = vec!["cluster", file.as_str()];
        args.extend(flags);
        let (status, stdout, stderr) = run_bounded(
            "cluster-bad-slowdown",
            &args,
            dir.path(),
            Duration::from_secs(30),
        );
        assert_eq!(status.code(), Some(2), "{stdout}\n{stderr}");
        assert!(stderr.contains(message), "{stderr}");
    }
    // The JobManager and TaskManager commands check the same options before they start.
    for (args, message) in [
        (
            vec![
                "jobmanager",
                "--rest-port",
                "0",
                "--address",
                "127.0.0.1:0",
                "--speculative",
                "--slow-task-baseline-ratio",
                "1",
            ],
            "slow-task-detector.execution-time.baseline-ratio must be in [0, 1), got 1",
        ),
        (
            vec![
                "taskmanager",
                "--jobmanager",
                "127.0.0.1:1",
                "--slots",
                "1",
                "--slowdown",
                "0",
            ],
            "--slowdown 0 is not a factor from 1 to 1000",
        ),
    ] {
        let (status, stdout, stderr) = run_bounded(
            "bad-speculative-flags",
            &args,
            dir.path(),
            Duration::from_secs(30),
        );
        assert_eq!(status.code(), Some(2), "{stdout}\n{stderr}");
        assert!(stderr.contains(message), "{stderr}");
    }
}

/// Every key path of a report (`wall_ms.total`, `task_managers[].id`): objects are walked,
/// lists by their elements (`[]`), `null` and numbers end a path.
fn key_paths(value: &Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                out.insert(path.clone());
                key_paths(v, &path, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                key_paths(item, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// The key paths the README's report table documents (its first column, in backticks), each
/// once; a segment in angle brackets (`data.reruns.<vertex>`) stands for any key of a map.
fn documented_report_keys() -> Vec<String> {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let table = readme
        .split("<!-- report keys -->")
        .nth(1)
        .expect("the README marks its report table with <!-- report keys -->");
    let mut keys = Vec::new();
    for row in table
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
    {
        let first = row.split('|').nth(1).unwrap_or_default();
        keys.extend(
            first
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|k| *k != "key")
                .map(str::to_owned),
        );
    }
    keys
}

fn documented(key: &str, documented: &[String]) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    documented.iter().any(|d| {
        let pattern: Vec<&str> = d.split('.').collect();
        pattern.len() == parts.len()
            && pattern
                .iter()
                .zip(&parts)
                .all(|(p, k)| p == k || (p.starts_with('<') && p.ends_with('>')))
    })
}

/// One report schema: `run`, `cluster` and `submit` print the same top-level keys for the same
/// job (whatever keys are added later: the three reports are compared with each other), every
/// object present in two of them has the same keys, and the README documents every key once.
/// The cluster run also ends without a warning: a clean shutdown is silent (regression: its
/// TaskManagers warned "JobManager lost" when the heartbeat connection closed before the
/// goodbye arrived on the main one).
#[test]
fn run_cluster_and_submit_print_one_report_schema_and_a_clean_run_warns_nothing() {
    use std::collections::BTreeSet;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count_with_data(dir.path(), 4, 4, 2_000);
    let (status, stdout, stderr) = run_bounded(
        "run",
        &["run", &file, "--format", "json", "--task-duration-ms", "0"],
        dir.path(),
        Duration::from_secs(60),
    );
    assert!(status.success(), "{stderr}");
    let run = json(&stdout, &stderr);
    // Eight TaskManagers: each could race its goodbye against its heartbeat connection's end.
    let (status, stdout, stderr) = run_bounded(
        "cluster",
        &[
            "cluster",
            &file,
            "--task-managers",
            "8",
            "--slots",
            "1",
            "--task-duration-ms",
            "0",
            "--format",
            "json",
        ],
        dir.path(),
        Duration::from_secs(60),
    );
    assert!(status.success(), "{stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains(" WARN ")).collect();
    assert!(
        warnings.is_empty(),
        "a clean run warned:\n{}",
        warnings.join("\n")
    );
    let cluster = json(&stdout, &stderr);
    let (mut jm, address) = start_jobmanager("jm", "127.0.0.1:0", dir.path());
    let mut tm = start_taskmanager("tm", &address, 4, dir.path());
    jm.wait_for_log("TaskManager registered", 1, Duration::from_secs(10));
    let (status, stdout, stderr) = run_bounded(
        "submit",
        &[
            "submit",
            &file,
            "--jobmanager",
            &address,
            "--task-duration-ms",
            "0",
            "--format",
            "json",
        ],
        dir.path(),
        Duration::from_secs(60),
    );
    tm.kill();
    jm.kill();
    assert!(status.success(), "{stderr}");
    let submit = json(&stdout, &stderr);

    let top = |r: &Value| -> BTreeSet<String> {
        r.as_object().expect("an object").keys().cloned().collect()
    };
    assert_eq!(top(&run), top(&cluster), "run against cluster");
    assert_eq!(top(&submit), top(&cluster), "submit against cluster");
    for r in [&run, &cluster, &submit] {
        assert_eq!(r["status"], "FINISHED", "{r}");
        assert_eq!(r["job"], "word count", "{r}");
        assert_eq!(r["job_id"].as_str().map(str::len), Some(32), "{r}");
        assert_eq!(u64_at(r, "tasks"), 8, "{r}");
        // Not an adaptive job: its adaptive keys are null, not empty objects.
        for key in [
            "decided_parallelism",
            "bytes_per_task",
            "skewed_subpartitions",
            "undecided_at_estimate",
        ] {
            assert_eq!(r[key], Value::Null, "{key}: {r}");
        }
        let listed = r["task_managers"].as_array().expect("a list");
        assert!(
            !listed.is_empty() && listed.iter().all(|tm| u64_at(tm, "tasks") > 0),
            "{r}"
        );
        assert!(
            u64_at(r, "task_manager_count") >= listed.len() as u64,
            "{r}"
        );
    }
    // Unknown is null, never 0: simulated TaskManagers have no RSS of their own, `run` has no
    // heartbeats.
    assert_eq!(
        run["task_managers"][0]["peak_rss_bytes"],
        Value::Null,
        "{run}"
    );
    assert_eq!(run["heartbeat_timeouts"], Value::Null, "{run}");
    assert_eq!(cluster["blob_server"], Value::Null, "{cluster}");
    assert_eq!(u64_at(&cluster, "task_manager_count"), 8, "{cluster}");
    // Objects present in two reports have the same keys.
    let mut paths: Vec<BTreeSet<String>> = Vec::new();
    for r in [&run, &cluster, &submit] {
        let mut p = BTreeSet::new();
        key_paths(r, "", &mut p);
        paths.push(p);
    }
    for (i, j) in [(0, 1), (1, 2), (0, 2)] {
        for key in paths[i].symmetric_difference(&paths[j]) {
            let parent = key.rsplit_once('.').map(|(p, _)| p.to_owned());
            let in_both = parent.is_some_and(|p| paths[i].contains(&p) && paths[j].contains(&p));
            // A key under an object both have must be in both; under `null` in one it need not.
            let parent_is_object_in_both = in_both && {
                let reports = [&run, &cluster, &submit];
                let at = |r: &Value, path: &str| -> Value {
                    let pointer = format!("/{}", path.replace("[]", "/0").replace('.', "/"));
                    r.pointer(&pointer).cloned().unwrap_or(Value::Null)
                };
                let p = key.rsplit_once('.').map(|(p, _)| p).unwrap_or_default();
                at(reports[i], p).is_object() && at(reports[j], p).is_object()
            };
            assert!(!parent_is_object_in_both, "{key} is in one report only");
        }
    }
    // The README documents every key once.
    let table = documented_report_keys();
    let mut seen = BTreeSet::new();
    for key in &table {
        assert!(seen.insert(key), "{key} is documented twice");
    }
    let undocumented: Vec<&String> = paths
        .iter()
        .flatten()
        .filter(|k| !documented(k, &table))
        .collect();
    assert!(
        undocumented.is_empty(),
        "not in the README's report table: {undocumented:?}"
    );
}

/// `conflux status` and `conflux wait` of a detached job: the state word first, the report of
/// attached `submit`, exit 1 for an unknown job and 2 for a malformed id.
#[test]
fn status_and_wait_follow_a_detached_job() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count(dir.path(), 2, "blocking");
    let (mut jm, address) = start_jobmanager("jm", "127.0.0.1:0", dir.path());
    let mut tm = start_taskmanager("tm", &address, 2, dir.path());
    jm.wait_for_log("TaskManager registered", 1, Duration::from_secs(10));
    let limit = Duration::from_secs(10);
    let (status, stdout, stderr) = run_bounded(
        "submit",
        &[
            "submit",
            &file,
            "--jobmanager",
            &address,
            "--detached",
            "--task-duration-ms",
            "2000",
        ],
        dir.path(),
        limit,
    );
    assert!(status.success(), "{stderr}");
    let job_id = stdout.trim().to_owned();
    let name = "word count 2 x 2 (blocking)";

    // While it runs (4 tasks of 2 s, two at a time): QUEUED or RUNNING, no report yet.
    let (status, stdout, stderr) = run_bounded(
        "status-running",
        &["status", &job_id, "--jobmanager", &address],
        dir.path(),
        limit,
    );
    assert!(status.success(), "{stderr}");
    let word = stdout.split_whitespace().next().unwrap_or_default();
    assert!(["QUEUED", "CREATED", "RUNNING"].contains(&word), "{stdout}");
    assert!(
        stdout.starts_with(&format!("{word}  {job_id}  {name}  tasks ")),
        "{stdout}"
    );
    for part in ["/4 finished (", "  started 20", "Z  duration "] {
        assert!(stdout.contains(part), "{part} missing: {stdout}");
    }

    let (status, stdout, stderr) = run_bounded(
        "wait",
        &[
            "wait",
            &job_id,
            "--jobmanager",
            &address,
            "--format",
            "json",
        ],
        dir.path(),
        Duration::from_secs(30),
    );
    assert!(status.success(), "{stderr}");
    let report = json(&stdout, &stderr);
    assert_eq!(report["status"], "FINISHED", "{report}");
    assert_eq!(report["job_id"], job_id.as_str(), "{report}");
    assert_eq!(u64_at(&report, "tasks"), 4, "{report}");
    let (status, stdout, stderr) = run_bounded(
        "wait-text",
        &["wait", &job_id, "--jobmanager", &address],
        dir.path(),
        limit,
    );
    assert!(status.success(), "{stderr}");
    assert!(
        stdout.starts_with(&format!("job {job_id} ({name})\n")),
        "{stdout}"
    );

    let (status, stdout, stderr) = run_bounded(
        "status-ended",
        &["status", &job_id, "--jobmanager", &address],
        dir.path(),
        limit,
    );
    assert!(status.success(), "{stderr}");
    assert!(
        stdout.starts_with(&format!(
            "FINISHED  {job_id}  {name}  tasks 4/4 finished (FINISHED 4)  started 20"
        )),
        "{stdout}"
    );
    let (status, stdout, stderr) = run_bounded(
        "status-json",
        &[
            "status",
            &job_id,
            "--jobmanager",
            &address,
            "--format",
            "json",
        ],
        dir.path(),
        limit,
    );
    assert!(status.success(), "{stderr}");
    let shown = json(&stdout, &stderr);
    assert_eq!(shown["status"], "FINISHED", "{shown}");
    assert_eq!(shown["name"], name, "{shown}");
    assert_eq!(shown["report"], report, "the report wait printed");
    assert_eq!(shown["tasks"]["FINISHED"], 4, "{shown}");
    assert_eq!(shown["tasks"]["RUNNING"], 0, "{shown}");
    assert_eq!(shown["tasks_total"], 4, "{shown}");
    assert_eq!(shown["tasks_finished"], 4, "{shown}");
    let (start, end) = (
        u64_at(&shown, "start_time_ms"),
        u64_at(&shown, "end_time_ms"),
    );
    // Four tasks of 2 s, two at a time.
    assert!(end >= start + 4_000, "{shown}");
    assert_eq!(u64_at(&shown, "duration_ms"), end - start, "{shown}");

    // CONFLUX_JOBMANAGER stands for --jobmanager; cancelling an ended job is a failure.
    let mut cancel = Command::new(env!("CARGO_BIN_EXE_conflux"))
        .args(["cancel", &job_id])
        .env("CONFLUX_JOBMANAGER", &address)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts conflux cancel");
    let deadline = Instant::now() + limit;
    while cancel.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = cancel.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = cancel.wait_with_output().expect("conflux cancel's output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "job {job_id} already ended FINISHED: nothing to cancel"
        )),
        "{stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    for (command, id, code, message) in [
        (
            "status",
            "00000000000000000000000000000000",
            1,
            "no job 0000",
        ),
        ("wait", "00000000000000000000000000000000", 1, "no job 0000"),
        ("status", "xyz", 2, "\"xyz\" is not a job id"),
        ("wait", "xyz", 2, "\"xyz\" is not a job id"),
    ] {
        let (status, _, stderr) = run_bounded(
            "bad",
            &[command, id, "--jobmanager", &address],
            dir.path(),
            limit,
        );
        assert_eq!(status.code(), Some(code), "{command} {id}: {stderr}");
        assert!(stderr.contains(message), "{command} {id}: {stderr}");
    }
    tm.kill();
    jm.kill();
}

/// While tasks wait out a restart delay, the job is RESTARTING (Flink's `DefaultScheduler`), in
/// `status` as in the REST view it reads, and RUNNING again once they were restarted.
#[test]
fn status_shows_restarting_while_a_lost_task_manager_s_tasks_wait_for_their_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count(dir.path(), 2, "blocking");
    let blobs = dir.path().join("blobs");
    let mut jm = Proc::start(
        "jm",
        &[
            "jobmanager",
            "--rest-port",
            "0",
            "--address",
            "127.0.0.1:0",
            "--blob-dir",
            blobs.to_str().expect("utf-8"),
            "--heartbeat-interval-ms",
            "100",
            "--heartbeat-timeout-ms",
            "500",
            "--restart-strategy",
            "fixed-delay",
            "--restart-attempts",
            "5",
            "--restart-delay-ms",
            "3000",
        ],
        dir.path(),
        false,
    );
    let log = jm.wait_for_log("JobManager listening on ", 1, Duration::from_secs(10));
    let address = log
        .split("JobManager listening on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("an address")
        .to_owned();
    let mut lost = start_taskmanager("tm-lost", &address, 1, dir.path());
    let mut kept = start_taskmanager("tm-kept", &address, 1, dir.path());
    jm.wait_for_log("TaskManager registered", 2, Duration::from_secs(10));
    let (status, stdout, stderr) = run_bounded(
        "submit",
        &[
            "submit",
            &file,
            "--jobmanager",
            &address,
            "--detached",
            "--task-duration-ms",
            "60000",
        ],
        dir.path(),
        Duration::from_secs(10),
    );
    assert!(status.success(), "{stderr}");
    let job_id = stdout.trim().to_owned();
    let state = |name: &str| -> Value {
        let (status, stdout, stderr) = run_bounded(
            name,
            &[
                "status",
                &job_id,
                "--jobmanager",
                &address,
                "--format",
                "json",
            ],
            dir.path(),
            Duration::from_secs(10),
        );
        assert!(status.success(), "{stderr}");
        json(&stdout, &stderr)
    };
    let wait_for = |wanted: &str, limit: Duration| -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let shown = state("status");
            if shown["status"] == wanted {
                return shown;
            }
            assert!(Instant::now() < deadline, "not {wanted}: {shown}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let running = wait_for("RUNNING", Duration::from_secs(10));
    assert_eq!(running["tasks_total"], 4, "{running}");
    lost.kill();
    // Lost after 500 ms without heartbeats; its task waits 3 s for its restart.
    let restarting = wait_for("RESTARTING", Duration::from_secs(5));
    assert_eq!(restarting["tasks_finished"], 0, "{restarting}");
    wait_for("RUNNING", Duration::from_secs(10));
    jm.wait_for_log(
        "switched from state RUNNING to RESTARTING.",
        1,
        Duration::from_secs(1),
    );
    jm.wait_for_log(
        "switched from state RESTARTING to RUNNING.",
        1,
        Duration::from_secs(1),
    );
    let (status, _, stderr) = run_bounded(
        "cancel",
        &["cancel", &job_id, "--jobmanager", &address],
        dir.path(),
        Duration::from_secs(10),
    );
    assert!(status.success(), "{stderr}");
    kept.kill();
    jm.kill();
}

/// Attached `submit` draws a progress bar of finished tasks when stderr is a terminal (under
/// script(1), which gives it one) and nothing of it when stderr is a file.
#[test]
fn attached_submit_shows_progress_on_a_terminal_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count(dir.path(), 2, "blocking");
    let (mut jm, address) = start_jobmanager("jm", "127.0.0.1:0", dir.path());
    let _tm = start_taskmanager("tm", &address, 2, dir.path());
    jm.wait_for_log("TaskManager registered", 1, Duration::from_secs(10));
    let submit = format!(
        "{} submit {file} --jobmanager {address} --task-duration-ms 600",
        env!("CARGO_BIN_EXE_conflux")
    );
    let (status, _, stderr) = run_bounded(
        "submit-piped",
        &[
            "submit",
            &file,
            "--jobmanager",
            &address,
            "--task-duration-ms",
            "300",
        ],
        dir.path(),
        Duration::from_secs(20),
    );
    assert!(status.success(), "{stderr}");
    assert!(!stderr.contains("tasks finished"), "{stderr}");
    let Ok(out) = Command::new("script")
        .args(["-qec", &submit, "/dev/null"])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
    else {
        println!("no script(1): the terminal half is not run");
        return;
    };
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("tasks finished"), "{shown}");
    assert!(shown.contains("status: FINISHED"), "{shown}");
}

/// `scripts/rest-latency.py` (the README's REST measurement) runs against the built binary on
/// a small job and prints every figure it promises.
#[test]
fn the_rest_latency_script_measures_a_small_cluster_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Ok(out) = Command::new("python3")
        .arg(repo().join("scripts/rest-latency.py"))
        .args([
            "--conflux",
            env!("CARGO_BIN_EXE_conflux"),
            "--parallelism",
            "20",
            "--task-managers",
            "2",
            "--task-duration-ms",
            "400..500",
        ])
        .env("TMPDIR", dir.path())
        .env_remove("RUST_LOG")
        .output()
    else {
        println!("no python3: the script is not run");
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for part in [
        "job: 20 x 20 blocking word count, 40 tasks, 2 TaskManagers: FINISHED",
        "GET /jobs/overview at 20/s while the job ran: ",
        "errors: none",
        "GET /jobs/:jobid (gzip): 5 samples",
        "GET /jobs/:jobid/vertices/:vid (gzip): 5 samples",
        "JobManager's longest scheduler handler call: ",
    ] {
        assert!(stdout.contains(part), "{part} missing:\n{stdout}\n{stderr}");
    }
}
