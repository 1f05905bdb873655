//! THE table of configuration keys: one line per key (name, type, default, doc, the commands that
//! take it, the flag it sets). Flink 1.20's key where Flink has one, `conflux.*` otherwise.
//!
//! Adding a key is one line here (and its flag on the commands listed; the CLI's tests check that
//! every listed command has the flag). Several keys may set one flag (Flink's restart strategies
//! name their delay three ways); giving two of them different values is an error.

use crate::value::ValueType;

/// A command that reads the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Command {
    /// `conflux jobmanager`.
    JobManager,
    /// `conflux taskmanager`.
    TaskManager,
    /// `conflux cluster` (a JobManager in the process and TaskManager processes).
    Cluster,
    /// `conflux run` (a simulated cluster).
    Run,
    /// `conflux submit`.
    Submit,
}

impl Command {
    /// Every command.
    pub const ALL: [Command; 5] = [
        Command::JobManager,
        Command::TaskManager,
        Command::Cluster,
        Command::Run,
        Command::Submit,
    ];

    /// The subcommand's name.
    pub fn name(self) -> &'static str {
        match self {
            Command::JobManager => "jobmanager",
            Command::TaskManager => "taskmanager",
            Command::Cluster => "cluster",
            Command::Run => "run",
            Command::Submit => "submit",
        }
    }

    /// The command named `name`.
    pub fn from_name(name: &str) -> Option<Command> {
        Command::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// One configuration key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    /// The key (`rest.port`).
    pub name: &'static str,
    /// Its type.
    pub ty: ValueType,
    /// Its default as written in a file (empty: none, or the flag's default, which may differ
    /// by command).
    pub default: &'static str,
    /// What it does.
    pub doc: &'static str,
    /// The commands that take it.
    pub commands: &'static [Command],
    /// The long flag (without `--`) it sets, in the flag's unit (ms, bytes); `None` for keys
    /// the CLI reads itself (`jobmanager.rpc.address` and `.port` make `--address` or
    /// `--jobmanager`).
    pub flag: Option<&'static str>,
}

impl Key {
    /// The environment variable that sets it: `CONFLUX_` and the key without a `conflux.`
    /// prefix, upper case, `.` and `-` as `_` (`rest.port`: `CONFLUX_REST_PORT`,
    /// `conflux.token`: `CONFLUX_TOKEN`).
    pub fn env_var(&self) -> String {
        let bare = self.name.strip_prefix("conflux.").unwrap_or(self.name);
        let mut var = String::from("CONFLUX_");
        var.extend(bare.chars().map(|c| match c {
            '.' | '-' => '_',
            c => c.to_ascii_uppercase(),
        }));
        var
    }

    /// Whether `command` takes it.
    pub fn taken_by(&self, command: Command) -> bool {
        self.commands.contains(&command)
    }
}

use Command::{Cluster as C, JobManager as J, Run as R, Submit as S, TaskManager as T};
use ValueType::{Bool, Duration, Float, Int, MemorySize, Seconds, Secret, Text};

const fn key(
    name: &'static str,
    ty: ValueType,
    default: &'static str,
    commands: &'static [Command],
    flag: &'static str,
    doc: &'static str,
) -> Key {
    Key {
        name,
        ty,
        default,
        doc,
        commands,
        flag: if flag.is_empty() { None } else { Some(flag) },
    }
}

