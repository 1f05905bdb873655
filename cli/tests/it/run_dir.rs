//! `conflux run`'s temporary directory (`$TMPDIR/conflux-run-*`) does not outlive the run: removed
//! on SIGINT / SIGTERM, and the directory of a run that died (or whose removal was cut short) is
//! removed by the next run.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::support::repo;

fn run_dirs(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .expect("read tmp")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("conflux-run-"))
        })
        .collect()
}

#[test]
fn an_interrupted_run_removes_its_directory() {
    for signal in ["INT", "TERM"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut child = Command::new(env!("CARGO_BIN_EXE_conflux"))
            .args([
                "run",
                "fixtures/jobs/wordcount-10k-blocking.json",
                "--quiet",
                "--task-failure-rate",
                "0.2",
            ])
            .current_dir(repo())
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("runs conflux");
        let start = Instant::now();
        while run_dirs(tmp.path()).is_empty() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "no run directory"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // Let the server write into it.
        std::thread::sleep(Duration::from_millis(200));
        let killed = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        let status = child.wait().expect("wait");
        assert_eq!(status.code(), Some(130), "{signal}: {status:?}");
        assert_eq!(run_dirs(tmp.path()), Vec::<PathBuf>::new(), "{signal}");
    }
}

#[test]
fn the_next_run_removes_directories_of_dead_runs_only() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let old = SystemTime::now() - Duration::from_secs(3600);
    let make = |name: &str| {
        let dir = tmp.path().join(name);
        std::fs::create_dir_all(dir.join("server")).expect("mkdir");
        std::fs::write(dir.join("server/blob"), b"x").expect("blob");
        let lock = File::create(dir.join("lock")).expect("lock");
        lock.set_modified(old).expect("mtime");
        (dir, lock)
    };
    let (dead, dead_lock) = make("conflux-run-dead");
    drop(dead_lock);
    // A live run holds its lock: it is left alone.
    let (live, live_lock) = make("conflux-run-live");
    live_lock.lock().expect("lock");
    // Not a run directory of this version (no lock file): left alone.
    let other = tmp.path().join("conflux-run-other");
    std::fs::create_dir(&other).expect("mkdir");
    // An old one without a lock file: removed when empty (a removal cut short between the lock
    // file and the directory), left alone when it holds anything.
    let cut = tmp.path().join("conflux-run-cut");
    std::fs::create_dir(&cut).expect("mkdir");
    File::open(&cut)
        .expect("open")
        .set_modified(old)
        .expect("mtime");
    let foreign = tmp.path().join("conflux-run-foreign");
    std::fs::create_dir(&foreign).expect("mkdir");
    std::fs::write(foreign.join("file"), b"x").expect("file");
    File::open(&foreign)
        .expect("open")
        .set_modified(old)
        .expect("mtime");

    let out = Command::new(env!("CARGO_BIN_EXE_conflux"))
        .args(["run", "fixtures/jobs/small/two-data-sets.json", "--quiet"])
        .current_dir(repo())
        .env("TMPDIR", tmp.path())
        .output()
        .expect("runs conflux");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dead.exists());
    assert!(live.join("server/blob").exists());
    assert!(other.exists());
    assert!(!cut.exists());
    let mut left = run_dirs(tmp.path());
    left.sort();
    assert_eq!(left, vec![foreign, live, other]);
}
