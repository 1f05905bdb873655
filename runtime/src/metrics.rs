//! Prometheus metrics of the JobManager and the TaskManager (`prometheus-client`), under
//! Flink's names and labels where Flink has the metric (as Flink's `PrometheusReporter` writes
//! them: `flink_<scope>_<name>`, label values with every character outside `[a-zA-Z0-9:_]`
//! replaced by `_`) and under `conflux_` for Conflux's own.
//!
//! JobManager (`GET /metrics` on its REST port): `flink_jobmanager_numRegisteredTaskManagers`,
//! `_taskSlotsAvailable`, `_taskSlotsTotal`, `_numRunningJobs` (label `host`),
//! `flink_jobmanager_job_uptime` and `_numRestarts` (labels `job_id`, `job_name`, `host`; jobs
//! not ended), and `conflux_jobmanager_scheduler_call_seconds` (histogram of scheduler handler
//! calls' wall time), `_heartbeat_rtt_seconds` (histogram), `_descriptor_bytes_total` (encoded
//! TDD bytes sent), `_blob_server_gets_total` (read requests the embedded blob server answered).
//! TaskManager (`--metrics-port`): `flink_taskmanager_job_task_numRecordsIn`, `_numRecordsOut`,
//! `_numBytesIn`, `_numBytesOut` (Flink's labels: `job_id`, `job_name`, `task_id`,
//! `task_attempt_id`, `task_attempt_num`, `task_name`, `subtask_index`, `tm_id`, `host`; a
//! task's series live from its start until its job ends, so a scrape after a short task still
//! sees its counts), and `conflux_taskmanager_blob_fetches_total`,
//! `_tdd_bytes_received_total`, `_tasks_total`.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, MutexGuard, PoisonError};

use conflux_blob_api::JobId;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A label value as Flink's Prometheus reporter writes it: every character outside
/// `[a-zA-Z0-9:_]` becomes `_` (`streaming forever` -> `streaming_forever`).
pub(crate) fn flink_label(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == ':' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Brings a counter up to `total` (a total read from elsewhere; never down).
fn catch_up(counter: &Counter, total: u64) {
    let now = counter.get();
    if total > now {
        counter.inc_by(total - now);
    }
}

fn encode(registry: &Registry) -> String {
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, registry);
    text
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HostLabels {
    host: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    job_id: String,
    job_name: String,
    host: String,
}

/// Buckets of the histograms: 10 µs to about 84 s, times 2.
fn seconds_buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(1e-5, 2.0, 24)
}

/// What the JobManager's scrape shows of one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JobFigures {
    pub(crate) id: JobId,
    pub(crate) name: String,
    /// ms since the job switched to RUNNING (0 before).
    pub(crate) uptime_ms: i64,
    pub(crate) restarts: u64,
}

/// What the JobManager's scrape shows of the cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ClusterFigures {
    pub(crate) task_managers: u64,
    pub(crate) slots_total: u64,
    pub(crate) slots_available: u64,
    /// Jobs not ended.
    pub(crate) jobs: Vec<JobFigures>,
    /// Read requests the embedded blob server answered so far.
    pub(crate) blob_server_gets: u64,
}

/// The JobManager's metrics.
#[derive(Debug)]
pub(crate) struct JobManagerMetrics {
    registry: Registry,
    host: String,
    task_managers: Family<HostLabels, Gauge>,
    slots_available: Family<HostLabels, Gauge>,
    slots_total: Family<HostLabels, Gauge>,
    running_jobs: Family<HostLabels, Gauge>,
    job_uptime: Family<JobLabels, Gauge>,
    job_restarts: Family<JobLabels, Gauge>,
    /// Wall time of each scheduler handler call (`handle`, `continue_work`), s.
    pub(crate) scheduler_call_seconds: Histogram,
    /// Heartbeat round trips, s.
    pub(crate) heartbeat_rtt_seconds: Histogram,
    /// Bytes of encoded TDDs sent.
    pub(crate) descriptor_bytes: Counter,
    blob_server_gets: Counter,
    /// Scrapes set the gauges and encode under this lock, one at a time.
    scrape: Mutex<()>,
}

