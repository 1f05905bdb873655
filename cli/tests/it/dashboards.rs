//! The JobManager's web pages in a real browser (headless Chromium over the DevTools Protocol,
//! as the plan viewer's test) against real processes on loopback: a `conflux jobmanager`, one
//! `conflux taskmanager` with 2 slots, and a three-vertex batch job submitted with `conflux
//! submit`.
//!
//! - Flink 1.20.3's own dashboard (`--web-ui-dir`, its files taken from `flink-dist-1.20.3.jar`
//!   in `$FLINK_LIB_DIR`, which `scripts/test.sh` fetches): the running-jobs list, the job page
//!   with its vertices, the TaskManager list and, after a cancel, the completed-jobs list show
//!   Conflux's job and TaskManager; no request the pages make answers 5xx.
//! - Conflux's live view (the JobManager's default page): the job, its vertices' finished/total
//!   task counts changing while it runs, and the TaskManager with its slots.
//!
//! Screenshots go to `target/tmp/dashboards/` (not committed). Skipped, saying why, when
//! Chromium (`CONFLUX_SKIP_BROWSER=1`, or none found) or Flink's jar is missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::cluster::{run_bounded, start_taskmanager, Proc};
use crate::viewer::{http, Page};

/// How long one wait for a page may take.
const WAIT: Duration = Duration::from_secs(30);

/// The job both tests submit: three vertices with Flink-like names, blocking exchanges.
const JOB_NAME: &str = "dashboard demo: orders by region";
const VERTICES: [(&str, &str, u32); 3] = [
    ("orders", "Source: orders", 2),
    ("aggregate", "HashAggregate(groupBy=[region])", 2),
    ("report", "Sink: revenue report", 1),
];

/// Why the browser cannot run here, if it cannot.
fn no_browser() -> Option<String> {
    if std::env::var("CONFLUX_SKIP_BROWSER").as_deref() == Ok("1") {
        return Some("CONFLUX_SKIP_BROWSER=1 (no Chromium; set CHROMIUM=/path to run it)".into());
    }
    if std::env::var_os("CHROMIUM").is_some() {
        return None;
    }
    let found = ["chromium", "chromium-browser"].iter().any(|name| {
        Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    (!found).then(|| "no Chromium on the PATH (set CHROMIUM=/path to run it)".into())
}

/// Flink's dashboard files: `web/` of `$FLINK_LIB_DIR/flink-dist-1.20.3.jar`, extracted under
/// `dir`; why not, when the jar is missing.
fn flink_web_dir(dir: &Path) -> Result<PathBuf, String> {
    let lib = std::env::var_os("FLINK_LIB_DIR")
        .ok_or("FLINK_LIB_DIR is not set (scripts/test.sh fetches Flink's jars and sets it)")?;
    let jar = Path::new(&lib).join("flink-dist-1.20.3.jar");
    if !jar.is_file() {
        return Err(format!("{} is missing", jar.display()));
    }
    let status = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); \
             z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith('web/')])",
        ])
        .arg(&jar)
        .arg(dir)
        .status()
        .map_err(|e| format!("python3 cannot run to unzip {}: {e}", jar.display()))?;
    assert!(status.success(), "unzipping web/ from {}", jar.display());
    Ok(dir.join("web"))
}

/// The job's JSON, written into `dir`; its path.
fn job_file(dir: &Path) -> String {
    let vertices: Vec<Value> = VERTICES
        .iter()
        .map(|(id, name, p)| json!({"id": id, "name": name, "parallelism": p}))
        .collect();
    let edge = |s: &str, t: &str| {
        json!({"source": s, "target": t, "distribution_pattern": "all_to_all",
               "result_partition_type": "blocking", "ship_strategy": "HASH[region]"})
    };
    let job = json!({"name": JOB_NAME, "job_type": "batch", "vertices": vertices,
                     "edges": [edge("orders", "aggregate"), edge("aggregate", "report")]});
    let path = dir.join("demo.json");
    std::fs::write(&path, job.to_string()).expect("job file");
    path.to_str().expect("utf-8").to_owned()
}

