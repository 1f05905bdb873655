//! `/config`, `/overview`, `/jobmanager/config`, `/taskmanagers` and `/taskmanagers/:tmid`.

use serde::Serialize;
use utoipa::ToSchema;

/// `GET /config`: the web UI's settings (Flink's `DashboardConfiguration`).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct DashboardConfiguration {
    /// How often the web UI refreshes, ms (Flink's `web.refresh-interval`, 3,000).
    #[serde(rename = "refresh-interval")]
    pub refresh_interval: i64,
    /// The time zone times are shown in (Conflux: UTC).
    #[serde(rename = "timezone-name")]
    pub timezone_name: String,
    /// Its offset from UTC, ms.
    #[serde(rename = "timezone-offset")]
    pub timezone_offset: i32,
    /// The Flink version whose REST API this is.
    #[serde(rename = "flink-version")]
    pub flink_version: String,
    /// The build: `conflux <version>`.
    #[serde(rename = "flink-revision")]
    pub flink_revision: String,
    /// What the web UI may offer.
    pub features: Features,
}

/// The web UI's features.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Features {
    /// Jar upload and submission (false: Conflux takes job graphs through `conflux submit`).
    #[serde(rename = "web-submit")]
    pub web_submit: bool,
    /// Cancelling a job.
    #[serde(rename = "web-cancel")]
    pub web_cancel: bool,
    /// Rescaling a running job.
    #[serde(rename = "web-rescale")]
    pub web_rescale: bool,
    /// A history server.
    #[serde(rename = "web-history")]
    pub web_history: bool,
}

/// `GET /overview` (Flink's `ClusterOverviewWithVersion`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct ClusterOverview {
    /// Registered TaskManagers.
    pub taskmanagers: u32,
    /// Their slots.
    #[serde(rename = "slots-total")]
    pub slots_total: u32,
    /// Their free slots.
    #[serde(rename = "slots-available")]
    pub slots_available: u32,
    /// Jobs not ended (queued or running).
    #[serde(rename = "jobs-running")]
    pub jobs_running: u32,
    /// Jobs FINISHED.
    #[serde(rename = "jobs-finished")]
    pub jobs_finished: u32,
    /// Jobs CANCELED.
    #[serde(rename = "jobs-cancelled")]
    pub jobs_cancelled: u32,
    /// Jobs FAILED.
    #[serde(rename = "jobs-failed")]
    pub jobs_failed: u32,
    /// As [`DashboardConfiguration::flink_version`].
    #[serde(rename = "flink-version")]
    pub flink_version: String,
    /// `conflux-<version>`.
    #[serde(rename = "flink-commit")]
    pub flink_commit: String,
}

/// One entry of `GET /jobmanager/config`: a setting under Flink's key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct ClusterConfigEntry {
    /// The key (`rest.port`, `heartbeat.timeout`, ...).
    pub key: String,
    /// Its value as text.
    pub value: String,
}

/// `GET /taskmanagers` (Flink's `TaskManagersInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct TaskManagers {
    /// The registered TaskManagers, by id.
    pub taskmanagers: Vec<TaskManagerInfo>,
}

/// A TaskManager (Flink's `TaskManagerInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct TaskManagerInfo {
    /// Its id (`tm<n>`).
    pub id: String,
    /// Where it is: `conflux://<data address>/taskmanager/<id>`.
    pub path: String,
    /// Its data server's port.
    #[serde(rename = "dataPort")]
    pub data_port: u16,
    /// JMX port: -1 (none).
    #[serde(rename = "jmxPort")]
    pub jmx_port: i32,
    /// When it last answered a heartbeat, epoch ms (Flink's field holds the timestamp, not a
    /// duration).
    #[serde(rename = "timeSinceLastHeartbeat")]
    pub time_since_last_heartbeat: i64,
    /// Its slots.
    #[serde(rename = "slotsNumber")]
    pub slots_number: u32,
    /// Its free slots.
    #[serde(rename = "freeSlots")]
    pub free_slots: u32,
    /// What its slots offer.
    #[serde(rename = "totalResource")]
    pub total_resource: Resource,
    /// What its free slots offer.
    #[serde(rename = "freeResource")]
    pub free_resource: Resource,
    /// Its machine.
    pub hardware: Hardware,
    /// Its memory model (neutral: Conflux has no JVM memory model).
    #[serde(rename = "memoryConfiguration")]
    pub memory_configuration: MemoryConfiguration,
}

/// `GET /taskmanagers/:tmid` (Flink's `TaskManagerDetailsInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct TaskManagerDetails {
    /// As in the list.
    #[serde(flatten)]
    pub info: TaskManagerInfo,
    /// Its slots in use, one entry each.
    #[serde(rename = "allocatedSlots")]
    pub allocated_slots: Vec<AllocatedSlot>,
    /// JVM and network memory figures (neutral: zeros, no garbage collectors).
    pub metrics: TaskManagerMetrics,
}

/// A slot in use.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct AllocatedSlot {
    /// The job using it.
    #[serde(rename = "jobId")]
    pub job_id: String,
    /// What the slot offers.
    pub resource: Resource,
}