impl JobManagerMetrics {
    /// Metrics of a JobManager on `host` (the `host` label).
    pub(crate) fn new(host: &str) -> JobManagerMetrics {
        let mut registry = Registry::default();
        let host_gauge = |registry: &mut Registry, name: &str, help: &str| {
            let family = Family::<HostLabels, Gauge>::default();
            registry.register(name, help, family.clone());
            family
        };
        let task_managers = host_gauge(
            &mut registry,
            "flink_jobmanager_numRegisteredTaskManagers",
            "numRegisteredTaskManagers (scope: jobmanager)",
        );
        let slots_available = host_gauge(
            &mut registry,
            "flink_jobmanager_taskSlotsAvailable",
            "taskSlotsAvailable (scope: jobmanager)",
        );
        let slots_total = host_gauge(
            &mut registry,
            "flink_jobmanager_taskSlotsTotal",
            "taskSlotsTotal (scope: jobmanager)",
        );
        let running_jobs = host_gauge(
            &mut registry,
            "flink_jobmanager_numRunningJobs",
            "numRunningJobs (scope: jobmanager)",
        );
        let job_uptime = Family::<JobLabels, Gauge>::default();
        registry.register(
            "flink_jobmanager_job_uptime",
            "uptime (scope: jobmanager_job): ms since the job switched to RUNNING",
            job_uptime.clone(),
        );
        let job_restarts = Family::<JobLabels, Gauge>::default();
        registry.register(
            "flink_jobmanager_job_numRestarts",
            "numRestarts (scope: jobmanager_job)",
            job_restarts.clone(),
        );
        let scheduler_call_seconds = Histogram::new(seconds_buckets());
        registry.register(
            "conflux_jobmanager_scheduler_call_seconds",
            "Wall time of each scheduler handler call (handle, continue_work), s",
            scheduler_call_seconds.clone(),
        );
        let heartbeat_rtt_seconds = Histogram::new(seconds_buckets());
        registry.register(
            "conflux_jobmanager_heartbeat_rtt_seconds",
            "Heartbeat round trips to TaskManagers, s",
            heartbeat_rtt_seconds.clone(),
        );
        let descriptor_bytes = Counter::default();
        registry.register(
            "conflux_jobmanager_descriptor_bytes",
            "Bytes of encoded task deployment descriptors sent",
            descriptor_bytes.clone(),
        );
        let blob_server_gets = Counter::default();
        registry.register(
            "conflux_jobmanager_blob_server_gets",
            "Read requests the embedded blob server answered (descriptor and job data fetches)",
            blob_server_gets.clone(),
        );
        JobManagerMetrics {
            registry,
            host: flink_label(host),
            task_managers,
            slots_available,
            slots_total,
            running_jobs,
            job_uptime,
            job_restarts,
            scheduler_call_seconds,
            heartbeat_rtt_seconds,
            descriptor_bytes,
            blob_server_gets,
            scrape: Mutex::new(()),
        }
    }

    /// The scrape: the gauges set from `figures`, then the text.
    pub(crate) fn scrape(&self, figures: &ClusterFigures) -> String {
        let _one_at_a_time = lock(&self.scrape);
        let host = HostLabels {
            host: self.host.clone(),
        };
        let set = |family: &Family<HostLabels, Gauge>, v: u64| {
            family
                .get_or_create(&host)
                .set(i64::try_from(v).unwrap_or(i64::MAX));
        };
        set(&self.task_managers, figures.task_managers);
        set(&self.slots_total, figures.slots_total);
        set(&self.slots_available, figures.slots_available);
        set(&self.running_jobs, figures.jobs.len() as u64);
        self.job_uptime.clear();
        self.job_restarts.clear();
        for job in &figures.jobs {
            let labels = JobLabels {
                job_id: job.id.to_string(),
                job_name: flink_label(&job.name),
                host: self.host.clone(),
            };
            self.job_uptime.get_or_create(&labels).set(job.uptime_ms);
            self.job_restarts
                .get_or_create(&labels)
                .set(i64::try_from(job.restarts).unwrap_or(i64::MAX));
        }
        catch_up(&self.blob_server_gets, figures.blob_server_gets);
        encode(&self.registry)
    }
}

