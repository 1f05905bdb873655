//! Flink 1.20.3's own command line client (`CliFrontend`, the real jars on Java 17) against a
//! real JobManager's REST API: `flink list` parses the answers and shows the running job,
//! `flink cancel` cancels it. Skipped, saying why, when `java` or the jars are missing:
//! `FLINK_LIB_DIR` names the directory holding `flink-dist-1.20.3.jar` (`scripts/test.sh`
//! says how to get it).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use conflux_graph::ResultPartitionType;

use crate::support::{jm_config, start_jm, submission, tm_config, wait_for_task_managers, Tm};

/// The JVM options Flink's scripts pass on Java 17.
const JAVA_OPTS: &[&str] = &[
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.text=ALL-UNNAMED",
    "--add-opens=java.base/java.time=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED",
];

/// The directory of Flink's jars, or why the test cannot run.
fn flink_lib() -> Result<PathBuf, String> {
    let Some(dir) = std::env::var_os("FLINK_LIB_DIR") else {
        return Err("FLINK_LIB_DIR is not set (see scripts/test.sh)".into());
    };
    let dir = PathBuf::from(dir);
    if !dir.join("flink-dist-1.20.3.jar").is_file() {
        return Err(format!(
            "{} has no flink-dist-1.20.3.jar (see scripts/test.sh)",
            dir.display()
        ));
    }
    let java = std::process::Command::new("java")
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match java {
        Ok(status) if status.success() => Ok(dir),
        _ => Err("no `java` on PATH (Flink 1.20 needs Java 11 or 17)".into()),
    }
}

/// Runs `flink ARGS` (at most 60 s); its exit success, stdout and stderr.
async fn flink(lib: &Path, conf: &Path, args: &[&str]) -> (bool, String, String) {
    let mut command = tokio::process::Command::new("java");
    command
        .args(JAVA_OPTS)
        .arg("-cp")
        .arg(format!("{}/*", lib.display()))
        .arg("org.apache.flink.client.cli.CliFrontend")
        .args(args)
        .env("FLINK_CONF_DIR", conf)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .unwrap_or_else(|_| panic!("flink {args:?} took more than 60 s"))
        .expect("java runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn flinks_cli_lists_and_cancels_a_job() {
    let lib = match flink_lib() {
        Ok(lib) => lib,
        Err(why) => {
            eprintln!("SKIPPED flinks_cli_lists_and_cancels_a_job: {why}");
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(conf.join("config.yaml"), "parallelism:\n  default: 1\n").unwrap();
    let jm = start_jm(jm_config(dir.path())).await;
    let rest = jm.rest_address().expect("the REST API is on").to_string();
    let _tm = Tm::spawn(tm_config(
        &jm.address().to_string(),
        2,
        &dir.path().join("tm"),
    ));
    wait_for_task_managers(&jm, 1).await;
    // 2 x 1 tasks that run for a minute: RUNNING until cancelled.
    let job = jm
        .submit(submission(
            crate::support::word_count(1, ResultPartitionType::PipelinedBounded),
            (60_000, 60_000),
        ))
        .await
        .unwrap()
        .to_string();
    let name = crate::support::word_count_name(1, ResultPartitionType::PipelinedBounded);

    let (ok, out, err) = flink(&lib, &conf, &["list", "-m", &rest]).await;
    assert!(ok, "flink list failed:\n{out}\n{err}");
    let line = out
        .lines()
        .find(|l| l.contains(&job))
        .unwrap_or_else(|| panic!("flink list does not show {job}:\n{out}\n{err}"));
    assert!(
        line.ends_with(&format!(": {job} : {name} (RUNNING)")),
        "{line}"
    );

    let (ok, out, err) = flink(&lib, &conf, &["cancel", "-m", &rest, &job]).await;
    assert!(ok, "flink cancel failed:\n{out}\n{err}");
    assert!(
        out.contains(&format!("Cancelled job {job}.")),
        "{out}\n{err}"
    );
    let report = crate::support::within(
        "the job's end",
        Duration::from_secs(20),
        jm.wait(job.parse().unwrap()),
    )
    .await
    .unwrap();
    assert_eq!(report.status, "CANCELED");

    let (ok, out, err) = flink(&lib, &conf, &["list", "-a", "-m", &rest]).await;
    assert!(ok, "flink list -a failed:\n{out}\n{err}");
    assert!(
        out.lines()
            .any(|l| l.contains(&job) && l.ends_with("(CANCELED)")),
        "flink list -a does not show {job} CANCELED:\n{out}\n{err}"
    );
    jm.shutdown().await;
}
