//! The durable store on S3: `s3s-fs` started by the test on a free loopback port.
//!
//! `s3s-fs` is installed by `scripts/test.sh` (`cargo install s3s-fs@0.14.1 --features binary
//! --locked`). Without it these tests fail, unless `CONFLUX_SKIP_S3=1`.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use conflux_blob::{
    BlobCache, BlobCacheConfig, BlobClient, BlobKind, BlobServer, BlobServerConfig, BlobStore,
    DurableStoreConfig, S3Config,
};
use tempfile::TempDir;
use tokio::runtime::Handle;

use crate::common::{content, job};

const ACCESS_KEY: &str = "conflux-test";
const SECRET_KEY: &str = "conflux-test-secret";
const BUCKET: &str = "blobs";

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
            "s3s-fs not found on PATH or in ~/.cargo/bin: the S3 tests need it. Install it with \
             `cargo install s3s-fs@0.14.1 --features binary --locked` (scripts/test.sh does), or \
             set CONFLUX_SKIP_S3=1 to skip these tests"
        );
    };
    let root = TempDir::new().unwrap();
    std::fs::create_dir(root.path().join(BUCKET)).unwrap();
    // A free port: bind port 0, read it, release it for s3s-fs.
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
    config.prefix = Some("cluster-1/blob".to_owned());
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_copies_live_in_s3() {
    let Some(s3) = start_s3s_fs() else {
        return;
    };
    let durable = DurableStoreConfig::S3(s3_config(s3.port));
    let store = BlobStore::s3(&s3_config(s3.port)).unwrap();
    let storage = TempDir::new().unwrap();
    let mut config = BlobServerConfig::new(storage.path());
    config.durable = durable.clone();
    let server = BlobServer::start(config).await.unwrap();
    let client = BlobClient::new(server.url(), None).unwrap();

    let small = Bytes::from(content(70, 300_000));
    // Above 16 MiB: uploaded in parts.
    let large = Bytes::from(content(71, 17 << 20));
    let small_key = client
        .put(BlobKind::Permanent, Some(job(1)), small.clone())
        .await
        .unwrap();
    let large_key = client
        .put(BlobKind::Permanent, Some(job(1)), large.clone())
        .await
        .unwrap();
    client
        .put(BlobKind::Permanent, Some(job(1)), small.clone())
        .await
        .unwrap();
    assert!(store.contains(&small_key).await.unwrap());
    assert_eq!(store.get(&large_key).await.unwrap(), large);
    let listed = store.list().await.unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    server.shutdown().await;

    // A server on an empty storage directory recovers everything from S3, counts included.
    let fresh = TempDir::new().unwrap();
    let mut config = BlobServerConfig::new(fresh.path());
    config.durable = durable.clone();
    let server = BlobServer::start(config).await.unwrap();
    let client = BlobClient::new(server.url(), None).unwrap();
    assert_eq!(client.get(&large_key).await.unwrap(), large);
    assert_eq!(server.references(&small_key), 2);

    // A TaskManager cache reads S3 directly, without asking the server.
    let cache_dir = TempDir::new().unwrap();
    let mut cache_config = BlobCacheConfig::new(cache_dir.path());
    cache_config.server_url = Some(server.url());
    cache_config.durable = durable;
    let cache = BlobCache::new(cache_config, Handle::current()).unwrap();
    let gets = server.stats().gets;
    assert_eq!(cache.get(&small_key).await.unwrap(), small);
    assert_eq!(cache.stats().durable_fetches, 1);
    assert_eq!(server.stats().gets, gets);

    // The last reference removes the S3 copy; job cleanup removes the rest.
    client.delete(&small_key).await.unwrap();
    assert!(store.contains(&small_key).await.unwrap());
    client.delete(&small_key).await.unwrap();
    assert!(!store.contains(&small_key).await.unwrap());
    client.cleanup_job(job(1)).await.unwrap();
    assert!(store.list().await.unwrap().is_empty());
    server.shutdown().await;
}
