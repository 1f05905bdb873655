//! `conflux-report`: the one report of a job run, printed by `conflux run` (a simulated
//! cluster), `conflux cluster` and `conflux submit` (real processes).
//!
//! Every report has every key of [`JobReport`], whichever command wrote it: a key that does not
//! apply to a run, or a figure that was not measured, is `null`, never left out and never `0`
//! (an idle TaskManager's peak RSS, a heartbeat round trip never measured). So a tool reads one
//! schema, and a report's keys are the same for the same job whichever command ran it. Times
//! are milliseconds rounded to 0.001 ms ([`round`]).
//!
//! The crate holds the types and their JSON form only (serde, nothing else), so that the
//! simulator, the runtime, the CLI and any client share them without depending on one another.
//! What fills them lives with what measures: the simulator and the runtime.

mod adaptive;
mod data;
mod deployment;
mod job;
pub mod round;
mod speculative;
mod task_managers;

pub use adaptive::{
    AdaptiveReport, BytesPerTask, SkewSplit, SkewedSubpartition, SkewedSubpartitions, SKEWED_LISTED,
};
pub use data::DataReport;
pub use deployment::{BlobServerReport, DescriptorsReport, FaultsInjected};
pub use job::{JobReport, WallMs};
pub use speculative::SpeculativeAttemptsReport;
pub use task_managers::{KilledTaskManager, TaskManagerReport};

/// The report as JSON text on one line.
///
/// # Errors
/// Never for reports of finite numbers; serde_json's message otherwise (NaN and infinities
/// are written as `null` by serde_json, so in practice never).
pub fn to_json(report: &JobReport) -> Result<String, String> {
    serde_json::to_string(report).map_err(|e| e.to_string())
}

/// The report as indented JSON text.
///
/// # Errors
/// As [`to_json`].
pub fn to_json_pretty(report: &JobReport) -> Result<String, String> {
    serde_json::to_string_pretty(report).map_err(|e| e.to_string())
}

/// Reads a report that [`to_json`] wrote.
///
/// # Errors
/// The parser's message when the text is not a report.
pub fn from_json(text: &str) -> Result<JobReport, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key is written, `null` where it does not apply, and read back.
    #[test]
    fn every_key_is_written_and_read_back() {
        let report = JobReport {
            job_id: "00".repeat(16),
            status: "FINISHED".into(),
            wall_ms: WallMs {
                total: 303.136_852_000_000_03,
                ..WallMs::default()
            },
            max_heartbeat_rtt_ms: Some(0.123_456),
            ..JobReport::default()
        };
        let text = to_json(&report).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["wall_ms"]["total"], serde_json::json!(303.137));
        assert_eq!(value["wall_ms"]["parse"], serde_json::Value::Null);
        assert_eq!(value["max_heartbeat_rtt_ms"], serde_json::json!(0.123));
        for key in [
            "tasks_recovered",
            "recovery_replay_ms",
            "leader_changes",
            "recovery_ms",
            "heartbeat_timeouts",
            "data",
            "decided_parallelism",
            "undecided_at_estimate",
            "blob_server",
        ] {
            assert_eq!(value.get(key), Some(&serde_json::Value::Null), "{key}");
        }
        let back = from_json(&text).unwrap();
        assert_eq!(back.wall_ms.total, 303.137);
        assert_eq!(back.adaptive, AdaptiveReport::default());
        assert_eq!(back.job_id, report.job_id);
    }
}
