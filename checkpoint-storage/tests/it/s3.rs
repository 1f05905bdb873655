//! Checkpoint storage on S3: `s3s-fs` started by the test on a free loopback port.
//!
//! `s3s-fs` is installed by `scripts/test.sh` (`cargo install s3s-fs@0.14.1 --features binary
//! --locked`). Without it this test fails, unless `CONFLUX_SKIP_S3=1`.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use conflux_checkpoint::sim::{run, SimConfig};
use conflux_checkpoint::{CheckpointError, CheckpointStorage, S3Config, StorageConfig};
use object_store::path::Path;
use tempfile::TempDir;

const ACCESS_KEY: &str = "conflux-test";
const SECRET_KEY: &str = "conflux-test-secret";
const BUCKET: &str = "checkpoints";

/// A running `s3s-fs`, killed on drop.
struct S3sFs {
    child: Child,
    port: u16,
    _root: TempDir,
}

impl Drop for S3sFs {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

fn find_s3s_fs() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join("s3s-fs"))
                .collect()
        })
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        candidates.push(PathBuf::from(home).join("bin/s3s-fs"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".cargo/bin/s3s-fs"));
    }
    candidates.into_iter().find(|p| p.is_file())
}

/// Starts `s3s-fs`, or returns `None` when it is missing and `CONFLUX_SKIP_S3=1`.
fn start_s3s_fs() -> Option<S3sFs> {
    let Some(binary) = find_s3s_fs() else {
        if std::env::var("CONFLUX_SKIP_S3").as_deref() == Ok("1") {
            eprintln!("s3s-fs not found; S3 test skipped because CONFLUX_SKIP_S3=1");
            return None;
        }
        panic!(
            "s3s-fs not found on PATH or in ~/.cargo/bin: the S3 test needs it. Install it with \
             `cargo install s3s-fs@0.14.1 --features binary --locked` (scripts/test.sh does), or \
             set CONFLUX_SKIP_S3=1 to skip it"
        );
    };
    let root = TempDir::new().unwrap();
    std::fs::create_dir(root.path().join(BUCKET)).unwrap();
    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(&binary)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
        .arg(root.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
    let mut server = S3sFs {
        child,
        port,
        _root: root,
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Some(server);
        }
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!("s3s-fs exited before accepting connections: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "s3s-fs did not accept connections on {addr} within 20 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn s3_config(port: u16) -> S3Config {
    let mut config = S3Config::new(BUCKET, ACCESS_KEY, SECRET_KEY);
    config.endpoint = Some(format!("http://127.0.0.1:{port}"));
    config.allow_http = true;
    config.prefix = Some("cluster-1".to_owned());
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_on_s3_restore_every_byte() {
    let Some(s3) = start_s3s_fs() else {
        return;
    };
    let storage = CheckpointStorage::s3(&s3_config(s3.port)).unwrap();
    // Create-if-absent, ranged reads, listing, idempotent deletes on the real protocol.
    let path = Path::from("probe/cp1-x-1");
    storage
        .create(&path, bytes::Bytes::from_static(b"0123456789"))
        .await
        .unwrap();
    let again = storage
        .create(&path, bytes::Bytes::from_static(b"x"))
        .await
        .unwrap_err();
    assert!(matches!(again, CheckpointError::Store { .. }), "{again}");
    assert_eq!(
        storage.read_range(&path, 2..5).await.unwrap().as_ref(),
        b"234"
    );
    assert_eq!(storage.list(None).await.unwrap().len(), 1);
    assert!(storage.delete(&path).await.is_ok());
    assert!(storage.delete(&path).await.is_ok());
    assert!(matches!(
        storage.read(&path).await.unwrap_err(),
        CheckpointError::Missing { .. }
    ));

    let config = SimConfig {
        subtasks: 2,
        checkpoints: 12,
        files_per_checkpoint: 40,
        failovers: 1,
        storage: StorageConfig::S3(s3_config(s3.port)),
        ..SimConfig::default()
    };
    let report = run(&config).await.unwrap();
    for r in [&report.merged, &report.unmerged] {
        assert_eq!(r.restore_failures, 0, "{:?}", r.first_failure);
        assert!(r.restored_files_checked > 0);
    }
    assert!(report.objects_ratio > 5.0, "{report:?}");
}
