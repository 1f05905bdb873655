//! The calling thread's CPU time, which tells a scheduler call's own work from the time it
//! waited for a core (on a loaded machine the wall time of a call includes every preemption).

use std::time::Duration;

/// CPU time the calling thread has used since it started (`CLOCK_THREAD_CPUTIME_ID`,
/// nanosecond resolution on Linux); `None` where the platform has no such clock.
pub(crate) fn thread_cpu_time() -> Option<Duration> {
    #[cfg(target_os = "linux")]
    {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        Some(Duration::new(
            u64::try_from(t.tv_sec).ok()?,
            u32::try_from(t.tv_nsec).ok()?,
        ))
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}
