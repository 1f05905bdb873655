//! Worked examples of the whole loader: file, environment and `-D` together.

use crate::{resolve, Command, ConfigError, Origin, Resolved, Sources, Value, Warning};

fn load(
    command: Command,
    file: &str,
    env: &[(&str, &str)],
    dynamic: &[&str],
) -> Result<Resolved, ConfigError> {
    let dynamic: Vec<String> = dynamic.iter().map(|s| (*s).to_owned()).collect();
    let lookup = |var: &str| {
        env.iter()
            .find(|(k, _)| *k == var)
            .map(|(_, v)| (*v).to_owned())
    };
    resolve(
        command,
        &Sources {
            file: Some(("conf/config.yaml", file)),
            env: &lookup,
            dynamic: &dynamic,
        },
    )
}

fn value(resolved: &Resolved, key: &str) -> Option<Value> {
    resolved.get(key).map(|s| s.value.clone())
}

const FILE: &str = "\
jobmanager:
  rpc:
    address: 10.0.0.1
    port: 6124
rest.port: 0
taskmanager.numberOfTaskSlots: 4
heartbeat:
  interval: 2 s
  timeout: 1 min
restart-strategy:
  type: fixed-delay
  fixed-delay:
    attempts: 3
    delay: 500 ms
execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task: 64 mb
";

#[test]
fn a_file_in_flinks_shape() {
    let r = load(Command::JobManager, FILE, &[], &[]).unwrap();
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(
        value(&r, "jobmanager.rpc.address"),
        Some(Value::Text("10.0.0.1".into()))
    );
    assert_eq!(value(&r, "jobmanager.rpc.port"), Some(Value::Int(6124)));
    assert_eq!(value(&r, "rest.port"), Some(Value::Int(0)));
    assert_eq!(
        value(&r, "heartbeat.interval"),
        Some(Value::DurationMs(2_000))
    );
    assert_eq!(
        value(&r, "heartbeat.timeout"),
        Some(Value::DurationMs(60_000))
    );
    assert_eq!(
        value(&r, "restart-strategy.type"),
        Some(Value::Text("fixed-delay".into()))
    );
    assert_eq!(
        value(&r, "restart-strategy.fixed-delay.attempts"),
        Some(Value::Int(3))
    );
    assert_eq!(
        value(&r, "restart-strategy.fixed-delay.delay"),
        Some(Value::DurationMs(500))
    );
    // Keys of other commands in a shared file are neither settings here nor warnings.
    assert_eq!(value(&r, "taskmanager.numberOfTaskSlots"), None);
    assert_eq!(
        r.get("rest.port").unwrap().origin,
        Origin::File {
            path: "conf/config.yaml".into(),
            line: 5
        }
    );
    let tm = load(Command::TaskManager, FILE, &[], &[]).unwrap();
    assert_eq!(
        value(&tm, "taskmanager.numberOfTaskSlots"),
        Some(Value::Int(4))
    );
    let run = load(Command::Run, FILE, &[], &[]).unwrap();
    assert_eq!(
        value(
            &run,
            "execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task"
        ),
        Some(Value::Bytes(64 << 20))
    );
}

#[test]
fn dynamic_beats_environment_beats_file() {
    let env = [
        ("CONFLUX_REST_PORT", "9000"),
        ("CONFLUX_HEARTBEAT_INTERVAL", "3 s"),
    ];
    let r = load(
        Command::JobManager,
        FILE,
        &env,
        &["rest.port=9001", "rest.port=9002"],
    )
    .unwrap();
    assert_eq!(value(&r, "rest.port"), Some(Value::Int(9002)));
    assert_eq!(r.get("rest.port").unwrap().origin, Origin::Dynamic);
    assert_eq!(
        value(&r, "heartbeat.interval"),
        Some(Value::DurationMs(3_000))
    );
    assert_eq!(
        r.get("heartbeat.interval").unwrap().origin,
        Origin::Env("CONFLUX_HEARTBEAT_INTERVAL".into())
    );
    assert_eq!(
        value(&r, "heartbeat.timeout"),
        Some(Value::DurationMs(60_000))
    );
}

