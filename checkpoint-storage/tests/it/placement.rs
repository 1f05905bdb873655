//! Local-directory placement: several processes through the host lock; crashed holders.
//!
//! Processes are this test binary run again with `CONFLUX_PLACEMENT_CHILD` set: the test
//! `placement::child` then allocates, prints the disks, and holds its instances until its
//! standard input closes (or it is killed).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use conflux_checkpoint::{
    CheckpointError, InstanceName, LocalDirAllocator, LocalDirConfig, PlacementStrategy,
};

fn name(i: u32) -> InstanceName {
    InstanceName {
        job: "job".to_owned(),
        vertex: "v".to_owned(),
        subtask: i,
        operator: "op".to_owned(),
    }
}

fn disks(root: &std::path::Path, n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let d = root.join(format!("disk{i}"));
            std::fs::create_dir_all(&d).unwrap();
            d
        })
        .collect()
}

fn config(dirs: &[PathBuf], strategy: PlacementStrategy, lock: &std::path::Path) -> LocalDirConfig {
    let mut c = LocalDirConfig::new(dirs.to_vec(), strategy);
    c.lock_file = Some(lock.to_path_buf());
    // All test "disks" are on one device.
    c.dedupe_devices = false;
    c
}

/// The child side (a no-op in a normal test run).
#[test]
fn child() {
    let Ok(spec) = std::env::var("CONFLUX_PLACEMENT_CHILD") else {
        return;
    };
    // spec: strategy;instances;lock;dir,dir,...
    let parts: Vec<&str> = spec.split(';').collect();
    let strategy = PlacementStrategy::parse(parts[0]).unwrap();
    let instances: u32 = parts[1].parse().unwrap();
    let lock = PathBuf::from(parts[2]);
    let dirs: Vec<PathBuf> = parts[3].split(',').map(PathBuf::from).collect();
    let allocator = LocalDirAllocator::new(&config(&dirs, strategy, &lock)).unwrap();
    let held: Vec<_> = (0..instances)
        .map(|i| {
            allocator
                .allocate(&name(std::process::id() * 100 + i))
                .unwrap()
        })
        .collect();
    let line: Vec<String> = held.iter().map(|d| d.disk().to_string()).collect();
    println!("DISKS {}", line.join(" "));
    std::io::stdout().flush().unwrap();
    let mut rest = String::new();
    let _ = std::io::stdin().read_line(&mut rest);
    drop(held);
}

fn spawn(
    strategy: PlacementStrategy,
    instances: u32,
    lock: &std::path::Path,
    dirs: &[PathBuf],
) -> Child {
    let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "placement::child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(
            "CONFLUX_PLACEMENT_CHILD",
            format!(
                "{};{instances};{};{}",
                strategy.as_str(),
                lock.display(),
                dirs.join(",")
            ),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn read_disks(child: &mut Child) -> Vec<usize> {
    let stdout = child.stdout.as_mut().unwrap();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        // libtest prints "test placement::child ... " before the child's own output.
        if let Some((_, rest)) = line.split_once("DISKS ") {
            return rest.split(' ').map(|d| d.parse().unwrap()).collect();
        }
    }
    panic!("child printed no DISKS line");
}

fn run_processes(
    strategy: PlacementStrategy,
    processes: usize,
    instances: u32,
    n: usize,
) -> Vec<usize> {
    let root = tempfile::tempdir().unwrap();
    let dirs = disks(root.path(), n);
    let lock = root.path().join("host.lock");
    let mut children: Vec<Child> = (0..processes)
        .map(|_| spawn(strategy, instances, &lock, &dirs))
        .collect();
    let mut counts = vec![0; n];
    for c in &mut children {
        for d in read_disks(c) {
            counts[d] += 1;
        }
    }
    for mut c in children {
        drop(c.stdin.take());
        assert!(c.wait().unwrap().success());
    }
    counts
}

#[test]
fn host_round_robin_across_processes_spreads_evenly() {
    let counts = run_processes(PlacementStrategy::HostRoundRobin, 4, 5, 3);
    assert_eq!(counts.iter().sum::<usize>(), 20);
    let (max, min) = (counts.iter().max().unwrap(), counts.iter().min().unwrap());
    assert!(max - min <= 1, "{counts:?}");
}

#[test]
fn least_loaded_across_processes_spreads_evenly() {
    let counts = run_processes(PlacementStrategy::LeastLoaded, 3, 4, 4);
    assert_eq!(counts, vec![3, 3, 3, 3]);
}

