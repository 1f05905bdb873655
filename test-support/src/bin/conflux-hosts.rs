//! `conflux-hosts`: runs a job on a Conflux cluster spread over network namespaces (the
//! `hosts` harness), optionally under a network fault, prints the job's report (JSON) and
//! removes every namespace, rule and process it made. As root.
//!
//! ```text
//! conflux-hosts run JOB.json [--conflux PATH] [--task-managers N] [--slots S]
//!     [--loss FRACTION] [--cut tmK] [--cut-data-path] [--cut-after-ms T] [--cut-for-ms D]
//!     [--rate-limit BYTES_PER_S] [--jm FLAG ...] [--tm FLAG ...] [--submit FLAG ...]
//! conflux-hosts sweep        # removes the leftovers of killed runs
//! ```
//!
//! `--loss F` drops a fraction F of the packets every host sends and receives; `--cut tmK`
//! cuts host tmK off (both ways) T ms after the submission for D ms; `--cut-data-path` cuts
//! only tm1 <-> tm2 in the same way; `--rate-limit` limits every TaskManager's link. Flags
//! after `--jm`, `--tm` and `--submit` (each up to the next of these three) go to `conflux
//! jobmanager`, every `conflux taskmanager` and `conflux submit`. Exit code: 0 when the job
//! FINISHED, 1 otherwise, 2 for bad usage.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use conflux_test_support::host_cluster::{finish, ClusterSpec, HostCluster};
use conflux_test_support::hosts::{self, Direction};

#[derive(Default)]
struct Options {
    job: Option<PathBuf>,
    conflux: Option<PathBuf>,
    task_managers: u32,
    slots: u32,
    loss: Option<f64>,
    cut: Option<String>,
    cut_data_path: bool,
    cut_after_ms: u64,
    cut_for_ms: u64,
    rate_limit: Option<u64>,
    jm: Vec<String>,
    tm: Vec<String>,
    submit: Vec<String>,
}

fn usage(message: &str) -> ExitCode {
    eprintln!("conflux-hosts: {message}\nusage: conflux-hosts run JOB.json [--conflux PATH] [--task-managers N] [--slots S] [--loss F] [--cut tmK | --cut-data-path] [--cut-after-ms T] [--cut-for-ms D] [--rate-limit BYTES_PER_S] [--jm FLAGS...] [--tm FLAGS...] [--submit FLAGS...]\n       conflux-hosts sweep");
    ExitCode::from(2)
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        task_managers: 2,
        slots: 32,
        cut_after_ms: 2_000,
        cut_for_ms: 3_000,
        ..Options::default()
    };
    let mut i = 0;
    let value = |i: usize| {
        args.get(i + 1)
            .cloned()
            .ok_or_else(|| format!("{} needs a value", args[i]))
    };
    let number = |i: usize| -> Result<u64, String> {
        let v = value(i)?;
        v.parse()
            .map_err(|_| format!("{} {v}: not a whole number", args[i]))
    };
    while i < args.len() {
        match args[i].as_str() {
            "--conflux" => o.conflux = Some(PathBuf::from(value(i)?)),
            "--task-managers" => {
                o.task_managers = u32::try_from(number(i)?).map_err(|e| e.to_string())?
            }
            "--slots" => o.slots = u32::try_from(number(i)?).map_err(|e| e.to_string())?,
            "--loss" => {
                let v = value(i)?;
                let f: f64 = v.parse().map_err(|_| format!("--loss {v}: not a number"))?;
                if !(0.0..=1.0).contains(&f) {
                    return Err(format!("--loss {v}: a fraction from 0 to 1"));
                }
                o.loss = Some(f);
            }
            "--cut" => o.cut = Some(value(i)?),
            "--cut-data-path" => {
                o.cut_data_path = true;
                i += 1;
                continue;
            }
            "--cut-after-ms" => o.cut_after_ms = number(i)?,
            "--cut-for-ms" => o.cut_for_ms = number(i)?,
            "--rate-limit" => o.rate_limit = Some(number(i)?),
            "--jm" | "--tm" | "--submit" => {
                let which = args[i].clone();
                let mut j = i + 1;
                while j < args.len() && !matches!(args[j].as_str(), "--jm" | "--tm" | "--submit") {
                    j += 1;
                }
                let flags = args[i + 1..j].to_vec();
                match which.as_str() {
                    "--jm" => o.jm.extend(flags),
                    "--tm" => o.tm.extend(flags),
                    _ => o.submit.extend(flags),
                }
                i = j;
                continue;
            }
            other if o.job.is_none() && !other.starts_with("--") => {
                o.job = Some(PathBuf::from(other));
                i += 1;
                continue;
            }
            other => return Err(format!("unknown argument {other}")),
        }
        i += 2;
    }
    if o.task_managers == 0 || o.task_managers > 100 {
        return Err("--task-managers: 1 to 100".into());
    }
    if let Some(tm) = &o.cut {
        let known = (1..=o.task_managers).any(|k| *tm == format!("tm{k}")) || tm == "jm";
        if !known {
            return Err(format!(
                "--cut {tm}: no such host (jm, tm1 ... tm{})",
                o.task_managers
            ));
        }
    }
    if o.cut_data_path && o.task_managers < 2 {
        return Err("--cut-data-path needs 2 TaskManagers".into());
    }
    Ok(o)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("sweep") => {
            println!("removed {} leftover namespaces", hosts::sweep());
            ExitCode::SUCCESS
        }
        Some("run") => match parse(&args[1..]) {
            Ok(options) => run(&options),
            Err(e) => usage(&e),
        },
        _ => usage("a command is needed: run or sweep"),
    }
}

