//! The storage directory on a real file system.

use conflux_job_store::{
    FinishedExecution, JobEvent, JobResultEntry, JobStoreEntry, RecoveredJob, StorageDir,
    StoreError,
};

const JOB: &str = "0123456789abcdef0123456789abcdef";

fn finished(vertex: u32) -> JobEvent {
    JobEvent::TaskFinished(FinishedExecution {
        vertex,
        attempt: 0,
        data_address: "127.0.0.1:4000".into(),
        produced_bytes: vec![vec![vertex as u64, 7]],
    })
}

#[test]
fn a_job_entry_round_trips_and_a_torn_one_names_its_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StorageDir::open(dir.path()).expect("open");
    let entry = JobStoreEntry {
        job: JOB.into(),
        name: "wordcount".into(),
        payload: vec![1, 2, 3, 4, 5],
    };
    store.put_job(&entry).expect("put");
    assert_eq!(store.jobs().expect("jobs"), vec![JOB.to_string()]);
    assert_eq!(store.read_job(JOB).expect("read"), entry);
    // No temporary file is left beside it.
    let names: Vec<_> = std::fs::read_dir(dir.path().join("job-store"))
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names.len(), 1);

    let path = store.job_path(JOB);
    let bytes = std::fs::read(&path).expect("bytes");
    std::fs::write(&path, &bytes[..bytes.len() - 2]).expect("truncate");
    let err = store.read_job(JOB).expect_err("truncated");
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("truncated record at byte 8"), "{message}");
}

#[test]
fn results_are_kept_and_removing_a_job_leaves_its_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StorageDir::open(dir.path()).expect("open");
    assert_eq!(store.read_result(JOB).expect("none"), None);
    store
        .put_job(&JobStoreEntry {
            job: JOB.into(),
            name: "j".into(),
            payload: Vec::new(),
        })
        .expect("put");
    let result = JobResultEntry {
        job: JOB.into(),
        status: "FINISHED".into(),
        reason: None,
    };
    store.put_result(&result).expect("result");
    store.remove_job(JOB).expect("remove");
    assert!(store.jobs().expect("jobs").is_empty());
    assert_eq!(store.read_result(JOB).expect("read"), Some(result));
    assert!(store
        .put_result(&JobResultEntry {
            job: "../escape".into(),
            status: "FINISHED".into(),
            reason: None
        })
        .is_err());
}

#[test]
fn an_event_log_appends_compacts_and_replays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StorageDir::open(dir.path()).expect("open");
    let mut log = store.event_log(JOB, RecoveredJob::default()).expect("log");
    assert_eq!(log.bytes(), 8, "an empty log is its magic");
    log.set_limit(2_000);
    let mut all = Vec::new();
    for batch in 0..50u32 {
        let events: Vec<JobEvent> = (0..4).map(|i| finished(batch * 4 + i)).collect();
        // Every fifth batch resets what the previous one finished.
        log.append(&events).expect("append");
        all.extend(events);
        if batch % 5 == 4 {
            let reset = JobEvent::VerticesReset {
                vertices: (batch * 4..batch * 4 + 4).collect(),
            };
            log.append(std::slice::from_ref(&reset)).expect("reset");
            all.push(reset);
        }
        // Bounded: below the larger of the limit and twice the snapshot, plus one batch.
        let snapshot = log.state().snapshot().len() as u64 * 40;
        assert!(
            log.bytes() <= 2_000u64.max(2 * snapshot) + 200,
            "{}",
            log.bytes()
        );
    }
    let expected = RecoveredJob::replay(&all);
    assert_eq!(expected.finished.len(), 160);
    let read = store.read_events(JOB).expect("read");
    assert_eq!(RecoveredJob::replay(&read), expected);
    // Reopening continues from the replayed state, rewritten as its snapshot.
    drop(log);
    let log = store
        .event_log(JOB, RecoveredJob::replay(&read))
        .expect("reopen");
    assert_eq!(log.state(), &expected);
    assert_eq!(store.read_events(JOB).expect("again"), expected.snapshot());
}

#[test]
fn a_truncated_event_log_names_its_file_and_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StorageDir::open(dir.path()).expect("open");
    let mut log = store.event_log(JOB, RecoveredJob::default()).expect("log");
    log.append(&[finished(0), finished(1)]).expect("append");
    log.append(&[finished(2)]).expect("append");
    let path = store.event_log_path(JOB);
    let bytes = std::fs::read(&path).expect("bytes");
    std::fs::write(&path, &bytes[..bytes.len() - 3]).expect("truncate");
    let message = store.read_events(JOB).expect_err("truncated").to_string();
    assert!(
        message.starts_with(&path.display().to_string()),
        "{message}"
    );
    assert!(message.contains("truncated record at byte"), "{message}");
    // A flipped byte in the first batch is a checksum error at byte 8.
    let mut bad = bytes.clone();
    bad[20] ^= 1;
    std::fs::write(&path, &bad).expect("flip");
    let message = store.read_events(JOB).expect_err("flipped").to_string();
    assert!(
        message.contains("checksum mismatch in the record at byte 8"),
        "{message}"
    );
}
