//! The planning service against its own OpenAPI document: `schemathesis` (PyPI) generates
//! requests from `GET /v1/openapi.json` and checks every answer of a real `conflux serve` on a
//! free loopback port: no 5xx, and every response within its documented status codes and
//! schema. A bounded number of examples per operation, seeded, so the run takes seconds.
//!
//! schemathesis is found as `$SCHEMATHESIS`, else `st` on the PATH; `scripts/test.sh` installs
//! it with pip into a cache directory when it is missing, and sets
//! `CONFLUX_SKIP_SCHEMATHESIS=1` (the test is then skipped, saying so) when it cannot.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
    let log = work.path().join("schemathesis.log");
    let log_file = std::fs::File::create(&log).expect("log file");
    let started = Instant::now();
    let mut run = Reaped(
        Command::new(&st)
            .args([
                "run",
                &format!("{base}/v1/openapi.json"),
                "--url",
                &base,
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
            .current_dir(work.path())
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
