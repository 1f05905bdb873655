//! Batch job recovery with real processes on loopback: a JobManager with a storage directory
//! (`--ha-storage-dir`, Flink's `high-availability.storageDir`) killed with SIGKILL mid-job, a
//! new one on the same address and directory; the TaskManagers register again with the
//! partitions they kept, the job is recovered, finished tasks are not run again, the output is
//! verified. Also killed during the final sinks, together with a TaskManager, and twice in a
//! row (the replacement killed too); a truncated event log or a torn job store entry fails its
//! job naming the file, not the JobManager; a finished job is not run again.

use std::path::Path;
use std::time::{Duration, Instant};

use conflux_job_store::StorageDir;
use serde_json::Value;

use crate::cluster::{json, list, run_bounded, start_taskmanager, u64_at, Proc};

/// A word count of `sources` x `counters` with data, `words` per source.
fn word_count(dir: &Path, sources: u32, counters: u32, words: u64) -> String {
    let path = dir.join("wordcount-recovery.json");
    let job = format!(
        r#"{{"name":"word count","job_type":"batch","vertices":[
            {{"id":"source","parallelism":{sources},"invokable":"wordcount-source",
              "config":{{"words-per-source":"{words}","vocabulary":"5000","seed":"7"}}}},
            {{"id":"count","parallelism":{counters},"invokable":"wordcount-count"}}],
          "edges":[{{"source":"source","target":"count","distribution_pattern":"all_to_all",
              "result_partition_type":"blocking","ship_strategy":"HASH[word]"}}]}}"#
    );
    std::fs::write(&path, job).expect("job file");
    path.to_str().expect("utf-8 path").to_owned()
}

/// A `conflux jobmanager` on `address` keeping jobs in `storage`, waiting up to 10 s for the
/// TaskManagers of a recovered job; returns it and its address.
fn start_jobmanager(name: &str, address: &str, dir: &Path, storage: &Path) -> (Proc, String) {
    start_jobmanager_waiting(name, address, dir, storage, 10_000)
}

/// As [`start_jobmanager`], waiting `recovery_timeout_ms` for the previous TaskManagers.
fn start_jobmanager_waiting(
    name: &str,
    address: &str,
    dir: &Path,
    storage: &Path,
    recovery_timeout_ms: u64,
) -> (Proc, String) {
    let recovery_timeout_ms = recovery_timeout_ms.to_string();
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
            "1000",
            "--ha-storage-dir",
            storage.to_str().expect("utf-8"),
            "--previous-worker-recovery-timeout-ms",
            &recovery_timeout_ms,
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
    (jm, address)
}

/// A JobManager (`jm-1`, on a free port, keeping jobs in `storage`) and two TaskManagers of 2
/// slots (`tm-a`, `tm-b`) registered with it; returns them and the JobManager's address.
fn jobmanager_and_two_task_managers(dir: &Path, storage: &Path) -> (Proc, String, Proc, Proc) {
    let (mut jm, address) = start_jobmanager("jm-1", "127.0.0.1:0", dir, storage);
    let tm_a = start_taskmanager("tm-a", &address, 2, dir);
    let tm_b = start_taskmanager("tm-b", &address, 2, dir);
    jm.wait_for_log("TaskManager registered", 2, Duration::from_secs(10));
    (jm, address, tm_a, tm_b)
}

/// As [`jobmanager_and_two_task_managers`] with one TaskManager of 2 slots (`tm`).
fn jobmanager_and_one_task_manager(dir: &Path, storage: &Path) -> (Proc, String, Proc) {
    let (mut jm, address) = start_jobmanager("jm-1", "127.0.0.1:0", dir, storage);
    let tm = start_taskmanager("tm", &address, 2, dir);
    jm.wait_for_log("TaskManager registered", 1, Duration::from_secs(10));
    (jm, address, tm)
}

/// `dir/out`, where the sinks write.
fn output_dir(dir: &Path) -> String {
    output_dir_named(dir, "out")
}