/// A JobManager (extra `args`) and a TaskManager with 2 slots, registered; the JobManager's
/// RPC address and REST URL.
fn cluster(dir: &Path, args: &[&str]) -> (Proc, Proc, String, String) {
    let blobs = dir.join("blobs");
    let mut all = vec![
        "jobmanager",
        "--address",
        "127.0.0.1:0",
        "--rest-port",
        "0",
        "--blob-dir",
        blobs.to_str().expect("utf-8"),
    ];
    all.extend_from_slice(args);
    let mut jm = Proc::start("jm", &all, dir, false);
    let log = jm.wait_for_log("JobManager listening on ", 1, WAIT);
    let line = log
        .lines()
        .find(|l| l.contains("JobManager listening on "))
        .expect("the listening line");
    let address = line
        .split("listening on ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("address")
        .to_owned();
    let rest = line
        .split("REST API ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .expect("REST URL")
        .to_owned();
    let tm = start_taskmanager("tm", &address, 2, dir);
    jm.wait_for_log("TaskManager registered", 1, WAIT);
    (jm, tm, address, rest)
}

/// `conflux submit --detached` with each task taking `task_ms`; the job's id.
fn submit(dir: &Path, address: &str, task_ms: u64) -> String {
    let file = job_file(dir);
    let ms = task_ms.to_string();
    let (status, stdout, stderr) = run_bounded(
        "submit",
        &[
            "submit",
            &file,
            "--jobmanager",
            address,
            "--detached",
            "--task-duration-ms",
            &ms,
        ],
        dir,
        WAIT,
    );
    assert!(status.success(), "{stderr}");
    stdout.trim().to_owned()
}

/// Waits until `expression` is truthy in the page; on time-out, fails with the page's text.
fn wait(page: &mut Page, expression: &str) -> Value {
    let start = Instant::now();
    loop {
        let v = page.eval(expression);
        if !(v.is_null() || v == json!(false) || v == json!("")) {
            return v;
        }
        assert!(
            start.elapsed() < WAIT,
            "waited {WAIT:?} for `{expression}`; the page shows: {}",
            page.eval("document.body ? document.body.innerText.slice(0, 3000) : ''")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `document.body.innerText` includes every one of `texts`.
fn shows(texts: &[&str]) -> String {
    let all: Vec<String> = texts
        .iter()
        .map(|t| format!("document.body.innerText.includes({})", json!(t)))
        .collect();
    format!("!!document.body && {}", all.join(" && "))
}

/// Saves a PNG of the page as `target/tmp/dashboards/NAME.png`.
fn screenshot(page: &mut Page, name: &str) {
    let shot = page.send("Page.captureScreenshot", json!({"format": "png"}));
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().expect("data"))
        .expect("base64");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboards");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    let path = dir.join(format!("{name}.png"));
    std::fs::write(&path, png).expect("screenshot");
    println!("screenshot: {}", path.display());
}

/// The job's vertex ids by name, from the REST API.
fn vertex_ids(rest: &str, jid: &str) -> Vec<(String, String)> {
    let (status, job) = http(rest, "GET", &format!("/jobs/{jid}"), b"");
    assert_eq!(status, 200, "{job}");
    job["vertices"]
        .as_array()
        .expect("vertices")
        .iter()
        .map(|v| {
            (
                v["name"].as_str().expect("name").to_owned(),
                v["id"].as_str().expect("id").to_owned(),
            )
        })
        .collect()
}

fn job_state(rest: &str, jid: &str) -> String {
    let (_, job) = http(rest, "GET", &format!("/jobs/{jid}"), b"");
    job["state"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn flinks_dashboard_shows_conflux_jobs_vertices_and_task_managers() {
    if let Some(why) = no_browser() {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let web = match flink_web_dir(dir.path()) {
        Ok(web) => web,
        Err(why) => {
            eprintln!("skipped: Flink's dashboard files are missing: {why}");
            return;
        }
    };
    let (mut jm, mut tm, address, rest) =
        cluster(dir.path(), &["--web-ui-dir", web.to_str().expect("utf-8")]);
    let jid = submit(dir.path(), &address, 60_000);
    let deadline = Instant::now() + WAIT;
    while job_state(&rest, &jid) != "RUNNING" {
        assert!(Instant::now() < deadline, "the job does not run");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, tms) = http(&rest, "GET", "/taskmanagers", b"");
    let tm_id = tms["taskmanagers"][0]["id"]
        .as_str()
        .expect("a TaskManager")
        .to_owned();

    let mut page = Page::open();
    page.navigate(&format!("{rest}/#/overview"));
    wait(&mut page, "document.readyState === 'complete'");
    page.eval("performance.setResourceTimingBufferSize(100000); true");
    wait(&mut page, &shows(&[JOB_NAME, "RUNNING"]));
    screenshot(&mut page, "flink-overview");

    page.navigate(&format!("{rest}/#/job/running"));
    wait(&mut page, &shows(&[JOB_NAME, "RUNNING"]));
    screenshot(&mut page, "flink-running-jobs");

    // The job page: every vertex's name in the list and the graph, with its parallelism.
    page.navigate(&format!("{rest}/#/job/running/{jid}/overview"));
    let names: Vec<&str> = VERTICES.iter().map(|v| v.1).collect();
    wait(&mut page, &shows(&names));
    let drawn = wait(
        &mut page,
        &format!(
            "[...document.querySelectorAll('svg text, svg foreignObject')].map(e => e.textContent).join('|').includes({}) \
             && [...document.querySelectorAll('svg text, svg foreignObject')].map(e => e.textContent).join('|')",
            json!(VERTICES[1].1)
        ),
    );
    for (_, name, _) in VERTICES {
        assert!(
            drawn.as_str().is_some_and(|d| d.contains(name)),
            "{name} not in the graph: {drawn}"
        );
    }
    screenshot(&mut page, "flink-job");

    page.navigate(&format!("{rest}/#/task-manager"));
    wait(&mut page, &shows(&[&tm_id]));
    screenshot(&mut page, "flink-task-managers");

    // Cancelled, the job moves to the completed jobs.
    let (status, _) = http(&rest, "PATCH", &format!("/jobs/{jid}?mode=cancel"), b"");
    assert_eq!(status, 202);
    page.navigate(&format!("{rest}/#/job/completed"));
    wait(&mut page, &shows(&[JOB_NAME, "CANCELED"]));
    screenshot(&mut page, "flink-completed-jobs");

    // What the pages asked the JobManager: nothing answered 5xx; what Conflux does not serve
    // answered 404 (printed).
    let requests = page.eval(&format!(
        "performance.getEntriesByType('resource').filter(e => e.name.startsWith({})).map(e => [e.responseStatus, new URL(e.name).pathname])",
        json!(rest)
    ));
    let requests = requests.as_array().expect("entries");
    assert!(requests.len() > 10, "{requests:?}");
    let mut missing: Vec<String> = Vec::new();
    for r in requests {
        let status = r[0].as_u64().unwrap_or(0);
        let path = r[1].as_str().unwrap_or_default().to_owned();
        assert!(status < 500, "{path} answered {status}");
        if status >= 400 && !missing.contains(&path) {
            missing.push(path);
        }
    }
    println!(
        "Flink's dashboard: {} requests; 4xx: {missing:?}",
        requests.len()
    );
    tm.kill();
    jm.kill();
}

#[test]
fn the_live_view_shows_a_running_job_and_its_task_counts_change() {
    if let Some(why) = no_browser() {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut jm, mut tm, address, rest) = cluster(dir.path(), &[]);
    let (_, tms) = http(&rest, "GET", "/taskmanagers", b"");
    let tm_id = tms["taskmanagers"][0]["id"]
        .as_str()
        .expect("a TaskManager")
        .to_owned();

    let mut page = Page::open();
    page.navigate(&format!("{rest}/?refresh=200"));
    // The TaskManager with its 2 slots, before any job.
    let slots = wait(
        &mut page,
        &format!(
            "document.querySelector('#taskmanagers tr[data-id={}] .slots')?.textContent",
            json!(tm_id)
        ),
    );
    assert_eq!(slots, json!("2"));

    // Each task takes 1.5 s: the sources, then the aggregates, then the sink.
    let jid = submit(dir.path(), &address, 1_500);
    let name = wait(
        &mut page,
        &format!("document.querySelector('#jobs tr[data-jid=\"{jid}\"] .name')?.textContent"),
    );
    assert_eq!(name, json!(JOB_NAME));
    let ids = vertex_ids(&rest, &jid);
    let source = &ids
        .iter()
        .find(|(n, _)| n == VERTICES[0].1)
        .expect("source")
        .1;
    let sink = &ids
        .iter()
        .find(|(n, _)| n == VERTICES[2].1)
        .expect("sink")
        .1;
    let counts = |vertex: &str| {
        format!(
            "(() => {{ const g = document.querySelector('#graph g.vertex[data-id=\"{vertex}\"]'); \
             return g && [g.querySelector('.tasks').textContent, g.dataset.status]; }})()"
        )
    };
    // The source's counts as the page refreshes: they start below 2/2 and reach it.
    let mut seen: Vec<Value> = Vec::new();
    let start = Instant::now();
    loop {
        let now = page.eval(&counts(source));
        if !now.is_null() && seen.last() != Some(&now) {
            seen.push(now.clone());
            if seen.len() == 1 {
                screenshot(&mut page, "conflux-live-running");
            }
        }
        if now[0] == json!("2/2 finished") {
            break;
        }
        assert!(start.elapsed() < WAIT, "source counts: {seen:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(seen.len() >= 2, "the counts never changed: {seen:?}");
    assert_ne!(seen[0][0], json!("2/2 finished"), "{seen:?}");
    assert_eq!(seen.last().unwrap()[1], json!("FINISHED"), "{seen:?}");
    // The job ends: the sink's count and the job's state follow.
    wait(
        &mut page,
        &format!(
            "{}?.[0] === '1/1 finished' && document.querySelector('#jobs tr[data-jid=\"{jid}\"] .state')?.textContent === 'FINISHED'",
            counts(sink)
        ),
    );
    let (_, overview) = http(&rest, "GET", "/jobs/overview", b"");
    assert_eq!(overview["jobs"][0]["state"], json!("FINISHED"));
    screenshot(&mut page, "conflux-live-finished");
    tm.kill();
    jm.kill();
}
