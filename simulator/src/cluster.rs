//! A cluster simulator: drives the [`Scheduler`] core with virtual time, N TaskManagers of S
//! slots, seeded task durations and seeded faults, builds real deployment descriptors for every
//! deployed task (in batches on rayon, outside the event handler), and has every TaskManager
//! load its tasks' input gates through its own blob reader and descriptor cache.
//!
//! The same seed gives the same run: the scheduler's [`trace_digest`](Scheduler::trace_digest)
//! is equal.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use conflux_blob_api::{BlobReader, BlobWriter, JobId};
use conflux_deploy::{
    load_input_gate, DeploymentConfig, DeploymentStats, ExecutionAttemptId, SharedDecodedGroups,
    ShuffleDescriptorsCache, TaskDeploymentDescriptor, TaskDeploymentDescriptorFactory,
    TaskManagerId, TaskManagerLocation,
};
use conflux_graph::{
    ExecutionGraph, ExecutionVertexIndex, IntermediateResultPartitionId, PipelinedRegions,
};
use rayon::prelude::*;

use conflux_common::SplitMix64;
use conflux_scheduler::{
    Command, Event, FailureCause, JobStatus, Scheduler, SchedulerConfig, SpeculativeStats,
};

use crate::adaptive_report::AdaptiveReport;
use crate::event_queue::EventQueue;
use crate::produced_bytes::{BytesModel, ProducedBytes};
use crate::slow::SlowTaskManagers;

/// Where the simulated cluster's blobs live: a writer for the JobManager and one reader per
/// TaskManager (its blob cache).
pub trait BlobEnvironment: Send + Sync {
    /// The JobManager's writer (the blob server).
    fn writer(&self) -> Arc<dyn BlobWriter>;
    /// The blob cache of a TaskManager, created on first use.
    fn reader(&self, task_manager: TaskManagerId) -> Arc<dyn BlobReader>;
    /// Restarts the blob server (a fault); blobs must survive through the durable store.
    ///
    /// # Errors
    /// A message when the restart failed.
    fn restart_server(&self) -> Result<(), String>;
}

/// An environment over one in-memory store (no server), for tests.
#[derive(Debug, Default)]
pub struct MemoryBlobEnvironment {
    store: Arc<conflux_blob_api::MemoryBlobStore>,
}

impl MemoryBlobEnvironment {
    /// A fresh environment.
    pub fn new() -> MemoryBlobEnvironment {
        MemoryBlobEnvironment::default()
    }
}

