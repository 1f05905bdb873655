//! The `s3s-fs` harness: an S3-compatible server over a temporary directory, one per test.
//!
//! `s3s-fs` is installed by `scripts/test.sh` (`cargo install s3s-fs@0.14.1 --features binary
//! --locked`). Without it [`S3sFs::start`] panics, unless `CONFLUX_SKIP_S3=1`, when it returns
//! `None` and the test skips itself.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use conflux_object_store::S3Config;
use tempfile::TempDir;

/// The access key id `s3s-fs` is started with.
pub const S3S_FS_ACCESS_KEY: &str = "conflux-test";
/// The secret access key `s3s-fs` is started with.
pub const S3S_FS_SECRET_KEY: &str = "conflux-test-secret";
/// How long `s3s-fs` may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A running `s3s-fs` on `127.0.0.1:<port>` serving one bucket from a temporary directory;
/// killed and reaped on drop (the directory goes with it).
#[derive(Debug)]
pub struct S3sFs {
    child: Child,
    port: u16,
    bucket: String,
    _root: TempDir,
}

impl Drop for S3sFs {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// `s3s-fs` on `PATH`, in `$CARGO_HOME/bin` or in `~/.cargo/bin`.
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

impl S3sFs {
    /// Starts `s3s-fs` with an empty bucket `bucket` and waits (at most 20 s) until it accepts
    /// connections. Returns `None` when `s3s-fs` is missing and `CONFLUX_SKIP_S3=1`.
    ///
    /// # Panics
    /// When `s3s-fs` is missing (and `CONFLUX_SKIP_S3` is not `1`), cannot be started, exits
    /// early or does not accept connections within 20 s; when no temporary directory or free
    /// port can be had. A test harness: failing loudly is its job.
    pub fn start(bucket: &str) -> Option<S3sFs> {
        let Some(binary) = find_s3s_fs() else {
            if std::env::var("CONFLUX_SKIP_S3").as_deref() == Ok("1") {
                eprintln!("s3s-fs not found; S3 test skipped because CONFLUX_SKIP_S3=1");
                return None;
            }
            panic!(
                "s3s-fs not found on PATH or in ~/.cargo/bin: the S3 tests need it. Install it \
                 with `cargo install s3s-fs@0.14.1 --features binary --locked` \
                 (scripts/test.sh does), or set CONFLUX_SKIP_S3=1 to skip these tests"
            );
        };
        let root = TempDir::new().expect("a temporary directory for s3s-fs");
        std::fs::create_dir(root.path().join(bucket)).expect("the bucket's directory");
        // A free port: bind port 0, read it, release it for s3s-fs.
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        let child = Command::new(&binary)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", S3S_FS_ACCESS_KEY])
            .args(["--secret-key", S3S_FS_SECRET_KEY])
            .arg(root.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let mut server = S3sFs {
            child,
            port,
            bucket: bucket.to_owned(),
            _root: root,
        };
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + START_TIMEOUT;
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

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its endpoint URL, `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The configuration reaching its bucket under `prefix` (plain HTTP allowed).
    pub fn config(&self, prefix: &str) -> S3Config {
        let mut config = S3Config::new(&*self.bucket, S3S_FS_ACCESS_KEY, S3S_FS_SECRET_KEY);
        config.endpoint = Some(self.endpoint());
        config.allow_http = true;
        config.prefix = Some(prefix.to_owned());
        config
    }
}
