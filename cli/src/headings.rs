//! The headings flags are grouped under in every command's `--help`, one list so that each
//! group reads the same in every command.

/// How the job graph is read: parallelism overrides.
pub(crate) const JOB: &str = "Job graph";
/// The cluster a job runs on: TaskManagers, slots, task durations, seeds, connections.
pub(crate) const CLUSTER: &str = "Cluster";
/// The scheduler: restarts, failover, slot spreading, work budget, descriptor offload.
pub(crate) const SCHEDULING: &str = "Scheduling";
/// The restart strategy: whether and when failed tasks restart (Flink's `restart-strategy.*`).
pub(crate) const RESTART: &str = "Restart strategy";
/// What a JobManager admits and how long it keeps ended jobs.
pub(crate) const JOBS: &str = "Job admission and history";
/// Injected faults.
pub(crate) const FAULTS: &str = "Faults";
/// Flink's adaptive batch scheduler and the bytes synthetic tasks write.
pub(crate) const ADAPTIVE: &str = "Adaptive batch";
/// Speculative execution and slow TaskManagers.
pub(crate) const SPECULATIVE: &str = "Speculative execution";
/// Heartbeats and RPC between JobManager and TaskManagers.
pub(crate) const HEARTBEATS: &str = "Heartbeats and RPC";
/// What tasks that move data do: sinks' output, credit, quotas.
pub(crate) const DATA: &str = "Data plane";
/// High availability: ZooKeeper, leader election, the job store.
pub(crate) const HIGH_AVAILABILITY: &str = "High availability";
/// A server's address, limits and timeouts.
pub(crate) const SERVER: &str = "Server";
/// Storage: directories, durable stores, buckets.
pub(crate) const STORAGE: &str = "Storage";
/// Plan edits.
pub(crate) const EDITS: &str = "Edits";
/// The synthetic checkpointing job and its storage.
pub(crate) const CHECKPOINTS: &str = "Checkpoints";
/// What is printed and where.
pub(crate) const OUTPUT: &str = "Output";
/// Which shuffle descriptor groups are offloaded to the blob server.
pub(crate) const DESCRIPTORS: &str = "Deployment descriptors";
/// Questions a planning command answers: which vertex, which renames are meant.
pub(crate) const ANALYSIS: &str = "Analysis";
/// How instances are placed on directories.
pub(crate) const PLACEMENT: &str = "Placement";
/// FLIP-306 file merging and its space control.
pub(crate) const MERGING: &str = "File merging";
/// Where settings come from: `--config`, `-D`, and the shared secret.
pub(crate) const CONFIG: &str = "Configuration";
