//! The flags `conflux cluster --job-managers N` hands its JobManager children: every flag the
//! command line gave (configuration included: `--config` and `-D` have become flags by then)
//! that `conflux jobmanager` also takes, so that the children schedule, time out and restart
//! exactly as the in-process JobManager would.

use std::collections::HashSet;
use std::ffi::OsString;

use clap::parser::ValueSource;
use clap::ArgAction;

/// Flags the cluster sets on its children itself, or passes otherwise (the token goes in their
/// environment, never on a command line).
const NOT_FORWARDED: [&str; 10] = [
    "config",
    "token",
    "token-file",
    "high-availability",
    "zookeeper-quorum",
    "zookeeper-path-root",
    "cluster-id",
    "zookeeper-session-timeout-ms",
    "ha-storage-dir",
    "exit-with-parent",
];

/// The flags of `args` (a whole `conflux cluster ...` command line) given on it that
/// `jobmanager` also takes, as `--flag=value` (a switch as `--flag`); empty for any other
/// command; `cli` makes the whole `conflux` command line. O(flags).
pub(crate) fn jobmanager_flags(args: &[OsString], cli: fn() -> clap::Command) -> Vec<OsString> {
    let cli = cli();
    let Ok(matches) = cli.clone().try_get_matches_from(args) else {
        return Vec::new();
    };
    let Some(("cluster", given)) = matches.subcommand() else {
        return Vec::new();
    };
    let (Some(cluster), Some(jobmanager)) = (
        cli.find_subcommand("cluster"),
        cli.find_subcommand("jobmanager"),
    ) else {
        return Vec::new();
    };
    let taken: HashSet<&str> = jobmanager
        .get_arguments()
        .filter_map(clap::Arg::get_long)
        .collect();
    let mut out = Vec::new();
    for arg in cluster.get_arguments() {
        let Some(long) = arg.get_long() else {
            continue;
        };
        let id = arg.get_id().as_str();
        if !taken.contains(long)
            || NOT_FORWARDED.contains(&long)
            || given.value_source(id) != Some(ValueSource::CommandLine)
        {
            continue;
        }
        match arg.get_action() {
            ArgAction::SetTrue if given.get_flag(id) => out.push(format!("--{long}").into()),
            ArgAction::SetTrue => {}
            action if action.takes_values() => {
                for value in given.get_raw(id).into_iter().flatten() {
                    let mut flag = OsString::from(format!("--{long}="));
                    flag.push(value);
                    out.push(flag);
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(args: &[&str]) -> Vec<String> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        jobmanager_flags(&args, <crate::Cli as clap::CommandFactory>::command)
            .into_iter()
            .map(|f| f.into_string().expect("utf-8"))
            .collect()
    }

    #[test]
    fn the_jobmanagers_flags_given_are_forwarded_and_nothing_else() {
        let forwarded = flags(&[
            "conflux",
            "cluster",
            "job.json",
            "--task-managers",
            "3",
            "--heartbeat-timeout-ms",
            "900",
            "--restart-attempts",
            "10",
            "--speculative",
            "--token",
            "s3cret",
            "--cluster-id",
            "c",
            "--job-managers",
            "2",
        ]);
        let mut forwarded = forwarded;
        forwarded.sort();
        assert_eq!(
            forwarded,
            [
                "--heartbeat-timeout-ms=900",
                "--restart-attempts=10",
                "--speculative"
            ]
        );
        assert!(flags(&["conflux", "run", "job.json", "--seed", "3"]).is_empty());
    }
}