/// Every key, Flink's first.
#[rustfmt::skip]
pub static KEYS: &[Key] = &[
    // Where the JobManager is.
    key("jobmanager.rpc.address", Text, "127.0.0.1", &[J, T, S], "", "Host of the JobManager's RPC: where `jobmanager` listens (an IP), where `taskmanager` and `submit` connect"),
    key("jobmanager.rpc.port", Int, "6123", &[J, T, S], "", "Port of the JobManager's RPC"),
    key("rest.address", Text, "", &[J], "rest-address", "Host or IP the REST API binds (default: the RPC host)"),
    key("rest.port", Int, "8081", &[J], "rest-port", "Port of the REST API; 0 picks a free one"),
    key("blob.storage.directory", Text, "", &[J], "blob-dir", "The blob server's storage directory (default: a temporary one)"),
    key("high-availability.storageDir", Text, "", &[J], "ha-storage-dir", "Where submitted jobs, their results and event logs are kept; a JobManager started on it recovers unended jobs (under high availability: in the cluster id's subdirectory)"),
    key("execution.batch.job-recovery.previous-worker.recovery.timeout", Duration, "30 s", &[J], "previous-worker-recovery-timeout-ms", "How long a recovered job waits for the TaskManagers that held its finished partitions"),
    // High availability on ZooKeeper.
    key("high-availability.type", Text, "none", &[J, T, S], "high-availability", "`none`, or `zookeeper`: the leader is elected, published and found in ZooKeeper"),
    key("high-availability.zookeeper.quorum", Text, "", &[J, T, C, S], "zookeeper-quorum", "ZooKeeper servers, `host:port[,host:port...]`"),
    key("high-availability.zookeeper.path.root", Text, "/flink", &[J, T, C, S], "zookeeper-path-root", "The root node of every cluster's nodes in ZooKeeper"),
    key("high-availability.cluster-id", Text, "", &[J, T, C, S], "cluster-id", "JobManagers of one cluster id compete for one leadership and share one job store"),
    key("high-availability.zookeeper.client.session-timeout", Duration, "", &[J, T, C, S], "zookeeper-session-timeout-ms", "ZooKeeper session timeout; a leader stops acting after 2/3 of it without ZooKeeper"),
    // TaskManagers.
    key("taskmanager.numberOfTaskSlots", Int, "", &[T, C, R], "slots", "Slots per TaskManager"),
    key("taskmanager.host", Text, "127.0.0.1", &[T], "advertised-address", "The IP a TaskManager's data server binds and advertises"),
    key("metrics.reporter.prom.port", Int, "0", &[T], "metrics-port", "Port of a TaskManager's Prometheus endpoint; 0: none"),
    key("taskmanager.network.partition-request-timeout", Duration, "10 s", &[T, C], "partition-request-timeout-ms", "How long one partition request waits for the producer's data server"),
    key("taskmanager.network.request-backoff.initial", Duration, "100 ms", &[T, C], "partition-request-backoff-initial-ms", "The first wait before a failed partition request is tried again; 0: no retry"),
    key("taskmanager.network.request-backoff.max", Duration, "10 s", &[T, C], "partition-request-backoff-max-ms", "The longest wait between two tries of a partition request"),
    // Heartbeats and RPC.
    key("heartbeat.interval", Duration, "10 s", &[J, C], "heartbeat-interval-ms", "Heartbeat interval"),
    key("heartbeat.timeout", Duration, "50 s", &[J, T, C], "heartbeat-timeout-ms", "A peer silent for this long is lost"),
    key("pekko.ask.timeout", Duration, "10 s", &[J, C], "rpc-timeout-ms", "A task submission unanswered for this long fails the task"),
    // Scheduling.
    key("cluster.evenly-spread-out-slots", Bool, "false", &[J, C], "evenly-spread-out-slots", "Spread slots over the TaskManagers"),
    key("slot.request.timeout", Duration, "5 min", &[J, C, R], "slot-request-timeout-ms", "A slot request unservable for this long fails its tasks (NoResourceAvailableException)"),
    key("jobmanager.execution.failover-strategy", Text, "region", &[R], "failover", "`region` or `full`"),
    key("jobstore.max-capacity", Int, "1000", &[J, C], "job-history-size", "Ended jobs kept"),
    key("jobstore.expiration-time", Seconds, "3600", &[J, C], "job-history-ttl-ms", "An ended job is forgotten this long after its end, seconds"),
    // Restart strategies (Flink's `restart-strategy.*`).
    key("restart-strategy.type", Text, "", &[J, C, R], "restart-strategy", "`none`, `fixed-delay`, `failure-rate` or `exponential-delay` (and Flink's other spellings)"),
    key("restart-strategy.fixed-delay.attempts", Int, "1", &[J, C, R], "restart-attempts", "Fixed-delay: restarts allowed"),
    key("restart-strategy.fixed-delay.delay", Duration, "1 s", &[J, C, R], "restart-delay-ms", "Fixed-delay: delay before a restart"),
    key("restart-strategy.failure-rate.delay", Duration, "1 s", &[J, C, R], "restart-delay-ms", "Failure-rate: delay before a restart"),
    key("restart-strategy.failure-rate.max-failures-per-interval", Int, "1", &[J, C, R], "restart-max-failures-per-interval", "Failure-rate: failures allowed within the interval"),
    key("restart-strategy.failure-rate.failure-rate-interval", Duration, "1 min", &[J, C, R], "restart-failure-rate-interval-ms", "Failure-rate: the interval"),
    key("restart-strategy.exponential-delay.initial-backoff", Duration, "1 s", &[J, C, R], "restart-delay-ms", "Exponential-delay: the first delay"),
    key("restart-strategy.exponential-delay.max-backoff", Duration, "1 min", &[J, C, R], "restart-max-delay-ms", "Exponential-delay: the largest delay"),
    key("restart-strategy.exponential-delay.backoff-multiplier", Float, "1.5", &[J, C, R], "restart-backoff-multiplier", "Exponential-delay: growth of the delay per restart"),
    key("restart-strategy.exponential-delay.reset-backoff-threshold", Duration, "1 h", &[J, C, R], "restart-reset-backoff-threshold-ms", "Exponential-delay: after this long without failure delays start over"),
    key("restart-strategy.exponential-delay.jitter-factor", Float, "0.1", &[J, C, R], "restart-jitter-factor", "Exponential-delay: share of a delay it moves either way"),
    key("restart-strategy.exponential-delay.attempts-before-reset-backoff", Int, "2147483647", &[J, C, R], "restart-attempts", "Exponential-delay: restarts allowed"),
    // Adaptive batch scheduling.
    key("execution.batch.adaptive.auto-parallelism.min-parallelism", Int, "1", &[C, R, S], "min-parallelism", "Lower bound of a decided parallelism"),
    key("execution.batch.adaptive.auto-parallelism.max-parallelism", Int, "128", &[C, R, S], "max-parallelism", "Upper bound of a decided parallelism"),
    key("execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task", MemorySize, "16 mb", &[C, R, S], "avg-data-volume-per-task", "Bytes one subtask is meant to read"),
    key("execution.batch.adaptive.auto-parallelism.default-source-parallelism", Int, "", &[C, R, S], "default-source-parallelism", "Parallelism of undecided sources (default: the max parallelism)"),
    // Speculative execution.
    key("execution.batch.speculative.enabled", Bool, "false", &[J, C, R], "speculative", "Run speculative attempts of slow tasks"),
    key("execution.batch.speculative.max-concurrent-executions", Int, "2", &[J, C, R], "speculative-max-concurrent-executions", "Attempts of one task at once"),
    key("execution.batch.speculative.block-slow-node-duration", Duration, "1 min", &[J, C, R], "speculative-block-slow-node-duration-ms", "How long a TaskManager that ran a slow task gets no new slots"),
    key("slow-task-detector.check-interval", Duration, "1 s", &[J, C, R], "slow-task-check-interval-ms", "How often slow tasks are looked for"),
    key("slow-task-detector.execution-time.baseline-lower-bound", Duration, "1 min", &[J, C, R], "slow-task-baseline-lower-bound-ms", "A task shorter than this is never slow"),
    key("slow-task-detector.execution-time.baseline-ratio", Float, "0.75", &[J, C, R], "slow-task-baseline-ratio", "Share of finished tasks before any is slow"),
    key("slow-task-detector.execution-time.baseline-multiplier", Float, "1.5", &[J, C, R], "slow-task-baseline-multiplier", "Slow past the median time times this"),
    // Conflux's own.
    key("conflux.token", Secret, "", &[J, T, C, S], "token", "Shared secret of the JobManager (never shown)"),
    key("conflux.jobmanager.advertised-address", Text, "", &[J], "advertised-address", "Host TaskManagers use to reach the blob server"),
    key("conflux.max-connections", Int, "", &[J], "max-connections", "Connections accepted at once"),
    key("conflux.scheduler.work-budget", Int, "131072", &[J, C], "scheduler-work-budget", "Region work of one scheduler call before it yields"),
    key("conflux.max-job-memory", MemorySize, "4 gb", &[J, C], "max-job-memory", "Largest estimated memory of a job admitted"),
    key("conflux.rpc.delay", Duration, "0 ms", &[J, C], "rpc-delay-ms", "Injected fault: delay of every message to a TaskManager"),
    key("conflux.rpc.drop-rate", Float, "0", &[J, C], "rpc-drop-rate", "Injected fault: chance a message to a TaskManager is dropped"),
    key("conflux.seed", Int, "0", &[J, C, R, S], "seed", "Seed of task durations and injected faults"),
    key("conflux.task-duration", Text, "1000..2000", &[C, R, S], "task-duration-ms", "Synthetic task durations, ms: `MIN..MAX` or one value"),
    key("conflux.parallelism", Text, "", &[C, R, S], "parallelism", "Parallelism of every vertex above 1, or `auto`"),
    key("conflux.default-parallelism", Int, "", &[C, R, S], "default-parallelism", "The estimate of vertices of undecided parallelism"),
    key("conflux.source-bytes", MemorySize, "1 gb", &[C, R, S], "source-bytes", "Bytes every synthetic source vertex produces"),
    key("conflux.skew", Float, "0", &[C, R, S], "skew", "Zipf exponent of synthetic tasks' bytes over subpartitions"),
    key("conflux.output-dir", Text, "", &[C, S], "output-dir", "Where word count sinks write"),
    key("conflux.sink-delay-us", Int, "0", &[C, S], "sink-delay-us", "Word count sinks wait this long per buffer, µs"),
    key("conflux.buffers-per-channel", Int, "", &[C, S], "buffers-per-channel", "Buffers of 32 KiB per subpartition in flight"),
    key("conflux.task-managers", Int, "", &[C, R], "task-managers", "TaskManagers to start"),
    key("conflux.taskmanager.data-dir", Text, "", &[T], "data-dir", "A TaskManager's working directory (default: a temporary one)"),
    key("conflux.taskmanager.data-dir-max-bytes", MemorySize, "", &[T, C], "data-dir-max-bytes", "Bytes of partition files a TaskManager may hold"),
    key("conflux.taskmanager.partitions-kept-without-jobmanager", Duration, "90 s", &[T], "partitions-kept-without-jobmanager-ms", "How long a TaskManager without a JobManager keeps its finished partitions"),
    key("conflux.slow-task-managers", Int, "0", &[C, R], "slow-task-managers", "Slow TaskManagers, for demonstrations of speculative execution"),
    key("conflux.slowdown", Float, "", &[T, C, R], "slowdown", "How many times as long tasks take on a slow TaskManager"),
    key("conflux.kill-task-manager-after", Duration, "", &[C], "kill-task-manager-after-ms", "Injected fault: kill a TaskManager this long after the submission"),
    key("conflux.job-managers", Int, "1", &[C], "job-managers", "JobManagers to start; more than one run under ZooKeeper high availability"),
    key("conflux.kill-job-manager-after", Duration, "", &[C], "kill-job-manager-after-ms", "Injected fault: kill the leading JobManager this long after the submission"),
    key("conflux.verify", Bool, "false", &[C, S], "verify", "Check word count output against the seeds"),
    key("conflux.offload.rule", Text, "count", &[R], "offload-rule", "Which descriptor groups go to the blob server: `count`, `bytes` or `never`"),
    key("conflux.offload.threshold", Int, "", &[R], "offload-threshold", "Threshold of the offload rule"),
    key("conflux.faults.task-failure-rate", Float, "0", &[R], "task-failure-rate", "Chance a running task fails"),
    key("conflux.faults.partition-not-found-rate", Float, "0", &[R], "partition-not-found-rate", "Chance a task fails reading a blocking input"),
    key("conflux.faults.task-manager-losses", Int, "0", &[R], "task-manager-losses", "TaskManagers lost during the run"),
    key("conflux.faults.blob-server-restarts", Int, "0", &[R], "blob-server-restarts", "Blob server restarts during the run"),
    key("conflux.detached", Bool, "false", &[S], "detached", "Print the job id and return"),
    key("conflux.format", Text, "text", &[C, R, S], "format", "Output format: `text` or `json`"),
    key("conflux.quiet", Bool, "false", &[R], "quiet", "No progress bar"),
];

/// The key named `name`.
pub fn find(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_environment_variables_are_unique() {
        let mut names: Vec<_> = KEYS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KEYS.len());
        let mut vars: Vec<_> = KEYS.iter().map(Key::env_var).collect();
        vars.sort_unstable();
        vars.dedup();
        assert_eq!(vars.len(), KEYS.len());
    }

    #[test]
    fn environment_variable_names() {
        let var = |k: &str| find(k).unwrap().env_var();
        assert_eq!(var("rest.port"), "CONFLUX_REST_PORT");
        assert_eq!(var("conflux.token"), "CONFLUX_TOKEN");
        assert_eq!(
            var("taskmanager.numberOfTaskSlots"),
            "CONFLUX_TASKMANAGER_NUMBEROFTASKSLOTS"
        );
    }

    #[test]
    fn defaults_parse_as_their_type() {
        for k in KEYS {
            assert!(!k.commands.is_empty(), "{}", k.name);
            if !k.default.is_empty() {
                assert!(k.ty.parse(k.default).is_some(), "{}: {}", k.name, k.default);
            }
        }
    }
}
