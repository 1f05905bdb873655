//! The process's heartbeat thread: a thread of its own with a single-threaded async runtime,
//! on which every heartbeat of the process is sent, read and answered (the JobManager's
//! heartbeat rounds and heartbeat connections, each TaskManager's heartbeat connection).
//!
//! Deployment work keeps the other threads busy: the JobManager's job loop and I/O threads
//! (encoding thousands of task frames, decoding their updates), a TaskManager's runtime
//! (decoding descriptors, starting tasks). A heartbeat that waits for one of those threads comes
//! back hundreds of milliseconds late; a thread that sleeps between heartbeats is woken and
//! scheduled at once. Its connections are registered with its own reactor, so no busy thread
//! has to poll for their readiness either.
//!
//! The thread takes the priority of the thread that starts it: a process that lowers the
//! priority of its work threads (`conflux taskmanager` under `conflux cluster`) starts it first
//! ([`start_heartbeat_thread`]), so that heartbeats keep the process's priority.

use std::sync::Mutex;

use tokio::runtime::Handle;

/// The heartbeat runtime's handle, once the thread is started (it runs until the process exits).
static HEARTBEAT_RUNTIME: Mutex<Option<Handle>> = Mutex::new(None);

/// The heartbeat thread's runtime, started on first use by the calling thread (at its
/// priority).
///
/// # Errors
/// The operating system's error when the thread or its runtime cannot be made.
pub(crate) fn heartbeat_runtime() -> std::io::Result<Handle> {
    let mut runtime = HEARTBEAT_RUNTIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(handle) = runtime.as_ref() {
        return Ok(handle.clone());
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let handle = rt.handle().clone();
    std::thread::Builder::new()
        .name("conflux-heartbeat".into())
        // Runs the spawned heartbeat tasks for as long as the process lives.
        .spawn(move || rt.block_on(std::future::pending::<()>()))?;
    *runtime = Some(handle.clone());
    Ok(handle)
}

/// Starts the process's heartbeat thread now, at the calling thread's priority, if it is not
/// running yet. A process that lowers the priority of its other threads calls this first.
///
/// # Errors
/// The operating system's error when the thread or its runtime cannot be made.
pub fn start_heartbeat_thread() -> std::io::Result<()> {
    heartbeat_runtime().map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One thread for the process, whoever asks: tasks spawned through either handle run on it.
    #[test]
    fn one_thread_runs_every_heartbeat_task() {
        let first = heartbeat_runtime().expect("starts");
        let second = heartbeat_runtime().expect("running");
        let name = |h: &Handle| {
            let (tx, rx) = std::sync::mpsc::channel();
            h.spawn(async move {
                let _ = tx.send(std::thread::current().name().map(str::to_owned));
            });
            rx.recv_timeout(std::time::Duration::from_secs(10))
                .expect("the task ran")
        };
        assert_eq!(name(&first).as_deref(), Some("conflux-heartbeat"));
        assert_eq!(name(&second).as_deref(), Some("conflux-heartbeat"));
    }
}