fn run(o: &Options) -> ExitCode {
    if let Some(why) = hosts::unavailable() {
        eprintln!("conflux-hosts: cannot make hosts here: {why}");
        return ExitCode::from(2);
    }
    let Some(job) = o.job.clone() else {
        return usage("JOB.json is needed");
    };
    let job = std::fs::canonicalize(&job).unwrap_or(job);
    let conflux = o
        .conflux
        .clone()
        .unwrap_or_else(|| PathBuf::from("conflux"));
    let spec = ClusterSpec {
        task_managers: o.task_managers,
        slots: o.slots,
        jobmanager_args: o.jm.clone(),
        taskmanager_args: o.tm.clone(),
    };
    let cluster = match HostCluster::start(&conflux, &spec) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("conflux-hosts: {e}");
            return ExitCode::from(1);
        }
    };
    for host in cluster.hosts.hosts() {
        eprintln!(
            "host {} at {} (namespace {})",
            host.name, host.ip, host.namespace
        );
    }
    let mut faults = Vec::new();
    let apply = |r: Result<hosts::Fault, hosts::HostsError>, faults: &mut Vec<hosts::Fault>| match r
    {
        Ok(f) => {
            eprintln!("fault: {}", f.what);
            faults.push(f);
            true
        }
        Err(e) => {
            eprintln!("conflux-hosts: {e}");
            false
        }
    };
    if let Some(f) = o.loss {
        for host in cluster.hosts.hosts() {
            if !apply(
                cluster.hosts.loss(&host.name, Direction::Both, f),
                &mut faults,
            ) {
                return ExitCode::from(1);
            }
        }
    }
    if let Some(rate) = o.rate_limit {
        for k in 1..=o.task_managers {
            if !apply(
                cluster.hosts.rate_limit(&format!("tm{k}"), rate),
                &mut faults,
            ) {
                return ExitCode::from(1);
            }
        }
    }
    let submit: Vec<&str> = o.submit.iter().map(String::as_str).collect();
    let child = match cluster.submit(&job, &submit) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("conflux-hosts: {e}");
            return ExitCode::from(1);
        }
    };
    let mut cut_at = None;
    if o.cut.is_some() || o.cut_data_path {
        std::thread::sleep(Duration::from_millis(o.cut_after_ms));
        let cut = match &o.cut {
            Some(host) => cluster.hosts.cut(host, Direction::Both),
            None => cluster.hosts.cut_between("tm1", "tm2", Direction::Both),
        };
        let mut cut_faults = Vec::new();
        cut_at = Some(seconds_of_day(std::time::SystemTime::now()));
        if apply(cut, &mut cut_faults) {
            std::thread::sleep(Duration::from_millis(o.cut_for_ms));
            drop(cut_faults);
            eprintln!("healed");
        }
    }
    let result = finish(child, Duration::from_secs(3_600));
    drop(faults);
    if let Some(cut_at) = cut_at {
        // The JobManager logs every restart at WARN with its time (UTC): the first after the
        // cut is when the lost regions were given to the TaskManagers left.
        let restart = cluster.log("jm").lines().find_map(|line| {
            let at = log_seconds_of_day(line)?;
            (line.contains("restarting tasks") && at >= cut_at).then_some(at)
        });
        match restart {
            Some(at) => eprintln!(
                "restart of the lost regions {:.0} ms after the cut",
                (at - cut_at) * 1e3
            ),
            None => eprintln!("no restart after the cut"),
        }
    }
    match result {
        Ok((status, report)) => {
            print!("{report}");
            if status.success() {
                ExitCode::SUCCESS
            } else {
                eprintln!("{}", cluster.log("submit"));
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("conflux-hosts: submit: {e}");
            ExitCode::from(1)
        }
    }
}

/// Seconds since midnight UTC of `t`.
fn seconds_of_day(t: std::time::SystemTime) -> f64 {
    let since = t
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    since % 86_400.0
}

/// Seconds since midnight UTC of a log line that starts with tracing's RFC 3339 time
/// (`2026-12-05T06:10:00.123456Z ...`); `None` for other lines.
fn log_seconds_of_day(line: &str) -> Option<f64> {
    let date_end = line.find('T')?;
    let time = line.get(date_end + 1..)?.split(['Z', ' ', '+']).next()?;
    let mut parts = time.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3_600.0 + m * 60.0 + s)
}
