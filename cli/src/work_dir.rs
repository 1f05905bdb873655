//! The temporary directories of Conflux processes, and their cleanup on every exit. One
//! implementation for `run` (gigabytes of blobs), `cluster` (partitions and blobs),
//! `jobmanager` (its blob store) and `taskmanager` (its partitions and blob cache):
//!
//! - a directory is `$TMPDIR/conflux-<kind>-<pid>-<n>`, named after its process, with a lock
//!   file beside it, `<dir>.lock`, created and locked (`flock`) before the directory is made
//!   and removed after it is gone;
//! - on SIGINT, SIGTERM or SIGHUP the process's directories are removed and it exits: at once
//!   with code 130 (`run`), or after its own graceful stop ([`OnSignal::Graceful`]: the
//!   cluster commands stop their JobManager, TaskManagers and children), which gets
//!   [`GRACE`] before the directories are removed and the process exits 130 anyway;
//! - a start sweeps what dead processes of the same kind left: a directory (or a lock file)
//!   named after a process that no longer runs, and whose lock nobody holds (a sweeper that
//!   holds it is removing it).
//!
//! **Invariant: a directory whose process runs, or whose lock is held, is never touched.**
//! (A process id in use again by an unrelated process keeps its directory until that process
//! ends too: the safe side.)

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use anyhow::Context;

/// Exit code after an interrupting signal (128 + SIGINT, as shells report Ctrl-C).
const INTERRUPTED_EXIT_CODE: i32 = 130;

/// Time a graceful stop gets after a signal before the directories are removed and the
/// process exits anyway: within 5 s of the signal in all.
pub(crate) const GRACE: Duration = Duration::from_secs(4);

/// The processes that make directories, and their names' prefixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `conflux run`: its blob server's and caches' storage.
    Run,
    /// `conflux cluster`: its JobManager's blobs and its TaskManagers' data.
    Cluster,
    /// `conflux jobmanager` without `--blob-dir`.
    JobManager,
    /// `conflux taskmanager` without `--data-dir`.
    TaskManager,
}

impl Kind {
    fn prefix(self) -> &'static str {
        match self {
            Kind::Run => "conflux-run-",
            Kind::Cluster => "conflux-cluster-",
            Kind::JobManager => "conflux-jobmanager-",
            Kind::TaskManager => "conflux-taskmanager-",
        }
    }
}

/// How the process answers SIGINT, SIGTERM and SIGHUP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnSignal {
    /// Remove the directories and exit 130 at once.
    Exit,
    /// Tell [`stop_requested`] and let the process stop itself (dropping its [`WorkDir`]s);
    /// after [`GRACE`], remove them and exit 130.
    Graceful,
}

/// Set by the signal handler: the process must not create more files (see
/// [`pause_if_stopping`]).
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Parks the calling thread for good once a signal is being handled in [`OnSignal::Exit`]
/// mode, so that `run` stops creating files (a blob upload, a restarted blob server's
/// directory) while the handler removes them; the handler then ends the process. Called by the
/// run's blob environment before it creates anything (its TaskManagers' caches are in memory).
pub(crate) fn pause_if_stopping() {
    while STOPPING.load(Ordering::Acquire) && mode() == OnSignal::Exit {
        std::thread::park();
    }
}

/// Directories of this process, removed by the signal handler.
fn live() -> &'static Mutex<Vec<PathBuf>> {
    static LIVE: OnceLock<Mutex<Vec<PathBuf>>> = OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(Vec::new()))
}

fn lock_live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    live().lock().unwrap_or_else(PoisonError::into_inner)
}

/// Resolves waiters of [`stop_requested`].
fn stop_signal() -> &'static tokio::sync::watch::Sender<bool> {
    static STOP: OnceLock<tokio::sync::watch::Sender<bool>> = OnceLock::new();
    STOP.get_or_init(|| tokio::sync::watch::Sender::new(false))
}

static MODE: OnceLock<OnSignal> = OnceLock::new();

fn mode() -> OnSignal {
    MODE.get().copied().unwrap_or(OnSignal::Exit)
}

/// Installs the handler of SIGINT, SIGTERM and SIGHUP (once per process; the first mode
/// asked for stays). A failure to install is logged, not fatal: the next start of the same
/// kind sweeps the directories instead.
pub(crate) fn install(on_signal: OnSignal) {
    let _ = MODE.set(on_signal);
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let installed = ctrlc::set_handler(|| {
            STOPPING.store(true, Ordering::Release);
            if mode() == OnSignal::Graceful {
                stop_signal().send_replace(true);
                std::thread::sleep(GRACE);
                tracing::warn!(grace = ?GRACE, "the process did not stop within its grace time: exiting");
            }
            for dir in lock_live().iter() {
                remove_dir(dir);
            }
            std::process::exit(INTERRUPTED_EXIT_CODE);
        });
        if let Err(error) = installed {
            tracing::warn!(%error, "no cleanup on signals");
        }
    });
}

/// Resolves once SIGINT, SIGTERM or SIGHUP arrived (in [`OnSignal::Graceful`] mode).
pub(crate) async fn stop_requested() {
    let mut stop = stop_signal().subscribe();
    let _ = stop.wait_for(|stopping| *stopping).await;
}

