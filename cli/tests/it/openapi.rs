//! The planning service and the JobManager's REST API against their own OpenAPI documents:
//! `schemathesis` (PyPI) generates requests from `GET /v1/openapi.json` and checks every answer
//! of a real `conflux serve`, and of a real `conflux jobmanager` with a TaskManager and a
//! finished job, on free loopback ports: no 5xx, and every response within its documented status
//! codes, content type and schema. A bounded number of examples per operation, seeded, so each
//! run takes seconds.
//!
//! schemathesis is found as `$SCHEMATHESIS`, else `st` on the PATH; `scripts/test.sh` installs
//! it with pip into a cache directory when it is missing, and sets
//! `CONFLUX_SKIP_SCHEMATHESIS=1` (the test is then skipped, saying so) when it cannot.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cluster::{json, list, run_bounded, start_jobmanager, start_taskmanager, word_count};

/// A child process killed and reaped when dropped.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How long the whole schemathesis run may take.
const LIMIT: Duration = Duration::from_secs(120);

fn schemathesis() -> String {
    if let Ok(path) = std::env::var("SCHEMATHESIS") {
        return path;
    }
    let found = Command::new("st")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.starts_with(b"st, version"));
    assert!(
        found,
        "schemathesis not found ($SCHEMATHESIS, st): the OpenAPI test needs it; scripts/test.sh \
         installs it (pip), or set SCHEMATHESIS=/path/to/st, or CONFLUX_SKIP_SCHEMATHESIS=1 to \
         skip this test"
    );
    "st".to_owned()
}

/// The document's example plan.
const WORD_COUNT: &str = r#"{"name": "word count", "job_type": "batch",
  "vertices": [{"id": "source", "parallelism": 4}, {"id": "count", "parallelism": 4}],
  "edges": [{"source": "source", "target": "count", "distribution_pattern": "all_to_all",
             "result_partition_type": "blocking", "ship_strategy": "HASH[word]"}]}"#;

/// `POST path` with `body`; the whole answer, head and body.
fn post(base: &str, path: &str, body: &str) -> String {
    let mut s = TcpStream::connect(base.trim_start_matches("http://")).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("request");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("answer");
    answer
}

#[test]
fn the_planning_service_answers_within_its_openapi_document() {
    if std::env::var("CONFLUX_SKIP_SCHEMATHESIS").as_deref() == Ok("1") {
        eprintln!("skipped: CONFLUX_SKIP_SCHEMATHESIS=1 (set SCHEMATHESIS=/path/to/st to run it)");
        return;
    }
    let st = schemathesis();
    let mut child = Command::new(env!("CARGO_BIN_EXE_conflux"))
        .args([
            "serve",
            "--address",
            "127.0.0.1:0",
            "--max-computations",
            "2",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let mut base = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut base)
        .expect("the URL line");
    let _server = Reaped(child);
    let base = base.trim().trim_end_matches('/').to_owned();
    // The identifiers the document's examples name: plans p1 (read, edited) and p2 (deleted),
    // so that generated requests reach real answers, not only 404s.
    for id in ["p1", "p2"] {
        let answer = post(&base, "/v1/plans", WORD_COUNT);
        assert!(answer.contains(&format!("\"id\":\"{id}\"")), "{answer}");
    }
    let work = tempfile::tempdir().expect("tempdir");
    run_schemathesis(&st, &base, work.path());
}

/// The JobManager's REST API (Flink's) against its own OpenAPI document: a real `conflux
/// jobmanager` with one TaskManager and one finished job, whose id schemathesis uses for
/// `{jobid}` (in `schemathesis.toml`) so that the job endpoints answer real bodies, not only 404s.
#[test]
fn the_jobmanager_rest_api_answers_within_its_openapi_document() {
    if std::env::var("CONFLUX_SKIP_SCHEMATHESIS").as_deref() == Ok("1") {
        eprintln!("skipped: CONFLUX_SKIP_SCHEMATHESIS=1 (set SCHEMATHESIS=/path/to/st to run it)");
        return;
    }
    let st = schemathesis();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = word_count(dir.path(), 2, "blocking");
    let (mut jm, address) = start_jobmanager("jm", "127.0.0.1:0", dir.path());
    let _tm = start_taskmanager("tm", &address, 2, dir.path());
    let log = jm.wait_for_log("TaskManager registered", 1, Duration::from_secs(10));
    let base = log
        .split("REST API ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("the REST API's URL after 'REST API '")
        .to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    let (status, stdout, stderr) = run_bounded(
        "submit",
        &[
            "submit",
            &file,
            "--jobmanager",
            &address,
            "--detached",
            "--task-duration-ms",
            "0",
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
    let deadline = Instant::now() + Duration::from_secs(10);
    while list(&address, dir.path()) != vec![(job_id.clone(), "FINISHED".to_owned())] {
        assert!(Instant::now() < deadline, "the job does not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        work.path().join("schemathesis.toml"),
        format!("[parameters]\n\"path.jobid\" = \"{job_id}\"\n"),
    )
    .expect("schemathesis.toml");
    run_schemathesis(&st, &base, work.path());
}

/// Runs schemathesis `st` against the OpenAPI document at `base`/v1/openapi.json (in `work`,
/// where Hypothesis keeps its database and a `schemathesis.toml` there is read) with the checks
/// no 5xx, documented status codes, content types and schemas; panics showing its log when it
/// finds a problem or runs longer than [`LIMIT`].
fn run_schemathesis(st: &str, base: &str, work: &Path) {
    let log = work.join("schemathesis.log");
    let log_file = std::fs::File::create(&log).expect("log file");
    let started = Instant::now();
    let mut run = Reaped(
        Command::new(st)
            .args([
                "run",
                &format!("{base}/v1/openapi.json"),
                "--url",
                base,
                "--checks",
                "not_a_server_error,status_code_conformance,content_type_conformance,\
                 response_schema_conformance",
                "--phases",
                "examples,coverage,fuzzing",
                "--max-examples",
                "8",
                "--seed",
                "1",
                "--workers",
                "2",
                "--request-timeout",
                "20",
                "--no-color",
            ])
            // Hypothesis keeps its example database in the working directory.
            .current_dir(work)
            .stdout(log_file.try_clone().expect("log file"))
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {st}: {e}")),
    );
    let output = loop {
        if let Some(status) = run.0.try_wait().expect("wait") {
            break status;
        }
        assert!(
            started.elapsed() < LIMIT,
            "schemathesis still runs after {LIMIT:?}:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    eprintln!("schemathesis took {:.1} s", started.elapsed().as_secs_f64());
    assert!(
        output.success(),
        "schemathesis found problems ({output}):\n{text}"
    );
}
