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

/// Bytes as MiB, or `n/a` when unknown.
fn mib(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "n/a".to_owned(), conflux_common::format::mib)
}

/// A time in ms, or `n/a` when it was not measured.
fn ms(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.decimals$} ms"))
}

/// A count, or `n/a` when it was not counted.
fn count(value: Option<u64>) -> String {
    value.map_or_else(|| "n/a".to_owned(), group_digits)
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
        "wall: deploy {}, total {:.1} ms\n",
        ms(r.wall_ms.deploy, 1),
        r.wall_ms.total
    ));
    out.push_str(&format!(
        "tasks: {}, deployed {}, restarts {}\n",
        group_digits(r.tasks),
        group_digits(r.tasks_deployed),
        r.restarts
    ));
    out.push_str(&format!(
        "TaskManagers lost: {} ({} heartbeat timeouts), RPC timeouts: {}\n",
        r.task_managers_lost,
        count(r.heartbeat_timeouts),
        count(r.rpc_timeouts)
    ));
    out.push_str(&format!(
        "max heartbeat round trip: {}, max scheduler call: {:.2} ms ({} CPU)\n",
        ms(r.max_heartbeat_rtt_ms, 1),
        r.max_handler_stall_ms,
        ms(r.max_handler_cpu_ms, 2)
    ));
    out.push_str(&format!(
        "JobManager peak RSS: {}, blob fetches: {}\n",
        mib(r.jobmanager_peak_rss_bytes.or(r.peak_rss_bytes)),
        group_digits(r.blob_fetches)
    ));
    out.push_str(&format!(
        "TaskManagers: {}, {} of them received tasks\n",
        group_digits(r.task_manager_count),
        group_digits(r.task_managers.len() as u64)
    ));
    for tm in &r.task_managers {
        out.push_str(&format!(
            "  {}: {} slots, {} tasks, peak RSS {}, TDD bytes {}, blob fetches {}{}\n",
            tm.id,
            group_digits(u64::from(tm.slots)),
            group_digits(tm.tasks),
            mib(tm.peak_rss_bytes),
            count(tm.tdd_bytes_received),
            group_digits(tm.blob_fetches),
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
    // Shown only when speculation is on, so that runs without it print as before.
    let s = &r.speculative_attempts;
    if s.enabled {
        out.push_str(&format!(
            "speculative attempts: {} started, {} won, {} cancelled, {} failed\n",
            s.started, s.won, s.cancelled, s.failed
        ));
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
    render_adaptive(&r.adaptive, &mut out);
    out
}

/// What was decided at run time: a line per decided vertex, the skew, or why nothing was.
fn render_adaptive(a: &conflux_runtime::report::AdaptiveReport, out: &mut String) {
    if let Some(reason) = &a.undecided_at_estimate {
        out.push_str(&format!(
            "undecided vertices run at the estimate: {}\n",
            crate::failure::escape_controls(reason)
        ));
    }
    for (vertex, p) in a.decided_parallelism.iter().flatten() {
        out.push_str(&format!(
            "decided: {} -> parallelism {p}",
            crate::failure::escape_controls(vertex)
        ));
        if let Some(b) = a.bytes_per_task.as_ref().and_then(|b| b.get(vertex)) {
            out.push_str(&format!(
                ", bytes per task min {} / median {} / max {}",
                group_digits(b.min),
                group_digits(b.median),
                group_digits(b.max)
            ));
        }
        out.push('\n');
    }
    if let Some(skewed) = a.skewed_subpartitions.as_ref().filter(|s| s.count > 0) {
        out.push_str(&format!("skewed subpartitions: {}\n", skewed.count));
    }
}
