//! Thread priorities of the JobManager: its job loop (the scheduler's thread) runs at the
//! process's priority, its I/O threads a few nice levels below, so that a burst of network work
//! (decoding 100,000 task updates, encoding deployments) does not keep the scheduler waiting for
//! a core. Lowering a priority needs no privilege; raising one would.

/// Nice levels the JobManager's I/O threads run below its job loop.
pub const JOBMANAGER_IO_NICE_STEPS: i32 = 5;

/// Lowers the calling thread's priority by `steps` nice levels (Linux keeps a nice value per
/// thread; elsewhere this lowers the whole process's). Capped at nice 19.
///
/// # Errors
/// The operating system's error when the priority cannot be read or set.
pub fn lower_current_thread_priority(steps: i32) -> std::io::Result<()> {
    // `None` is the calling thread on Linux (setpriority(2), "a per-thread attribute").
    let nice = rustix::process::getpriority_process(None)?;
    rustix::process::setpriority_process(None, nice.saturating_add(steps).min(19))?;
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn lowers_only_the_calling_thread() {
        let before = rustix::process::getpriority_process(None).expect("nice");
        let lowered = std::thread::spawn(|| {
            lower_current_thread_priority(3).expect("lowers");
            rustix::process::getpriority_process(None).expect("nice")
        })
        .join()
        .expect("thread");
        assert_eq!(lowered, (before + 3).min(19));
        assert_eq!(
            rustix::process::getpriority_process(None).expect("nice"),
            before
        );
    }
}