/// `dir/NAME` as a string: another output directory.
fn output_dir_named(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().expect("utf-8").to_owned()
}

/// Submits `file` detached with its output in `out`; returns the job id.
fn submit(file: &str, address: &str, dir: &Path, out: &str, sink_delay_us: u64) -> String {
    let (status, stdout, stderr) = run_bounded(
        "submit",
        &[
            "submit",
            file,
            "--jobmanager",
            address,
            "--detached",
            "--output-dir",
            out,
            "--sink-delay-us",
            &sink_delay_us.to_string(),
            "--format",
            "json",
        ],
        dir,
        Duration::from_secs(20),
    );
    assert!(status.success(), "{stderr}");
    json(&stdout, &stderr)["job_id"]
        .as_str()
        .expect("job_id")
        .to_owned()
}

/// The source subtasks (vertices below `sources`) the job's event log says finished.
fn sources_finished(storage: &Path, job: &str, sources: u32) -> usize {
    finished_in(storage, job, 0..sources)
}

/// The subtasks of `vertices` (dense execution vertex indices: the sources first, then the
/// counts) the job's event log says finished.
fn finished_in(storage: &Path, job: &str, vertices: std::ops::Range<u32>) -> usize {
    let Ok(store) = StorageDir::open(storage) else {
        return 0;
    };
    let events = store.read_events(job).unwrap_or_default();
    conflux_job_store::RecoveredJob::replay(&events)
        .finished
        .keys()
        .filter(|v| vertices.contains(v))
        .count()
}

/// Waits (at most `limit`) until `condition` holds.
fn wait_until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `conflux wait JOB --format json` against `address`.
fn wait_report(job: &str, address: &str, dir: &Path) -> Value {
    let (status, stdout, stderr) = run_bounded(
        "wait",
        &["wait", job, "--jobmanager", address, "--format", "json"],
        dir,
        Duration::from_secs(90),
    );
    let report = json(&stdout, &stderr);
    assert!(
        status.success() || report["status"] == "FAILED",
        "{status}: {stderr}"
    );
    report
}

fn verify(file: &str, out: &str) -> bool {
    let bytes = std::fs::read(file).expect("job file");
    let graph = conflux_graph::load::load(&bytes, &Default::default()).expect("job graph");
    let job = conflux_runtime::word_count_job(&graph)
        .expect("a word count")
        .expect("a word count");
    conflux_operators::verify_output(&job, Path::new(out))
        .expect("output read")
        .verified()
}

/// Kills the JobManager once `logged` source finishes are in the event log, starts another on
/// the same address and directory, and returns the recovered job's report and how many source
/// finishes the log held at the kill.
fn kill_and_recover(sources: u32, logged: usize, sink_delay_us: u64) -> (Value, usize, bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = dir.path().join("ha");
    let file = word_count(dir.path(), sources, 4, 200_000);
    let out = output_dir(dir.path());
    let (mut jm, address, mut tm_a, mut tm_b) =
        jobmanager_and_two_task_managers(dir.path(), &storage);
    let job = submit(&file, &address, dir.path(), &out, sink_delay_us);
    assert!(
        storage
            .join("job-store")
            .join(format!("{job}.entry"))
            .exists(),
        "the job store entry is written before the submission is acknowledged"
    );
    wait_until("sources finish", Duration::from_secs(60), || {
        sources_finished(&storage, &job, sources) >= logged
    });
    jm.signal("KILL");
    jm.kill();
    let at_kill = sources_finished(&storage, &job, sources);
    let (mut jm2, address2) = start_jobmanager("jm-2", &address, dir.path(), &storage);
    assert_eq!(address2, address);
    let report = wait_report(&job, &address, dir.path());
    let log = jm2.log();
    assert!(
        log.contains("job recovered from the storage directory"),
        "{log}"
    );
    assert_eq!(
        list(&address, dir.path()),
        vec![(job.clone(), "FINISHED".to_owned())]
    );
    // Ended: its result is recorded, its entry and event log are gone.
    assert!(storage
        .join("job-results")
        .join(format!("{job}.json"))
        .exists());
    assert!(!storage
        .join("job-store")
        .join(format!("{job}.entry"))
        .exists());
    assert!(!storage
        .join("event-logs")
        .join(format!("{job}.log"))
        .exists());
    let verified = verify(&file, &out);
    tm_a.kill();
    tm_b.kill();
    jm2.kill();
    (report, at_kill, verified)
}