/// A task's labels, as Flink's.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct TaskLabels {
    pub(crate) job_id: String,
    pub(crate) job_name: String,
    pub(crate) task_id: String,
    pub(crate) task_attempt_id: String,
    pub(crate) task_attempt_num: String,
    pub(crate) task_name: String,
    pub(crate) subtask_index: String,
    pub(crate) tm_id: String,
    pub(crate) host: String,
}

/// A running task's I/O counters, shown by the TaskManager's scrape.
#[derive(Clone, Debug, Default)]
pub(crate) struct TaskIo {
    pub(crate) records_in: Gauge,
    pub(crate) records_out: Gauge,
    pub(crate) bytes_in: Gauge,
    pub(crate) bytes_out: Gauge,
}

impl TaskIo {
    /// Adds to a counter (saturating into the gauge's `i64`).
    pub(crate) fn add(gauge: &Gauge, n: u64) {
        gauge.inc_by(i64::try_from(n).unwrap_or(i64::MAX));
    }
}

/// What the TaskManager's scrape reads of its counters.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TaskManagerTotals {
    pub(crate) blob_fetches: u64,
    pub(crate) tdd_bytes_received: u64,
    pub(crate) tasks: u64,
}

/// The TaskManager's metrics.
#[derive(Debug)]
pub(crate) struct TaskManagerMetrics {
    registry: Registry,
    records_in: Family<TaskLabels, Gauge>,
    records_out: Family<TaskLabels, Gauge>,
    bytes_in: Family<TaskLabels, Gauge>,
    bytes_out: Family<TaskLabels, Gauge>,
    blob_fetches: Counter,
    tdd_bytes_received: Counter<u64, AtomicU64>,
    tasks: Counter,
    /// Per job, its tasks' labels (their series go when it ends).
    by_job: Mutex<HashMap<JobId, Vec<TaskLabels>>>,
    scrape: Mutex<()>,
}

impl TaskManagerMetrics {
    pub(crate) fn new() -> TaskManagerMetrics {
        let mut registry = Registry::default();
        let mut family = |name: &str, help: &str| {
            let f = Family::<TaskLabels, Gauge>::default();
            registry.register(name, help, f.clone());
            f
        };
        let records_in = family(
            "flink_taskmanager_job_task_numRecordsIn",
            "numRecordsIn (scope: taskmanager_job_task)",
        );
        let records_out = family(
            "flink_taskmanager_job_task_numRecordsOut",
            "numRecordsOut (scope: taskmanager_job_task)",
        );
        let bytes_in = family(
            "flink_taskmanager_job_task_numBytesIn",
            "numBytesIn (scope: taskmanager_job_task)",
        );
        let bytes_out = family(
            "flink_taskmanager_job_task_numBytesOut",
            "numBytesOut (scope: taskmanager_job_task)",
        );
        let blob_fetches = Counter::default();
        registry.register(
            "conflux_taskmanager_blob_fetches",
            "Blobs the TaskManager's BlobCache fetched from the blob server",
            blob_fetches.clone(),
        );
        let tdd_bytes_received = Counter::default();
        registry.register(
            "conflux_taskmanager_tdd_bytes_received",
            "Bytes of encoded task deployment descriptors received",
            tdd_bytes_received.clone(),
        );
        let tasks = Counter::default();
        registry.register(
            "conflux_taskmanager_tasks",
            "Tasks submitted to the TaskManager",
            tasks.clone(),
        );
        TaskManagerMetrics {
            registry,
            records_in,
            records_out,
            bytes_in,
            bytes_out,
            blob_fetches,
            tdd_bytes_received,
            tasks,
            by_job: Mutex::new(HashMap::new()),
            scrape: Mutex::new(()),
        }
    }

    /// A task of `job` starts: its series, whose gauges it counts into.
    pub(crate) fn task_started(&self, job: JobId, labels: TaskLabels) -> TaskIo {
        let io = TaskIo {
            records_in: self.records_in.get_or_create(&labels).clone(),
            records_out: self.records_out.get_or_create(&labels).clone(),
            bytes_in: self.bytes_in.get_or_create(&labels).clone(),
            bytes_out: self.bytes_out.get_or_create(&labels).clone(),
        };
        lock(&self.by_job).entry(job).or_default().push(labels);
        io
    }

