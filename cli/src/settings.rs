//! `--config FILE` and `-D key=value` on `jobmanager`, `taskmanager`, `cluster`, `run` and
//! `submit`: the configuration ([`conflux_config`]) becomes flags.
//!
//! The command line is parsed once; the configuration of its subcommand is resolved (`-D` >
//! environment > file); each setting whose flag the command line did not give (clap's
//! `ArgMatches::value_source`) is appended as that flag, in the flag's unit; the result is parsed
//! again. So the precedence is flag > `-D` > environment > file > the flag's default, and every
//! value goes through the flag's own parser and range.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::anyhow;
use clap::parser::ValueSource;
use clap::ArgMatches;
use conflux_config::{Command, Key, Resolved, Setting, Sources, Value, ValueType, KEYS};

use crate::Failure;

/// The configuration flags.
#[derive(clap::Args, Clone, Debug, Default)]
#[command(next_help_heading = crate::headings::CONFIG)]
pub(crate) struct ConfigArgs {
    /// A configuration file in Flink's `config.yaml` shape (nested maps or flat dotted keys;
    /// the keys are in the README and `conflux_config::KEYS`). Precedence: flag > -D >
    /// environment (`CONFLUX_<KEY>`) > this file > default.
    #[arg(long = "config", value_name = "FILE")]
    pub(crate) config_file: Option<PathBuf>,
    /// Set a configuration key, e.g. `-D rest.port=0` or `-D heartbeat.timeout="1 min"`
    /// (repeatable; a later one wins).
    #[arg(short = 'D', value_name = "KEY=VALUE")]
    pub(crate) dynamic: Vec<String>,
    /// The effective configuration under Flink's keys, secrets hidden (filled after parsing,
    /// for the REST API's `/jobmanager/config`).
    #[arg(skip)]
    pub(crate) effective: Vec<(String, String)>,
}

/// What went wrong applying the configuration.
pub(crate) enum ApplyError {
    /// The command line itself is wrong (clap's error, printed as usual).
    Usage(clap::Error),
    /// The configuration is wrong.
    Config(Failure),
}

/// The command line with the configuration applied, and the effective configuration of its
/// subcommand under Flink's keys (empty for commands without `--config`).
pub(crate) struct Applied {
    /// The arguments to parse.
    pub(crate) args: Vec<OsString>,
    /// `(key, value)` of every key the subcommand takes that has a value, secrets hidden.
    pub(crate) effective: Vec<(String, String)>,
}

/// The clap id of a long flag.
fn id(flag: &str) -> String {
    flag.replace('-', "_")
}

fn given_on_command_line(matches: &ArgMatches, id: &str) -> bool {
    matches.value_source(id) == Some(ValueSource::CommandLine)
}

/// One flag added from the configuration.
struct Injected {
    flag: &'static str,
    setting: Setting,
}