#[test]
fn a_jobmanager_killed_during_the_counts_is_replaced_and_no_source_runs_again() {
    // Slow sinks: the counts still run when all 6 sources are logged finished.
    let (r, at_kill, verified) = kill_and_recover(6, 6, 100_000);
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert_eq!(at_kill, 6);
    assert_eq!(u64_at(&r, "tasks_recovered"), 6, "{r}");
    assert!(r["recovery_replay_ms"].as_f64().is_some(), "{r}");
    // Only the counts ran on the new JobManager.
    assert_eq!(u64_at(&r, "tasks_deployed"), 4, "{r}");
    assert_eq!(u64_at(&r["data"]["reruns"], "source"), 0, "{r}");
    assert!(verified, "the output is the expected word count");
}

#[test]
fn a_jobmanager_killed_during_the_sources_is_replaced_and_only_unfinished_sources_run() {
    // 12 sources on 4 slots: three waves; killed once the first finishes are logged.
    let (r, at_kill, verified) = kill_and_recover(12, 1, 0);
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert!(at_kill >= 1, "{at_kill}");
    let recovered = u64_at(&r, "tasks_recovered");
    // Every logged source whose TaskManager kept its partitions (both did) is kept.
    assert_eq!(recovered, at_kill as u64, "{r}");
    assert_eq!(u64_at(&r, "tasks_deployed"), 12 - recovered + 4, "{r}");
    assert_eq!(u64_at(&r["data"]["reruns"], "source"), 0, "{r}");
    assert!(verified, "the output is the expected word count");
}

#[test]
fn a_jobmanager_killed_during_the_final_sinks_keeps_what_they_published() {
    // 8 slow counts (the sinks) on 4 slots: killed once the first wave's first count is
    // logged finished, while the rest of its wave still writes.
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = dir.path().join("ha");
    let (sources, counts) = (4, 8);
    let file = word_count(dir.path(), sources, counts, 100_000);
    let out = output_dir(dir.path());
    let (mut jm, address, mut tm_a, mut tm_b) =
        jobmanager_and_two_task_managers(dir.path(), &storage);
    let job = submit(&file, &address, dir.path(), &out, 50_000);
    let all_counts = sources..sources + counts;
    wait_until("a count finishes", Duration::from_secs(60), || {
        finished_in(&storage, &job, all_counts.clone()) >= 1
    });
    jm.signal("KILL");
    jm.kill();
    let counts_at_kill = finished_in(&storage, &job, all_counts.clone());
    assert!(counts_at_kill < counts as usize, "killed before the end");
    let (mut jm2, _) = start_jobmanager("jm-2", &address, dir.path(), &storage);
    let r = wait_report(&job, &address, dir.path());
    assert_eq!(r["status"], "FINISHED", "{r}");
    // Every source and every count finished before the kill is kept; no source runs again.
    let recovered = u64_at(&r, "tasks_recovered");
    assert!(
        recovered >= u64::from(sources) + counts_at_kill as u64,
        "{recovered} kept, {counts_at_kill} counts finished at the kill: {r}"
    );
    assert_eq!(u64_at(&r["data"]["reruns"], "source"), 0, "{r}");
    assert_eq!(
        u64_at(&r, "tasks_deployed"),
        u64::from(sources + counts) - recovered,
        "{r}"
    );
    // The kept sinks' files and the re-run ones' together are exactly the word count.
    assert!(verify(&file, &out), "the output is the expected word count");
    tm_a.kill();
    tm_b.kill();
    jm2.kill();
}

