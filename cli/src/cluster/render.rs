//! The cluster report as text or JSON.

use conflux_runtime::JobReport;

use crate::inspect::group_digits;
use crate::{output, Failure, Format};

pub(crate) fn print_report(report: &JobReport, format: Format) -> Result<(), Failure> {
    match format {
        Format::Json => output::print_json(report),
        Format::Text => output::print(&render(report)),
    }
}

fn mib(bytes: u64) -> String {
    conflux_common::format::mib(bytes)
}

fn render(r: &JobReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "job {} ({})\n",
        r.job_id,
        crate::failure::escape_controls(&r.job)
    ));
    out.push_str(&format!("status: {}", r.status));
    if let Some(reason) = &r.failure_reason {
        out.push_str(&format!(" ({})", crate::failure::escape_controls(reason)));
    }
    out.push('\n');
    out.push_str(&format!(
        "wall: deploy {:.1} ms, total {:.1} ms\n",
        r.wall_ms.deploy, r.wall_ms.total
    ));
    out.push_str(&format!(
        "tasks: {}, deployed {}, restarts {}\n",
        group_digits(r.tasks),
        group_digits(r.tasks_deployed),
        r.restarts
    ));
    out.push_str(&format!(
        "TaskManagers lost: {} ({} heartbeat timeouts), RPC timeouts: {}\n",
        r.task_managers_lost, r.heartbeat_timeouts, r.rpc_timeouts
    ));
    out.push_str(&format!(
        "max heartbeat round trip: {:.1} ms, max scheduler call: {:.2} ms ({:.2} ms CPU)\n",
        r.max_heartbeat_rtt_ms, r.max_handler_stall_ms, r.max_handler_cpu_ms
    ));
    out.push_str(&format!(
        "JobManager peak RSS: {}, blob fetches: {}\n",
        mib(r.jobmanager_peak_rss_bytes),
        r.blob_fetches
    ));
    for tm in &r.task_managers {
        out.push_str(&format!(
            "  {}: {} slots, {} tasks, peak RSS {}, TDD bytes {}, blob fetches {}{}\n",
            tm.id,
            tm.slots,
            group_digits(tm.tasks),
            mib(tm.peak_rss_bytes),
            group_digits(tm.tdd_bytes_received),
            tm.blob_fetches,
            if tm.lost { " (lost)" } else { "" }
        ));
    }
    if let Some(k) = &r.killed_task_manager {
        out.push_str(&format!(
            "killed: {} (pid {}, {} tasks) after {} ms\n",
            k.id, k.pid, k.tasks, k.after_ms
        ));
    }
    if let Some(note) = &r.kill_skipped {
        out.push_str(&format!("kill: {note}\n"));
    }
    if let Some(d) = &r.data {
        out.push_str(&format!(
            "data: {} words, shuffle {} bytes in {:.1} ms ({:.1} MB/s), peak buffered {} of {} bytes\n",
            group_digits(d.words),
            group_digits(d.shuffle_bytes),
            d.shuffle_ms,
            d.shuffle_mb_per_s,
            group_digits(d.peak_buffered_bytes),
            group_digits(d.buffered_bytes_bound)
        ));
        let reruns: Vec<String> = d.reruns.iter().map(|(v, n)| format!("{v} {n}")).collect();
        out.push_str(&format!("re-run tasks: {}\n", reruns.join(", ")));
        match (d.output_verified, &d.first_difference) {
            (Some(true), _) => out.push_str("output verified\n"),
            (Some(false), Some(diff)) => {
                out.push_str(&format!(
                    "output NOT verified: {}\n",
                    crate::failure::escape_controls(diff)
                ));
            }
            (Some(false), None) => out.push_str("output NOT verified\n"),
            (None, _) => {}
        }
    }
    if let Some(a) = &r.adaptive {
        render_adaptive(a, &mut out);
    }
    out
}

/// What was decided at run time: a line per decided vertex, the skew, or why nothing was.
fn render_adaptive(a: &conflux_runtime::report::AdaptiveJobReport, out: &mut String) {
    if let Some(reason) = &a.undecided_at_estimate {
        out.push_str(&format!(
            "undecided vertices run at the estimate: {}\n",
            crate::failure::escape_controls(reason)
        ));
    }
    for (vertex, p) in &a.decided_parallelism {
        out.push_str(&format!(
            "decided: {} -> parallelism {p}",
            crate::failure::escape_controls(vertex)
        ));
        if let Some(b) = a.bytes_per_task.get(vertex) {
            out.push_str(&format!(
                ", bytes per task min {} / median {} / max {}",
                group_digits(b.min),
                group_digits(b.median),
                group_digits(b.max)
            ));
        }
        out.push('\n');
    }
    if a.skewed_subpartitions.count > 0 {
        out.push_str(&format!(
            "skewed subpartitions: {}\n",
            a.skewed_subpartitions.count
        ));
    }
}