impl BlobEnvironment for MemoryBlobEnvironment {
    fn writer(&self) -> Arc<dyn BlobWriter> {
        self.store.clone()
    }
    fn reader(&self, _: TaskManagerId) -> Arc<dyn BlobReader> {
        self.store.clone()
    }
    fn restart_server(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Seeded faults. Task failures and partition-not-found strike first attempts only (each with the
/// given chance): later attempts of a vertex run clean, so every job can finish whatever the
/// rates. Without that bound a 10k x 10k all-to-all job at 1% would never finish: every
/// partition-not-found restarts all 10,000 consumers, each of which may fail again.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Faults {
    /// Chance that an attempt fails while it runs.
    pub task_failure: f64,
    /// Chance that an attempt with blocking inputs fails reading one of them (partition not
    /// found).
    pub partition_not_found: f64,
    /// TaskManagers lost during the run (each replaced by a new one after 1 s).
    pub task_manager_losses: u32,
    /// Blob server restarts during the run.
    pub blob_server_restarts: u32,
}

/// Settings of a simulation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimulationConfig {
    /// TaskManagers; `None`: as many as the slot demand needs.
    pub task_managers: Option<u32>,
    /// Slots per TaskManager (default 10).
    pub slots_per_task_manager: u32,
    /// Seed of durations and faults.
    pub seed: u64,
    /// Task durations are drawn uniformly from this range, virtual ms.
    pub task_duration_ms: (u64, u64),
    /// Faults to inject.
    pub faults: Faults,
    /// The scheduler's settings.
    pub scheduler: SchedulerConfig,
    /// The deployment settings (offload rule, ...).
    pub deployment: DeploymentConfig,
    /// Stop (and report RUNNING) after this much virtual time.
    pub max_virtual_ms: u64,
    /// Slow TaskManagers (none by default). With speculative execution on
    /// (`scheduler.speculative.enabled`), the simulator also sends the scheduler
    /// `Event::CheckSlowTasks` every `slow-task-detector.check-interval`.
    pub slow_task_managers: SlowTaskManagers,
}

impl SimulationConfig {
    /// Defaults for a job type: 10 slots per TaskManager, durations 1-2 s, no faults.
    pub fn for_job_type(job_type: conflux_graph::JobType) -> SimulationConfig {
        SimulationConfig {
            task_managers: None,
            slots_per_task_manager: 10,
            seed: 0,
            task_duration_ms: (1_000, 2_000),
            faults: Faults::default(),
            scheduler: SchedulerConfig::default(),
            deployment: DeploymentConfig::for_job_type(job_type),
            max_virtual_ms: 30 * 24 * 3_600_000,
            slow_task_managers: SlowTaskManagers::default(),
        }
    }
}

/// Per TaskManager descriptor cache counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskManagerStats {
    /// Tasks deployed there.
    pub tasks: u64,
    /// Offloaded descriptor groups fetched through the blob reader.
    pub blob_fetches: u64,
    /// Offloaded groups served by the TaskManager's descriptor cache.
    pub cache_hits: u64,
    /// Whether it was lost (an injected loss).
    pub lost: bool,
}

/// What a simulation did.
#[derive(Clone, Debug)]
pub struct SimulationReport {
    /// Final job status.
    pub status: JobStatus,
    /// Why it failed, if it did.
    pub failure_reason: Option<String>,
    /// Attempts deployed (restarts included).
    pub tasks_deployed: u64,
    /// Restarts granted by the restart strategy.
    pub restarts: u32,
    /// Events handled by the scheduler.
    pub events: u64,
    /// Continuation calls (`Scheduler::continue_work`): work events left beyond the scheduler's
    /// work budget. Zero when no event needed more than one call.
    pub continuations: u64,
    /// Longest single scheduler call, `Scheduler::handle` or `Scheduler::continue_work` (wall
    /// time); bounded by the scheduler's work budget.
    pub max_handler_stall: Duration,
    /// The CPU time of the calling thread in its longest call by CPU time (which may be another
    /// call than the longest by wall time): the call's own work, without the time it waited for
    /// a core. `None` where the platform has no thread CPU clock.
    pub max_handler_cpu: Option<Duration>,
    /// Wall time spent building TDDs (JobManager side).
    pub descriptor_wall: Duration,
    /// Wall time TaskManagers spent loading input gates (fetch + decode).
    pub task_manager_load_wall: Duration,
    /// Wall time of the whole simulation.
    pub run_wall: Duration,
    /// Virtual time at the end, ms.
    pub virtual_ms: u64,
    /// The scheduler's trace digest.
    pub trace_digest: u64,
    /// Descriptor factory counters.
    pub deployment: DeploymentStats,
    /// Per TaskManager that received tasks, by id.
    pub task_managers: Vec<(TaskManagerId, TaskManagerStats)>,
    /// TaskManagers registered during the run: those started with it and the replacements of
    /// lost ones that registered before it ended.
    pub task_managers_registered: u32,
    /// Faults injected: task failures, partition-not-found failures, TaskManager losses, blob
    /// server restarts.
    pub faults_injected: (u64, u64, u64, u64),
    /// What an adaptive run ([`simulate_adaptive`]) decided; `None` for a graph built whole.
    pub adaptive: Option<AdaptiveReport>,
    /// What speculative execution did (all zero when it is off).
    pub speculative: SpeculativeStats,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SimEvent {
    Running(ExecutionAttemptId),
    Finished(ExecutionAttemptId),
    Failed(ExecutionAttemptId, Option<IntermediateResultPartitionId>),
    LoseTaskManager,
    RegisterTaskManager(u32),
    RestartBlobServer,
    Tick,
    CheckSlowTasks,
}

/// Logs the blob failures the factory handed back since the last call (it does no logging of
/// its own).
fn log_blob_failures(factory: &mut TaskDeploymentDescriptorFactory, job_id: JobId) {
    for failure in factory.take_blob_failures() {
        tracing::warn!(job = %job_id, %failure, "descriptor blob operation failed");
    }
}

/// How stale the CPU clock reading a call starts from may be, in wall time. Reading the
/// thread's CPU clock is a system call (no vDSO for it): twice per scheduler call it tripled
/// the simulator's run time, so a call starts from the last reading taken at most this long
/// before it, and its CPU time (read after it only when it may be a longest call) is
/// overstated by at most this much.
const CPU_READING_MAX_AGE: Duration = Duration::from_micros(100);

/// The last reading of the thread's CPU clock, and when it was taken.
#[derive(Default)]
struct CpuReadings {
    last: Option<(Instant, Duration)>,
}

impl CpuReadings {
    /// The thread's CPU time now, or as read at most [`CPU_READING_MAX_AGE`] before `now`.
    fn at(&mut self, now: Instant) -> Option<Duration> {
        match self.last {
            Some((at, cpu)) if now.duration_since(at) < CPU_READING_MAX_AGE => Some(cpu),
            _ => self.read(now),
        }
    }