    /// `job` ended: its tasks' series go.
    pub(crate) fn job_ended(&self, job: JobId) {
        let Some(labels) = lock(&self.by_job).remove(&job) else {
            return;
        };
        for l in &labels {
            self.records_in.remove(l);
            self.records_out.remove(l);
            self.bytes_in.remove(l);
            self.bytes_out.remove(l);
        }
    }

    /// The scrape.
    pub(crate) fn scrape(&self, totals: TaskManagerTotals) -> String {
        let _one_at_a_time = lock(&self.scrape);
        catch_up(&self.blob_fetches, totals.blob_fetches);
        catch_up(&self.tdd_bytes_received, totals.tdd_bytes_received);
        catch_up(&self.tasks, totals.tasks);
        encode(&self.registry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_filtered_as_flinks() {
        assert_eq!(flink_label("streaming forever"), "streaming_forever");
        assert_eq!(
            flink_label("Source: Sequence Source -> Slow Pair"),
            "Source:_Sequence_Source____Slow_Pair"
        );
        assert_eq!(
            flink_label("localhost:36373-0169d4"),
            "localhost:36373_0169d4"
        );
    }

    #[test]
    fn the_jobmanager_scrape_has_flinks_names_and_labels() {
        let metrics = JobManagerMetrics::new("127.0.0.1");
        let text = metrics.scrape(&ClusterFigures {
            task_managers: 2,
            slots_total: 8,
            slots_available: 3,
            jobs: vec![JobFigures {
                id: JobId([0xab; 16]),
                name: "word count".into(),
                uptime_ms: 1234,
                restarts: 1,
            }],
            blob_server_gets: 5,
        });
        for line in [
            "flink_jobmanager_numRegisteredTaskManagers{host=\"127_0_0_1\"} 2",
            "flink_jobmanager_taskSlotsTotal{host=\"127_0_0_1\"} 8",
            "flink_jobmanager_taskSlotsAvailable{host=\"127_0_0_1\"} 3",
            "flink_jobmanager_numRunningJobs{host=\"127_0_0_1\"} 1",
            "flink_jobmanager_job_uptime{job_id=\"abababababababababababababababab\",job_name=\"word_count\",host=\"127_0_0_1\"} 1234",
            "flink_jobmanager_job_numRestarts{job_id=\"abababababababababababababababab\",job_name=\"word_count\",host=\"127_0_0_1\"} 1",
            "conflux_jobmanager_blob_server_gets_total 5",
            "# TYPE conflux_jobmanager_scheduler_call_seconds histogram",
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
        // A job that ended is gone at the next scrape.
        let text = metrics.scrape(&ClusterFigures::default());
        assert!(!text.contains("job_uptime{"), "{text}");
    }

    #[test]
    fn a_tasks_series_live_until_its_job_ends() {
        let metrics = TaskManagerMetrics::new();
        let job = JobId([1; 16]);
        let io = metrics.task_started(
            job,
            TaskLabels {
                job_id: job.to_string(),
                job_name: "wc".into(),
                task_id: "00".repeat(16),
                task_attempt_id: "a".into(),
                task_attempt_num: "0".into(),
                task_name: "source".into(),
                subtask_index: "3".into(),
                tm_id: "tm0".into(),
                host: "127_0_0_1".into(),
            },
        );
        TaskIo::add(&io.records_out, 41);
        TaskIo::add(&io.records_out, 1);
        let text = metrics.scrape(TaskManagerTotals {
            blob_fetches: 2,
            ..TaskManagerTotals::default()
        });
        assert!(
            text.contains("flink_taskmanager_job_task_numRecordsOut{")
                && text.contains("subtask_index=\"3\""),
            "{text}"
        );
        assert!(text.contains("} 42\n"), "{text}");
        assert!(
            text.contains("conflux_taskmanager_blob_fetches_total 2"),
            "{text}"
        );
        metrics.job_ended(job);
        assert!(!metrics
            .scrape(TaskManagerTotals::default())
            .contains("numRecordsOut{"));
    }
}