/// A process's temporary directory: removed on drop, on an interrupting signal, or by the next
/// start of the same kind if this process dies.
#[derive(Debug)]
pub(crate) struct WorkDir {
    path: PathBuf,
    lock_path: PathBuf,
    // Held (and so locked) as long as the directory exists.
    lock: Option<File>,
}

impl WorkDir {
    /// Removes the directories of dead processes of `kind`, installs the signal handler (in
    /// [`OnSignal::Exit`] mode unless [`install`] was called before), locks a new lock file
    /// and creates the directory beside it.
    ///
    /// # Errors
    /// When the lock file or the directory cannot be created or locked.
    pub(crate) fn create(kind: Kind) -> anyhow::Result<WorkDir> {
        let parent = std::env::temp_dir();
        sweep_dead(&parent, kind);
        install(OnSignal::Exit);
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "{}{}-{}",
            kind.prefix(),
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = parent.join(&name);
        let lock_path = parent.join(format!("{name}.lock"));
        // A lock file of this name can only be a dead process's whose pid this one reuses: it
        // is taken over.
        let lock = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .with_context(|| format!("creating {}", lock_path.display()))?;
        lock.try_lock()
            .with_context(|| format!("locking {}", lock_path.display()))?;
        if path.exists() {
            remove_dir(&path);
        }
        if let Err(e) = std::fs::create_dir(&path) {
            let _ = std::fs::remove_file(&lock_path);
            return Err(e).with_context(|| format!("creating {}", path.display()));
        }
        lock_live().push(path.clone());
        tracing::debug!(dir = %path.display(), "created the working directory");
        Ok(WorkDir {
            path,
            lock_path,
            lock: Some(lock),
        })
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        lock_live().retain(|d| d != &self.path);
        if let Err(error) = std::fs::remove_dir_all(&self.path) {
            if error.kind() != ErrorKind::NotFound {
                // Left with its lock file: the next start of this kind sweeps it.
                tracing::warn!(%error, dir = %self.path.display(), "could not remove the working directory");
                return;
            }
        }
        let _ = std::fs::remove_file(&self.lock_path);
        drop(self.lock.take());
    }
}

/// Removes a directory that may still be written to (the signal handler runs while servers
/// and caches work): its contents until none are left, for up to 2 s, then itself, then its
/// lock file. A directory that could not be emptied keeps its lock file and is swept by the
/// next start of its kind.
fn remove_dir(dir: &Path) {
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    loop {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => break,
            Err(e) if e.kind() == ErrorKind::NotFound => break,
            Err(_) => {}
        }
        if std::time::Instant::now() > deadline {
            tracing::warn!(dir = %dir.display(), "could not remove the working directory");
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = std::fs::remove_file(lock_path_of(dir));
}

fn lock_path_of(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    dir.with_file_name(name)
}

/// The process id in a name `<prefix><pid>-<n>`, `<prefix><pid>-<n>.lock` or (before the lock
/// files) `<prefix><pid>`.
fn pid_of(name: &str, kind: Kind) -> Option<u32> {
    let rest = name.strip_prefix(kind.prefix())?;
    let rest = rest.strip_suffix(".lock").unwrap_or(rest);
    let pid = match rest.split_once('-') {
        Some((pid, n)) => {
            n.parse::<u32>().ok()?;
            pid
        }
        None => rest,
    };
    pid.parse().ok()
}

/// Whether process `pid` runs (or exists and is not ours to signal).
fn is_running(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(e) => e != rustix::io::Errno::SRCH,
    }
}

/// Removes what dead processes of `kind` left in `parent`: directories and lock files named
/// after a process that no longer runs and whose lock nobody holds. Errors are logged and
/// skipped: a sweep must not stop a start.
pub(crate) fn sweep_dead(parent: &Path, kind: Kind) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Some(pid) = pid_of(&name, kind) else {
            continue;
        };
        if pid == std::process::id() || is_running(pid) {
            continue;
        }
        let path = entry.path();
        let dir = match name.strip_suffix(".lock") {
            Some(dir) => parent.join(dir),
            None => path.clone(),
        };
        let lock_path = lock_path_of(&dir);
        // Taken before anything is removed: another sweeper holding it is removing it.
        let lock = match File::open(&lock_path) {
            Ok(lock) => match lock.try_lock() {
                Ok(()) => Some(lock),
                Err(_) => continue,
            },
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(_) => continue,
        };
        if dir.exists() {
            tracing::info!(dir = %dir.display(), pid, "removing the directory of a dead process");
        }
        remove_dir(&dir);
        drop(lock);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_give_their_process() {
        assert_eq!(pid_of("conflux-run-123-0", Kind::Run), Some(123));
        assert_eq!(pid_of("conflux-run-123-4.lock", Kind::Run), Some(123));
        assert_eq!(pid_of("conflux-jobmanager-77", Kind::JobManager), Some(77));
        assert_eq!(pid_of("conflux-jobmanager-77", Kind::TaskManager), None);
        assert_eq!(pid_of("conflux-run-abcdef", Kind::Run), None);
        assert_eq!(pid_of("conflux-run-12-x", Kind::Run), None);
        assert!(is_running(std::process::id()));
    }
}