    /// Reads the thread's CPU clock, noting the reading as taken at `now`.
    fn read(&mut self, now: Instant) -> Option<Duration> {
        let cpu = crate::cpu_time::thread_cpu_time()?;
        self.last = Some((now, cpu));
        Some(cpu)
    }
}

/// One scheduler call's clocks: wall time and the thread's CPU time when it began (within
/// [`CPU_READING_MAX_AGE`]).
struct CallClock {
    wall: Instant,
    cpu: Option<Duration>,
}

impl CallClock {
    fn start(readings: &mut CpuReadings) -> CallClock {
        let wall = Instant::now();
        CallClock {
            wall,
            cpu: readings.at(wall),
        }
    }
}

/// A call of at least this much CPU time is logged (debug) even when it is not the longest.
const LOGGED_CALL_CPU: Duration = Duration::from_millis(5);

/// Keeps the longest scheduler call, by wall time and by CPU time; a new longest one (by wall
/// time), or one of at least [`LOGGED_CALL_CPU`], is logged (debug) with what it handled: the
/// event, and which continuation call of its work (0: the `handle` call itself).
///
/// A call's CPU time is at most its wall time, so the CPU clock is read after a call only when
/// its wall time could make it the longest by CPU or a logged one.
fn note_call(
    report: &mut SimulationReport,
    readings: &mut CpuReadings,
    clock: &CallClock,
    now_ms: u64,
    event: &Event,
    continuation: u32,
) {
    let ended = Instant::now();
    let took = ended.duration_since(clock.wall);
    let may_count =
        took >= LOGGED_CALL_CPU || report.max_handler_cpu.is_none_or(|longest| took > longest);
    let cpu = if may_count {
        clock
            .cpu
            .zip(readings.read(ended))
            .map(|(before, after)| after.saturating_sub(before))
    } else {
        None
    };
    if let Some(cpu) = cpu {
        report.max_handler_cpu = Some(report.max_handler_cpu.map_or(cpu, |m| m.max(cpu)));
    }
    let longest = took > report.max_handler_stall;
    report.max_handler_stall = report.max_handler_stall.max(took);
    if (longest || cpu.is_some_and(|c| c >= LOGGED_CALL_CPU))
        && tracing::enabled!(tracing::Level::DEBUG)
    {
        let what: String = format!("{event:?}").chars().take(80).collect();
        tracing::debug!(
            ms = took.as_secs_f64() * 1e3,
            cpu_ms = cpu.map(|c| c.as_secs_f64() * 1e3),
            virtual_ms = now_ms,
            event = %what,
            continuation,
            longest,
            "long scheduler call"
        );
    }
}

/// The slots a job needs: per slot sharing group, its largest parallelism.
pub fn slot_demand(graph: &ExecutionGraph) -> u32 {
    let mut by_group: HashMap<&str, u32> = HashMap::new();
    let job = graph.job_graph();
    for j in job.vertex_indices() {
        let e = by_group.entry(job.slot_sharing_group(j)).or_default();
        *e = (*e).max(job.vertex(j).parallelism);
    }
    by_group.values().sum()
}

fn location(tm: u32) -> TaskManagerLocation {
    TaskManagerLocation {
        id: TaskManagerId(tm),
        data_address: SocketAddr::from((Ipv4Addr::from(0x0a00_0000 | (tm & 0x00ff_ffff)), 6121)),
    }
}

struct TaskManagerSide {
    reader: Arc<dyn BlobReader>,
    cache: ShuffleDescriptorsCache,
    stats: TaskManagerStats,
}

/// Deploys shipped per chunk of a batch: TDDs built in parallel, loaded, then dropped.
const DEPLOY_CHUNK: usize = 1 << 14;

/// The TaskManagers' sides, by id (ids are dense: the first TaskManagers, then replacements
/// numbered after them), each made when its first task arrives.
#[derive(Default)]
struct TaskManagerSides {
    sides: Vec<Option<TaskManagerSide>>,
}

impl TaskManagerSides {
    /// The side of `tm`, made (its blob reader and descriptor cache) on first use.
    fn side(
        &mut self,
        tm: TaskManagerId,
        blobs: &dyn BlobEnvironment,
        shared_decoded: &Arc<SharedDecodedGroups>,
    ) -> &mut TaskManagerSide {
        let i = tm.0 as usize;
        if self.sides.len() <= i {
            self.sides.resize_with(i + 1, || None);
        }
        self.sides[i].get_or_insert_with(|| TaskManagerSide {
            reader: blobs.reader(tm),
            cache: ShuffleDescriptorsCache::with_shared_decoded(
                conflux_deploy::DEFAULT_CACHE_BYTES,
                Arc::clone(shared_decoded),
            ),
            stats: TaskManagerStats::default(),
        })
    }