#[test]
fn unknown_keys_warn_with_the_nearest_known_key() {
    let r = load(
        Command::JobManager,
        "rest.prot: 1\nheartbeat:\n  intervall: 1 s\n",
        &[],
        &[
            "taskmanager.numberOfTaskSlot=2",
            "taskmanager.numberOfTaskSlots=2",
        ],
    )
    .unwrap();
    let warnings: Vec<String> = r.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "conf/config.yaml line 1: unknown configuration key rest.prot (ignored; the nearest known key is rest.port)",
            "conf/config.yaml line 3: unknown configuration key heartbeat.intervall (ignored; the nearest known key is heartbeat.interval)",
            "-D: unknown configuration key taskmanager.numberOfTaskSlot (ignored; the nearest known key is taskmanager.numberOfTaskSlots)",
            "-D taskmanager.numberOfTaskSlots: `conflux jobmanager` does not use this key (ignored)",
        ]
    );
    assert!(matches!(
        r.warnings[0],
        Warning::Unknown {
            nearest: "rest.port",
            ..
        }
    ));
}

#[test]
fn wrong_types_name_key_value_and_line() {
    let err = load(
        Command::TaskManager,
        "rest.port: 1\nheartbeat:\n  timeout: ten seconds\n",
        &[],
        &[],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "conf/config.yaml line 3: heartbeat.timeout: `ten seconds` is not a duration such as `10 s`, `1 min` or `500 ms`"
    );
    let err = load(
        Command::Run,
        "",
        &[("CONFLUX_TASKMANAGER_NUMBEROFTASKSLOTS", "-1")],
        &[],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "environment variable CONFLUX_TASKMANAGER_NUMBEROFTASKSLOTS: taskmanager.numberOfTaskSlots: `-1` is not a whole number of 0 or more"
    );
    let err = load(
        Command::Run,
        "",
        &[],
        &["execution.batch.speculative.enabled=yes"],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "-D: execution.batch.speculative.enabled: `yes` is not true or false"
    );
    let err = load(Command::Run, "", &[], &["rest.port"]).unwrap_err();
    assert_eq!(err.to_string(), "-D rest.port: expected KEY=VALUE");
}

#[test]
fn duplicates_and_conflicts_are_errors() {
    let err = load(Command::Run, "rest.port: 1\nrest:\n  port: 2\n", &[], &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "conf/config.yaml: rest.port is given twice, on lines 1 and 3"
    );
    let err = load(
        Command::Run,
        "restart-strategy.fixed-delay.delay: 1 s\nrestart-strategy.failure-rate.delay: 2 s\n",
        &[],
        &[],
    )
    .unwrap_err();
    assert!(matches!(err, ConfigError::Conflict { .. }), "{err}");
    // The same value twice is no conflict.
    let r = load(
        Command::Run,
        "restart-strategy.fixed-delay.delay: 1 s\nrestart-strategy.failure-rate.delay: 1000\n",
        &[],
        &[],
    )
    .unwrap();
    assert_eq!(r.settings.len(), 2);
}

#[test]
fn secrets_never_show() {
    let r = load(Command::Submit, "conflux.token: hunter2\n", &[], &[]).unwrap();
    let token = r.get("conflux.token").unwrap();
    assert_eq!(token.value.flag_text(), "hunter2");
    assert_eq!(token.value.flink_text(), "******");
    assert!(!format!("{r:?}").contains("hunter2"));
    let r = load(Command::Submit, "", &[("CONFLUX_TOKEN", "s3cr3t")], &[]).unwrap();
    assert_eq!(r.get("conflux.token").unwrap().value.flag_text(), "s3cr3t");
}