#[test]
fn a_jobmanager_and_a_task_manager_killed_at_once_lose_only_that_task_managers_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = dir.path().join("ha");
    let (sources, counts) = (6, 4);
    let file = word_count(dir.path(), sources, counts, 100_000);
    let out = output_dir(dir.path());
    let (mut jm, address, mut tm_a, mut tm_b) =
        jobmanager_and_two_task_managers(dir.path(), &storage);
    // Slow sinks: the counts still run when every source is logged finished.
    let job = submit(&file, &address, dir.path(), &out, 100_000);
    wait_until("sources finish", Duration::from_secs(60), || {
        sources_finished(&storage, &job, sources) == sources as usize
    });
    jm.signal("KILL");
    tm_a.signal("KILL");
    jm.kill();
    tm_a.kill();
    // tm-a never comes back: its partitions are waited for 1 s, then re-made.
    let (mut jm2, _) = start_jobmanager_waiting("jm-2", &address, dir.path(), &storage, 1_000);
    let r = wait_report(&job, &address, dir.path());
    assert_eq!(r["status"], "FINISHED", "{r}");
    // tm-b's sources are kept, tm-a's run again; every count runs again.
    let recovered = u64_at(&r, "tasks_recovered");
    assert!(
        (1..u64::from(sources)).contains(&recovered),
        "some sources on each TaskManager: {r}"
    );
    assert_eq!(
        u64_at(&r, "tasks_deployed"),
        u64::from(sources) - recovered + u64::from(counts),
        "{r}"
    );
    assert!(verify(&file, &out), "the output is the expected word count");
    tm_b.kill();
    jm2.kill();
}

#[test]
fn a_replacement_killed_too_is_replaced_again_and_the_job_finishes() {
    // 12 sources on 4 slots, three waves: the first JobManager killed after the first source
    // finish is logged, its replacement after a later one; the third finishes the job.
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = dir.path().join("ha");
    let sources = 12;
    let file = word_count(dir.path(), sources, 4, 200_000);
    let out = output_dir(dir.path());
    let (mut jm, address, mut tm_a, mut tm_b) =
        jobmanager_and_two_task_managers(dir.path(), &storage);
    // Slow sinks: the job still runs when the second JobManager is killed, even if every
    // source finished by then.
    let job = submit(&file, &address, dir.path(), &out, 20_000);
    let mut at_kill = 0;
    for name in ["jm-2", "jm-3"] {
        wait_until("another source finishes", Duration::from_secs(60), || {
            let finished = sources_finished(&storage, &job, sources);
            finished > at_kill || finished == sources as usize
        });
        jm.signal("KILL");
        jm.kill();
        at_kill = sources_finished(&storage, &job, sources);
        if at_kill == sources as usize {
            // The sources outran the kills: the rest of the test still holds, with fewer waves.
            eprintln!("every source finished before {name} started");
        }
        (jm, _) = start_jobmanager(name, &address, dir.path(), &storage);
    }
    let r = wait_report(&job, &address, dir.path());
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert!(jm
        .log()
        .contains("job recovered from the storage directory"));
    // The third JobManager keeps every source the log holds; none runs twice.
    assert_eq!(u64_at(&r, "tasks_recovered"), at_kill as u64, "{r}");
    assert_eq!(u64_at(&r["data"]["reruns"], "source"), 0, "{r}");
    assert!(verify(&file, &out), "the output is the expected word count");
    tm_a.kill();
    tm_b.kill();
    jm.kill();
}