/// Flink's `ResourceProfileInfo`: CPU cores and memory in MiB. Conflux fills `cpuCores` (one
/// core per slot, Flink's default `taskmanager.cpu.cores`) and leaves memory at 0.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[allow(missing_docs)]
pub struct Resource {
    #[serde(rename = "cpuCores")]
    pub cpu_cores: f64,
    #[serde(rename = "taskHeapMemory")]
    pub task_heap_memory: i64,
    #[serde(rename = "taskOffHeapMemory")]
    pub task_off_heap_memory: i64,
    #[serde(rename = "managedMemory")]
    pub managed_memory: i64,
    #[serde(rename = "networkMemory")]
    pub network_memory: i64,
    /// Extended resources by name (none).
    #[serde(rename = "extendedResources")]
    #[schema(value_type = Object)]
    pub extended_resources: serde_json::Map<String, serde_json::Value>,
}

impl Resource {
    /// `cores` CPU cores, no memory figures.
    pub fn cores(cores: u32) -> Resource {
        Resource {
            cpu_cores: f64::from(cores),
            task_heap_memory: 0,
            task_off_heap_memory: 0,
            managed_memory: 0,
            network_memory: 0,
            extended_resources: serde_json::Map::new(),
        }
    }
}

/// Flink's `HardwareDescription` (neutral values: `cpuCores` 0, `physicalMemory` -1 as
/// Flink's "unknown", `freeMemory` and `managedMemory` 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[allow(missing_docs)]
pub struct Hardware {
    #[serde(rename = "cpuCores")]
    pub cpu_cores: i32,
    #[serde(rename = "physicalMemory")]
    pub physical_memory: i64,
    #[serde(rename = "freeMemory")]
    pub free_memory: i64,
    #[serde(rename = "managedMemory")]
    pub managed_memory: i64,
}

/// Flink's `TaskExecutorMemoryConfiguration`, bytes (neutral: zeros).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
#[allow(missing_docs)]
pub struct MemoryConfiguration {
    #[serde(rename = "frameworkHeap")]
    pub framework_heap: i64,
    #[serde(rename = "taskHeap")]
    pub task_heap: i64,
    #[serde(rename = "frameworkOffHeap")]
    pub framework_off_heap: i64,
    #[serde(rename = "taskOffHeap")]
    pub task_off_heap: i64,
    #[serde(rename = "networkMemory")]
    pub network_memory: i64,
    #[serde(rename = "managedMemory")]
    pub managed_memory: i64,
    #[serde(rename = "jvmMetaspace")]
    pub jvm_metaspace: i64,
    #[serde(rename = "jvmOverhead")]
    pub jvm_overhead: i64,
    #[serde(rename = "totalFlinkMemory")]
    pub total_flink_memory: i64,
    #[serde(rename = "totalProcessMemory")]
    pub total_process_memory: i64,
}

/// Flink's `TaskManagerMetricsInfo` (neutral: zeros, no garbage collectors).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
#[allow(missing_docs)]
pub struct TaskManagerMetrics {
    #[serde(rename = "heapUsed")]
    pub heap_used: i64,
    #[serde(rename = "heapCommitted")]
    pub heap_committed: i64,
    #[serde(rename = "heapMax")]
    pub heap_max: i64,
    #[serde(rename = "nonHeapUsed")]
    pub non_heap_used: i64,
    #[serde(rename = "nonHeapCommitted")]
    pub non_heap_committed: i64,
    #[serde(rename = "nonHeapMax")]
    pub non_heap_max: i64,
    #[serde(rename = "directCount")]
    pub direct_count: i64,
    #[serde(rename = "directUsed")]
    pub direct_used: i64,
    #[serde(rename = "directMax")]
    pub direct_max: i64,
    #[serde(rename = "mappedCount")]
    pub mapped_count: i64,
    #[serde(rename = "mappedUsed")]
    pub mapped_used: i64,
    #[serde(rename = "mappedMax")]
    pub mapped_max: i64,
    #[serde(rename = "memorySegmentsAvailable")]
    pub memory_segments_available: i64,
    #[serde(rename = "memorySegmentsTotal")]
    pub memory_segments_total: i64,
    #[serde(rename = "nettyShuffleMemorySegmentsAvailable")]
    pub netty_shuffle_memory_segments_available: i64,
    #[serde(rename = "nettyShuffleMemorySegmentsUsed")]
    pub netty_shuffle_memory_segments_used: i64,
    #[serde(rename = "nettyShuffleMemorySegmentsTotal")]
    pub netty_shuffle_memory_segments_total: i64,
    #[serde(rename = "nettyShuffleMemoryAvailable")]
    pub netty_shuffle_memory_available: i64,
    #[serde(rename = "nettyShuffleMemoryUsed")]
    pub netty_shuffle_memory_used: i64,
    #[serde(rename = "nettyShuffleMemoryTotal")]
    pub netty_shuffle_memory_total: i64,
    #[serde(rename = "garbageCollectors")]
    pub garbage_collectors: Vec<GarbageCollector>,
}

/// A garbage collector's figures (Conflux lists none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[allow(missing_docs)]
pub struct GarbageCollector {
    pub name: String,
    pub count: i64,
    pub time: i64,
}
