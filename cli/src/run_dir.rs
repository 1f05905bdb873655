//! The temporary directory of one `conflux run` (`$TMPDIR/conflux-run-*`, up to gigabytes of
//! blobs), and its cleanup when the run does not end normally:
//!
//! - on SIGINT, SIGTERM or SIGHUP the directory is removed before the process exits (130);
//! - each directory holds a `lock` file locked (`flock`) for the life of its run, so a run
//!   killed outright (SIGKILL, a crash) is recognised by the next run, which can take the lock,
//!   and removes the directory.
//!
//! Invariant: a directory whose lock is held belongs to a live process and is never touched.

use std::fs::File;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

use anyhow::Context;

/// Name prefix of the run directories in the temporary directory.
const PREFIX: &str = "conflux-run-";

/// The lock file inside each run directory.
const LOCK_FILE: &str = "lock";

/// A lock file younger than this is left alone even when unlocked: its run may be between
/// creating the file and locking it.
const GRACE: Duration = Duration::from_secs(10);

/// Exit code after an interrupting signal (128 + SIGINT, as shells report Ctrl-C).
const INTERRUPTED_EXIT_CODE: i32 = 130;

/// Set by the signal handler: the run must not create more files (see [`pause_if_stopping`]).
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Parks the calling thread for good once a signal is being handled, so that the run stops
/// creating files (a blob upload, a restarted blob server) while the handler removes them; the
/// handler then ends the process. Called by the run's blob environment before it creates
/// anything.
pub(crate) fn pause_if_stopping() {
    while STOPPING.load(Ordering::Acquire) {
        std::thread::park();
    }
}

/// Directories of live runs of this process, removed by the signal handler.
fn live() -> &'static Mutex<Vec<PathBuf>> {
    static LIVE: OnceLock<Mutex<Vec<PathBuf>>> = OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(Vec::new()))
}

/// A run's temporary directory: removed on drop, on an interrupting signal, or by the next run
/// if this process dies.
pub(crate) struct RunDir {
    dir: Option<tempfile::TempDir>,
    // Held (and so locked) as long as the directory is in use.
    _lock: File,
}

impl RunDir {
    /// Removes the directories of dead runs, installs the signal handler (once), and creates a
    /// new locked directory.
    ///
    /// # Errors
    /// When the directory or its lock file cannot be created or locked.
    pub(crate) fn create() -> anyhow::Result<RunDir> {
        let parent = std::env::temp_dir();
        sweep_dead_runs(&parent);
        install_signal_handler();
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .tempdir_in(&parent)
            .context("creating the run directory")?;
        let lock = File::create(dir.path().join(LOCK_FILE)).context("creating the run's lock")?;
        lock.try_lock().context("locking the run directory")?;
        lock_live().push(dir.path().to_owned());
        tracing::debug!(dir = %dir.path().display(), "created the run directory");
        Ok(RunDir {
            dir: Some(dir),
            _lock: lock,
        })
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), |d| d.path())
    }
}

impl Drop for RunDir {
    /// Removes the directory as the signal handler does, its lock file last, and only then
    /// forgets it: a signal meanwhile removes it too, and a process killed meanwhile leaves a
    /// locked directory (or an empty one) that the next run sweeps.
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let path = dir.keep();
            remove_dir(&path);
            lock_live().retain(|d| *d != path);
        }
    }
}

fn lock_live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    live().lock().unwrap_or_else(PoisonError::into_inner)
}

/// On SIGINT, SIGTERM or SIGHUP: remove the live run directories and exit 130. Installed once;
/// a failure to install is logged, not fatal (the next run sweeps the directory instead).
fn install_signal_handler() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let installed = ctrlc::set_handler(|| {
            STOPPING.store(true, Ordering::Release);
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

/// Removes a run directory that may still be written to (the signal handler runs while the
/// blob server and caches work): its contents are removed until none are left, for up to 2 s,
/// and only then its lock file and itself, so that a directory that could not be emptied
/// keeps its lock file and is swept by the next run.
fn remove_dir(dir: &Path) {
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    loop {
        match remove_contents_but_lock(dir) {
            Ok(()) => {
                let _ = std::fs::remove_file(dir.join(LOCK_FILE));
                match std::fs::remove_dir(dir) {
                    Ok(()) => return,
                    Err(e) if e.kind() == ErrorKind::NotFound => return,
                    // A file was created meanwhile: put the lock file back and go again.
                    Err(_) => drop(File::create(dir.join(LOCK_FILE))),
                }
            }
            Err(e) if e.kind() == ErrorKind::NotFound => return,
            Err(_) => {}
        }
        if std::time::Instant::now() > deadline {
            tracing::warn!(dir = %dir.display(), "could not remove the run directory");
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Removes everything in `dir` but its lock file.
fn remove_contents_but_lock(dir: &Path) -> std::io::Result<()> {
    let mut result = Ok(());
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name() == LOCK_FILE {
            continue;
        }
        let path = entry.path();
        let removed = if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        match removed {
            Err(e) if e.kind() != ErrorKind::NotFound => result = Err(e),
            _ => {}
        }
    }
    result
}

/// Removes the `conflux-run-*` directories in `parent` whose lock no process holds, and empty
/// ones without a lock left by a removal that was cut short. Errors are logged and skipped: the
/// sweep must not stop a run.
pub(crate) fn sweep_dead_runs(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let dir = entry.path();
        if is_dead(&dir) {
            tracing::info!(dir = %dir.display(), "removing the directory of a dead run");
            remove_dir(&dir);
        } else if is_old_and_unlocked(&dir) {
            // Only if empty: a run that is making its directory has not locked it yet, and an
            // old directory without a lock that holds anything is not one of ours to judge.
            let _ = std::fs::remove_dir(&dir);
        }
    }
}

/// Whether `dir` has no lock file and is older than [`GRACE`] (a run's removal that was cut
/// between its lock file and the directory itself).
fn is_old_and_unlocked(dir: &Path) -> bool {
    if dir.join(LOCK_FILE).exists() {
        return false;
    }
    std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age >= GRACE)
}

/// Whether `dir` has a lock file, old enough, that can be locked: its process is gone. A
/// directory without a lock file (another program's, or one being created) is not dead.
fn is_dead(dir: &Path) -> bool {
    let Ok(lock) = File::open(dir.join(LOCK_FILE)) else {
        return false;
    };
    let young = lock
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_none_or(|age| age < GRACE);
    // The lock is released when the file is closed at the end of this function.
    !young && lock.try_lock().is_ok()
}