#[test]
fn a_torn_job_store_entry_fails_its_job_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = dir.path().join("ha");
    let file = word_count(dir.path(), 4, 2, 100_000);
    let out = output_dir(dir.path());
    let (mut jm, address, mut tm) = jobmanager_and_one_task_manager(dir.path(), &storage);
    let job = submit(&file, &address, dir.path(), &out, 200_000);
    jm.signal("KILL");
    jm.kill();
    // The entry torn in the middle, as by a crash halfway through writing it.
    let entry = storage.join("job-store").join(format!("{job}.entry"));
    let bytes = std::fs::read(&entry).expect("job store entry");
    std::fs::write(&entry, &bytes[..bytes.len() / 2]).expect("tear");
    let (mut jm2, _) = start_jobmanager("jm-2", &address, dir.path(), &storage);
    jm2.wait_for_log("job not recovered", 1, Duration::from_secs(10));
    assert!(
        jm2.log().contains(&entry.display().to_string()),
        "{}",
        jm2.log()
    );
    let result = std::fs::read_to_string(storage.join("job-results").join(format!("{job}.json")))
        .expect("a job result");
    assert!(
        result.contains("\"FAILED\"") && result.contains(&entry.display().to_string()),
        "{result}"
    );
    // The JobManager runs on: a new submission of the same job finishes.
    let out2 = output_dir_named(dir.path(), "out-2");
    let again = submit(&file, &address, dir.path(), &out2, 0);
    let r = wait_report(&again, &address, dir.path());
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert!(
        verify(&file, &out2),
        "the output is the expected word count"
    );
    tm.kill();
    jm2.kill();
}

#[test]
fn a_truncated_event_log_fails_its_job_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = dir.path().join("ha");
    let file = word_count(dir.path(), 4, 2, 100_000);
    let out = output_dir(dir.path());
    let (mut jm, address, mut tm) = jobmanager_and_one_task_manager(dir.path(), &storage);
    let job = submit(&file, &address, dir.path(), &out, 200_000);
    wait_until("sources finish", Duration::from_secs(60), || {
        sources_finished(&storage, &job, 4) >= 2
    });
    jm.signal("KILL");
    jm.kill();
    let path = storage.join("event-logs").join(format!("{job}.log"));
    let bytes = std::fs::read(&path).expect("event log");
    std::fs::write(&path, &bytes[..bytes.len() - 3]).expect("truncate");
    let (mut jm2, _) = start_jobmanager("jm-2", &address, dir.path(), &storage);
    let r = wait_report(&job, &address, dir.path());
    assert_eq!(r["status"], "FAILED", "{r}");
    let reason = r["failure_reason"].as_str().expect("a reason");
    assert!(
        reason.contains(&path.display().to_string()) && reason.contains("truncated record"),
        "{reason}"
    );
    // The JobManager itself runs on, and the job is not recovered again.
    assert!(storage
        .join("job-results")
        .join(format!("{job}.json"))
        .exists());
    let jobs = list(&address, dir.path());
    assert_eq!(jobs, vec![(job.clone(), "FAILED".to_owned())]);
    tm.kill();
    jm2.kill();
}

#[test]
fn a_finished_job_is_not_run_again_by_the_next_jobmanager() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = dir.path().join("ha");
    let file = word_count(dir.path(), 2, 2, 10_000);
    let out = output_dir(dir.path());
    let (mut jm, address, mut tm) = jobmanager_and_one_task_manager(dir.path(), &storage);
    let job = submit(&file, &address, dir.path(), &out, 0);
    let r = wait_report(&job, &address, dir.path());
    assert_eq!(r["status"], "FINISHED", "{r}");
    assert_eq!(r["tasks_recovered"], Value::Null, "{r}");
    let result = std::fs::read_to_string(storage.join("job-results").join(format!("{job}.json")))
        .expect("a job result");
    assert!(result.contains("\"FINISHED\""), "{result}");
    jm.signal("KILL");
    jm.kill();
    let (mut jm2, _) = start_jobmanager("jm-2", &address, dir.path(), &storage);
    jm2.wait_for_log("TaskManager registered", 1, Duration::from_secs(15));
    assert!(list(&address, dir.path()).is_empty());
    assert!(!jm2.log().contains("job recovered"), "{}", jm2.log());
    let store = StorageDir::open(&storage).expect("store");
    assert!(store.jobs().expect("jobs").is_empty());
    assert!(matches!(store.read_events(&job).as_deref(), Ok([])));
    tm.kill();
    jm2.kill();
}