    /// The counters of every TaskManager that received a task, by id.
    fn stats(&self) -> Vec<(TaskManagerId, TaskManagerStats)> {
        self.sides
            .iter()
            .enumerate()
            .filter_map(|(i, side)| {
                let side = side.as_ref()?;
                Some((TaskManagerId(u32::try_from(i).ok()?), side.stats))
            })
            .collect()
    }
}

/// Watches a simulation: progress for a progress bar, and every event the scheduler handles for
/// invariant checks.
pub trait Observer {
    /// `finished` of `total` tasks have finished (restarted ones count again).
    fn on_progress(&mut self, finished: u64, total: u64) {
        let _ = (finished, total);
    }

    /// After each event: the virtual time, the event, the commands it caused (those of its
    /// `Scheduler::handle` call and of the continuation calls that finished its work, in
    /// order), and the scheduler as it is after the last of them.
    fn on_handled(
        &mut self,
        now_ms: u64,
        event: &Event,
        commands: &[Command],
        scheduler: &Scheduler,
    ) {
        let _ = (now_ms, event, commands, scheduler);
    }
}

/// Observes nothing.
impl Observer for () {}

/// Runs a job to its end (or `max_virtual_ms`), telling `observer` what happens.
///
/// # Errors
/// A message when descriptors cannot be built or loaded, or the scheduler refuses an event (a
/// bug: the simulator only sends valid events).
pub fn simulate(
    graph: Arc<ExecutionGraph>,
    regions: Arc<PipelinedRegions>,
    config: &SimulationConfig,
    blobs: &dyn BlobEnvironment,
    observer: &mut dyn Observer,
) -> Result<SimulationReport, String> {
    let scheduler = Scheduler::new(graph, regions, config.scheduler);
    run(scheduler, None, config, blobs, observer)
}

/// Runs a job whose undecided vertices (`-1`) are decided at run time (adaptive batch, Flink
/// 1.20's rules with `options`): tasks report the bytes `bytes` gives them, the scheduler grows
/// the graph as vertices are decided, and the report says what was decided
/// ([`SimulationReport::adaptive`]).
///
/// # Errors
/// As [`simulate`]; and a message naming the vertex when the job cannot grow at run time (a
/// pipelined edge or co-location group after the first undecided vertex) or the options are
/// out of range.
pub fn simulate_adaptive(
    job: conflux_graph::JobGraph,
    options: conflux_adaptive::BatchExecutionOptions,
    bytes: BytesModel,
    config: &SimulationConfig,
    blobs: &dyn BlobEnvironment,
    observer: &mut dyn Observer,
) -> Result<SimulationReport, String> {
    let scheduler =
        Scheduler::new_adaptive(job, options, config.scheduler).map_err(|e| e.to_string())?;
    let bytes = ProducedBytes::new(scheduler.graph(), bytes, config.seed);
    run(scheduler, Some(bytes), config, blobs, observer)
}

/// The simulation loop over a scheduler; `bytes`: tasks report produced bytes (adaptive).
/// The scheduler owns the graph: the loop takes it from [`Scheduler::graph`] after each call
/// and drops it before the next, so a growing graph is never copied.
fn run(
    mut scheduler: Scheduler,
    mut bytes: Option<ProducedBytes>,
    config: &SimulationConfig,
    blobs: &dyn BlobEnvironment,
    observer: &mut dyn Observer,
) -> Result<SimulationReport, String> {
    let started = Instant::now();
    let mut rng = SplitMix64::new(config.seed);
    let job_id = job_id_of(config.seed);
    let graph = Arc::clone(scheduler.graph());
    let mut factory =
        TaskDeploymentDescriptorFactory::new(&graph, job_id, config.deployment, blobs.writer())
            .map_err(|e| e.to_string())?;

    let slots = config.slots_per_task_manager.max(1);
    let task_managers = config
        .task_managers
        .unwrap_or_else(|| slot_demand(&graph).div_ceil(slots))
        .max(1);
    // Per TaskManager id, whether it is slow (replacements, numbered after, never are).
    let slow: Vec<bool> = {
        let chosen = config.slow_task_managers.choose(config.seed, task_managers);
        (0..task_managers).map(|tm| chosen.contains(&tm)).collect()
    };
    let mut next_tm = task_managers;
    let mut alive: Vec<u32> = (0..task_managers).collect();
    let mut tm_sides = TaskManagerSides::default();
    // Per batch of deploys: when each deployed vertex finishes and when each pipelined group's
    // producers have, which bound pipelined consumers. Kept only when a consumer can read them.
    let pipelined_job = graph
        .connections()
        .iter()
        .any(|c| c.result_partition_type.must_be_pipelined_consumed());
    let mut finish_at: HashMap<u32, u64> = HashMap::new();
    let mut group_finish: HashMap<u32, u64> = HashMap::new();
    let mut lost: Vec<u32> = Vec::new();
    // A thousand TaskManagers in one process: each fetches and decodes, identical groups are
    // held once.
    let shared_decoded = Arc::new(SharedDecodedGroups::new());

    let mut queue: EventQueue<SimEvent> = EventQueue::new();

    // Faults spread over the first stretch of the run.
    let horizon = config.task_duration_ms.1.max(1) * 2;
    for _ in 0..config.faults.task_manager_losses {
        let at = rng.between(1, horizon);
        queue.push(at, SimEvent::LoseTaskManager);
    }
    for _ in 0..config.faults.blob_server_restarts {
        let at = rng.between(1, horizon);
        queue.push(at, SimEvent::RestartBlobServer);
    }
    // The slow task detector's period, when speculative execution is on.
    let check_interval = config
        .scheduler
        .speculative
        .enabled
        .then_some(config.scheduler.speculative.check_interval_ms.max(1));
    if let Some(interval) = check_interval {
        queue.push(interval, SimEvent::CheckSlowTasks);
    }

    let mut report = SimulationReport {
        status: JobStatus::Created,
        failure_reason: None,
        tasks_deployed: 0,
        restarts: 0,
        events: 0,
        continuations: 0,
        max_handler_stall: Duration::ZERO,
        max_handler_cpu: None,
        descriptor_wall: Duration::ZERO,
        task_manager_load_wall: Duration::ZERO,
        run_wall: Duration::ZERO,
        virtual_ms: 0,
        trace_digest: 0,
        deployment: DeploymentStats::default(),
        task_managers: Vec::new(),
        task_managers_registered: task_managers,
        faults_injected: (0, 0, 0, 0),
        adaptive: None,
        speculative: SpeculativeStats::default(),
    };
    let mut total = u64::from(graph.num_execution_vertices());
    drop(graph);
    let mut finished = 0u64;
    let mut now = 0u64;
    let mut tick_at: Option<u64> = None;

    let mut events: Vec<Event> = (0..task_managers)
        .map(|tm| Event::TaskManagerRegistered {
            location: location(tm),
            slots,
        })
        .collect();
    events.push(Event::Start);
    let mut cpu_readings = CpuReadings::default();
    loop {
        for event in events.drain(..) {
            let observed = event.clone();
            let call = CallClock::start(&mut cpu_readings);
            let mut commands = scheduler
                .handle(now, event)
                .map_err(|e| format!("bug: {e}"))?;
            note_call(&mut report, &mut cpu_readings, &call, now, &observed, 0);
            // Work beyond the scheduler's budget is done by continuation calls at the same
            // virtual time, before the next event; their commands continue the call's, and the
            // whole is handled as one call's commands, as before there were budgets.
            let mut continuation = 0;
            while scheduler.has_pending_work() {
                let call = CallClock::start(&mut cpu_readings);
                let more = scheduler.continue_work().map_err(|e| format!("bug: {e}"))?;
                continuation += 1;
                note_call(
                    &mut report,
                    &mut cpu_readings,
                    &call,
                    now,
                    &observed,
                    continuation,
                );
                report.continuations += 1;
                commands.extend(more);
            }
            observer.on_handled(now, &observed, &commands, &scheduler);
            // Taken after the calls and dropped before the next: the scheduler may grow it.
            let graph = Arc::clone(scheduler.graph());
            let mut deploys = Vec::new();
            let mut speculative = Vec::new();
            for c in commands {
                match c {
                    Command::JobVertexInitialized {
                        job_vertex,
                        parallelism,
                    } => {
                        total += u64::from(parallelism);
                        factory
                            .on_vertex_initialized(&graph, job_vertex)
                            .map_err(|e| e.to_string())?;
                    }
                    Command::Deploy { tasks, .. } => deploys.extend(tasks),
                    Command::DeploySpeculative { tasks } => speculative.extend(tasks),
                    Command::ResetVertices(vertices) => {
                        for v in vertices {
                            for p in graph.produced_partitions(v) {
                                factory.on_producer_reset(&graph, p);
                            }
                        }
                    }
                    Command::ReleaseGroup { group, .. } => factory.on_group_released(group),
                    Command::JobStatus { status, .. } if status.is_terminal() => factory.clear(),
                    _ => {}
                }
            }
            log_blob_failures(&mut factory, job_id);
            // A deploy of this call may already be cancelled again (e.g. a restart that fell due
            // with a TaskManager loss): only current, deploying attempts are shipped.
            deploys.retain(|(a, _)| {
                let v = ExecutionVertexIndex(a.vertex);
                scheduler.attempt(v) == *a
                    && scheduler.state(v) == conflux_deploy::ExecutionState::Deploying
            });
            deploys.extend(
                speculative
                    .into_iter()
                    .filter(|(a, _)| scheduler.is_speculative_attempt(*a)),
            );
            if deploys.is_empty() {
                continue;
            }
            // JobManager side: prepare the groups (cached after the first), then build all TDDs
            // of the batch in parallel.
            let t = Instant::now();
            for (a, _) in &deploys {
                factory
                    .prepare_groups(&graph, ExecutionVertexIndex(a.vertex), &scheduler)
                    .map_err(|e| e.to_string())?;
            }
            log_blob_failures(&mut factory, job_id);
            report.descriptor_wall += t.elapsed();
            // The batch is shipped in chunks, so that a million TDDs are never held at once
            // (about 256 bytes each beyond their shared groups); nothing a chunk does changes
            // the next one's TDDs, and durations are drawn in deploy order as before.
            for chunk in deploys.chunks(DEPLOY_CHUNK) {
                let t = Instant::now();
                let tdds: Vec<TaskDeploymentDescriptor> = chunk
                    .par_iter()
                    .map(|(a, slot)| factory.create_with(&graph, *a, *slot, &scheduler))
                    .collect::<Result<_, _>>()
                    .map_err(|e| e.to_string())?;
                report.descriptor_wall += t.elapsed();
                report.tasks_deployed += tdds.len() as u64;

                // TaskManager side: each loads its tasks' input gates.
                let t = Instant::now();
                for tdd in &tdds {
                    let tm = tdd.allocation.task_manager;
                    let side = tm_sides.side(tm, blobs, &shared_decoded);
                    side.stats.tasks += 1;
                    for gate in &tdd.input_gates {
                        if gate.descriptor_groups.iter().any(|g| g.is_offloaded()) {
                            let before = side.cache.stats();
                            load_input_gate(gate, job_id, side.reader.as_ref(), &mut side.cache)
                                .map_err(|e| format!("TaskManager {tm}: {e}"))?;
                            let after = side.cache.stats();
                            side.stats.blob_fetches += after.misses - before.misses;
                            side.stats.cache_hits += after.hits - before.hits;
                        }
                    }
                }
                report.task_manager_load_wall += t.elapsed();

                // Durations: pipelined consumers cannot finish before their producers.
                for tdd in &tdds {
                    let a = tdd.execution_attempt;
                    let mut duration =
                        rng.between(config.task_duration_ms.0, config.task_duration_ms.1);
                    if slow.get(tdd.allocation.task_manager.0 as usize) == Some(&true) {
                        duration = config.slow_task_managers.slowed(duration);
                    }
                    let mut at = now + 1 + duration;
                    for gate in &tdd.input_gates {
                        if !gate.partition_type.must_be_pipelined_consumed() {
                            continue;
                        }
                        let bound = *group_finish.entry(gate.group.0).or_insert_with(|| {
                            let group = graph.consumed_partition_group(gate.group);
                            let producers = graph
                                .execution_vertices_of(
                                    graph.job_graph().data_set(group.result).producer,
                                )
                                .start;
                            group
                                .partitions
                                .map(|p| finish_at.get(&(producers + p)).copied().unwrap_or(0))
                                .max()
                                .unwrap_or(0)
                        });
                        at = at.max(bound + 1);
                    }
                    // Only pipelined consumers read it.
                    if pipelined_job {
                        finish_at.insert(a.vertex, at);
                    }
                    queue.push(now + 1, SimEvent::Running(a));
                    let blocking_input = tdd
                        .input_gates
                        .iter()
                        .find(|g| g.partition_type.is_blocking_or_blocking_persistent());
                    let first_attempt = a.attempt == 0;
                    if first_attempt && rng.chance(config.faults.task_failure) {
                        let when = now + 1 + rng.below(at - now);
                        queue.push(when, SimEvent::Failed(a, None));
                        report.faults_injected.0 += 1;
                    } else if let (Some(gate), true) = (
                        blocking_input,
                        first_attempt && rng.chance(config.faults.partition_not_found),
                    ) {
                        let group = graph.consumed_partition_group(gate.group);
                        let p = group.partitions.start
                            + u32::try_from(
                                rng.below(u64::from(group.partitions.end - group.partitions.start)),
                            )
                            .unwrap_or(0);
                        let partition = IntermediateResultPartitionId {
                            result: group.result,
                            partition: p,
                        };
                        queue.push(now + 2, SimEvent::Failed(a, Some(partition)));
                        report.faults_injected.1 += 1;
                    } else {
                        queue.push(at, SimEvent::Finished(a));
                    }
                }
            }
            finish_at.clear();
            group_finish.clear();
        }
        if scheduler.status().is_terminal() {
            break;
        }
        if let Some(t) = scheduler.next_timer() {
            let t = t.max(now);
            if tick_at.is_none_or(|at| t < at) {
                tick_at = Some(t);
                queue.push(t, SimEvent::Tick);
            }
        }
        let Some((at, e)) = queue.pop() else {
            break;
        };
        if at > config.max_virtual_ms {
            break;
        }
        now = at;
        match e {
            SimEvent::Running(a) => events.push(Event::TaskRunning(a)),
            SimEvent::Finished(a) => {
                let v = ExecutionVertexIndex(a.vertex);
                if scheduler.attempt(v) == a || scheduler.is_speculative_attempt(a) {
                    finished += 1;
                    observer.on_progress(finished.min(total), total);
                }
                let report = bytes.as_mut().and_then(|b| {
                    let id = scheduler.graph().execution_vertex_id(v);
                    b.report(&scheduler, id.job_vertex, id.subtask)
                });
                events.push(match report {
                    Some(report) => Event::TaskFinishedWithBytes(a, report),
                    None => Event::TaskFinished(a),
                });
            }
            SimEvent::Failed(a, partition) => events.push(Event::TaskFailed(
                a,
                partition.map_or(FailureCause::Task, FailureCause::PartitionNotFound),
            )),
            SimEvent::LoseTaskManager => {
                if alive.len() > 1 {
                    let i = usize::try_from(rng.below(alive.len() as u64)).unwrap_or(0);
                    let tm = alive.swap_remove(i);
                    lost.push(tm);
                    events.push(Event::TaskManagerLost(TaskManagerId(tm)));
                    queue.push(now + 1_000, SimEvent::RegisterTaskManager(next_tm));
                    next_tm += 1;
                    report.faults_injected.2 += 1;
                }
            }
            SimEvent::RegisterTaskManager(tm) => {
                alive.push(tm);
                report.task_managers_registered += 1;
                events.push(Event::TaskManagerRegistered {
                    location: location(tm),
                    slots,
                });
            }
            SimEvent::RestartBlobServer => {
                blobs.restart_server()?;
                report.faults_injected.3 += 1;
            }
            SimEvent::Tick => {
                if tick_at == Some(now) {
                    tick_at = None;
                }
                events.push(Event::Tick);
            }
            SimEvent::CheckSlowTasks => {
                events.push(Event::CheckSlowTasks);
                if let Some(interval) = check_interval {
                    queue.push(now + interval, SimEvent::CheckSlowTasks);
                }
            }
        }
    }

    // The job is over: every TaskManager drops its descriptor groups of the job.
    for side in tm_sides.sides.iter_mut().flatten() {
        side.cache.clear_job(job_id);
    }
    for tm in lost {
        if let Some(Some(side)) = tm_sides.sides.get_mut(tm as usize) {
            side.stats.lost = true;
        }
    }
    report.adaptive = bytes
        .as_ref()
        .map(|b| AdaptiveReport::collect(&scheduler, b));
    report.status = scheduler.status();
    report.failure_reason = scheduler.failure_reason().map(str::to_owned);
    report.restarts = scheduler.restarts();
    report.events = scheduler.events_handled();
    report.trace_digest = scheduler.trace_digest();
    report.speculative = scheduler.speculative_stats();
    report.virtual_ms = now;
    report.deployment = factory.stats();
    report.task_managers = tm_sides.stats();
    report.run_wall = started.elapsed();
    Ok(report)
}

/// A stable job id derived from the seed.
pub fn job_id_of(seed: u64) -> JobId {
    let digest = conflux_blob_api::Digest::of(&seed.to_le_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest.0[..16]);
    JobId(out)
}
