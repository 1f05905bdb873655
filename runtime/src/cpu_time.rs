//! The calling thread's CPU time, which tells a scheduler call's own work from the time it
//! waited for a core (on a machine shared with TaskManagers, the wall time of a call includes
//! every preemption).

use std::time::Duration;

/// CPU time the calling thread has used since it started (`CLOCK_THREAD_CPUTIME_ID`),
/// nanosecond resolution on Linux.
pub(crate) fn thread_cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}