/// Applies the configuration of the subcommand of `args`, parsed by the command line `cli`
/// makes (the whole `conflux` command).
///
/// # Errors
/// [`ApplyError::Usage`] when `args` do not parse; [`ApplyError::Config`] for an unreadable
/// file, a configuration error, or a configured value its flag refuses (naming key, value and
/// where it was given).
pub(crate) fn apply(args: &[OsString], cli: fn() -> clap::Command) -> Result<Applied, ApplyError> {
    let matches = cli()
        .try_get_matches_from(args)
        .map_err(ApplyError::Usage)?;
    let Some((name, sub)) = matches.subcommand() else {
        return Ok(Applied {
            args: args.to_vec(),
            effective: Vec::new(),
        });
    };
    let Some(command) = Command::from_name(name) else {
        return Ok(Applied {
            args: args.to_vec(),
            effective: Vec::new(),
        });
    };
    let path = sub.get_one::<PathBuf>("config_file");
    let text = match path {
        None => None,
        Some(path) => Some(std::fs::read_to_string(path).map_err(|e| {
            ApplyError::Config(Failure::input(anyhow!("--config {}: {e}", path.display())))
        })?),
    };
    let dynamic: Vec<String> = sub
        .get_many::<String>("dynamic")
        .map(|values| values.cloned().collect())
        .unwrap_or_default();
    let path_text = path.map(|p| p.display().to_string());
    let env = |var: &str| std::env::var(var).ok();
    let resolved = conflux_config::resolve(
        command,
        &Sources {
            file: path_text.as_deref().zip(text.as_deref()),
            env: &env,
            dynamic: &dynamic,
        },
    )
    .map_err(|e| ApplyError::Config(Failure::input(e)))?;
    for warning in &resolved.warnings {
        tracing::warn!("{warning}");
    }

    let mut out = args.to_vec();
    let mut injected = Vec::new();
    for setting in &resolved.settings {
        let Some(flag) = setting.key.flag else {
            continue;
        };
        if given_on_command_line(sub, &id(flag))
            || (flag == "token" && given_on_command_line(sub, "token_file"))
        {
            continue;
        }
        match &setting.value {
            Value::Bool(false) => {}
            Value::Bool(true) => out.push(format!("--{flag}").into()),
            value => out.push(format!("--{flag}={}", value.flag_text()).into()),
        }
        injected.push(Injected {
            flag,
            setting: setting.clone(),
        });
    }
    if let Some(arg) = rpc_address(command, sub, &resolved) {
        out.push(arg.into());
    }

    let matches = cli()
        .try_get_matches_from(&out)
        .map_err(|e| ApplyError::Config(refused(&e, &injected)))?;
    let effective = matches
        .subcommand()
        .map(|(_, sub)| effective(command, sub))
        .unwrap_or_default();
    Ok(Applied {
        args: out,
        effective,
    })
}

/// `--address HOST:PORT` (`jobmanager`) or `--jobmanager HOST:PORT` (`taskmanager`, `submit`)
/// from `jobmanager.rpc.address` and `jobmanager.rpc.port`, when either is set and the flag was
/// not given (nor, for `--jobmanager`, `CONFLUX_JOBMANAGER`).
fn rpc_address(command: Command, sub: &ArgMatches, resolved: &Resolved) -> Option<String> {
    let host = resolved
        .get("jobmanager.rpc.address")
        .map(|s| s.value.flag_text());
    let port = resolved
        .get("jobmanager.rpc.port")
        .map(|s| s.value.flag_text());
    if host.is_none() && port.is_none() {
        return None;
    }
    let flag = match command {
        Command::JobManager => "address",
        Command::TaskManager | Command::Submit => "jobmanager",
        Command::Cluster | Command::Run => return None,
    };
    if sub
        .value_source(flag)
        .is_some_and(|s| s != ValueSource::DefaultValue)
    {
        return None;
    }
    let host = host.unwrap_or_else(|| "127.0.0.1".to_owned());
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    let port = port.unwrap_or_else(|| "6123".to_owned());
    Some(format!("--{flag}={host}:{port}"))
}

/// A configured value its flag refused: the message names the key, the value and where it was
/// given (a secret's value is never in it: no secret flag refuses a value).
fn refused(e: &clap::Error, injected: &[Injected]) -> Failure {
    let reason = e
        .to_string()
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .to_owned();
    let culprit = match e.get(clap::error::ContextKind::InvalidArg) {
        Some(clap::error::ContextValue::String(arg)) => injected.iter().find(|i| {
            arg.strip_prefix("--")
                .and_then(|a| a.split([' ', '=']).next())
                .is_some_and(|a| a == i.flag)
        }),
        _ => None,
    };
    match culprit {
        Some(i) => Failure::input(anyhow!(
            "{}: {} = {}: {reason}",
            i.setting.origin,
            i.setting.key.name,
            i.setting.value.flink_text()
        )),
        None => Failure::input(anyhow!("the configuration: {reason}")),
    }
}

/// A flag's value as Flink shows its key's.
fn flink_text(key: &Key, raw: &str) -> String {
    match key.ty {
        ValueType::Secret => conflux_config::Secret::HIDDEN.to_owned(),
        ValueType::Duration => format!("{raw} ms"),
        ValueType::Seconds => raw
            .parse::<u64>()
            .map_or_else(|_| raw.to_owned(), |ms| (ms / 1000).to_string()),
        ValueType::MemorySize => format!("{raw} bytes"),
        _ => raw.to_owned(),
    }
}

