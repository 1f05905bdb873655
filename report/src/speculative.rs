//! Speculative execution's figures.

use serde::{Deserialize, Serialize};

/// What speculative execution did in a job (Flink reports the winners as
/// `numEffectiveSpeculativeExecutions`); all zero when it is off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpeculativeAttemptsReport {
    /// Whether it was on for the job (`--speculative`, batch jobs only).
    pub enabled: bool,
    /// Speculative attempts deployed.
    pub started: u64,
    /// Vertices finished by a speculative attempt (it won its race, or carried on after the
    /// original failed).
    pub won: u64,
    /// Speculative attempts cancelled: another attempt of their vertex finished first, a
    /// failover restarted their vertex, or the job ended.
    pub cancelled: u64,
    /// Speculative attempts that failed (their TaskManager lost included).
    pub failed: u64,
}