/// A killed process's instances stop counting (the kernel drops its marker locks).
#[test]
fn crashed_holders_do_not_count() {
    let root = tempfile::tempdir().unwrap();
    let dirs = disks(root.path(), 3);
    let lock = root.path().join("host.lock");
    let mut doomed = spawn(PlacementStrategy::LeastLoaded, 6, &lock, &dirs);
    assert_eq!(read_disks(&mut doomed).len(), 6);
    let allocator =
        LocalDirAllocator::new(&config(&dirs, PlacementStrategy::LeastLoaded, &lock)).unwrap();
    assert_eq!(allocator.live_instances(), vec![2, 2, 2]);
    doomed.kill().unwrap();
    doomed.wait().unwrap();
    assert_eq!(
        allocator.live_instances(),
        vec![0, 0, 0],
        "dead markers are not live"
    );
    let held: Vec<_> = (0..3)
        .map(|i| allocator.allocate(&name(i)).unwrap())
        .collect();
    let mut got: Vec<usize> = held.iter().map(|d| d.disk()).collect();
    got.sort_unstable();
    assert_eq!(got, vec![0, 1, 2]);
    assert_eq!(allocator.live_instances(), vec![1, 1, 1]);
}

#[test]
fn round_robin_in_process_and_unique_directories() {
    let root = tempfile::tempdir().unwrap();
    let dirs = disks(root.path(), 3);
    let lock = root.path().join("l");
    let allocator =
        LocalDirAllocator::new(&config(&dirs, PlacementStrategy::RoundRobin, &lock)).unwrap();
    let held: Vec<_> = (0..9)
        .map(|_| allocator.allocate(&name(0)).unwrap())
        .collect();
    let mut counts = [0; 3];
    for d in &held {
        counts[d.disk()] += 1;
        assert!(d.path().join(".instance.lock").is_file());
    }
    assert_eq!(counts, [3, 3, 3]);
    let unique: std::collections::BTreeSet<_> =
        held.iter().map(|d| d.path().to_path_buf()).collect();
    assert_eq!(unique.len(), 9, "same identity, still unique directories");
    let first = held.into_iter().next().unwrap();
    let path = first.path().to_path_buf();
    first.remove().unwrap();
    assert!(!path.exists());
}

#[test]
fn weighted_follows_the_weights() {
    let root = tempfile::tempdir().unwrap();
    let dirs = disks(root.path(), 2);
    let mut c = config(&dirs, PlacementStrategy::Weighted, &root.path().join("l"));
    c.weights = Some(vec![1, 3]);
    c.seed = Some(7);
    let allocator = LocalDirAllocator::new(&c).unwrap();
    let mut counts = [0; 2];
    for i in 0..400 {
        let d = allocator.allocate(&name(i)).unwrap();
        counts[d.disk()] += 1;
    }
    assert!((60..140).contains(&counts[0]), "{counts:?}");
}

#[test]
fn same_device_counts_once_and_unusable_dirs_are_skipped() {
    let root = tempfile::tempdir().unwrap();
    let dirs = disks(root.path(), 3);
    let file = root.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let mut all = dirs.clone();
    all.push(file);
    all.push(root.path().join("missing"));
    let mut c = LocalDirConfig::new(all.clone(), PlacementStrategy::RoundRobin);
    c.lock_file = Some(root.path().join("l"));
    let deduped = LocalDirAllocator::new(&c).unwrap();
    assert_eq!(
        deduped.disks().len(),
        1,
        "three directories on one device count once"
    );
    c.dedupe_devices = false;
    let plain = LocalDirAllocator::new(&c).unwrap();
    assert_eq!(
        plain.disks().len(),
        3,
        "a file and a missing path are skipped"
    );
    c.min_free_bytes = u64::MAX;
    let err = LocalDirAllocator::new(&c).unwrap_err();
    assert!(
        matches!(err, CheckpointError::NoUsableDirectory(_)),
        "{err}"
    );
    assert!(err.to_string().contains("disk0"), "{err}");
}

#[test]
fn coordination_failure_falls_back_to_random() {
    let root = tempfile::tempdir().unwrap();
    let dirs = disks(root.path(), 2);
    for strategy in [
        PlacementStrategy::HostRoundRobin,
        PlacementStrategy::LeastLoaded,
    ] {
        let c = config(&dirs, strategy, &root.path().join("no/such/dir/lock"));
        let allocator = LocalDirAllocator::new(&c).unwrap();
        let d = allocator.allocate(&name(1)).unwrap();
        assert!(d.used_fallback());
        assert!(d.path().is_dir());
    }
    // A counter file written for another directory list is not trusted either.
    let lock = root.path().join("lock");
    std::fs::write(&lock, "17 00000000deadbeef\n").unwrap();
    let allocator =
        LocalDirAllocator::new(&config(&dirs, PlacementStrategy::HostRoundRobin, &lock)).unwrap();
    assert!(allocator.allocate(&name(2)).unwrap().used_fallback());
    // A damaged counter restarts at 0 instead.
    std::fs::write(&lock, "garbage").unwrap();
    assert!(!allocator.allocate(&name(3)).unwrap().used_fallback());
}