/// Every key of `command` with a flag that has a value (given or default), as Flink shows it.
fn effective(command: Command, sub: &ArgMatches) -> Vec<(String, String)> {
    KEYS.iter()
        .filter(|k| k.taken_by(command))
        .filter_map(|k| {
            let flag = k.flag?;
            let raw = sub
                .try_get_raw(&id(flag))
                .ok()??
                .next()?
                .to_str()?
                .to_owned();
            Some((k.name.to_owned(), flink_text(k, &raw)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    /// Every key's flag exists on every command that takes it, with a value of the key's type
    /// (a switch for a boolean).
    #[test]
    fn every_key_has_its_flag_on_its_commands() {
        let cli = crate::Cli::command();
        for key in KEYS {
            let Some(flag) = key.flag else { continue };
            for command in key.commands {
                let sub = cli
                    .find_subcommand(command.name())
                    .unwrap_or_else(|| panic!("{}", command.name()));
                let arg = sub
                    .get_arguments()
                    .find(|a| a.get_long() == Some(flag))
                    .unwrap_or_else(|| {
                        panic!("{} has no --{flag} for {}", command.name(), key.name)
                    });
                assert_eq!(arg.get_id().as_str(), id(flag), "{}", key.name);
                let switch = !arg.get_action().takes_values();
                assert_eq!(
                    switch,
                    key.ty == ValueType::Bool,
                    "--{flag} of {}",
                    key.name
                );
            }
        }
        for command in Command::ALL {
            let sub = cli.find_subcommand(command.name()).expect("command");
            assert!(sub.get_arguments().any(|a| a.get_long() == Some("config")));
        }
    }

    fn applied(args: &[&str]) -> Applied {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        match apply(&args, <crate::Cli as clap::CommandFactory>::command) {
            Ok(applied) => applied,
            Err(ApplyError::Usage(e)) => panic!("{e}"),
            Err(ApplyError::Config(f)) => panic!("{f:?}"),
        }
    }

    fn effective_of(applied: &Applied, key: &str) -> String {
        applied
            .effective
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("{key} in {:?}", applied.effective))
    }

    #[test]
    fn flags_beat_dynamic_properties_which_beat_defaults() {
        let a = applied(&[
            "conflux",
            "jobmanager",
            "-D",
            "heartbeat.interval=2 s",
            "-Dheartbeat.timeout=1 min",
            "--heartbeat-timeout-ms",
            "7000",
            "-D",
            "jobmanager.rpc.port=7123",
            "-D",
            "conflux.token=hunter2",
        ]);
        assert_eq!(effective_of(&a, "heartbeat.interval"), "2000 ms");
        assert_eq!(effective_of(&a, "heartbeat.timeout"), "7000 ms");
        assert_eq!(effective_of(&a, "rest.port"), "8081");
        assert_eq!(effective_of(&a, "jobstore.expiration-time"), "3600");
        assert_eq!(effective_of(&a, "conflux.token"), "******");
        let args: Vec<String> = a
            .args
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        assert!(
            args.contains(&"--address=127.0.0.1:7123".to_owned()),
            "{args:?}"
        );
    }

    #[test]
    fn a_refused_value_names_its_key() {
        let args: Vec<OsString> = ["conflux", "jobmanager", "-D", "heartbeat.interval=0 ms"]
            .iter()
            .map(OsString::from)
            .collect();
        let Err(ApplyError::Config(failure)) =
            apply(&args, <crate::Cli as clap::CommandFactory>::command)
        else {
            panic!("0 ms is below the flag's range");
        };
        let Failure::Input(e) = failure else {
            panic!("an input failure")
        };
        let message = e.to_string();
        assert!(
            message.starts_with("-D: heartbeat.interval = 0 ms: "),
            "{message}"
        );
    }
}
