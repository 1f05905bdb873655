//! [`LocalZooKeeper`]: one ZooKeeper server (Debian's `zookeeper` package, Apache ZooKeeper
//! 3.8) on a free loopback port with a data directory of its own, for tests and for
//! `conflux cluster --job-managers N` without `--zookeeper-quorum`. Dropping it kills the
//! server, reaps it and removes the directory.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Debian package that provides the server, for messages.
pub const ZOOKEEPER_PACKAGE: &str = "zookeeper";

/// Where Debian's package puts the server's jar (its manifest names its dependencies).
const DEBIAN_JAR: &str = "/usr/share/java/zookeeper.jar";

/// A running single ZooKeeper server.
#[derive(Debug)]
pub struct LocalZooKeeper {
    child: Option<Child>,
    address: SocketAddr,
    dir: PathBuf,
}

impl LocalZooKeeper {
    /// Why no server can be started here, or `None` when one can: the jar (`ZOOKEEPER_JAR`, or
    /// Debian's `/usr/share/java/zookeeper.jar`) and `java` must exist.
    pub fn unavailable() -> Option<String> {
        let jar = jar();
        if !jar.is_file() {
            return Some(format!(
                "no ZooKeeper server: {} is missing (install Debian's `{ZOOKEEPER_PACKAGE}` \
                 package, or set ZOOKEEPER_JAR)",
                jar.display()
            ));
        }
        if Command::new("java")
            .arg("-version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_or(true, |s| !s.success())
        {
            return Some(format!(
                "no ZooKeeper server: `java` does not run (Debian's `{ZOOKEEPER_PACKAGE}` \
                 package brings one)"
            ));
        }
        None
    }

    /// Starts a server under a new directory inside `parent` on a free loopback port with a
    /// tick of 250 ms (sessions of 0.5 to 60 s), and waits up to 60 s until it answers `ruok`.
    /// Its transaction log is not fsynced (`forceSync=no`): a throwaway server's sessions must
    /// not wait for a disk that a loaded machine's builds keep busy (a session's creation is a
    /// logged transaction).
    ///
    /// # Errors
    /// A message saying what is missing or why the server did not answer (its output's tail).
    pub fn start(parent: &Path) -> Result<LocalZooKeeper, String> {
        if let Some(why) = Self::unavailable() {
            return Err(why);
        }
        let dir = tempdir_in(parent)?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let config = format!(
            "tickTime=250\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
             admin.enableServer=false\n4lw.commands.whitelist=ruok\nminSessionTimeout=500\n\
             maxSessionTimeout=60000\nforceSync=no\n",
            dir.join("data").display()
        );
        let config_path = dir.join("zoo.cfg");
        std::fs::write(&config_path, config).map_err(|e| format!("writing zoo.cfg: {e}"))?;
        let log = std::fs::File::create(dir.join("server.log"))
            .map_err(|e| format!("creating server.log: {e}"))?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new("java")
            .args([
                "-Xmx128m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-cp",
            ])
            .arg(jar())
            .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| format!("starting java: {e}"))?;
        let mut server = LocalZooKeeper {
            child: Some(child),
            address,
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if ruok(address) {
                return Ok(server);
            }
            if let Some(child) = server.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!(
                        "the ZooKeeper server exited ({status}): {}",
                        server.log_tail()
                    ));
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!(
            "the ZooKeeper server did not answer within 60 s: {}",
            server.log_tail()
        ))
    }

    /// `127.0.0.1:port`, the quorum string of this server.
    pub fn quorum(&self) -> String {
        self.address.to_string()
    }

    /// The server's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
    }
}

impl Drop for LocalZooKeeper {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn jar() -> PathBuf {
    std::env::var_os("ZOOKEEPER_JAR").map_or_else(|| PathBuf::from(DEBIAN_JAR), PathBuf::from)
}

/// A new directory `zookeeper-<pid>-<n>` inside `parent`.
fn tempdir_in(parent: &Path) -> Result<PathBuf, String> {
    for n in 0..1000u32 {
        let dir = parent.join(format!("zookeeper-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("creating {}: {e}", dir.display())),
        }
    }
    Err(format!("no free directory name in {}", parent.display()))
}

/// Whether the server at `address` answers ZooKeeper's `ruok` with `imok`.
fn ruok(address: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&address, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"ruok").is_err() {
        return false;
    }
    let mut answer = [0u8; 4];
    s.read_exact(&mut answer).is_ok() && &answer == b"imok"
}
